//! The kernels of the guide's chapter on threads working together
//! (`docs/guide.md`, "Threads working together"): one kernel per tool a safe kernel
//! shares data with — atomics, per-block and per-warp results, shared-memory tiles,
//! collectives — each written without `unsafe`.
//!
//! The guide shows some of them verbatim: `tests/guide_text.rs` fails when a
//! kernel the guide prints differs from the one here, and `tests/gpu_guide.rs`
//! (feature `gpu-tests`) runs each kernel against a CPU model, on a GPU or on the
//! simulator (`XLOG_BACKEND=sim`). `tests/ptx.rs` holds them to the library's
//! shared-memory rule: every access a relaxed 32-bit word.
//!
//! | kernel | tool |
//! | --- | --- |
//! | [`histogram_u8`] | `atomic(bins)`: any thread adds to any bin |
//! | [`atomic_fold_i64`] | every operation of an atomic view |
//! | [`block_sum_u64`] | a block reduction, written `per block` by the block's leader |
//! | [`warp_sum_u32`] | a warp reduction, written `per warp` by the warp's leader |
//! | [`block_reverse_f32`] | a shared-memory tile: write phase, barrier, read phase |
//! | [`block_reverse_u64`] | the same through dynamic shared memory |
//! | [`select_odd_u32`] | stream compaction: block ranks, one atomic reservation per block |
//! | [`block_collectives_u32`], [`warp_collectives_u64`] | each collective, value by value |
//!
//! The library's versions of these algorithms are `xlog_kernels::histogram`,
//! `xlog_kernels::reduce` and `xlog_kernels::compact`.

use xlog::prelude::*;

xlog::kernel_module!();

/// The entry points this module defines, checked against the PTX by the tests.
pub const KERNELS: &[&str] = &[
    "histogram_u8",
    "atomic_fold_i64",
    "block_sum_u64",
    "warp_sum_u32",
    "block_reverse_f32",
    "block_reverse_u64",
    "select_odd_u32",
    "block_collectives_u32",
    "warp_collectives_u64",
];

/// `bins[b] += |{ i : data[i] == b }|`: a 256-bin histogram of bytes. `bins` needs
/// 256 elements (a shorter one stops the kernel with a bounds panic). Any 1-D
/// launch; a grid-stride loop covers `data`.
#[xlog_kernel(read(data), atomic(bins))]
pub fn histogram_u8(data: &[u8], bins: &mut [u32]) {
    for i in thread::grid_stride(data.len()) {
        bins.fetch_add(data[i] as usize, 1);
    }
}

/// Folds `data` into `stats` with every integer atomic: `stats[0]` wrapping sum,
/// `[1]` min, `[2]` max, `[3]` and, `[4]` or, `[5]` xor, `[6]` the count of every
/// 64th element, kept with a compare-exchange loop, `[7]` the value of one element
/// (exchange), `[8]` 42 stored by thread 0; and with float atomics: `sums[0] +=
/// data[i] as f64`, `sums[1]` swapped to `data[i] as f64`, `small[0] += 1.0` for the
/// first 1000 elements.
#[xlog_kernel(read(data), atomic(stats, sums, small))]
pub fn atomic_fold_i64(data: &[i64], stats: &mut [i64], sums: &mut [f64], small: &mut [f32]) {
    if thread::index_1d() == 0 {
        stats.store(8, 42);
    }
    for i in thread::grid_stride(data.len()) {
        let v = data[i];
        stats.fetch_add(0, v);
        stats.fetch_min(1, v);
        stats.fetch_max(2, v);
        stats.fetch_and(3, v);
        stats.fetch_or(4, v);
        stats.fetch_xor(5, v);
        if i.get() % 64 == 0 {
            let mut seen = stats.load(6);
            while let Err(now) = stats.compare_exchange(6, seen, seen + 1) {
                seen = now;
            }
        }
        stats.swap(7, v);
        sums.fetch_add(0, v as f64);
        sums.swap(1, v as f64);
        if i < 1000 {
            small.fetch_add(0, 1.0);
        }
    }
}

/// `partials[b]` = the wrapping sum of the elements of `x` that block `b`'s threads
/// visit in a grid-stride loop (element `i` belongs to block `(i mod T) / blockDim`,
/// `T` the launch's threads). `partials` needs one element per block. A second
/// launch over the partials in one block gives the sum of `x`.
#[xlog_kernel(read(x), write(partials per block))]
pub fn block_sum_u64(x: &[u64], partials: &mut [u64]) {
    let mut acc = 0u64;
    for i in thread::grid_stride(x.len()) {
        acc = acc.wrapping_add(x[i]);
    }
    let total = collective::block_reduce(acc, u64::wrapping_add); // every thread gets it
    if let Some(b) = thread::block_leader() {
        // only thread 0 of block b
        partials[b] = total;
    }
}

/// `sums[w]` = the wrapping sum of `x` over the threads of warp `w` (one element per
/// thread, 0 past the end), stored by the warp's leader.
#[xlog_kernel(read(x), write(sums per warp))]
pub fn warp_sum_u32(x: &[u32], sums: &mut [u32]) {
    let i = thread::index_1d();
    let v = if i < x.len() { x[i] } else { 0 };
    let s = collective::warp_reduce(v, u32::wrapping_add);
    if let Some(w) = thread::warp_leader() {
        if let Some(o) = sums.get_mut(w) {
            *o = s;
        }
    }
}

