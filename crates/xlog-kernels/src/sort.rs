//! Radix sort: keys alone or key–value pairs, ascending or descending, stable, for
//! keys `u32`, `i32`, `u64`, `i64`, `f32`, `f64` and values `u8`, `u16`, `u32`,
//! `i32`, `f32`, `u64`, `i64`, `f64`.
//!
//! - [`sort_keys`], [`sort_pairs`]: in place, in the caller's buffers;
//! - [`sorted`]: a sorted copy, the input left alone;
//! - [`sort_with_indices`]: a sorted copy and the permutation that sorts the input
//!   (`out[i] = keys[perm[i]]`), the input left alone: what `ORDER BY`, a sort-merge
//!   join or a group-by needs to carry other columns along (gather them by the
//!   permutation with [`gather`](crate::gather::gather)).
//!
//! # Algorithm
//!
//! Onesweep (Adinets & Merrill, "Onesweep: A Faster Least Significant Digit Radix
//! Sort for GPUs", 2022): a least-significant-digit sort over 8-bit digits, 4
//! passes for 32-bit keys and 8 for 64-bit ones.
//!
//! 1. **Histogram** (one kernel over the input): the 256-bin histogram of every
//!    pass's digit, each block counting in shared memory, then adding its counts to
//!    the global ones.
//! 2. **Offsets** (one block per pass): the exclusive scan of each pass's
//!    histogram: where each digit's run starts in that pass's output.
//! 3. **One chained scatter per pass**: each block takes a tile of keys
//!    ([`WIDE_TILE`] for 32-bit keys alone, in blocks of [`WIDE_BLOCK`] threads,
//!    [`TILE`] otherwise; block `b` takes tile `b`, so it waits only on blocks the
//!    hardware started before it: blocks start in index order, as CUB's onesweep
//!    assumes), counts each warp's keys of each digit, publishes the tile's 256
//!    digit counts, then ranks the tile's keys by digit, stably (warp by warp, item
//!    by item, lanes with equal digits found with ballots, each group's ranks
//!    handed out by one add to its warp's counter of the digit), storing each key
//!    at its rank in shared memory as soon as it has one, then learns, for each
//!    digit, how many keys of that digit the tiles before it hold by decoupled
//!    look-back over per-digit status words (a flag and a count in one 32-bit
//!    word), and writes each run of equal digits to consecutive output positions,
//!    so the stores coalesce; values follow the same way, loaded into registers
//!    before the keys' stores so that their loads overlap them. Whole tiles
//!    (every one but a launch's last, and that one too when it is whole) run a
//!    copy of the body compiled without end-of-tile checks.
//!
//! Stability: within a tile, keys of equal digit are ranked in input order; tiles
//! are ordered by their position in the input; so each pass is stable, and the
//! whole LSD sort is.
//!
//! | | |
//! | --- | --- |
//! | work | `O(n · passes)`: per pass every key (and value) read once and written once; one more read of the keys for the histograms (and, for inputs longer than [`PORTION`] keys, one more per pass after the first: every pass's digits counted again) |
//! | launches | `1 + 1 + passes`, plus a memset of the status words before each scatter; for inputs longer than [`PORTION`] keys, the histogram and each scatter run once per portion, and each pass after the first adds a memset, a histogram per portion and an offsets launch |
//! | temporary memory | a second buffer for the keys (and one for the values): `n · (size_of K + size_of V)` bytes, plus 1 KiB of status words per tile of a launch (`⌈min(n, PORTION) / tile⌉` tiles: about 3 % of the key buffer for 32-bit keys alone, 6 % for 32-bit keys with values, 3 % for 64-bit keys) and `3 KiB · passes` per portion of histograms and offsets; all from the stream's runtime, under its budget |
//! | stability | stable: equal keys keep their input order, in both orders |
//! | determinism | the output depends only on the input |
//!
//! # Key order
//!
//! Keys are compared through an order-preserving map to unsigned integers
//! (signed integers flip their sign bit; floats flip their sign bit when positive
//! and every bit when negative; descending inverts every bit of that), so:
//!
//! - signed integers sort in numeric order;
//! - floats sort `-∞ < … < -0.0 < +0.0 < … < +∞ < NaN`: `-0.0` before `+0.0`, and
//!   every NaN (of either sign and any payload) last, NaNs equal to each other
//!   (kept in input order);
//! - [`Order::Descending`] is the exact reverse of that order (NaNs first, `+0.0`
//!   before `-0.0`), still stable: equal keys keep their input order, not the
//!   reversed one.
//!
//! # Edge cases
//!
//! Empty inputs launch nothing. Inputs of any length work (the last tile is
//! partial); inputs longer than a portion ([`PORTION`] keys, about 2^30, for
//! either tile) run each pass as one launch per portion (the counts of the
//! look-back have 30 bits), and count each pass's digits again on that pass's
//! input, portion by portion: one more read of the keys per pass.

use xlog::device::atomic::{AtomicAdd, AtomicStore};
use xlog::device::exchange::{self, SharedWords};
use xlog::device::view::{read_chunks, AtomicView};
use xlog::device::warp::Shuffle;
use xlog::prelude::*;

