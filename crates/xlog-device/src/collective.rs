//! Safe warp and block collectives: reduce, inclusive and exclusive scan, broadcast
//! and ballot-based ranks, generic over the 32- and 64-bit numbers (`u32`, `i32`,
//! `f32`, `u64`, `i64`, `f64`) and a user operator.
//!
//! ```no_run
//! use xlog_device::{collective, thread};
//!
//! /// Every thread of the block gets the block's sum of `v` (1-D launch).
//! fn block_total(v: u64) -> u64 {
//!     collective::block_reduce(v, u64::wrapping_add)
//! }
//! ```
//!
//! The operator must be associative; it need not be commutative: every collective
//! combines values in thread order (`op(lower, higher)`), as CUB's do. Blocks are
//! one-dimensional (as every typed launch is) and of any size from 1 to 1024, a
//! partial last warp included.
//!
//! # Contract: called by the whole block (or warp)
//!
//! A `block_*` collective must be called by every thread of the block, a `warp_*`
//! collective by every thread of the warp, at the same point of the kernel and with
//! the same uniform arguments (the operator, `src`): CUB's rule. Called from a
//! branch only some threads take, a collective hangs or returns unspecified values.
//! It is **not undefined behaviour** (see `docs/SOUNDNESS.md`, "Barriers and
//! collectives"), because of how this module is written:
//!
//! - warp exchanges are PTX `shfl.sync` / `vote.sync` with the mask of the lanes the
//!   block shape makes live, which always contains the calling lane. On `sm_70` and
//!   newer (xlog targets `sm_80` and newer) PTX defines these instructions as
//!   waiting for the non-exited lanes of the mask; the one undefined case, a caller
//!   outside its mask, cannot arise. A lane that never arrives leaves the others
//!   waiting (a hang); a source lane that is not participating yields an
//!   unspecified value;
//! - block exchanges go through one scratch array in shared memory, read and written
//!   only with relaxed atomics of aligned 4-byte words (a 64-bit value is two), so
//!   never a data race: not even when divergent calls store a `u32` and a `u64` into
//!   one slot in the same phase, because no two accesses partially overlap. They are
//!   separated by the block barrier `barrier.sync 0`, whose non-`.aligned` form PTX
//!   allows in divergent code;
//! - every value moved is a plain number, valid for any bits.
//!
//! Each block collective ends with a barrier, so the next one may reuse the scratch
//! array: two barriers per block collective.
//!
//! # Soundness
//!
//! The `unsafe` here is the warp instructions' inline PTX (the reasoning above) and
//! the scratch array's relaxed 4-byte atomics (in bounds: at most 32 warps plus one
//! broadcast slot, each two words).

use crate::barrier::sync_threads;
use crate::shared::{load_word, store_word};
use crate::thread::{block_dim, thread_idx};
use crate::warp::{Shuffle, WARP_SIZE};

/// Slots of the scratch array: one per warp (at most 32) and one for broadcasts.
const SCRATCH_SLOTS: usize = 33;
const BROADCAST_SLOT: usize = 32;

/// The lanes of the calling thread's warp that exist in a 1-D block of
/// `blockDim.x` threads (all 32 but in a partial last warp), and how many.
#[inline(always)]
fn live_lanes() -> (u32, u32) {
    let warp_start = thread_idx().x / WARP_SIZE * WARP_SIZE;
    let n = core::cmp::min(WARP_SIZE, block_dim().x - warp_start);
    let mask = if n >= WARP_SIZE {
        u32::MAX
    } else {
        (1u32 << n) - 1
    };
    (mask, n)
}

#[inline(always)]
fn lane() -> u32 {
    thread_idx().x % WARP_SIZE
}

macro_rules! shfl {
    ($name:ident, $mode:literal, $clamp:literal, $sim:ident) => {
        /// One `shfl.sync` per 32-bit half of `v`.
        #[inline(always)]
        fn $name<T: Shuffle>(v: T, lane_arg: u32, mask: u32) -> T {
            device_or_sim!(
                device: {
                    let (lo, hi) = v.__to_bits();
                    let one = |x: u32| -> u32 {
                        let r: u32;
                        // SAFETY: `mask` comes from `live_lanes`, which includes the
                        // calling lane; on sm_70+ that is the only requirement whose
                        // violation PTX leaves undefined (module docs). No memory is
                        // touched.
                        unsafe {
                            core::arch::asm!(
                                concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {l}, ", $clamp, ", {m};"),
                                r = out(reg32) r, v = in(reg32) x, l = in(reg32) lane_arg, m = in(reg32) mask,
                                options(nomem, nostack)
                            )
                        };
                        r
                    };
                    let lo = one(lo);
                    let hi = if T::__WIDE { one(hi) } else { 0 };
                    T::__from_bits(lo, hi)
                },
                sim: { let (lo, hi) = v.__to_bits();
                let r = crate::sim::warp_exchange(
                    concat!("collective::", stringify!($name)),
                    crate::sim::WarpOp::Shuffle(crate::sim::ShuffleMode::$sim),
                    mask,
                    lo as u64 | (hi as u64) << 32,
                    lane_arg,
                );
                T::__from_bits(r as u32, (r >> 32) as u32) }
            )
        }
    };
}

