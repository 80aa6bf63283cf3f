//! The kernels' entry points, each defined once by `entry_points!` (below) for both
//! builds: on nvptx64 the `extern "gpu-kernel"` function the PTX exports, on the host
//! the simulator's entry of the same name, which reads the same parameters from a
//! launch's parameter array and runs the same body once per simulated thread
//! (`HOST_ENTRIES`, `host_entry`, with feature `gpu`).

/// Defines kernel entry points from one definition each.
///
/// For every `pub unsafe fn name(params) { body }` it emits, with the same docs:
///
/// - on nvptx64: `#[unsafe(no_mangle)] pub unsafe extern "gpu-kernel" fn name(params)
///   { body }`, the entry point `#[xlog_kernel]` would emit;
/// - on the host: `pub unsafe fn name(&[*mut c_void]) -> SimKernel`, which reads each
///   parameter, in order, from the launch's parameter array (the pointer array
///   `cuLaunchKernel` takes) and wraps `body` in the closure the simulator runs per
///   thread; and [`HOST_ENTRIES`], every host entry by kernel name.
///
/// The body's tokens are passed through unchanged, so panic locations and
/// `static_shared!` arrays name this file as they do without the macro.
macro_rules! entry_points {
    ($(
        $(#[$attr:meta])*
        pub unsafe fn $name:ident($($param:ident: $ty:ty),* $(,)?) $body:block
    )*) => {
        $(
            $(#[$attr])*
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(no_mangle)]
            pub unsafe extern "gpu-kernel" fn $name($($param: $ty),*) $body

            $(#[$attr])*
            ///
            /// The simulator's entry point of this kernel: binds a launch's parameter
            /// values to the body, which the simulator runs once per thread.
            ///
            /// # Safety
            /// 1. `params` holds one pointer per parameter of the kernel, in order, each
            ///    to a value of that parameter's type (pointers and lengths may be given
            ///    as `u64`: the same 64 bits on the hosts the simulator runs on);
            /// 2. the launch that runs the returned kernel upholds the module's
            ///    obligations, its pointers being live simulator (host) memory.
            ///
            /// # Panics
            /// When `params` does not hold exactly one pointer per parameter.
            #[cfg(not(target_arch = "nvptx64"))]
            pub unsafe fn $name(
                params: &[*mut ::core::ffi::c_void],
            ) -> ::xlog_runtime::sim::SimKernel {
                let &[$($param),*] = params else {
                    panic!(
                        "kernel `{}` takes {} parameters, the launch passed {}",
                        stringify!($name),
                        [$(stringify!($param)),*].len(),
                        params.len(),
                    );
                };
                $(
                    // SAFETY: obligation 1: it points to a value of this parameter's type.
                    let $param: $ty = unsafe { ($param as *const $ty).read() };
                )*
                let body = move || $body;
                // SAFETY: obligation 2; the body shares among threads only its by-value
                // parameters and device memory, as the kernel's threads do on the GPU.
                unsafe { ::xlog_runtime::sim::SimKernel::new(body) }
            }
        )*

        /// Every kernel's simulator entry point, by kernel name (the order of this file).
        #[cfg(not(target_arch = "nvptx64"))]
        pub const HOST_ENTRIES: &[(&str, ::xlog_runtime::sim::SimEntry)] =
            &[$((stringify!($name), $name as ::xlog_runtime::sim::SimEntry)),*];
    };
}

use core::slice;

use xlog_device::shared::DynamicShared;
use xlog_device::thread::{block_index, block_thread_index, index_1d, lane_id, threads_per_block};
use xlog_device::view::{InOut, Out};
use xlog_device::warp::FULL_MASK;
use xlog_device::{atomic, barrier, exchange, static_shared, warp};

entry_points! {
    /// Any 1D launch.
    pub unsafe fn saxpy(
        a: f32,
        x: *const f32,
        x_len: usize,
        y: *mut f32,
        y_len: usize,
    ) {
        // SAFETY: module obligations: valid, non-aliasing (ptr, len) pairs.
        let (x, mut y) = unsafe {
            (
                slice::from_raw_parts(x, x_len),
                InOut::__from_raw_parts(y, y_len),
            )
        };
        crate::bodies::saxpy(a, x, &mut y);
    }

    /// Any launch shape, 1D to 3D; `out_len` = total threads.
    pub unsafe fn thread_indices(out: *mut u64, out_len: usize) {
        // SAFETY: module obligations.
        let mut out = unsafe { Out::__from_raw_parts(out, out_len) };
        // SAFETY: the host launches `out_len` threads in total (the kernel's contract).
        unsafe { crate::bodies::thread_indices(&mut out) };
    }

    /// Block size a multiple of 32, `n` = total threads. Writes four outputs per thread:
    /// `out[0n + i]` = idx from lane (7·lane + 3) mod 32, `out[1n + i]` = up by 3,
    /// `out[2n + i]` = down by 5, `out[3n + i]` = xor 6.
    pub unsafe fn warp_shuffles_u32(
        input: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let i = index_1d().get();
        // SAFETY: module obligations; `n` = total threads so `i < n`.
        let (input, out) = unsafe {
            (
                slice::from_raw_parts(input, n),
                slice::from_raw_parts_mut(out, out_len),
            )
        };
        let v = input[i];
        let lane = lane_id();
        // SAFETY: full warps (block size a multiple of 32) all execute these calls.
        let (a, b, c, d) = unsafe {
            (
                warp::shuffle_idx(FULL_MASK, v, (7 * lane + 3) % 32),
                warp::shuffle_up(FULL_MASK, v, 3),
                warp::shuffle_down(FULL_MASK, v, 5),
                warp::shuffle_xor(FULL_MASK, v, 6),
            )
        };
        out[i] = a;
        out[n + i] = b;
        out[2 * n + i] = c;
        out[3 * n + i] = d;
    }

    /// Block size a multiple of 32, `n` = total threads: a butterfly all-reduce of
    /// 64-bit floats; every lane ends with its warp's sum (in xor-tree order).
    pub unsafe fn warp_shuffle_xor_f64(
        input: *const f64,
        n: usize,
        out: *mut f64,
        out_len: usize,
    ) {
        let i = index_1d().get();
        // SAFETY: module obligations.
        let (input, out) = unsafe {
            (
                slice::from_raw_parts(input, n),
                slice::from_raw_parts_mut(out, out_len),
            )
        };
        let mut v = input[i];
        let mut m = 16;
        while m > 0 {
            // SAFETY: full warps execute every iteration together.
            v += unsafe { warp::shuffle_xor(FULL_MASK, v, m) };
            m /= 2;
        }
        out[i] = v;
    }

    /// Block size a multiple of 32, `n` = total threads; `pred[i] != 0` is the predicate.
    /// Per thread: `out[0n + i]` = all, `out[1n + i]` = any, `out[2n + i]` = ballot,
    /// `out[3n + i]` = ballot within the active mask of odd lanes (even lanes write 0).
    pub unsafe fn warp_votes(
        pred: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let i = index_1d().get();
        // SAFETY: module obligations.
        let (pred, out) = unsafe {
            (
                slice::from_raw_parts(pred, n),
                slice::from_raw_parts_mut(out, out_len),
            )
        };
        let p = pred[i] != 0;
        // SAFETY: full warps execute these calls together.
        let (all, any, ballot) = unsafe {
            (
                warp::all(FULL_MASK, p),
                warp::any(FULL_MASK, p),
                warp::ballot(FULL_MASK, p),
            )
        };
        out[i] = all as u32;
        out[n + i] = any as u32;
        out[2 * n + i] = ballot;
        out[3 * n + i] = if lane_id() % 2 == 1 {
            const ODD_LANES: u32 = 0xaaaa_aaaa;
            // SAFETY: exactly the odd lanes take this branch, and they are ODD_LANES.
            unsafe { warp::ballot(ODD_LANES, p) }
        } else {
            0
        };
    }

    /// Block size a multiple of 32, `n` = total threads; `label[i]` is the label.
    /// Per thread: `out[0n + i]` = the lanes agreeing on bit 2 of the label,
    /// `out[1n + i]` = the lanes whose low 3 bits agree (`warp_match_bits::<3>`),
    /// `out[2n + i]` = the same from `full_warp_match_bits::<3>`, `out[3n + i]` =
    /// lane `31 - lane`'s label (`full_warp_shuffle_from`), `out[4n + i]` = lane
    /// `(lane + 1) % 32`'s label (`warp_shuffle_from`).
    pub unsafe fn warp_match_labels(
        label: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let i = index_1d().get();
        // SAFETY: module obligations.
        let (label, out) = unsafe {
            (
                slice::from_raw_parts(label, n),
                slice::from_raw_parts_mut(out, out_len),
            )
        };
        // SAFETY: full warps execute this call together.
        out[i] = unsafe { warp::agree_on_bit(FULL_MASK, label[i], 2) };
        out[n + i] = exchange::warp_match_bits::<3>(label[i]);
        out[2 * n + i] = exchange::full_warp_match_bits::<3>(label[i]);
        out[3 * n + i] = exchange::full_warp_shuffle_from(label[i], 31 - lane_id());
        out[4 * n + i] = exchange::warp_shuffle_from(label[i], (lane_id() + 1) % 32);
    }

    /// Block size a multiple of 32, `n` = total threads; per warp `w`: `out[3w]` = sum,
    /// `out[3w + 1]` = min, `out[3w + 2]` = max (`redux.sync`).
    pub unsafe fn warp_reduce_u32(
        input: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let i = index_1d().get();
        // SAFETY: module obligations.
        let (input, out) = unsafe {
            (
                slice::from_raw_parts(input, n),
                slice::from_raw_parts_mut(out, out_len),
            )
        };
        let v = input[i];
        // SAFETY: full warps execute these calls together.
        let (s, lo, hi) = unsafe {
            (
                warp::reduce_add_u32(FULL_MASK, v),
                warp::reduce_min_u32(FULL_MASK, v),
                warp::reduce_max_u32(FULL_MASK, v),
            )
        };
        if lane_id() == 0 {
            let w = i / 32;
            out[3 * w] = s;
            out[3 * w + 1] = lo;
            out[3 * w + 2] = hi;
        }
    }

    /// Any 1D launch: `bins[keys[i] % nbins] += 1` with contention.
    pub unsafe fn atomic_histogram(
        keys: *const u32,
        n: usize,
        bins: *mut u32,
        nbins: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `i < n`, the bin index is `< nbins`, and every
            // access to `bins` in this launch is atomic.
            unsafe { atomic::fetch_add(bins.add(*keys.add(i) as usize % nbins), 1u32) };
        }
    }

    /// Any 1D launch; `out` = `[i64::MAX, i64::MIN]` before: becomes `[min, max]`.
    pub unsafe fn atomic_min_max_i64(
        values: *const i64,
        n: usize,
        out: *mut i64,
        _out_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `out` has 2 elements, accessed only atomically.
            unsafe {
                let v = *values.add(i);
                atomic::fetch_min(out, v);
                atomic::fetch_max(out.add(1), v);
            }
        }
    }

    /// Any 1D launch; `out` = `[u32::MAX, 0, i32::MAX as u32, i32::MIN as u32]` before:
    /// becomes `[min u32, max u32, min i32, max i32]` of the values (read as `i32` too).
    pub unsafe fn atomic_min_max_u32(
        values: *const u32,
        n: usize,
        out: *mut u32,
        _out_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `out` has 4 elements, accessed only atomically.
            unsafe {
                let v = *values.add(i);
                atomic::fetch_min(out, v);
                atomic::fetch_max(out.add(1), v);
                atomic::fetch_min(out.add(2).cast::<i32>(), v as i32);
                atomic::fetch_max(out.add(3).cast::<i32>(), v as i32);
            }
        }
    }

    /// Any 1D launch with `n` threads doing work: each increments `*counter` with a
    /// compare-exchange loop and records the value it replaced in `taken[i]` (a
    /// permutation of `0..n` when the counter starts at 0).
    pub unsafe fn atomic_cas_counter(
        counter: *mut u64,
        n: usize,
        taken: *mut u64,
        _taken_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `counter` is accessed only atomically.
            let mut seen = unsafe { atomic::fetch_add(counter, 0u64) };
            loop {
                // SAFETY: as above.
                match unsafe { atomic::compare_exchange(counter, seen, seen + 1) } {
                    Ok(old) => {
                        // SAFETY: `i < n` = len of `taken`, one writer per element.
                        unsafe { *taken.add(i) = old };
                        break;
                    }
                    Err(current) => seen = current,
                }
            }
        }
    }

    /// Any 1D launch: thread `i < n` swaps `i` into `*slot` and writes the old value to
    /// `old[i]`; with `*slot` starting at `u32::MAX`, `old` plus the final slot is
    /// `{u32::MAX} ∪ 0..n`. Also swaps `i as f32` into `slot_f32` the same way.
    pub unsafe fn atomic_exchange(
        slot: *mut u32,
        n: usize,
        old: *mut u32,
        slot_f32: *mut f32,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; the slots are accessed only atomically and
            // `old[i]` has one writer.
            unsafe {
                *old.add(i) = atomic::swap(slot, i as u32);
                atomic::swap(slot_f32, i as f32);
            }
        }
    }

    /// Any 1D launch; `out` = `[0, u32::MAX, 0]` before: becomes
    /// `[or of values, and of values, xor of values]`.
    pub unsafe fn atomic_bitwise_u32(
        values: *const u32,
        n: usize,
        out: *mut u32,
        _out_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `out` has 3 elements, accessed only atomically.
            unsafe {
                let v = *values.add(i);
                atomic::fetch_or(out, v);
                atomic::fetch_and(out.add(1), v);
                atomic::fetch_xor(out.add(2), v);
            }
        }
    }

    /// Any 1D launch: `*sum += values[i]` (order unspecified: compare with a tolerance).
    pub unsafe fn atomic_add_f32(
        values: *const f32,
        n: usize,
        sum: *mut f32,
        _sum_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `sum` accessed only atomically.
            unsafe { atomic::fetch_add(sum, *values.add(i)) };
        }
    }

    /// Any 1D launch: `*sum += values[i]`.
    pub unsafe fn atomic_add_f64(
        values: *const f64,
        n: usize,
        sum: *mut f64,
        _sum_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `sum` accessed only atomically.
            unsafe { atomic::fetch_add(sum, *values.add(i)) };
        }
    }

    /// 1D launch, any block size 1..=1024, dynamic shared memory `4 * blockDim.x` bytes:
    /// `out[block] = wrapping sum of input[block*bs .. block*bs + bs]` (tree reduction
    /// with a barrier per level, so barriers sit in a loop: the rust-lang/rust#137086
    /// pattern).
    pub unsafe fn block_reduce_sum(
        input: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let (tid, bs, block) = (block_thread_index(), threads_per_block(), block_index());
        let i = index_1d().get();
        let smem = DynamicShared::<u32>::get();
        // SAFETY: module obligations; the launch gives `bs` u32s of dynamic shared memory.
        unsafe {
            let v = if i < n { *input.add(i) } else { 0 };
            smem.write(tid, v);
            barrier::sync_threads();
            let mut stride = bs.next_power_of_two() / 2;
            while stride > 0 {
                if tid < stride && tid + stride < bs {
                    // Reads and writes of distinct slots; the barrier below orders levels.
                    smem.write(tid, smem.read(tid).wrapping_add(smem.read(tid + stride)));
                }
                barrier::sync_threads();
                stride /= 2;
            }
            if tid == 0 && block < out_len {
                *out.add(block) = smem.read(0);
            }
        }
    }

    /// 1D launch, block size a multiple of 32 up to 1024: the same sum as
    /// `block_reduce_sum` with warp shuffles and a static shared array of per-warp sums.
    pub unsafe fn block_reduce_warp(
        input: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let partial = static_shared!(WARP_SUMS: [u32; 32]);
        let (tid, bs, block) = (block_thread_index(), threads_per_block(), block_index());
        let i = index_1d().get();
        // SAFETY: module obligations.
        let mut v = if i < n { unsafe { *input.add(i) } } else { 0 };
        let mut m = 16;
        while m > 0 {
            // SAFETY: full warps (block size a multiple of 32, no early exit).
            v = v.wrapping_add(unsafe { warp::shuffle_xor(FULL_MASK, v, m) });
            m /= 2;
        }
        let (warp_idx, lane) = (tid / 32, lane_id());
        if lane == 0 {
            // SAFETY: one writer per slot (lane 0 of each warp), read after the barrier.
            unsafe { partial.write(warp_idx, v) };
        }
        barrier::sync_threads();
        if warp_idx == 0 {
            let warps = bs / 32;
            let mut s = if (lane as usize) < warps {
                // SAFETY: written before the barrier; slots below `warps` were written.
                unsafe { partial.read(lane as usize) }
            } else {
                0
            };
            let mut m = 16;
            while m > 0 {
                // SAFETY: warp 0 is complete and all its lanes are here.
                s = s.wrapping_add(unsafe { warp::shuffle_xor(FULL_MASK, s, m) });
                m /= 2;
            }
            if lane == 0 && block < out_len {
                // SAFETY: one writer per block.
                unsafe { *out.add(block) = s };
            }
        }
    }

    /// 1D launch, any block size 1..=1024, dynamic shared memory `8 * blockDim.x` bytes:
    /// per block inclusive prefix sum (Hillis–Steele, double-buffered, a barrier per
    /// step). `out[i]` = wrapping sum of the block's inputs up to `i`.
    pub unsafe fn block_scan_inclusive(
        input: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let (tid, bs) = (block_thread_index(), threads_per_block());
        let i = index_1d().get();
        let smem = DynamicShared::<u32>::get();
        // SAFETY: module obligations; the launch gives `2 * bs` u32s of dynamic shared
        // memory; each step reads buffer `src` and writes buffer `dst`, and a barrier
        // separates the steps.
        unsafe {
            smem.write(tid, if i < n { *input.add(i) } else { 0 });
            barrier::sync_threads();
            let (mut src, mut dst) = (0, bs);
            let mut offset = 1;
            while offset < bs {
                let mut v = smem.read(src + tid);
                if tid >= offset {
                    v = v.wrapping_add(smem.read(src + tid - offset));
                }
                smem.write(dst + tid, v);
                barrier::sync_threads();
                core::mem::swap(&mut src, &mut dst);
                offset *= 2;
            }
            if i < out_len {
                *out.add(i) = smem.read(src + tid);
            }
        }
    }

    /// 1D launch, any block size; `pred[i] != 0` is the predicate. Per block `b`:
    /// `out[3b]` = count of true, `out[3b + 1]` = all, `out[3b + 2]` = any
    /// (`barrier.red`).
    pub unsafe fn block_barrier_reductions(
        pred: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let i = index_1d().get();
        // SAFETY: module obligations.
        let p = i < n && unsafe { *pred.add(i) } != 0;
        let count = barrier::sync_threads_count(p);
        let all = barrier::sync_threads_and(p);
        let any = barrier::sync_threads_or(p);
        let b = block_index();
        if block_thread_index() == 0 && 3 * b + 2 < out_len {
            // SAFETY: one writer per block, in bounds.
            unsafe {
                *out.add(3 * b) = count;
                *out.add(3 * b + 1) = all as u32;
                *out.add(3 * b + 2) = any as u32;
            }
        }
    }

    /// 1D launch, even block size up to 1024: the rust-lang/rust#137086 shape, one
    /// condition tested before and after a barrier. Even threads store `x[i]`, odd
    /// threads `2 * x[i]`; after the barrier each thread reads its pair partner's slot:
    /// `out[i] = 2 * x[i + 1]` for even `i`, `x[i - 1]` for odd `i` (wrapping).
    /// tests/ptx.rs checks the barrier was not duplicated into the branches.
    pub unsafe fn barrier_between_branches(
        input: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let pairs = static_shared!(PAIRS: [u32; 1024]);
        let tid = block_thread_index();
        let i = index_1d().get();
        let even = tid % 2 == 0;
        // SAFETY: module obligations; `tid < 1024`; every slot is written by one thread
        // before the barrier and read by another after it.
        unsafe {
            let v = if i < n { *input.add(i) } else { 0 };
            if even {
                pairs.write(tid, v);
            } else {
                pairs.write(tid, v.wrapping_mul(2));
            }
            barrier::sync_threads();
            let r = if even {
                pairs.read(tid + 1)
            } else {
                pairs.read(tid - 1)
            };
            if i < out_len {
                *out.add(i) = r;
            }
        }
    }

    /// 1D launch, block size up to 1024: each block reverses its chunk through a static
    /// shared array.
    pub unsafe fn static_shared_reverse(
        input: *const u32,
        n: usize,
        out: *mut u32,
        out_len: usize,
    ) {
        let tile = static_shared!(TILE: [u32; 1024]);
        let (tid, bs) = (block_thread_index(), threads_per_block());
        let i = index_1d().get();
        // SAFETY: module obligations; `tid < bs <= 1024`; the barrier separates the
        // writes from the reads of other threads' slots.
        unsafe {
            tile.write(tid, if i < n { *input.add(i) } else { 0 });
            barrier::sync_threads();
            if i < out_len {
                *out.add(i) = tile.read(bs - 1 - tid);
            }
        }
    }

    /// Any 1D launch: `out[k * n + i]` = the k-th output of `bodies::math_f32_values`.
    pub unsafe fn math_f32(
        x: *const f32,
        n: usize,
        out: *mut f32,
        _out_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `out` holds `MATH_F32_OUTPUTS * n` elements.
            unsafe {
                let values = crate::bodies::math_f32_values(*x.add(i));
                for (k, v) in values.iter().enumerate() {
                    *out.add(k * n + i) = *v;
                }
            }
        }
    }

    /// Any 1D launch: `out[k * n + i]` = the k-th output of `bodies::math_f64_values`.
    pub unsafe fn math_f64(
        x: *const f64,
        n: usize,
        out: *mut f64,
        _out_len: usize,
    ) {
        let i = index_1d().get();
        if i < n {
            // SAFETY: module obligations; `out` holds `MATH_F64_OUTPUTS * n` elements.
            unsafe {
                let values = crate::bodies::math_f64_values(*x.add(i));
                for (k, v) in values.iter().enumerate() {
                    *out.add(k * n + i) = *v;
                }
            }
        }
    }

    /// Any launch: the thread whose `index_1d()` equals `trigger` (every thread when
    /// `trigger` is `u64::MAX`) panics with a static message; the launch must fail
    /// and the host must read the record.
    pub unsafe fn deliberate_panic(trigger: u64) {
        if trigger == u64::MAX || index_1d() == trigger as usize {
            panic!("deliberate device panic");
        }
    }

    /// Thread 0 recurses `depth` levels ([`crate::bodies::recurse`]) and writes the
    /// result to `out[0]`: past the GPU stack, the launch faults.
    pub unsafe fn recursion(depth: u64, out: *mut u32) {
        if index_1d() == 0 {
            let v = crate::bodies::recurse(depth as u32, 7);
            // SAFETY: module obligations: `out` holds at least one element.
            unsafe { *out = v };
        }
    }

    /// Any 1D launch with `out_len = total_threads - 1`: the last thread indexes past
    /// the end and the bounds check panics.
    pub unsafe fn out_of_bounds_write(out: *mut u32, out_len: usize) {
        // SAFETY: module obligations.
        let mut out = unsafe { Out::__from_raw_parts(out, out_len) };
        crate::bodies::out_of_bounds_write(&mut out);
    }
}

/// The simulator's entry point of kernel `name`, for
/// [`Module::function_with_host`](xlog_runtime::Module::function_with_host); `None`
/// for a name that is not one of [`KERNELS`](crate::KERNELS).
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_entry(name: &str) -> Option<xlog_runtime::sim::SimEntry> {
    HOST_ENTRIES
        .iter()
        .find(|(kernel, _)| *kernel == name)
        .map(|(_, entry)| *entry)
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_has_one_host_entry() {
        let mut hosts: Vec<&str> = HOST_ENTRIES.iter().map(|(name, _)| *name).collect();
        let mut kernels = crate::KERNELS.to_vec();
        hosts.sort_unstable();
        kernels.sort_unstable();
        assert_eq!(hosts, kernels);
        assert!(crate::KERNELS.iter().all(|k| host_entry(k).is_some()));
        assert!(host_entry("no_such_kernel").is_none());
    }
}