/// Threads per block of the histogram, the offsets and the scatter kernels but
/// that of 32-bit keys alone: one per digit in the per-digit steps.
pub const BLOCK: u32 = 256;
/// Threads per block of the scatter kernel of 32-bit keys alone: the first
/// [`BLOCK`] of them take the per-digit steps.
pub const WIDE_BLOCK: u32 = 384;
/// Blocks per multiprocessor of the histogram kernels (their `min_blocks`): the
/// host launches one wave of them.
pub const HISTOGRAM_BLOCKS_PER_SM: u32 = 6;
/// Bits per digit.
pub const RADIX_BITS: u32 = 8;
/// Digits per pass.
const RADIX: usize = 1 << RADIX_BITS;
/// Keys per thread of a scatter tile of the key–value kernels and of 64-bit keys.
pub const ITEMS: usize = 16;
/// Keys per scatter tile of the key–value kernels and of 64-bit keys: one block's
/// share of a pass.
pub const TILE: usize = BLOCK as usize * ITEMS;
/// Keys per thread of a scatter tile of 32-bit keys alone.
///
/// Wider tiles mean fewer tiles, so fewer look-back waits per key; more threads
/// per multiprocessor hide more of each one's latency. In blocks of [`BLOCK`]
/// threads (two per multiprocessor, 128 registers) 28 keys per thread sorted at
/// 0.977× `cupy.sort` on an H200 (n = 10^8); in blocks of [`WIDE_BLOCK`] (two per
/// multiprocessor, 80 registers: a key leaves its register as soon as it is
/// ranked), 20 keys per thread, 1.079×. With `u32` values, 20 keys per thread
/// gained under 1 % in blocks of 256 (measured before the values were loaded
/// ahead of the keys' stores), so the key–value kernels keep 16; 64-bit keys or
/// values at 24 would not fit [`TILE_BYTES`].
pub const WIDE_ITEMS: usize = 20;
/// Keys per scatter tile of 32-bit keys alone.
pub const WIDE_TILE: usize = WIDE_BLOCK as usize * WIDE_ITEMS;
/// Bytes of the scatter's shared tile: a tile's reordered keys, then its values.
pub const TILE_BYTES: usize = 32 * 1024;

/// Threads per block of the scatter kernel of `key_bytes`-wide keys with
/// `value_bytes`-wide values (0: keys alone).
pub const fn tile_threads(key_bytes: usize, value_bytes: usize) -> u32 {
    if key_bytes <= 4 && value_bytes == 0 {
        WIDE_BLOCK
    } else {
        BLOCK
    }
}

/// Keys per tile of the scatter kernel of `key_bytes`-wide keys with
/// `value_bytes`-wide values (0: keys alone).
pub const fn tile_len(key_bytes: usize, value_bytes: usize) -> usize {
    if key_bytes <= 4 && value_bytes == 0 {
        WIDE_TILE
    } else {
        TILE
    }
}

/// Look-back status word: the tile's inclusive count (it and every tile before it).
const INCLUSIVE: u32 = 1 << 31;
/// Look-back status word: the tile's own count only.
const AGGREGATE: u32 = 1 << 30;
/// Look-back status word: the count bits.
const COUNT: u32 = AGGREGATE - 1;

/// The most keys one scatter launch handles, for either tile: whole tiles (of
/// [`TILE`] and of [`WIDE_TILE`] keys) whose counts fit the 30 count bits of a
/// status word. Longer inputs run each pass as several launches.
pub const PORTION: usize = BOTH_TILES * (COUNT as usize / BOTH_TILES);

/// The least common multiple of the two tile lengths.
const BOTH_TILES: usize = {
    const fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    TILE / gcd(TILE, WIDE_TILE) * WIDE_TILE
};

/// The most keys one scatter launch of `tile`-key tiles handles: [`PORTION`] for
/// both tiles.
pub const fn portion_len(tile: usize) -> usize {
    tile * (PORTION / tile)
}

/// Unsigned bits that order like a key: the digits of a radix sort.
pub trait RadixBits: Shuffle {
    /// Passes of 8-bit digits: 4 for 32-bit keys, 8 for 64-bit ones.
    const PASSES: u32;
    /// These bits, inverted when `descending`.
    fn twiddle(self, descending: bool) -> Self;
    /// Digit `(self >> shift) & 255`.
    fn digit(self, shift: u32) -> u32;
}

macro_rules! radix_bits {
    ($($t:ty, $passes:literal;)*) => {$(
        impl RadixBits for $t {
            const PASSES: u32 = $passes;
            #[inline(always)]
            fn twiddle(self, descending: bool) -> Self {
                if descending { !self } else { self }
            }
            #[inline(always)]
            fn digit(self, shift: u32) -> u32 {
                (self >> shift) as u32 & (RADIX as u32 - 1)
            }
        }
    )*};
}

radix_bits! {
    u32, 4;
    u64, 8;
}

