//! The device entry points (nvptx64 only).
//!
//! # Safety (every entry point)
//!
//! The host passes, for each `(ptr, len)` pair, a device allocation of at least
//! `len` elements, aligned for the element type, with output buffers not aliasing
//! inputs; the launch shape and dynamic shared memory follow each kernel's doc.

use core::slice;

use xlog_device::shared::DynamicShared;
use xlog_device::thread::{block_index, block_thread_index, index_1d, lane_id, threads_per_block};
use xlog_device::view::{InOut, Out};
use xlog_device::warp::FULL_MASK;
use xlog_device::{atomic, barrier, static_shared, warp};

/// Any 1D launch.
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn saxpy(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn thread_indices(out: *mut u64, out_len: usize) {
    // SAFETY: module obligations.
    let mut out = unsafe { Out::__from_raw_parts(out, out_len) };
    // SAFETY: the host launches `out_len` threads in total (the kernel's contract).
    unsafe { crate::bodies::thread_indices(&mut out) };
}

/// Block size a multiple of 32, `n` = total threads. Writes four outputs per thread:
/// `out[0n + i]` = idx from lane (7·lane + 3) mod 32, `out[1n + i]` = up by 3,
/// `out[2n + i]` = down by 5, `out[3n + i]` = xor 6.
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn warp_shuffles_u32(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn warp_shuffle_xor_f64(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn warp_votes(
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

/// Block size a multiple of 32, `n` = total threads; per warp `w`: `out[3w]` = sum,
/// `out[3w + 1]` = min, `out[3w + 2]` = max (`redux.sync`).
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn warp_reduce_u32(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_histogram(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_min_max_i64(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_min_max_u32(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_cas_counter(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_exchange(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_bitwise_u32(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_add_f32(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn atomic_add_f64(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn block_reduce_sum(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn block_reduce_warp(
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
        // SAFETY: written before the barrier; slots below `warps` were written.
        let mut s = if (lane as usize) < warps {
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn block_scan_inclusive(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn block_barrier_reductions(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn barrier_between_branches(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn static_shared_reverse(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn math_f32(
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
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn math_f64(
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

/// Any launch: the thread whose `index_1d()` equals `trigger` panics with a static
/// message; the launch must fail and the host must read the record.
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn deliberate_panic(trigger: u64) {
    if index_1d() == trigger as usize {
        panic!("deliberate device panic");
    }
}

/// Any 1D launch with `out_len = total_threads - 1`: the last thread indexes past
/// the end and the bounds check panics.
#[unsafe(no_mangle)]
pub unsafe extern "gpu-kernel" fn out_of_bounds_write(out: *mut u32, out_len: usize) {
    // SAFETY: module obligations.
    let mut out = unsafe { Out::__from_raw_parts(out, out_len) };
    crate::bodies::out_of_bounds_write(&mut out);
}
