//! Block exchanges at data-dependent positions: what a radix sort's ranking and
//! scatter need and phased tiles cannot give.
//!
//! - [`SharedWords`]: a block's shared array that every thread may load, store and
//!   add to at *any* index. A [`Tile`](crate::shared::Tile) lets a thread write
//!   only the slots its [`LocalIndex`](crate::thread::LocalIndex) names; a radix
//!   sort writes each key at its rank within the tile, a number computed from the
//!   data, which no witness can name.
//! - [`warp_match_bits`]: the lanes of the warp whose label equals this lane's
//!   (CUB's `MatchAny`, from ballots), and [`warp_shuffle_from`], a shuffle where
//!   each lane names its own source lane; [`full_warp_match_bits`] and
//!   [`full_warp_shuffle_from`] are the same for kernels whose blocks are whole
//!   warps, faster.
//!
//! ```no_run
//! use xlog_device::{barrier, exchange::SharedWords, static_shared, thread};
//!
//! /// Each thread counts its digit, then reads the count of digit `threadIdx.x`
//! /// (a 256-thread block).
//! fn count(digit: u32) -> u32 {
//!     let bins: SharedWords<u32> = static_shared!(BINS: [u32; 256]).words();
//!     let t = thread::thread_idx().x as usize;
//!     bins.store(t, 0);
//!     barrier::sync_threads();
//!     bins.fetch_add(digit as usize, 1);
//!     barrier::sync_threads();
//!     bins.load(t)
//! }
//! ```
//!
//! # Soundness
//!
//! The shared module's argument (`crate::shared`, # Soundness) carries over
//! unchanged: every access through a `SharedWords` is a relaxed atomic load, store,
//! add, minimum or maximum of an aligned 4-byte word inside the array it was made from (a 64-bit
//! value is two words, low first), bounds-checked, and every bit pattern is a valid
//! value of its types. (On the GPU, loads, stores and `u32` adds address the word from
//! the array's 32-bit `.shared` window address plus the checked slot's byte offset,
//! `crate::window`: the same word the generic address names; minima, maxima and
//! `f32` adds use the generic address.) Those are the only sizes safe code uses on shared memory, so
//! two accesses touch the same word or disjoint ones and atomics never race: no use
//! of a `SharedWords` is a data race, whatever index any thread passes, and even
//! against a tile or another `SharedWords` of another type over the same bytes. What
//! safe code cannot get from the type is *determined* values: a load that a block
//! barrier ([`sync_threads`](crate::barrier::sync_threads)) does not separate from
//! another thread's store of the same word may see either value (a 64-bit load may
//! mix the halves of two stores). Algorithms keep writes and reads in phases
//! separated by barriers, as with tiles.
//!
//! The warp functions are `shfl.sync` / `vote.sync` over the lanes the block shape
//! makes live, as in [`crate::collective`]: called from a branch some lanes skip,
//! they hang or give unspecified values, never undefined behaviour. The `full_warp_`
//! ones use the constant full-warp mask instead, which holds the calling lane too,
//! so PTX's one undefined case (an executing lane missing from the mask) cannot
//! arise either. In a warp that is whole, the two masks are the same; in a partial
//! warp, the lanes that were never launched are, we assume (PTX's text speaks only
//! of non-exited lanes), either waited for in vain (a hang) or skipped as exited
//! (unspecified bits), the same two outcomes.

use core::marker::PhantomData;

use crate::shared::{DynamicShared, Owner, SharedArray};
use crate::thread::{block_dim, thread_idx};
use crate::warp::{Shuffle, FULL_MASK, WARP_SIZE};
use crate::window::{self, Base};

/// A block's shared array of 32- or 64-bit numbers that any thread may access at
/// any index, each access one or two relaxed 4-byte atomics (see the module's
/// # Soundness). Get one from [`SharedArray::words`] or [`DynamicShared::words`];
/// it is a plain address and length (in the simulator also its block, checked on
/// every access), `Copy`.
pub struct SharedWords<T: Shuffle> {
    ptr: *mut T,
    // `ptr` as a `.shared` window address on the GPU: what loads, stores and
    // adds compute their addresses from (see `crate::window`).
    base: Base,
    len: usize,
    owner: Owner,
    _marker: PhantomData<*const T>,
}

impl<T: Shuffle> Clone for SharedWords<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Shuffle> Copy for SharedWords<T> {}