/// Key types of the sort: the order-preserving map of their bits to unsigned
/// integers (see the [module docs](self) for the float order).
pub trait RadixKey: AtomicAdd + Shuffle {
    /// The unsigned integer of the same width.
    type Bits: RadixBits;
    /// Some value (the key read for the positions past the end of a partial tile).
    const ZERO: Self;
    /// The key's bits, unchanged.
    fn to_raw(self) -> Self::Bits;
    /// The key of bits `b`.
    fn from_raw(b: Self::Bits) -> Self;
    /// Bits that compare, as unsigned integers, in the key order.
    fn ordered(self) -> Self::Bits;
    /// Key pairs `first`, `first + stride`, … (`U` of them; pair `c` is keys
    /// `[2c, 2c + 2)`), each one vector load: [`read_chunks`] of pairs, `None`
    /// unless all `U` lie inside `keys`.
    fn read_pairs<const U: usize>(
        keys: &[Self],
        first: usize,
        stride: usize,
    ) -> Option<[[Self; 2]; U]>;
}

macro_rules! radix_key {
    ($($t:ty, $bits:ty, |$k:ident| $ordered:expr, $to:expr, $from:expr;)*) => {$(
        impl RadixKey for $t {
            type Bits = $bits;
            const ZERO: Self = 0 as $t;
            #[inline(always)]
            fn to_raw(self) -> $bits {
                let $k = self;
                $to
            }
            #[inline(always)]
            fn from_raw(b: $bits) -> Self {
                $from(b)
            }
            #[inline(always)]
            fn ordered(self) -> $bits {
                let $k = self;
                $ordered
            }
            #[inline(always)]
            fn read_pairs<const U: usize>(
                keys: &[Self],
                first: usize,
                stride: usize,
            ) -> Option<[[Self; 2]; U]> {
                read_chunks::<$t, 2, U>(keys, first, stride)
            }
        }
    )*};
}

const SIGN32: u32 = 1 << 31;
const SIGN64: u64 = 1 << 63;

radix_key! {
    u32, u32, |k| k, k, |b| b;
    u64, u64, |k| k, k, |b| b;
    i32, u32, |k| k as u32 ^ SIGN32, k as u32, |b: u32| b as i32;
    i64, u64, |k| k as u64 ^ SIGN64, k as u64, |b: u64| b as i64;
    f32, u32, |k| {
        let b = k.to_bits();
        if k.is_nan() { u32::MAX } else if b & SIGN32 != 0 { !b } else { b | SIGN32 }
    }, k.to_bits(), f32::from_bits;
    f64, u64, |k| {
        let b = k.to_bits();
        if k.is_nan() { u64::MAX } else if b & SIGN64 != 0 { !b } else { b | SIGN64 }
    }, k.to_bits(), f64::from_bits;
}

/// Value types of the sort: moved with the keys, through the shared tile in a slot
/// of 32 or 64 bits.
pub trait RadixValue: AtomicStore {
    /// The shared tile's slot a value travels in: `u32` for values of up to 4
    /// bytes, `u64` for 8-byte ones.
    type Slot: Shuffle;
    /// The value in its slot.
    fn to_slot(self) -> Self::Slot;
    /// The value of slot `s`.
    fn from_slot(s: Self::Slot) -> Self;
    /// Index `i` as a value, `i as V` (the first pass of an argsort). The host asks
    /// this only of `u32` and `u64` values, and refuses inputs whose positions they
    /// cannot hold.
    fn from_index(i: u64) -> Self;
}

// Integers widen into their slot; floats travel as their bits.
macro_rules! radix_value {
    ($($v:ty: $slot:ty, |$x:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl RadixValue for $v {
            type Slot = $slot;
            #[inline(always)]
            fn to_slot(self) -> $slot {
                let $x = self;
                $to
            }
            #[inline(always)]
            fn from_slot($b: $slot) -> Self {
                $from
            }
            #[inline(always)]
            fn from_index(i: u64) -> Self {
                i as $v
            }
        }
    )*};
}

radix_value! {
    u8: u32, |v| v as u32, |b| b as u8;
    u16: u32, |v| v as u32, |b| b as u16;
    u32: u32, |v| v, |b| b;
    i32: u32, |v| v as u32, |b| b as i32;
    f32: u32, |v| v.to_bits(), |b| f32::from_bits(b);
    u64: u64, |v| v, |b| b;
    i64: u64, |v| v as u64, |b| b as i64;
    f64: u64, |v| v.to_bits(), |b| f64::from_bits(b);
}

/// The scatter tile being reordered, as 32-bit or 64-bit slots: keys, then
/// values, in phases separated by barriers.
#[inline(always)]
fn words_of<T: xlog::device::warp::Shuffle>() -> SharedWords<T> {
    xlog::device::static_shared!(XLOG_SORT_SHARED: [u64; TILE_BYTES / 8])
        .words()
        .cast::<T>()
}

/// Warps per block of the widest scatter kernel.
const MAX_WARPS: usize = WIDE_BLOCK as usize / 32;

/// The scatter's per-warp digit counters: counter `d` of warp `w` at `w · 256 + d`.
#[inline(always)]
fn sort_counters() -> SharedWords<u32> {
    xlog::device::static_shared!(XLOG_SORT_COUNTERS: [u32; MAX_WARPS * RADIX]).words()
}