shfl!(shfl_down, "down", "0x1f", Down);
shfl!(shfl_up, "up", "0", Up);
shfl!(shfl_idx, "idx", "0x1f", Idx);

#[inline(always)]
fn ballot(mask: u32, pred: bool) -> u32 {
    device_or_sim!(
        device: {
            let r: u32;
            // SAFETY: as in the shuffles: `mask` includes the calling lane.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred %p; setp.ne.u32 %p, {v}, 0; vote.sync.ballot.b32 {r}, %p, {m}; }}",
                    v = in(reg32) pred as u32, m = in(reg32) mask, r = out(reg32) r,
                    options(nomem, nostack)
                )
            };
            r
        },
        sim: { crate::sim::warp_exchange("collective::ballot", crate::sim::WarpOp::Ballot, mask, pred as u64, 0) as u32 }
    )
}

/// The block's scratch slots, two 32-bit words each, as a raw shared address.
#[inline(always)]
fn scratch() -> *mut [u32; 2] {
    crate::static_shared!(XLOG_COLLECTIVE_SCRATCH: [[u32; 2]; SCRATCH_SLOTS]).as_mut_ptr()
}

#[inline(always)]
fn scratch_store<T: Shuffle>(slot: usize, v: T) {
    debug_assert!(slot < SCRATCH_SLOTS);
    // SAFETY: `slot < SCRATCH_SLOTS` (callers pass a warp number below 32 or the
    // broadcast slot), a slot is 8 bytes aligned to 4, which `store_word` needs for
    // any `T: Shuffle`, and every access to the array is a 4-byte atomic on one of
    // its words.
    unsafe { store_word(scratch().add(slot).cast::<T>(), v) }
}

#[inline(always)]
fn scratch_load<T: Shuffle>(slot: usize) -> T {
    debug_assert!(slot < SCRATCH_SLOTS);
    // SAFETY: as in `scratch_store`.
    unsafe { load_word(scratch().add(slot).cast::<T>()) }
}

/// The reduction of `v` over the calling thread's warp, in lane order, returned to
/// every lane.
#[inline(always)]
pub fn warp_reduce<T: Shuffle>(v: T, op: impl Fn(T, T) -> T) -> T {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::warp_reduce(v, &op) {
        return r;
    }
    let (mask, n) = live_lanes();
    let lane = lane();
    let mut v = v;
    let mut d = 1;
    while d < WARP_SIZE {
        let other = shfl_down(v, d, mask);
        if lane + d < n {
            v = op(v, other);
        }
        d <<= 1;
    }
    shfl_idx(v, 0, mask)
}

/// The inclusive scan of `v` over the calling thread's warp: lane `l` gets
/// `v₀ op v₁ op … op v_l`.
#[inline(always)]
pub fn warp_inclusive_scan<T: Shuffle>(v: T, op: impl Fn(T, T) -> T) -> T {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::warp_inclusive_scan(v, &op) {
        return r;
    }
    let (mask, _) = live_lanes();
    let lane = lane();
    let mut v = v;
    let mut d = 1;
    while d < WARP_SIZE {
        let lower = shfl_up(v, d, mask);
        if lane >= d {
            v = op(lower, v);
        }
        d <<= 1;
    }
    v
}

/// The exclusive scan of `v` over the calling thread's warp, starting from `init`:
/// lane 0 gets `init`, lane `l` gets `init op v₀ op … op v_{l-1}`.
#[inline(always)]
pub fn warp_exclusive_scan<T: Shuffle>(v: T, init: T, op: impl Fn(T, T) -> T) -> T {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::warp_exclusive_scan(v, init, &op) {
        return r;
    }
    let (mask, _) = live_lanes();
    let inclusive = warp_inclusive_scan(v, &op);
    let before = shfl_up(inclusive, 1, mask);
    if lane() == 0 {
        init
    } else {
        op(init, before)
    }
}

/// The value `v` of lane `src` of the calling thread's warp.
///
/// # Panics
///
/// When lane `src` does not exist in this warp (`src >= 32`, or past the end of a
/// partial last warp).
#[inline(always)]
#[track_caller]
pub fn warp_broadcast<T: Shuffle>(v: T, src: u32) -> T {
    let (mask, n) = live_lanes();
    assert!(
        src < n,
        "warp_broadcast from lane {src}, but this warp has {n} lanes"
    );
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::warp_broadcast(v, src) {
        return r;
    }
    shfl_idx(v, src, mask)
}

/// Ballot-based rank: `(rank, count)` where `count` is how many lanes of the warp
/// passed `true` and `rank` how many lanes below the caller did (the caller's slot
/// among the selected, for compaction and radix ranking).
#[inline(always)]
pub fn warp_rank(pred: bool) -> (u32, u32) {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::warp_rank(pred) {
        return r;
    }
    let (mask, _) = live_lanes();
    let votes = ballot(mask, pred);
    let below = votes & ((1u32 << lane()) - 1);
    (below.count_ones(), votes.count_ones())
}