impl<T: Shuffle, const N: usize> SharedArray<T, N> {
    /// The array as [`SharedWords`]: loads, stores and adds at any index.
    #[inline(always)]
    pub fn words(self) -> SharedWords<T> {
        SharedWords {
            ptr: self.as_mut_ptr(),
            base: window::base(self.as_mut_ptr()),
            len: N,
            owner: self.owner(),
            _marker: PhantomData,
        }
    }
}

impl<T: Shuffle> DynamicShared<T> {
    /// The launch's dynamic shared memory as [`SharedWords`] of `len()` slots.
    #[inline(always)]
    pub fn words(self) -> SharedWords<T> {
        SharedWords {
            ptr: self.as_mut_ptr(),
            base: window::base(self.as_mut_ptr()),
            len: self.len(),
            owner: self.owner(),
            _marker: PhantomData,
        }
    }
}

impl<T: Shuffle> SharedWords<T> {
    /// Number of slots.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no slots.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The same bytes as slots of `U`: as many whole `U`s as fit. Only the slot
    /// size changes; every access stays a 4-byte atomic word access.
    #[inline(always)]
    pub fn cast<U: Shuffle>(self) -> SharedWords<U> {
        SharedWords {
            ptr: self.ptr.cast::<U>(),
            base: self.base,
            len: self.len * core::mem::size_of::<T>() / core::mem::size_of::<U>(),
            owner: self.owner,
            _marker: PhantomData,
        }
    }

    #[inline(always)]
    #[track_caller]
    fn slot(&self, i: usize) -> *mut T {
        self.owner.check();
        // SAFETY: the `len` slots lie inside the shared array the handle came from,
        // which exists while its block runs (checked above).
        unsafe { crate::view::checked_element(self.ptr, self.len, i, "shared words ") }
    }

    /// The byte offset of slot `i` from `base`, checked as `slot` does. A shared
    /// array is far below 4 GiB, so the offset of an in-bounds slot fits 32 bits.
    #[inline(always)]
    #[track_caller]
    fn offset(&self, i: usize) -> u32 {
        self.owner.check();
        if i >= self.len {
            crate::panic::cold::out_of_bounds("shared words ", self.len, i);
        }
        (i * core::mem::size_of::<T>()) as u32
    }

    /// Reads slot `i`.
    ///
    /// # Panics
    ///
    /// When `i >= len()`, as every method.
    #[inline(always)]
    #[track_caller]
    pub fn load(&self, i: usize) -> T {
        let at = self.offset(i);
        // Slot `i` is in bounds (checked) in the shared array `base` came from,
        // aligned to 4 bytes (static arrays are, and dynamic shared memory is
        // aligned to 16; a `cast` keeps the base), its second word inside it when
        // `T` is 8 bytes; every safe access to shared memory is a 4-byte atomic on
        // an aligned word.
        // SAFETY: the first word of the slot, as above.
        let lo = unsafe { window::load(self.base, at) };
        let hi = if T::__WIDE {
            // SAFETY: as above.
            unsafe { window::load(self.base, at + 4) }
        } else {
            0
        };
        T::__from_bits(lo, hi)
    }

    /// Writes `v` into slot `i`.
    #[inline(always)]
    #[track_caller]
    pub fn store(&self, i: usize, v: T) {
        let at = self.offset(i);
        let (lo, hi) = v.__to_bits();
        // SAFETY: as in `load`.
        unsafe { window::store(self.base, at, lo) };
        if T::__WIDE {
            // SAFETY: as in `load`.
            unsafe { window::store(self.base, at + 4, hi) };
        }
    }
}

impl SharedWords<u32> {
    /// Adds `v` to slot `i` (wrapping) with one atomic, returning the old value.
    #[inline(always)]
    #[track_caller]
    pub fn fetch_add(&self, i: usize, v: u32) -> u32 {
        let at = self.offset(i);
        // SAFETY: an in-bounds, aligned word of shared memory, and every safe
        // access to it is a 4-byte atomic (as in `load`).
        unsafe { window::fetch_add(self.base, at, v) }
    }
}