/// The per-pass digit histograms of `keys`, added into `hist[pass · 256 + digit]`:
/// each block counts a grid-stride share in shared memory, then adds its non-zero
/// counts with one global atomic each.
#[inline(always)]
fn histogram<K: RadixKey>(keys: &[K], hist: &AtomicView<'_, u32>, descending: bool) {
    let passes = K::Bits::PASSES as usize;
    // Its own small array (not the scatter's 32 KiB): more blocks fit an SM.
    let counters = xlog::device::static_shared!(XLOG_SORT_COUNTS: [u32; 8 * RADIX]).words();
    let t = thread::thread_idx().x as usize % BLOCK as usize;
    for p in 0..passes {
        counters.store(p * RADIX + t, 0);
    }
    barrier::sync_threads();
    let count = |k: K| {
        let b = k.ordered().twiddle(descending);
        for p in 0..passes {
            counters.fetch_add(p * RADIX + b.digit(p as u32 * RADIX_BITS) as usize, 1);
        }
    };
    // Keys in pairs (one 8-byte load for 32-bit keys, 16 bytes for 64-bit ones),
    // four pairs a grid stride apart per step, all loaded before any is counted:
    // the bytes in flight are what keeps the memory busy (one key at a time, the
    // u32 histogram of 10^8 keys took 384 µs, about 1 TB/s; four keys, 256 µs).
    let (n, stride) = (keys.len(), thread::total_threads());
    let first = thread::linear_index();
    let mut c = first;
    while let Some(pairs) = K::read_pairs::<4>(keys, c, stride) {
        pairs.into_iter().flatten().for_each(count);
        c += 4 * stride;
    }
    while let Some([pair]) = K::read_pairs::<1>(keys, c, stride) {
        pair.into_iter().for_each(count);
        c += stride;
    }
    // An odd length leaves its last key out of every pair.
    if n % 2 == 1 && first == 0 {
        count(keys[n - 1]);
    }
    barrier::sync_threads();
    for p in 0..passes {
        let c = counters.load(p * RADIX + t);
        if c != 0 {
            hist.fetch_add(p * RADIX + t, c);
        }
    }
}

/// Publishes tile `tile`'s `count` of digit `d`: its inclusive count when it is the
/// first tile, else its own count, for the tiles after it to look back on.
#[inline(always)]
fn publish(status: &AtomicView<'_, u32>, tile: usize, d: usize, count: u32) {
    let flag = if tile == 0 { INCLUSIVE } else { AGGREGATE };
    status.store(tile * RADIX + d, flag | count);
}

/// Predecessor tiles one look-back step reads at once.
const WINDOW: usize = 4;
const _: () = assert!(WINDOW == 4, "look_back writes out 4 window slots");

/// The look-back of digit `d` for tile `tile`, after [`publish`]: walks back over
/// the tiles before it until one has published its inclusive count, publishes its
/// own inclusive count, and returns how many keys of digit `d` the tiles before it
/// hold.
///
/// Each step loads the status words of the next [`WINDOW`] tiles back at once and
/// consumes them nearest first, up to the first inclusive count, or up to the first
/// tile that has published nothing yet (the next step starts there): a walk past
/// `m` tiles that have published only their own counts costs `m / WINDOW` memory
/// round trips instead of `m`. Measured together with the reordering of the tile
/// before the look-back, a window of four took a u32 pass from 947 to 934 µs in one
/// run; a window of eight (same reordering, more registers) took 986 µs.
#[inline(always)]
fn look_back(status: &AtomicView<'_, u32>, tile: usize, d: usize, count: u32) -> u32 {
    let word = |k: usize| k * RADIX + d;
    if tile == 0 {
        return 0;
    }
    let mut before = 0u32;
    // Tiles `k..tile` are counted in `before`.
    let mut k = tile;
    'walk: loop {
        let n = k.min(WINDOW);
        // Written out slot by slot so the window stays in registers.
        let mut window = [0u32; WINDOW];
        each_item!(j in 0 1 2 3 => {
            if j < n {
                window[j] = status.load(word(k - 1 - j));
            }
        });
        each_item!(j in 0 1 2 3 => {
            if j < n {
                let w = window[j];
                if w & (INCLUSIVE | AGGREGATE) == 0 {
                    // Tile `k - 1 - j` has published nothing yet: poll again from it.
                    k -= j;
                    continue 'walk;
                }
                before = before.wrapping_add(w & COUNT);
                if w & INCLUSIVE != 0 || k - 1 - j == 0 {
                    break 'walk;
                }
            }
        });
        k -= n;
    }
    status.store(word(tile), INCLUSIVE | before.wrapping_add(count));
    before
}