/// The reduction of `v` over the calling thread's block, in thread order, returned
/// to every thread. Two block barriers.
#[inline(always)]
pub fn block_reduce<T: Shuffle>(v: T, op: impl Fn(T, T) -> T) -> T {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::block_reduce(v, &op) {
        return r;
    }
    let w = warp_reduce(v, &op);
    let warp = (thread_idx().x / WARP_SIZE) as usize;
    let warps = block_dim().x.div_ceil(WARP_SIZE) as usize;
    if lane() == 0 {
        scratch_store(warp, w);
    }
    sync_threads();
    let mut total: T = scratch_load(0);
    for k in 1..warps {
        total = op(total, scratch_load(k));
    }
    sync_threads();
    total
}

/// The inclusive scan of `v` over the calling thread's block: thread `t` gets
/// `v₀ op … op v_t`. Two block barriers.
#[inline(always)]
pub fn block_inclusive_scan<T: Shuffle>(v: T, op: impl Fn(T, T) -> T) -> T {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::block_inclusive_scan(v, &op) {
        return r;
    }
    let (_, n) = live_lanes();
    let inclusive = warp_inclusive_scan(v, &op);
    let warp = (thread_idx().x / WARP_SIZE) as usize;
    if lane() == n - 1 {
        scratch_store(warp, inclusive);
    }
    sync_threads();
    let mut r = inclusive;
    if warp > 0 {
        let mut before: T = scratch_load(0);
        for k in 1..warp {
            before = op(before, scratch_load(k));
        }
        r = op(before, inclusive);
    }
    sync_threads();
    r
}

/// The exclusive scan of `v` over the calling thread's block, starting from `init`,
/// and the block's reduction of `v` (without `init`): thread 0 gets
/// `(init, total)`, thread `t` gets `(init op v₀ op … op v_{t-1}, total)`. Two block
/// barriers.
#[inline(always)]
pub fn block_exclusive_scan<T: Shuffle>(v: T, init: T, op: impl Fn(T, T) -> T) -> (T, T) {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::block_exclusive_scan(v, init, &op) {
        return r;
    }
    let (mask, n) = live_lanes();
    let inclusive = warp_inclusive_scan(v, &op);
    let before_in_warp = shfl_up(inclusive, 1, mask);
    let warp = (thread_idx().x / WARP_SIZE) as usize;
    let warps = block_dim().x.div_ceil(WARP_SIZE) as usize;
    if lane() == n - 1 {
        scratch_store(warp, inclusive);
    }
    sync_threads();
    let mut r = init;
    let mut total: T = scratch_load(0);
    if warp > 0 {
        r = op(r, total);
    }
    for k in 1..warps {
        let s: T = scratch_load(k);
        total = op(total, s);
        if k < warp {
            r = op(r, s);
        }
    }
    if lane() > 0 {
        r = op(r, before_in_warp);
    }
    sync_threads();
    (r, total)
}

/// The value `v` of thread `src` (its `threadIdx.x`) of the calling thread's block.
/// Two block barriers.
///
/// # Panics
///
/// When `src >= blockDim.x`.
#[inline(always)]
#[track_caller]
pub fn block_broadcast<T: Shuffle>(v: T, src: usize) -> T {
    let threads = block_dim().x as usize;
    assert!(
        src < threads,
        "block_broadcast from thread {src}, but the block has {threads} threads"
    );
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::block_broadcast(v, src) {
        return r;
    }
    if thread_idx().x as usize == src {
        scratch_store(BROADCAST_SLOT, v);
    }
    sync_threads();
    let r = scratch_load(BROADCAST_SLOT);
    sync_threads();
    r
}

/// Ballot-based rank over the block: `(rank, count)` where `count` is how many
/// threads of the block passed `true` and `rank` how many threads before the caller
/// (lower `threadIdx.x`) did. Stream compaction writes a selected element at
/// `offset + rank`. Two block barriers.
#[inline(always)]
pub fn block_rank(pred: bool) -> (u32, u32) {
    #[cfg(not(target_arch = "nvptx64"))]
    if let Some(r) = crate::sim::collective::block_rank(pred) {
        return r;
    }
    let (rank_in_warp, count_in_warp) = warp_rank(pred);
    let warp = (thread_idx().x / WARP_SIZE) as usize;
    let warps = block_dim().x.div_ceil(WARP_SIZE) as usize;
    if lane() == 0 {
        scratch_store(warp, count_in_warp);
    }
    sync_threads();
    let (mut before, mut total) = (0u32, 0u32);
    for k in 0..warps {
        let c: u32 = scratch_load(k);
        if k < warp {
            before += c;
        }
        total += c;
    }
    sync_threads();
    (before + rank_in_warp, total)
}