impl SharedWords<u32> {
    /// Lowers slot `i` to `v` if `v` is smaller (unsigned) with one atomic,
    /// returning the old value.
    #[inline(always)]
    #[track_caller]
    pub fn fetch_min(&self, i: usize, v: u32) -> u32 {
        let p = self.slot(i);
        // SAFETY: as in `fetch_add`.
        unsafe { crate::shared::fetch_extreme_word::<true>(p, v) }
    }

    /// Raises slot `i` to `v` if `v` is larger (unsigned) with one atomic,
    /// returning the old value.
    #[inline(always)]
    #[track_caller]
    pub fn fetch_max(&self, i: usize, v: u32) -> u32 {
        let p = self.slot(i);
        // SAFETY: as in `fetch_add`.
        unsafe { crate::shared::fetch_extreme_word::<false>(p, v) }
    }
}

impl SharedWords<f32> {
    /// Adds `v` to slot `i` (IEEE rounding) with one atomic, returning the old
    /// value. Concurrent additions land in an unspecified order, so a sum of more
    /// than two values may differ in its last bits from run to run.
    #[inline(always)]
    #[track_caller]
    pub fn fetch_add(&self, i: usize, v: f32) -> f32 {
        let p = self.slot(i);
        // SAFETY: `p` is an in-bounds, aligned word of shared memory, and every safe
        // access to it is a 4-byte atomic (as in `load`).
        unsafe { crate::shared::fetch_add_f32_word(p, v) }
    }
}

impl<T: Shuffle> core::fmt::Debug for SharedWords<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::view::debug_ptr_len(f, "SharedWords", self.ptr, self.len)
    }
}

/// The lanes of the calling thread's warp that exist in a 1-D block.
#[inline(always)]
fn live_mask() -> u32 {
    let warp_start = thread_idx().x / WARP_SIZE * WARP_SIZE;
    let n = core::cmp::min(WARP_SIZE, block_dim().x - warp_start);
    if n >= WARP_SIZE {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// The lanes below the calling one: bit `l` set for every lane `l < lane`.
#[inline(always)]
pub fn lanes_below() -> u32 {
    let lane = thread_idx().x % WARP_SIZE;
    (1u32 << lane) - 1
}

/// `v`, as a value the compiler cannot tell equals `v`: what a kernel derives
/// from it later is computed again there, instead of being computed once and kept
/// in registers (or spilled) across everything in between. For a value that is
/// cheap to derive from and costly to keep: a radix sort's digit of each of its
/// keys, needed once to count them and again to rank them. On the host, `v`.
#[inline(always)]
pub fn fresh<T: Shuffle>(v: T) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        let (mut lo, mut hi) = v.__to_bits();
        // SAFETY: register moves only; nothing is read or written. Not `pure`:
        // the compiler must not merge two calls on the same value.
        unsafe {
            core::arch::asm!(
                "mov.b32 {lo}, {lo};",
                lo = inout(reg32) lo,
                options(nomem, nostack, preserves_flags)
            )
        };
        if T::__WIDE {
            // SAFETY: as above.
            unsafe {
                core::arch::asm!(
                    "mov.b32 {hi}, {hi};",
                    hi = inout(reg32) hi,
                    options(nomem, nostack, preserves_flags)
                )
            };
        }
        T::__from_bits(lo, hi)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        v
    }
}

/// The lanes of the calling thread's warp whose `label` agrees with this lane's in
/// its low `BITS` bits, this lane included: `BITS` ballots (CUB's `MatchAny`,
/// faster than `match.any.sync` on every architecture xlog targets). Any set bit
/// may serve as the group's leader (the highest, `31 - leading_zeros`, costs one
/// instruction); `(peers & lanes_below()).count_ones()` is this lane's rank within
/// its group.
///
/// Called by every live lane of the warp at the same point, with the same `BITS`
/// (see the module docs for what happens otherwise). In a kernel whose blocks are
/// whole warps, [`full_warp_match_bits`] is faster.
#[inline(always)]
pub fn warp_match_bits<const BITS: u32>(label: u32) -> u32 {
    match_bits::<BITS>(live_mask(), label)
}

/// [`warp_match_bits`] for a warp whose 32 lanes all exist: a kernel whose block
/// size is a multiple of 32 (fixed by its `block` attribute). The member mask is
/// then the constant full warp, which spares `ptxas` a convergence check around
/// every ballot (7 % of a radix sort's time). The mask holds the calling lane, so
/// the call is never undefined behaviour; in a partial warp it waits or gives
/// unspecified bits (the module docs say what this assumes).
#[inline(always)]
pub fn full_warp_match_bits<const BITS: u32>(label: u32) -> u32 {
    match_bits::<BITS>(FULL_MASK, label)
}