/// Values moved with the keys: the input values, or the keys' input positions.
pub enum Values<'a, 'v, V: AtomicStore> {
    /// Keys only.
    None,
    /// `vals_in[i]` moves with key `i`.
    Given(&'a [V], &'a AtomicView<'v, V>),
    /// Key `i` carries `V::from_index(base + i)` (the first pass of an argsort).
    Indices(u64, &'a AtomicView<'v, V>),
}

/// One tile of one pass of the onesweep scatter: the body of every scatter kernel
/// (one block of exactly `THREADS` threads per tile, every thread calling it: the
/// first [`BLOCK`] of them one thread per digit, whole warps; other block shapes
/// give wrong output or hang, never undefined behaviour).
///
/// `keys_in` is this launch's portion of the input; `offsets[d]` the output
/// position of the first key of digit `d` of this portion; `status` the zeroed
/// look-back words (`256 · tiles`: one word per tile and
/// digit). Writes each key (and value) to `offsets[d] + keys of digit d before it`
/// in `keys_out` (and `values`' output).
///
/// Each thread ranks `ITEMS` keys: tiles of `THREADS · ITEMS` keys. `THREADS` is
/// a multiple of 32 from [`BLOCK`] to [`WIDE_BLOCK`]; `ITEMS` is an even number from 16 to 32 whose tile of keys,
/// and of values, fits [`TILE_BYTES`] (both checked at compile time); the host
/// sizes its launches and status words with [`tile_threads`] and [`tile_len`] of
/// the same key and value widths.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn onesweep<K: RadixKey, V: RadixValue, const THREADS: u32, const ITEMS: usize>(
    keys_in: &[K],
    offsets: &[u64],
    keys_out: &AtomicView<'_, K>,
    status: &AtomicView<'_, u32>,
    values: Values<'_, '_, V>,
    shift: u32,
    descending: bool,
) {
    // Block `b` takes tile `b`: it waits only on blocks with smaller indices, which
    // the hardware starts first. Soundness does not rest on the numbering: every
    // write is an atomic store.
    let tile = thread::block_idx().x as usize;
    let pass = TileArgs {
        keys_in,
        offsets,
        keys_out,
        status,
        values,
        shift,
        descending,
        tile,
    };
    // Every tile but a launch's last is full: its body is compiled without the
    // checks against the tile's end.
    let len = THREADS as usize * ITEMS;
    if keys_in.len().saturating_sub(tile * len) >= len {
        pass.tile::<true, THREADS, ITEMS>();
    } else {
        pass.tile::<false, THREADS, ITEMS>();
    }
}

/// The arguments of one scatter tile (see [`onesweep`]).
struct TileArgs<'a, 'v, K: RadixKey, V: RadixValue> {
    keys_in: &'a [K],
    offsets: &'a [u64],
    keys_out: &'a AtomicView<'v, K>,
    status: &'a AtomicView<'v, u32>,
    values: Values<'a, 'v, V>,
    shift: u32,
    descending: bool,
    tile: usize,
}