/// Reverses each block's 256 elements through a shared tile: `out[256b + t] =
/// x[256b + 255 - t]` (0 where that is past the end of `x`).
#[xlog_kernel(read(x), write(out), block = 256)]
pub fn block_reverse_f32(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    let t = thread::local_index(); // this thread's slot, threadIdx.x
    let mut tile = xlog::device::static_shared!(REVERSE: [f32; 256]).tile();
    tile.set(t, if i < x.len() { x[i] } else { 0.0 }); // write phase: own slot only
    let tile = tile.sync(); // barrier → read phase
    let v = tile.get(255 - t.get()); // any slot
    if let Some(o) = out.get_mut(i) {
        *o = v;
    }
}

/// [`block_reverse_f32`] for `u64`, through the launch's dynamic shared memory
/// (`shared = 2048`: 256 slots), whose 64-bit slots are stored and loaded as two
/// 32-bit words.
#[xlog_kernel(read(x), write(out), block = 256, shared = 2048)]
pub fn block_reverse_u64(x: &[u64], out: &mut [u64]) {
    let i = thread::index_1d();
    let t = thread::local_index();
    let mut tile = xlog::device::shared::DynamicShared::<u64>::get().tile();
    tile.set(t, if i < x.len() { x[i] } else { 0 });
    let tile = tile.sync();
    let v = tile.get(255 - t.get());
    if let Some(o) = out.get_mut(i) {
        *o = v;
    }
}

/// Stream compaction: copies the odd elements of `x` into `out` and counts them in
/// `count[0]` (which must start at 0). Within a block the kept elements keep their
/// order; blocks reserve their ranges in `out` with one atomic add each, in whatever
/// order they run. One element per thread.
#[xlog_kernel(read(x), atomic(out, count))]
pub fn select_odd_u32(x: &[u32], out: &mut [u32], count: &mut [u32]) {
    let i = thread::index_1d();
    let keep = i < x.len() && x[i] % 2 == 1;
    let (rank, total) = collective::block_rank(keep);
    let mut base = 0;
    if thread::block_leader().is_some() && total > 0 {
        base = count.fetch_add(0, total);
    }
    let base = collective::block_broadcast(base, 0);
    if keep {
        out.store((base + rank) as usize, x[i]);
    }
}

/// The right operand unless it is 0: associative but not commutative, so a scan
/// with it shows whether a collective combines in thread order.
#[inline(always)]
pub fn last_nonzero<T: PartialEq + Default>(a: T, b: T) -> T {
    if b == T::default() {
        a
    } else {
        b
    }
}

/// Every block collective on `v = x[i]` (0 past the end): `incl` inclusive sum,
/// `excl` exclusive sum from 7, `agg` the block's sum, `rank` `(rank << 16) | count`
/// of odd values, `bcast` the value of the block's last thread, `last` the inclusive
/// scan of [`last_nonzero`] over the multiples of 3.
#[xlog_kernel(read(x), write(incl, excl, agg, rank, bcast, last))]
#[allow(clippy::too_many_arguments)]
pub fn block_collectives_u32(
    x: &[u32],
    incl: &mut [u32],
    excl: &mut [u32],
    agg: &mut [u32],
    rank: &mut [u32],
    bcast: &mut [u32],
    last: &mut [u32],
) {
    let i = thread::index_1d();
    let v = if i < x.len() { x[i] } else { 0 };
    let a = collective::block_inclusive_scan(v, u32::wrapping_add);
    let (b, total) = collective::block_exclusive_scan(v, 7, u32::wrapping_add);
    let (r, n) = collective::block_rank(v % 2 == 1);
    let c = collective::block_broadcast(v, thread::block_dim().x as usize - 1);
    let d = collective::block_inclusive_scan(if v % 3 == 0 { v } else { 0 }, last_nonzero);
    if i < x.len() {
        incl[i] = a;
        excl[i] = b;
        agg[i] = total;
        rank[i] = (r << 16) | n;
        bcast[i] = c;
        last[i] = d;
    }
}

/// Every warp collective on `v = x[i]` (0 past the end): `incl` inclusive sum,
/// `excl` exclusive sum from 5, `red` the warp's [`last_nonzero`] reduction over the
/// multiples of 3, `rank` `(rank << 16) | count` of odd values, `bcast` the value of
/// the warp's last lane.
#[xlog_kernel(read(x), write(incl, excl, red, rank, bcast))]
pub fn warp_collectives_u64(
    x: &[u64],
    incl: &mut [u64],
    excl: &mut [u64],
    red: &mut [u64],
    rank: &mut [u64],
    bcast: &mut [u64],
) {
    let i = thread::index_1d();
    let v = if i < x.len() { x[i] } else { 0 };
    let a = collective::warp_inclusive_scan(v, u64::wrapping_add);
    let b = collective::warp_exclusive_scan(v, 5, u64::wrapping_add);
    let c = collective::warp_reduce(if v % 3 == 0 { v } else { 0 }, last_nonzero);
    let (r, n) = collective::warp_rank(v % 2 == 1);
    let first = thread::thread_idx().x / 32 * 32;
    let lanes = core::cmp::min(32, thread::block_dim().x - first);
    let d = collective::warp_broadcast(v, lanes - 1);
    if i < x.len() {
        incl[i] = a;
        excl[i] = b;
        red[i] = c;
        rank[i] = ((r as u64) << 16) | n as u64;
        bcast[i] = d;
    }
}