#[inline(always)]
fn match_bits<const BITS: u32>(mask: u32, label: u32) -> u32 {
    let mut peers = mask;
    let mut b = 0;
    while b < BITS {
        // SAFETY: `mask` holds the calling lane (the live lanes, or all 32); on sm_70
        // and newer a lane of the mask that does not arrive makes the others wait
        // or gives unspecified bits, never undefined behaviour (the `collective`
        // module's contract).
        peers &= unsafe { crate::warp::agree_on_bit(mask, label, b) };
        b += 1;
    }
    peers
}

/// The value `v` of lane `src` of the calling thread's warp, where each lane may
/// name a different source (`shfl.sync.idx`): how a group's leader hands its
/// result to its peers. A source lane past the warp's live lanes gives an
/// unspecified value.
///
/// Called by every live lane of the warp at the same point.
#[inline(always)]
pub fn warp_shuffle_from<T: Shuffle>(v: T, src: u32) -> T {
    // SAFETY: as in `match_bits`: the live mask holds the calling lane.
    unsafe { crate::warp::shuffle_idx(live_mask(), v, src) }
}

/// [`warp_shuffle_from`] for a warp whose 32 lanes all exist, with the constant
/// full-warp mask (see [`full_warp_match_bits`] for when, and what happens in a
/// partial warp).
#[inline(always)]
pub fn full_warp_shuffle_from<T: Shuffle>(v: T, src: u32) -> T {
    // SAFETY: as in `match_bits`: the full mask holds the calling lane.
    unsafe { crate::warp::shuffle_idx(FULL_MASK, v, src) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip_at_any_index_and_through_a_cast() {
        let mut mem = [0u32; 8];
        let words: SharedWords<u32> = SharedWords {
            ptr: mem.as_mut_ptr(),
            base: window::base(mem.as_mut_ptr()),
            len: mem.len(),
            owner: Owner::UNSIMULATED,
            _marker: PhantomData,
        };
        words.store(5, 0xdead_beef);
        assert_eq!(words.load(5), 0xdead_beef);
        let wide = words.cast::<u64>();
        assert_eq!(wide.len(), 4);
        wide.store(3, 0x1122_3344_5566_7788);
        assert_eq!((mem[6], mem[7]), (0x5566_7788, 0x1122_3344));
        assert_eq!(wide.load(2), 0xdead_beef_0000_0000);
        // Adds land in the slot named, through the cast's base too.
        assert_eq!(words.fetch_add(1, 5), 0);
        assert_eq!(wide.cast::<u32>().fetch_add(1, 2), 5);
        assert_eq!(mem[1], 7);
    }

    #[test]
    #[should_panic(expected = "shared words index out of bounds: the len is 4 but the index is 4")]
    fn slots_are_bounds_checked() {
        let mut mem = [0u64; 4];
        let words: SharedWords<u64> = SharedWords {
            ptr: mem.as_mut_ptr(),
            base: window::base(mem.as_mut_ptr()),
            len: mem.len(),
            owner: Owner::UNSIMULATED,
            _marker: PhantomData,
        };
        words.load(4);
    }

    #[test]
    fn minimum_maximum_and_float_sums_land_in_their_slot() {
        let mut mem = [7u32, 7, 0, 0];
        let words: SharedWords<u32> = SharedWords {
            ptr: mem.as_mut_ptr(),
            base: window::base(mem.as_mut_ptr()),
            len: mem.len(),
            owner: Owner::UNSIMULATED,
            _marker: PhantomData,
        };
        assert_eq!(words.fetch_min(0, 3), 7);
        assert_eq!(words.fetch_min(0, 9), 3);
        assert_eq!(words.fetch_max(1, u32::MAX), 7);
        assert_eq!(words.fetch_max(1, 2), u32::MAX);
        let floats = words.cast::<f32>();
        assert_eq!(floats.fetch_add(2, 1.5), 0.0);
        assert_eq!(floats.fetch_add(2, -0.25), 1.5);
        assert_eq!(
            (mem[0], mem[1], f32::from_bits(mem[2]), mem[3]),
            (3, u32::MAX, 1.25, 0)
        );
    }
}