impl<K: RadixKey, V: RadixValue> TileArgs<'_, '_, K, V> {
    /// The tile's ranking, look-back and scatter; `FULL`: the tile is whole,
    /// `THREADS · ITEMS` keys (the caller checked).
    #[inline(always)]
    fn tile<const FULL: bool, const THREADS: u32, const ITEMS: usize>(self) {
        const {
            assert!(
                ITEMS % 2 == 0 && ITEMS <= 32,
                "each_item! ranks up to 32 items, in pairs"
            )
        };
        const {
            assert!(
                THREADS as usize * ITEMS * core::mem::size_of::<K::Bits>() <= TILE_BYTES
                    && THREADS as usize * ITEMS * core::mem::size_of::<V::Slot>() <= TILE_BYTES,
                "a tile's keys and values fit the shared tile"
            )
        };
        const {
            assert!(
                THREADS >= BLOCK && THREADS % 32 == 0 && THREADS as usize <= MAX_WARPS * 32,
                "a digit thread per digit, whole warps, each warp's counters"
            )
        };
        let size = THREADS as usize * ITEMS;
        let warps = THREADS / 32;
        let TileArgs {
            keys_in,
            offsets,
            keys_out,
            status,
            values,
            shift,
            descending,
            tile,
        } = self;
        // In-tile positions (items, ranks, slots, lanes, warps) are `u32`: a tile
        // holds at most 8192 keys, and 32-bit arithmetic takes half the registers
        // and instructions of `usize` (64-bit on the GPU). Only positions in the
        // input and output are 64-bit.
        let items = ITEMS as u32;
        // The kernels run in blocks of `THREADS` threads (their `block` attribute);
        // the remainder is a no-op that lets the compiler bound every index below
        // by the tile. Threads `t < BLOCK` also own digit `t` in the per-digit
        // steps.
        let t = thread::thread_idx().x % THREADS;
        let digit_thread = t < BLOCK;
        let (lane, warp) = (t % 32, t / 32);
        let start = tile * size;
        let src = &keys_in[start.min(keys_in.len())..];
        let (src, valid) = if FULL {
            (&src[..size], size as u32)
        } else {
            (src, src.len().min(size) as u32)
        };
        let digit = |k: K, i: u32| -> u32 {
            if FULL || i < valid {
                k.ordered().twiddle(descending).digit(shift)
            } else {
                // Past the end: after every key, so ranked into [valid, size).
                RADIX as u32 - 1
            }
        };
        // Counter `d` of warp `w`: its index in the counters.
        let counter = |w: u32, d: u32| (w * RADIX as u32 + d) as usize;

        // Warp `w` holds tile items [w·32·ITEMS, (w+1)·32·ITEMS), item `j` of lane
        // `l` at `w·32·ITEMS + 32·j + l`; ranking item by item, lane by lane,
        // follows the input order, which makes the pass stable.
        let counters = sort_counters();
        // `warps · 256` counters, a multiple of `THREADS`.
        let mut c = t;
        while c < warps * RADIX as u32 {
            counters.store(c as usize, 0);
            c += THREADS;
        }
        let first = warp * 32 * items + lane;
        let item = |j: usize| first + 32 * j as u32;
        let mut keys = [K::ZERO; ITEMS];
        each_item!(j < ITEMS => {
            let i = item(j);
            if FULL || i < valid {
                keys[j] = src[i as usize];
            }
        });
        barrier::sync_threads();
        // Count: each warp's keys of each digit (the positions past the end of a
        // partial tile count as digit 255, as they rank).
        each_item!(j < ITEMS => {
            counters.fetch_add(counter(warp, digit(keys[j], item(j))), 1);
        });
        barrier::sync_threads();

        // Digit thread `t` owns digit `t`: its count in the tile, published before
        // the tile ranks its keys, so the tiles after this one wait less; then the
        // tile's first rank of it, and each warp's (the other threads count 0,
        // after every digit in the scan).
        let mut total = 0u32;
        if digit_thread {
            for w in 0..warps {
                total = total.wrapping_add(counters.load(counter(w, t)));
            }
            publish(status, tile, t as usize, total);
        }
        let (digit_start, _) = collective::block_exclusive_scan(total, 0u32, u32::wrapping_add);
        if digit_thread {
            let mut run = digit_start;
            for w in 0..warps {
                let c = counters.load(counter(w, t));
                counters.store(counter(w, t), run);
                run = run.wrapping_add(c);
            }
        }
        barrier::sync_threads();

        // Rank each key in the tile (its warp's next rank of its digit, handed out
        // by a counter add per group of equal digits) and reorder the tile by rank
        // at once, so that no key waits in a register for the others' ranks; the
        // look-back follows, so the keys need no registers while it waits. Items
        // go in pairs: the pair's ballots first (independent of each other, so
        // they overlap), then its counter adds, item by item (in fours, the
        // ballots took more registers: spills at 384 threads). A rank is below
        // the tile's length by construction; the mask only lets the compiler see
        // it.
        let slot = |rank: u32| (rank & (size.next_power_of_two() as u32 - 1)) as usize;
        let slots = words_of::<K::Bits>();
        // The digits again, from keys the compiler cannot tell from the counted
        // ones: kept from the count instead, the digits and their counters'
        // addresses took two registers per key across the scan (spills at
        // 384 threads).
        each_item!(j < ITEMS => {
            keys[j] = exchange::fresh(keys[j]);
        });
        let below = exchange::lanes_below();
        let mut ranks = [0u32; ITEMS];
        let mut peers = [0u32; 2];
        each_item!(g in 0 2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 => {
            if g < ITEMS {
                each_item!(k in 0 1 => {
                    let j = g + k;
                    let d = digit(keys[j], item(j));
                    peers[k] = exchange::full_warp_match_bits::<RADIX_BITS>(d);
                });
                each_item!(k in 0 1 => {
                    let j = g + k;
                    let peers = peers[k];
                    let d = digit(keys[j], item(j));
                    // Any lane of the group may add its count: the highest is one
                    // instruction away.
                    let leader = 31 - peers.leading_zeros();
                    let mut old = 0;
                    if lane == leader {
                        old = counters.fetch_add(counter(warp, d), peers.count_ones());
                    }
                    ranks[j] =
                        exchange::full_warp_shuffle_from(old, leader) + (peers & below).count_ones();
                    if FULL || item(j) < valid {
                        slots.store(slot(ranks[j]), keys[j].to_raw());
                    }
                });
            }
        });
        // Where digit `d`'s run of this tile starts in the output, less the tile's
        // first rank of it: digit thread `t` writes entry `t`, every thread reads
        // any.
        let base = xlog::device::static_shared!(XLOG_SORT_BASE: [u64; RADIX]).words();
        if digit_thread {
            let before = look_back(status, tile, t as usize, total);
            base.store(
                t as usize,
                offsets[t as usize]
                    .wrapping_add(before as u64)
                    .wrapping_sub(digit_start as u64),
            );
        }
        // The barrier separates the entries' writes from their reads, and the
        // reordered tile's.
        barrier::sync_threads();
        // The values, loaded into registers now (in input order, as the keys
        // were), so their loads are in flight while the keys are stored, instead
        // of starting after the last key store. On an H200 (run 27) this took
        // i32 keys with u32 indices from 17.4 to 24.7 Gkeys/s and with u64
        // indices from 16.1 to 20.0; loading them before the look-back instead
        // was a little slower (24.1 and 19.9).
        let values = match values {
            Values::None => None,
            Values::Given(v, out) => {
                let v = &v[start.min(v.len())..];
                Some((out, Some(if FULL { &v[..size] } else { v }), 0))
            }
            Values::Indices(b, out) => Some((out, None, b + start as u64)),
        };
        let mut vals = [V::from_index(0); ITEMS];
        if let Some((_, given, index_base)) = values {
            each_item!(j < ITEMS => {
                let i = item(j);
                if FULL || i < valid {
                    vals[j] = match given {
                        Some(v) => v[i as usize],
                        None => V::from_index(index_base + i as u64),
                    };
                }
            });
        }
        // Slot `k·THREADS + t` of the reordered tile: this thread's `k`-th key.
        let owned = |k: usize| k as u32 * THREADS + t;
        // Its output position: the run of its digit starts at `base[d]`.
        let position = |d: u32, i: u32| base.load(d as usize).wrapping_add(i as u64) as usize;
        let mut digits = [0u32; ITEMS];
        each_item!(k < ITEMS => {
            let i = owned(k);
            if FULL || i < valid {
                let key = K::from_raw(slots.load(i as usize));
                digits[k] = digit(key, i);
                keys_out.store(position(digits[k], i), key);
            }
        });
        let Some((vals_out, _, _)) = values else {
            return;
        };
        barrier::sync_threads();
        let slots = words_of::<V::Slot>();
        each_item!(j < ITEMS => {
            if FULL || item(j) < valid {
                slots.store(slot(ranks[j]), vals[j].to_slot());
            }
        });
        barrier::sync_threads();
        each_item!(k < ITEMS => {
            let i = owned(k);
            if FULL || i < valid {
                vals_out.store(position(digits[k], i), V::from_slot(slots.load(i as usize)));
            }
        });
    }
}

/// `offsets[(q·passes + p)·256 + d]` = where digit `d` of pass `p` starts for
/// portion `q`: the keys of smaller digits in the whole input plus the keys of
/// digit `d` in earlier portions, from `hist` in the same layout. One block of 256
/// threads per pass (`passes` blocks).
#[xlog_kernel(read(hist), atomic(offsets), block = 256)]
pub fn sort_offsets(hist: &[u32], offsets: &mut [u64], passes: u32) {
    let p = thread::block_idx().x as usize;
    let d = thread::thread_idx().x as usize;
    let passes = passes as usize;
    let portions = hist.len() / (passes * RADIX);
    let at = |q: usize| (q * passes + p) * RADIX + d;
    let mut total = 0u64;
    for q in 0..portions {
        total += hist[at(q)] as u64;
    }
    let (start, _) = collective::block_exclusive_scan(total, 0u64, u64::wrapping_add);
    let mut run = start;
    for q in 0..portions {
        offsets.store(at(q), run);
        run += hist[at(q)] as u64;
    }
}

/// Adds the per-pass digit histograms of `keys` into `hist` (`passes · 256`
/// counts): the first step of a sort.
// `min_blocks` is HISTOGRAM_BLOCKS_PER_SM.
#[xlog_kernel(
    read(keys), atomic(hist), block = 256, min_blocks = 6,
    for K in [u32, i32, f32, u64, i64, f64]
)]
pub fn sort_histogram<K: RadixKey>(keys: &[K], hist: &mut [u32], descending: u32) {
    histogram::<K>(keys, hist, descending != 0);
}

/// One onesweep pass over 32-bit keys alone, in tiles of [`WIDE_TILE`] keys: one
/// block of [`WIDE_BLOCK`] threads per tile, see [`onesweep`], with its offsets
/// from `offsets[at..]` (the pass's and portion's run of [`sort_offsets`]'
/// output).
// `block` is WIDE_BLOCK.
#[xlog_kernel(
    read(keys_in, offsets), atomic(keys_out, status), block = 384, min_blocks = 2,
    for K in [u32, i32, f32]
)]
pub fn sort_onesweep<K: RadixKey>(
    keys_in: &[K],
    offsets: &[u64],
    keys_out: &mut [K],
    status: &mut [u32],
    shift: u32,
    descending: u32,
    at: u32,
) {
    onesweep::<K, u32, WIDE_BLOCK, WIDE_ITEMS>(
        keys_in,
        &offsets[at as usize..],
        keys_out,
        status,
        Values::None,
        shift,
        descending != 0,
    );
}

/// One onesweep pass over 64-bit keys alone, in tiles of [`TILE`] keys: one block
/// per tile, see [`onesweep`], with its offsets from `offsets[at..]`.
// Three blocks per multiprocessor (80 registers, a few spilled) took i64 keys
// from 0.974× to 1.059× `cupy.sort` on an H200 (n = 10^8), against two (122).
#[xlog_kernel(
    read(keys_in, offsets), atomic(keys_out, status), block = 256, min_blocks = 3,
    for K in [u64, i64, f64]
)]
pub fn sort_onesweep64<K: RadixKey>(
    keys_in: &[K],
    offsets: &[u64],
    keys_out: &mut [K],
    status: &mut [u32],
    shift: u32,
    descending: u32,
    at: u32,
) {
    onesweep::<K, u32, BLOCK, ITEMS>(
        keys_in,
        &offsets[at as usize..],
        keys_out,
        status,
        Values::None,
        shift,
        descending != 0,
    );
}

/// One onesweep pass over keys with values, in tiles of [`TILE`] keys: `vals_in`
/// move with their keys, or (`indices` = 1) the keys' input positions counted
/// from `index_base`; see [`onesweep`], with its offsets from `offsets[at..]`.
#[xlog_kernel(
    read(keys_in, vals_in, offsets), atomic(keys_out, vals_out, status), block = 256, min_blocks = 2,
    for K in [u32, i32, f32, u64, i64, f64], for V in [u8, u16, u32, i32, f32, u64, i64, f64]
)]
#[allow(clippy::too_many_arguments)]
pub fn sort_onesweep_pairs<K: RadixKey, V: RadixValue>(
    keys_in: &[K],
    vals_in: &[V],
    offsets: &[u64],
    keys_out: &mut [K],
    vals_out: &mut [V],
    status: &mut [u32],
    shift: u32,
    descending: u32,
    indices: u32,
    index_base: u64,
    at: u32,
) {
    let values = if indices != 0 {
        Values::Indices(index_base, vals_out)
    } else {
        Values::Given(vals_in, vals_out)
    };
    onesweep::<K, V, BLOCK, ITEMS>(
        keys_in,
        &offsets[at as usize..],
        keys_out,
        status,
        values,
        shift,
        descending != 0,
    );
}

#[cfg(not(target_arch = "nvptx64"))]
mod host;

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn asc<K: RadixKey>(k: K) -> u64
    where
        K::Bits: Into<u64>,
    {
        k.ordered().into()
    }

    #[test]
    fn float_order_puts_negative_zero_first_and_nans_last() {
        let v = [
            f32::NEG_INFINITY,
            -1.5,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            2.0,
            f32::INFINITY,
        ];
        for w in v.windows(2) {
            assert!(asc(w[0]) < asc(w[1]), "{} before {}", w[0], w[1]);
        }
        assert_eq!(asc(f32::NAN), asc(-f32::NAN));
        assert!(asc(f32::NAN) > asc(f32::INFINITY));
        assert_eq!(asc(f64::from_bits(0xfff8_0000_0000_0001)), u64::MAX);
        assert!(asc(-0.0f64) < asc(0.0f64));
    }

    #[test]
    fn integer_order_is_numeric() {
        let v = [i64::MIN, -5, -1, 0, 1, i64::MAX];
        for w in v.windows(2) {
            assert!(asc(w[0]) < asc(w[1]));
        }
        assert!(asc(i32::MIN) < asc(-1i32) && asc(-1i32) < asc(0i32));
        assert_eq!(0xdead_beefu32.twiddle(true), !0xdead_beefu32);
        assert_eq!(0x1234_5678u32.digit(8), 0x56);
        assert_eq!(0x0102_0304_0506_0708u64.digit(56), 1);
    }

    #[test]
    fn portions_are_whole_tiles_whose_counts_fit_the_status_words() {
        assert_eq!(PORTION, portion_len(TILE));
        // Both tiles divide it: one portion length for every kernel.
        assert_eq!(portion_len(WIDE_TILE), PORTION);
        for tile in [TILE, WIDE_TILE] {
            let portion = portion_len(tile);
            assert_eq!(portion % tile, 0);
            assert!(portion as u32 <= COUNT);
        }
        // The longest such length.
        assert_eq!(BOTH_TILES % TILE + BOTH_TILES % WIDE_TILE, 0);
        assert!(PORTION + BOTH_TILES > COUNT as usize);
    }

    #[test]
    fn every_value_travels_through_its_slot_unchanged() {
        fn round_trip<V: RadixValue + PartialEq + core::fmt::Debug>(v: V) {
            assert_eq!(V::from_slot(v.to_slot()), v);
        }
        round_trip(0xabu8);
        round_trip(0xabcdu16);
        round_trip(-5i32);
        round_trip(-0.0f32);
        // A NaN keeps its payload.
        let nan = f32::from_bits(0x7fc0_1234);
        assert_eq!(f32::from_slot(nan.to_slot()).to_bits(), 0x7fc0_1234);
        round_trip(u64::MAX - 3);
        round_trip(i64::MIN);
        round_trip(-1.5f64);
        assert_eq!(u32::from_index(7), 7);
        assert_eq!(u64::from_index(1 << 40), 1 << 40);
    }

    #[test]
    fn only_32_bit_keys_alone_take_wide_tiles_and_every_tile_fits_shared_memory() {
        assert_eq!(tile_len(4, 0), WIDE_TILE);
        assert_eq!(tile_threads(4, 0), WIDE_BLOCK);
        for (key, value) in [(8, 0), (4, 4), (4, 8), (8, 4), (8, 8)] {
            assert_eq!(
                tile_len(key, value),
                TILE,
                "{key}-byte keys, {value}-byte values"
            );
            assert_eq!(tile_threads(key, value), BLOCK);
        }
        for (key, value) in [(4, 0), (8, 0), (4, 4), (4, 8), (8, 4), (8, 8)] {
            let tile = tile_len(key, value);
            assert!(tile * key.max(value) <= TILE_BYTES);
        }
    }
}
