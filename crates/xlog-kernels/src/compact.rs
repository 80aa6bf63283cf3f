//! Stream compaction in order: select by flags ([`select_flagged`],
//! [`select_flagged_into`]), stable partition ([`partition_flagged`]) and the runs
//! of a sorted input ([`unique_counts`]: unique values, run lengths and their
//! count), for `u8`, `u16`, `i8`, `i16`, `u32`, `i32`, `u64`, `i64`, `f32`,
//! `f64`. Each kernel is generic over the element type, an entry point per type
//! (`unique__u32`); the selection is one kernel per width (`select_by_flags` for
//! 32-bit elements, `select_by_flags64` for 64-bit ones, `select_by_flags_narrow`
//! for 8- and 16-bit ones), which differ in vector width and resident blocks.
//! 32- and 64-bit elements are loaded as 16-byte vectors; 8- and 16-bit ones one
//! by one, and staged in shared memory as 32-bit words.
//!
//! # Algorithm
//!
//! One pass with decoupled look-back (CUB's `DeviceSelect` shape). A tile is
//! [`BLOCK`] threads × [`ITEMS`] consecutive elements per thread: each thread
//! decides which of its elements it keeps, the block scans the threads' counts
//! ([`collective::block_exclusive_scan`]), and the tile learns how many elements
//! every earlier tile kept from the look-back
//! ([`Ticket::exclusive_count`](xlog::device::lookback::Ticket::exclusive_count):
//! counts travel packed with their status, one word per tile).
//! A selection then writes its kept elements in two phases: each thread places
//! them in a staging array in shared memory at their positions within the tile,
//! and after a barrier the block copies the staged run out, consecutive threads
//! writing consecutive elements (32 neighbours per warp store, where writing each
//! thread's elements straight to their final positions scatters a warp store over
//! 32 places). The runs of [`unique_counts`] go out the same way: each head's
//! position is staged, and the block writes the tile's run starts and values
//! (read back from the input at those positions, which the block has just
//! loaded) consecutively, and each run's length from the next staged start; the
//! length of a tile's last run, which ends in a later tile, is left to a second,
//! small kernel (one thread a tile) that subtracts its start from the next. So
//! [`unique_counts`] reads its input once. A partition writes each element at its final position
//! directly. The last tile writes the total into a one-element
//! `u64` count on the device, which later kernels on the stream can read.
//!
//! A stable partition also places each rejected element, after all the kept ones,
//! at `kept + (its rank among the rejected)`; it learns `kept` first from a
//! counting pass over the flags (one more launch, one byte read per element).
//!
//! | | |
//! | --- | --- |
//! | work | `O(n)`: every element and flag read once, every output element written once |
//! | launches | select into a buffer: 1; [`select_flagged`]: 2 (count, then select), with a host synchronisation between them to size the output; [`partition_flagged`]: 2, no synchronisation; [`unique_counts`]: 2 (the runs, then the lengths of each tile's last run), then one host synchronisation to read the number of runs back |
//! | temporary memory | the look-back status, `8 · (1 + 4 · tiles)` bytes (about 0.2 % of 4-byte input), from the stream's runtime (its budget applies); [`unique_counts`] also one word per tile, and sizes its outputs for one run per element (`size_of::<T>() + 16` bytes an element), of which it keeps the first `runs`: the rest stays allocated with them until they drop; a selection's block also holds a 32 KiB staging array in shared memory |
//! | stability | kept elements keep their input order; a partition's rejected elements keep theirs too |
//!
//! # Edge cases
//!
//! An empty input gives empty outputs and a count of 0. A flag is any byte: 0
//! rejects, anything else keeps (a `bool` tensor's bytes work as they are). Runs
//! compare with `!=`: for floats `-0.0` and `+0.0` are one run and every NaN is a
//! run of its own.

use xlog::device::atomic::AtomicStore;
use xlog::device::exchange::SharedWords;
use xlog::device::lookback::{self, LookBack};
use xlog::device::vector::Vector;
use xlog::device::view::{self, AtomicView};
use xlog::device::warp::Shuffle;
use xlog::prelude::*;

/// Threads per block of the compaction kernels.
pub const BLOCK: u32 = 256;
/// Elements per thread of a tile (a tile keeps at most `BLOCK · ITEMS` elements,
/// and a thread's keep mask is one `u32`).
pub const ITEMS: usize = 16;

/// One block's share of an in-order compaction of `len` elements: while tiles
/// remain, take one, decide `keep(i)` for this thread's [`ITEMS`] consecutive
/// elements, rank them against the whole input, and call `emit(i, rank, kept)` for
/// each: `rank` is the element's position among the kept elements when `kept`, its
/// position among the rejected ones otherwise. The last tile stores the number of
/// kept elements in `count[0]`.
///
/// Before its look-back, each thread calls `ahead(i)` once per tile with the first
/// element of its chunk [`PREFETCH_TILES`](crate::PREFETCH_TILES) tiles later (it
/// may lie past the end): prefetch there what `keep` and `emit` will read (with
/// [`prefetch_l2`](xlog::device::view::prefetch_l2)), or do nothing.
///
/// The body of the partition and run kernels (selections write through a staging
/// array instead, in the private `select_tiles`); every thread of the block must
/// call it (it holds block collectives). `status` needs `lookback::status_words(⌈len /
/// (blockDim.x · ITEMS)⌉)` words.
#[inline(always)]
pub fn compact_tiles(
    len: usize,
    status: &mut LookBack<'_>,
    count: &AtomicView<'_, u64>,
    keep: impl Fn(usize) -> bool,
    ahead: impl Fn(usize),
    mut emit: impl FnMut(usize, usize, bool),
) {
    let tiles = status.tiles();
    while let Some(tile) = status.next_tile() {
        let k = tile.index();
        // Outputs go through atomic views at computed ranks, so no chunk witness
        // is needed; the flags are read while a ticket's owner check is in flight.
        let start = tile.chunk_index().saturating_mul(ITEMS);
        let mut mask = 0u32;
        for j in 0..ITEMS {
            let i = start + j;
            if i < len && keep(i) {
                mask |= 1 << j;
            }
        }
        ahead(crate::prefetch_start(tile.chunk_index(), ITEMS));
        // A tile keeps at most `blockDim.x · ITEMS` elements: a `u32` count.
        let mine = mask.count_ones();
        let (before, total) = collective::block_exclusive_scan(mine, 0, u32::wrapping_add);
        let prefix = tile.exclusive_count(total as u64);
        let total = total as u64;
        let mut kept = (prefix + before as u64) as usize;
        for j in 0..ITEMS {
            let i = start + j;
            if i >= len {
                break;
            }
            if mask & (1 << j) != 0 {
                emit(i, kept, true);
                kept += 1;
            } else {
                emit(i, i - kept, false);
            }
        }
        if k + 1 == tiles && thread::thread_idx().x == 0 && !count.is_empty() {
            count.store(0, prefix + total);
        }
    }
}

const _: () = assert!(ITEMS == 16, "each_item! writes out 16 items");

/// The block's staging array of [`select_tiles`]: one tile of kept elements, as
/// slots of up to 64 bits.
#[inline(always)]
fn staging<T: Shuffle>() -> SharedWords<T> {
    xlog::device::static_shared!(XLOG_SELECT_STAGING: [u64; BLOCK as usize * ITEMS])
        .words()
        .cast::<T>()
}

/// One block's share of a selection by flags: while tiles remain, take one, load
/// this thread's [`ITEMS`] consecutive elements (as vectors of `V`) and flags,
/// rank the kept ones against the whole input, and write them out in two phases:
/// into the block's staging array at their places within the tile, then, after a
/// barrier, from there to `out` with consecutive threads writing consecutive
/// elements (one warp store covers 32 neighbours instead of 32 scattered ones).
/// The last tile stores the number of kept elements in `count[0]`. `fill` stands
/// for the elements past the end (never kept).
#[inline(always)]
fn select_tiles<T: Compacted>(
    x: &[T],
    flags: &[u8],
    out: &AtomicView<'_, T>,
    count: &AtomicView<'_, u64>,
    status: &mut LookBack<'_>,
    fill: T,
) {
    let len = x.len();
    let tiles = status.tiles();
    let staged = staging::<T::Staged>();
    let t = thread::thread_idx().x as usize;
    let threads = thread::block_dim().x as usize;
    while let Some(tile) = status.next_tile() {
        let last = tile.index() + 1 == tiles;
        let c = tile.chunk_index();
        let start = c.saturating_mul(ITEMS);
        let v: [T; ITEMS] = T::load_tile(x, c, fill);
        // A whole chunk's 16 flags come in one vector load.
        let whole = start.saturating_add(ITEMS) <= len;
        let mask = match view::as_words(flags).and_then(|w| view::read_chunk::<u32, 4>(w, c)) {
            Some(f) if whole => nonzero_mask(f),
            _ => (0..ITEMS).fold(0u32, |mask, j| {
                let i = start.saturating_add(j);
                mask | u32::from(i < len && flags[i] != 0) << j
            }),
        };
        let later = crate::prefetch_start(c, ITEMS);
        view::prefetch_l2(flags, later);
        view::prefetch_l2(x, later);
        // A tile keeps at most `blockDim.x · ITEMS` elements: a `u32` count.
        let (before, total) =
            collective::block_exclusive_scan(mask.count_ones(), 0, u32::wrapping_add);
        let prefix = tile.exclusive_count(total as u64);
        // Unrolled by hand: `v` indexed by constants stays in registers (the
        // compiler leaves this loop rolled and puts `v` in local memory).
        each_item!(j => {
            if mask & (1 << j) != 0 {
                let below = (mask & ((1 << j) - 1)).count_ones();
                staged.store((before + below) as usize, v[j].stage());
            }
        });
        barrier::sync_threads();
        let base = prefix as usize;
        let mut i = t;
        while i < total as usize {
            out.store(base + i, T::unstage(staged.load(i)));
            i += threads;
        }
        if last && t == 0 && !count.is_empty() {
            count.store(0, prefix + total as u64);
        }
        // The next tile overwrites the staging array. Defensive: the barriers of
        // the next ticket's broadcast and of the block scan already come first.
        barrier::sync_threads();
    }
}

/// `count[0] += ` the number of non-zero bytes of `flags`: a grid-stride count of
/// 16-byte chunks (four loads in flight per thread), a block reduction and one
/// atomic per block.
#[xlog_kernel(read(flags), atomic(count), block = 256)]
pub fn count_flags(flags: &[u8], count: &mut [u64]) {
    // The whole 4-byte words from the first aligned byte on, four 16-byte chunks a
    // step; the at most 3 bytes before them and 3 after, one by one in block 0.
    let head = flags.len().min((4 - flags.as_ptr() as usize % 4) % 4);
    let words = view::as_words(&flags[head..]).unwrap_or(&[]);
    let tail = head + 4 * words.len();
    let mut mine = crate::reduce::fold_chunks::<u32, u64, 4>(words, 0, 0, |n, _, v| {
        n + u64::from(nonzero_mask(v).count_ones())
    });
    // Threads 0 to 2 of block 0 (the kernel's blocks are 256 threads).
    if thread::block_idx().x == 0 {
        let i = thread::thread_idx().x as usize;
        if i < head {
            mine += u64::from(flags[i] != 0);
        }
        if let Some(&f) = flags.get(tail.saturating_add(i)) {
            mine += u64::from(f != 0);
        }
    }
    let total = collective::block_reduce(mine, u64::wrapping_add);
    if thread::thread_idx().x == 0 && total > 0 {
        count.fetch_add(0, total);
    }
}

/// Bit `j` set when byte `j` of the 16 bytes in `words` is non-zero (byte `j` is
/// byte `j % 4` of word `j / 4`, as [`view::as_words`] gives them): a thread's keep
/// mask from its 16 flags. In each byte of `(w & 0x7f…) + 0x7f…` the top bit is set
/// exactly when the low seven bits are not all zero (no carry leaves a byte), and
/// or-ing `w` adds the byte's own top bit.
#[inline(always)]
fn nonzero_mask(words: [u32; 4]) -> u32 {
    let mut mask = 0;
    for (q, w) in words.into_iter().enumerate() {
        let w = u32::from_le(w);
        let top = (((w & 0x7f7f_7f7f) + 0x7f7f_7f7f) | w) & 0x8080_8080;
        // Gather the four top bits (bits 7, 15, 23, 31) into bits 0..4.
        mask |= ((top >> 7 | top >> 14 | top >> 21 | top >> 28) & 0xf) << (4 * q);
    }
    mask
}

/// `counts[j] = starts[j + 1] − starts[j]`: the run lengths from the run starts
/// (`starts` one longer than `counts`).
#[xlog_kernel(read(starts), write(counts))]
pub fn run_lengths(starts: &[u64], counts: &mut [u64]) {
    for j in thread::grid_stride(counts.len()) {
        let k = j.get();
        counts[j] = starts[k + 1] - starts[k];
    }
}

/// Copies the 32-bit elements of `x` whose flag is non-zero to the front of
/// `out`, in order, and their number to `count[0]`: the kernel of
/// [`select_flagged`] for `u32`, `i32`, `f32` (four elements a vector load). Three
/// resident blocks per SM: on an H100 (run 23 of
/// `bench/runs/2026-11-26-archive/log.md`) it uses 80 registers without spills
/// there and ran as fast as four blocks with its inputs loaded after the
/// look-back (which spills).
#[xlog_kernel(
    read(x, flags), atomic(out, count), lookback(status), block = 256, min_blocks = 3,
    for T in [u32, i32, f32]
)]
pub fn select_by_flags<T: Compacted>(
    x: &[T],
    flags: &[u8],
    out: &mut [T],
    count: &mut [u64],
    status: &mut [u64],
) where
    [T; 4]: Vector,
{
    select_tiles(x, flags, out, count, status, T::default());
}

/// [`select_by_flags`] for 64-bit elements (`u64`, `i64`,
/// `f64`; two a vector load). Two resident blocks per SM: a 64-bit selection holds
/// twice the registers for its tile, and two blocks ran 11 % faster than three,
/// which spill.
#[xlog_kernel(
    read(x, flags), atomic(out, count), lookback(status), block = 256, min_blocks = 2,
    for T in [u64, i64, f64]
)]
pub fn select_by_flags64<T: Compacted>(
    x: &[T],
    flags: &[u8],
    out: &mut [T],
    count: &mut [u64],
    status: &mut [u64],
) where
    [T; 2]: Vector,
{
    select_tiles(x, flags, out, count, status, T::default());
}

/// [`select_by_flags`] for 8- and 16-bit elements (`u8`, `u16`, `i8`, `i16`):
/// each thread loads its elements one by one (a warp's loads still cover one
/// contiguous span) and stages them widened to 32-bit words.
#[xlog_kernel(
    read(x, flags), atomic(out, count), lookback(status), block = 256, min_blocks = 3,
    for T in [u8, u16, i8, i16]
)]
pub fn select_by_flags_narrow<T: Compacted>(
    x: &[T],
    flags: &[u8],
    out: &mut [T],
    count: &mut [u64],
    status: &mut [u64],
) {
    select_tiles(x, flags, out, count, status, T::default());
}

/// Stable partition by flag: kept elements at the front in order, rejected ones
/// after them in order; `kept[0]` is the number of non-zero flags. The kernel of
/// [`partition_flagged`].
#[xlog_kernel(
    read(x, flags, kept), atomic(out, count), lookback(status), block = 256, min_blocks = 4,
    for T in [u8, u16, i8, i16, u32, i32, f32, u64, i64, f64]
)]
pub fn partition_by_flags<T: Compacted>(
    x: &[T],
    flags: &[u8],
    kept: &[u64],
    out: &mut [T],
    count: &mut [u64],
    status: &mut [u64],
) {
    let front = kept[0] as usize;
    let ahead = |i| {
        view::prefetch_l2(flags, i);
        view::prefetch_l2(x, i);
    };
    compact_tiles(
        x.len(),
        status,
        count,
        |i| flags[i] != 0,
        ahead,
        |i, rank, k| {
            out.store(if k { rank } else { front + rank }, x[i]);
        },
    );
}

/// The first element of every run of equal values of `x` and where it starts:
/// `values[r]`, `starts[r]` for run `r`, `starts[runs] = x.len()`,
/// `count[0] = runs`. The kernel of [`record_unique`].
#[xlog_kernel(
    read(x), atomic(values, starts, count), lookback(status), block = 256, min_blocks = 4,
    for T in [u8, u16, i8, i16, u32, i32, f32, u64, i64, f64]
)]
pub fn unique<T: Compacted>(
    x: &[T],
    values: &mut [T],
    starts: &mut [u64],
    count: &mut [u64],
    status: &mut [u64],
) {
    unique_tiles(x, values, starts, None, count, status);
}

/// The first element of every run of equal values of `x`, where it starts and
/// how long it is: [`unique`]'s outputs and `counts[r]`, the length of run `r`,
/// for every run but the last of each tile, whose end lies in a later tile:
/// `ends[k]` is the index of tile `k`'s last run (`u64::MAX` for a tile without
/// run heads), whose length [`run_ends`] computes from `starts` afterwards. The
/// first kernel of [`unique_counts`]: one read of `x`.
#[xlog_kernel(
    read(x), atomic(values, starts, counts, ends, count), lookback(status), block = 256,
    min_blocks = 3, for T in [u8, u16, i8, i16, u32, i32, f32, u64, i64, f64]
)]
pub fn unique_runs<T: Compacted>(
    x: &[T],
    values: &mut [T],
    starts: &mut [u64],
    counts: &mut [u64],
    ends: &mut [u64],
    count: &mut [u64],
    status: &mut [u64],
) {
    unique_tiles(x, values, starts, Some((counts, ends)), count, status);
}

/// `counts[r] = starts[r + 1] − starts[r]` for each run `r = ends[k]` that is
/// not `u64::MAX`: the lengths of the runs [`unique_runs`] leaves to it (the
/// last of each tile), one thread per tile.
#[xlog_kernel(read(starts, ends), atomic(counts))]
pub fn run_ends(starts: &[u64], ends: &[u64], counts: &mut [u64]) {
    for k in thread::grid_stride(ends.len()) {
        let r = ends[k];
        if r != u64::MAX {
            let r = r as usize;
            counts.store(r, starts[r + 1] - starts[r]);
        }
    }
}

/// One block's share of [`unique`] and [`unique_runs`]: while tiles remain, take
/// one, load this thread's [`ITEMS`] consecutive elements (as vectors of `V`),
/// mark the run heads (an element differing from the one before it), rank them
/// against the whole input, and write them out in two phases as [`select_tiles`]
/// does: each head's position into the block's staging array at its place within
/// the tile, then, after a barrier, the tile's runs from there, consecutive
/// threads writing consecutive runs (each run's value read back from `x` at its
/// position, a cache hit: the block has just loaded it). With `lengths`, each
/// run's length too, from the next staged start, but the tile's last run's,
/// whose index goes to `ends[tile]` instead. The last tile stores the number of
/// runs in `count[0]` and the input's length after the last start.
#[inline(always)]
fn unique_tiles<T: Compacted>(
    x: &[T],
    values: &AtomicView<'_, T>,
    starts: &AtomicView<'_, u64>,
    lengths: Option<(&AtomicView<'_, u64>, &AtomicView<'_, u64>)>,
    count: &AtomicView<'_, u64>,
    status: &mut LookBack<'_>,
) {
    let len = x.len();
    let tiles = status.tiles();
    let staged = staging::<u64>();
    let t = thread::thread_idx().x as usize;
    let threads = thread::block_dim().x as usize;
    while let Some(tile) = status.next_tile() {
        let k = tile.index();
        let last = k + 1 == tiles;
        let c = tile.chunk_index();
        let start = c.saturating_mul(ITEMS);
        let mask = T::heads(x, c);
        view::prefetch_l2(x, crate::prefetch_start(c, ITEMS));
        // A tile has at most `blockDim.x · ITEMS` heads: a `u32` count.
        let (before, total) =
            collective::block_exclusive_scan(mask.count_ones(), 0, u32::wrapping_add);
        let prefix = tile.exclusive_count(total as u64);
        // Unrolled by hand, as in `select_tiles`, so that nothing goes to local
        // memory.
        each_item!(j => {
            if mask & (1 << j) != 0 {
                let below = (mask & ((1 << j) - 1)).count_ones();
                staged.store((before + below) as usize, start.saturating_add(j) as u64);
            }
        });
        barrier::sync_threads();
        let base = prefix as usize;
        let total = total as usize;
        let mut r = t;
        while r < total {
            let p = staged.load(r);
            starts.store(base + r, p);
            values.store(base + r, x[p as usize]);
            if let Some((counts, _)) = lengths {
                if r + 1 < total {
                    counts.store(base + r, staged.load(r + 1) - p);
                }
            }
            r += threads;
        }
        if t == 0 {
            if let Some((_, ends)) = lengths {
                let end = if total > 0 {
                    (base + total - 1) as u64
                } else {
                    u64::MAX
                };
                ends.store(k, end);
            }
        }
        if last && t == 0 {
            let runs = prefix + total as u64;
            if !count.is_empty() {
                count.store(0, runs);
            }
            if (runs as usize) < starts.len() {
                starts.store(runs as usize, len as u64);
            }
        }
        // The next tile overwrites the staging array. Defensive: the barriers of
        // the next ticket's broadcast and of the block scan already come first.
        barrier::sync_threads();
    }
}

/// The run heads of chunk `c` of `x` (elements `ITEMS · c ..`), as bits: element
/// `j` is a head when it differs from the one before it (the one before the
/// chunk, the previous thread's last, a cache hit, for the first; none before
/// the first element of `x`). A whole chunk comes in `U` vector loads of `V`
/// issued together, its mask taken by constant indices (so that it stays in
/// registers); the chunk at the end, or one of a view not aligned for the
/// vectors, element by element.
#[inline(always)]
fn chunk_heads<T: Copy + PartialEq, const V: usize, const U: usize>(x: &[T], c: usize) -> u32
where
    [T; V]: Vector,
{
    match view::read_chunks::<T, V, U>(x, c.saturating_mul(U), 1) {
        Some(v) => {
            let start = c * ITEMS;
            head_mask(&v, start.checked_sub(1).map(|i| x[i]))
        }
        None => heads_by_element(x, c),
    }
}

/// [`chunk_heads`] element by element.
#[inline(always)]
fn heads_by_element<T: Copy + PartialEq>(x: &[T], c: usize) -> u32 {
    let start = c.saturating_mul(ITEMS);
    let mut prev = start.checked_sub(1).and_then(|i| x.get(i).copied());
    let mut mask = 0u32;
    for j in 0..ITEMS {
        match x.get(start.saturating_add(j)) {
            Some(&e) => {
                mask |= u32::from(prev.is_none_or(|p| p != e)) << j;
                prev = Some(e);
            }
            None => break,
        }
    }
    mask
}

/// This thread's share of the run heads of `x` element by element, grid-stride:
/// [`run_heads`] for the 8- and 16-bit types.
#[inline(always)]
fn run_heads_by_element<T: Copy + PartialEq>(x: &[T]) -> u64 {
    let mut heads = 0;
    for i in thread::grid_stride(x.len()) {
        let k = i.get();
        heads += u64::from(k == 0 || x[k] != x[k - 1]);
    }
    heads
}

/// The run heads of a whole chunk of [`ITEMS`] elements `v` (`U` vectors of `V`),
/// as bits: element `j` is a head when it differs from the one before it,
/// `before` for the first (none: a head). Indexed by constants only, so that `v`
/// stays in registers.
#[inline(always)]
fn head_mask<T: Copy + PartialEq, const V: usize, const U: usize>(
    v: &[[T; V]; U],
    before: Option<T>,
) -> u32 {
    const { assert!(V * U == ITEMS) };
    let at = |j: usize| v[j / V][j % V];
    let mut mask = u32::from(before.is_none_or(|p| p != at(0)));
    each_item!(j in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 => {
        mask |= u32::from(at(j) != at(j - 1)) << j;
    });
    mask
}

/// `count[0] +=` the number of runs of equal values in `x`: [`count_flags`]' loop
/// over run heads.
#[xlog_kernel(
    read(x), atomic(count), block = 256,
    for T in [u8, u16, i8, i16, u32, i32, f32, u64, i64, f64]
)]
pub fn count_runs<T: Compacted>(x: &[T], count: &mut [u64]) {
    let total = collective::block_reduce(T::run_heads(x), u64::wrapping_add);
    if thread::thread_idx().x == 0 && total > 0 {
        count.fetch_add(0, total);
    }
}

/// This thread's share of the run heads of `x` (elements differing from the one
/// before): vector chunks of `V`, four in flight, each chunk's first element
/// compared with the element before the chunk.
#[inline(always)]
fn run_heads<T: Copy + PartialEq + Default, const V: usize>(x: &[T]) -> u64
where
    [T; V]: Vector,
{
    crate::reduce::fold_chunks::<T, u64, V>(x, T::default(), 0, |n, c, v| {
        let start = c * V;
        let live = x.len().saturating_sub(start);
        let mut prev = start.checked_sub(1).and_then(|i| x.get(i).copied());
        let mut heads = n;
        for (j, &e) in v.iter().enumerate() {
            if j < live {
                heads += u64::from(prev.is_none_or(|p| p != e));
                prev = Some(e);
            }
        }
        heads
    })
}

pub use compacted::Compacted;

mod compacted {
    use super::*;

    /// An element type of the compaction kernels: how a thread loads its chunk
    /// (vectors of 16 bytes, or element by element for the 8- and 16-bit types)
    /// and how an element is staged in shared memory (as a 32- or 64-bit slot).
    /// Sealed: the kernels' types are listed in their attributes.
    pub trait Compacted: AtomicStore + PartialEq + Default + sealed::Sealed {
        /// The slot an element takes in a staging array: itself, or a 32-bit word
        /// for the 8- and 16-bit types.
        type Staged: Shuffle;
        /// The element as a staged slot.
        fn stage(self) -> Self::Staged;
        /// The element back from its staged slot.
        fn unstage(s: Self::Staged) -> Self;
        /// Chunk `c` of `x` (`ITEMS` elements from `ITEMS · c`), `fill` past its
        /// end.
        fn load_tile(x: &[Self], c: usize, fill: Self) -> [Self; ITEMS];
        /// The run heads of chunk `c` of `x`, as bits (`chunk_heads`).
        fn heads(x: &[Self], c: usize) -> u32;
        /// This thread's share of the run heads of `x`.
        fn run_heads(x: &[Self]) -> u64;
    }

    mod sealed {
        pub trait Sealed {}
    }

    // Four 32-bit or two 64-bit elements a 16-byte vector, staged as they are.
    macro_rules! compacted {
        ($($t:ty: $v:literal),*) => {$(
            impl sealed::Sealed for $t {}
            impl Compacted for $t {
                type Staged = $t;
                #[inline(always)]
                fn stage(self) -> Self {
                    self
                }
                #[inline(always)]
                fn unstage(s: Self) -> Self {
                    s
                }
                #[inline(always)]
                fn load_tile(x: &[Self], c: usize, fill: Self) -> [Self; ITEMS] {
                    lookback::load_chunk_by::<$t, ITEMS, $v>(x, c, fill)
                }
                #[inline(always)]
                fn heads(x: &[Self], c: usize) -> u32 {
                    chunk_heads::<$t, $v, { ITEMS / $v }>(x, c)
                }
                #[inline(always)]
                fn run_heads(x: &[Self]) -> u64 {
                    run_heads::<$t, $v>(x)
                }
            }
        )*};
    }
    compacted!(u32: 4, i32: 4, f32: 4, u64: 2, i64: 2, f64: 2);

    // The 8- and 16-bit types: loaded element by element, staged as 32-bit words.
    macro_rules! narrow {
        ($($t:ty),*) => {$(
            impl sealed::Sealed for $t {}
            impl Compacted for $t {
                type Staged = u32;
                #[inline(always)]
                fn stage(self) -> u32 {
                    self as u32
                }
                #[inline(always)]
                fn unstage(s: u32) -> Self {
                    s as $t
                }
                #[inline(always)]
                fn load_tile(x: &[Self], c: usize, fill: Self) -> [Self; ITEMS] {
                    let start = c.saturating_mul(ITEMS);
                    core::array::from_fn(|j| x.get(start.saturating_add(j)).copied().unwrap_or(fill))
                }
                #[inline(always)]
                fn heads(x: &[Self], c: usize) -> u32 {
                    heads_by_element(x, c)
                }
                #[inline(always)]
                fn run_heads(x: &[Self]) -> u64 {
                    run_heads_by_element(x)
                }
            }
        )*};
    }
    narrow!(u8, u16, i8, i16);
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::device::lookback::status_words;
    use xlog::{
        AllocTag, BufferView, BufferViewMut, DeviceBuffer, Error, GraphArena, GraphRecorder,
        LaunchConfig, NodeId, ReadBuffer, Result, Stream, WriteBuffer,
    };

    use crate::exec::{Exec, Now, Record};

    use super::{BLOCK, ITEMS};

    mod sealed {
        pub trait Sealed {}
    }

    /// Element types of the compaction family: `u8`, `u16`, `i8`, `i16`, `u32`,
    /// `i32`, `u64`, `i64`, `f32`, `f64`, the types its kernels are compiled for. Sealed: the selections
    /// return outputs they allocated uninitialised, which only their own kernels
    /// are trusted to write in full.
    ///
    /// ```compile_fail,E0277
    /// #[derive(Clone, Copy, xlog::DeviceCopy)]
    /// #[repr(C)]
    /// struct Flag(u32);
    /// impl xlog_kernels::compact::Compactable for Flag {
    ///     type Select = xlog_kernels::compact::Narrow;
    /// }
    /// ```
    pub trait Compactable:
        xlog::DeviceCopy
        + super::PartitionByFlagsType
        + super::UniqueType
        + super::UniqueRunsType
        + super::CountRunsType
        + sealed::Sealed
    {
        /// The selection kernel of this type's width.
        #[doc(hidden)]
        type Select: Select<Self>;
    }

    /// A selection kernel, launched or recorded: that of 32-bit elements
    /// ([`Narrow`]) or of 64-bit ones ([`Wide`]), which differ in their vector
    /// width and resident blocks.
    #[doc(hidden)]
    pub trait Select<T: xlog::DeviceCopy> {
        /// Launches the kernel.
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            flags: &BufferView<'_, u8>,
            out: &mut BufferViewMut<'_, T>,
            count: &mut DeviceBuffer<u64>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()>;

        /// Records the kernel `launch` launches.
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            flags: &'g dyn ReadBuffer<u8>,
            out: &'g dyn WriteBuffer<T>,
            count: &'g DeviceBuffer<u64>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId>;
    }

    /// The selection of 32-bit elements, [`select_by_flags`](super::select_by_flags).
    #[doc(hidden)]
    #[derive(Clone, Copy, Debug)]
    pub struct Narrow;

    /// The selection of 64-bit elements,
    /// [`select_by_flags64`](super::select_by_flags64).
    #[doc(hidden)]
    #[derive(Clone, Copy, Debug)]
    pub struct Wide;

    /// The selection of 8- and 16-bit elements,
    /// [`select_by_flags_narrow`](super::select_by_flags_narrow).
    #[doc(hidden)]
    #[derive(Clone, Copy, Debug)]
    pub struct Small;

    // One implementation per width, over every type its kernel lists.
    macro_rules! select {
        ($width:ident, $kernel:ident, $types:ident) => {
            impl<T: super::$types> Select<T> for $width {
                fn launch(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, T>,
                    flags: &BufferView<'_, u8>,
                    out: &mut BufferViewMut<'_, T>,
                    count: &mut DeviceBuffer<u64>,
                    status: &mut DeviceBuffer<u64>,
                ) -> Result<()> {
                    super::$kernel::launch(s, cfg, x, flags, out, count, status)
                }

                fn record<'g>(
                    rec: &mut GraphRecorder<'g>,
                    cfg: LaunchConfig,
                    x: &'g dyn ReadBuffer<T>,
                    flags: &'g dyn ReadBuffer<u8>,
                    out: &'g dyn WriteBuffer<T>,
                    count: &'g DeviceBuffer<u64>,
                    status: &'g DeviceBuffer<u64>,
                ) -> Result<NodeId> {
                    super::$kernel::record(rec, cfg, x, flags, out, count, status)
                }
            }
        };
    }
    select!(Narrow, select_by_flags, SelectByFlagsType);
    select!(Wide, select_by_flags64, SelectByFlags64Type);
    select!(Small, select_by_flags_narrow, SelectByFlagsNarrowType);

    macro_rules! compactable {
        ($($t:ty: $width:ident),*) => {$(
            impl sealed::Sealed for $t {}
            impl Compactable for $t {
                type Select = $width;
            }
        )*};
    }
    compactable!(
        u8: Small, u16: Small, i8: Small, i16: Small,
        u32: Narrow, i32: Narrow, f32: Narrow, u64: Wide, i64: Wide, f64: Wide
    );

    fn invalid(what: &str, reason: String) -> Error {
        Error::InvalidArgument {
            what: format!("xlog_kernels::compact::{what}"),
            reason,
        }
    }

    fn same_len(what: &str, x: usize, flags: usize) -> Result<()> {
        if x == flags {
            Ok(())
        } else {
            Err(invalid(
                what,
                format!("{x} elements but {flags} flags; pass one flag per element"),
            ))
        }
    }

    kernel_calls! {
        /// The compaction kernels of element type `T` but the selection.
        trait Kernels<T: Compactable> {
            fn partition = super::partition_by_flags(
                x: r T, flags: r u8, kept: r u64, out: w T, count: w u64, status: w u64
            );
            fn unique = super::unique(
                x: r T, values: w T, starts: w u64, count: w u64, status: w u64
            );
            fn count_runs = super::count_runs(x: r T, count: w u64);
        }
    }

    /// The compaction kernels of element type `T`, launched or recorded.
    pub(crate) trait Calls<T: Compactable>: Kernels<T> {
        /// The selection kernel of `T`'s width.
        fn select(
            &mut self,
            cfg: LaunchConfig,
            x: Self::In<'_, T>,
            flags: Self::In<'_, u8>,
            out: &mut Self::Out<'_, T>,
            count: &mut Self::Buf<u64>,
            status: &mut Self::Buf<u64>,
        ) -> Result<()>;
    }

    impl<T: Compactable> Calls<T> for Now<'_> {
        fn select(
            &mut self,
            cfg: LaunchConfig,
            x: BufferView<'_, T>,
            flags: BufferView<'_, u8>,
            out: &mut BufferViewMut<'_, T>,
            count: &mut DeviceBuffer<u64>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            T::Select::launch(self.0, cfg, &x, &flags, out, count, status)
        }
    }

    impl<T: Compactable> Calls<T> for Record<'_, '_> {
        fn select(
            &mut self,
            cfg: LaunchConfig,
            x: Self::In<'_, T>,
            flags: Self::In<'_, u8>,
            out: &mut Self::Out<'_, T>,
            count: &mut Self::Buf<u64>,
            status: &mut Self::Buf<u64>,
        ) -> Result<()> {
            T::Select::record(self.rec, cfg, x, flags, out.write, count, status).map(drop)
        }
    }

    kernel_calls! {
        /// The counting kernel of flags.
        trait Counts<> {
            fn count_flags = super::count_flags(flags: r u8, count: w u64);
        }
    }

    /// One block per tile of `n` elements, and the look-back status for them.
    fn tiles<E: Exec>(e: &mut E, what: &str, n: usize) -> Result<(LaunchConfig, E::Buf<u64>)> {
        let tiles = n.div_ceil(BLOCK as usize * ITEMS).max(1);
        let grid = u32::try_from(tiles).map_err(|_| {
            invalid(
                what,
                format!("{n} elements need {tiles} tiles, more than a grid holds"),
            )
        })?;
        // SAFETY: the typed launcher zeroes a `lookback` parameter's words on the
        // stream right before the kernel, as part of the same recorded launch.
        let status =
            unsafe { e.alloc_uninit::<u64>(status_words(tiles), AllocTag("compact status")) }?;
        Ok((LaunchConfig::new([grid, 1, 1], [BLOCK, 1, 1]), status))
    }

    /// A grid-stride counting pass: blocks for at least `per_thread` elements a
    /// thread (rounded down, so every thread gets a whole step), from 1 to 2048.
    fn count_config(n: usize, per_thread: usize) -> LaunchConfig {
        let blocks = (n / (BLOCK as usize * per_thread)).clamp(1, 2048);
        LaunchConfig::new([blocks as u32, 1, 1], [BLOCK, 1, 1])
    }

    /// The number of non-zero flags, as a one-element device buffer (zeroed, then
    /// one launch adding into it).
    fn count_kept<E: Counts>(e: &mut E, flags: E::In<'_, u8>) -> Result<E::Buf<u64>> {
        let mut count = e.filled::<u64>(1, 0)?;
        let n = E::len(&flags);
        if n > 0 {
            // At least 64 flags a thread: one step of four 16-byte chunks.
            e.count_flags(count_config(n, 64), flags, &mut count)?;
        }
        Ok(count)
    }

    /// [`select_flagged_into`] through `e`.
    fn select_into_on<E: Calls<T>, T: Compactable>(
        e: &mut E,
        x: E::In<'_, T>,
        flags: E::In<'_, u8>,
        out: &mut E::Out<'_, T>,
    ) -> Result<E::Buf<u64>> {
        let n = E::len(&x);
        same_len("select_flagged_into", n, E::len(&flags))?;
        if E::out_len(out) < n {
            return Err(invalid(
                "select_flagged_into",
                format!(
                    "the output holds {} elements but up to {n} may be kept; pass an output as long as the input",
                    E::out_len(out),
                ),
            ));
        }
        let (cfg, mut status) = tiles(e, "select_flagged_into", n)?;
        let mut count = e.filled::<u64>(1, 0)?;
        if n > 0 {
            e.select(cfg, x, flags, out, &mut count, &mut status)?;
        }
        Ok(count)
    }

    /// [`select_flagged`] through `e`: the output, exactly as long as the number
    /// kept when launching now (read back), as long as `x` when recording; and
    /// the number kept on the device.
    pub(crate) fn select_on<E: Calls<T> + Counts, T: Compactable>(
        e: &mut E,
        x: E::In<'_, T>,
        flags: E::In<'_, u8>,
    ) -> Result<(E::Buf<T>, E::Buf<u64>)> {
        let n = E::len(&x);
        same_len("select_flagged", n, E::len(&flags))?;
        let (cfg, mut status) = tiles(e, "select_flagged", n)?;
        let mut count = e.filled::<u64>(1, 0)?;
        let kept = e.counted_len(n, |e| count_kept(e, flags))?;
        // SAFETY: the select kernel stores every kept element at its rank, and
        // exactly `kept` elements are kept (or, recording, the buffer is zeroed):
        // every element of `out` is written by the launch, which is recorded as a
        // write of the whole buffer.
        let mut out = unsafe { e.alloc_uninit::<T>(kept, AllocTag("select output")) }?;
        if kept > 0 {
            e.select(
                cfg,
                x,
                flags,
                &mut E::view_mut(&mut out),
                &mut count,
                &mut status,
            )?;
        }
        Ok((out, count))
    }

    /// [`partition_flagged`] through `e`: the values and the number kept.
    fn partition_on<E: Calls<T> + Counts, T: Compactable>(
        e: &mut E,
        x: E::In<'_, T>,
        flags: E::In<'_, u8>,
    ) -> Result<(E::Buf<T>, E::Buf<u64>)> {
        let n = E::len(&x);
        same_len("partition_flagged", n, E::len(&flags))?;
        let (cfg, mut status) = tiles(e, "partition_flagged", n)?;
        // SAFETY: the partition kernel stores every element of `x` once, at a
        // distinct position below `x.len()` (kept ones at their rank, rejected ones
        // at `kept + rank`), so every element of `values` is written.
        let mut values = unsafe { e.alloc_uninit::<T>(n, AllocTag("partition output")) }?;
        let mut count = e.filled::<u64>(1, 0)?;
        let kept = count_kept(e, flags)?;
        if n > 0 {
            let kept = E::view(&kept);
            e.partition(cfg, x, flags, kept, &mut values, &mut count, &mut status)?;
        }
        Ok((values, kept))
    }

    /// The runs of [`unique_counts`] through `e`, but their lengths: the values,
    /// the offsets, the number of runs on the device and on the host (read back
    /// when launching now; `x.len()`, the most there can be, when recording).
    #[allow(clippy::type_complexity)]
    fn unique_on<E: Calls<T> + Counts, T: Compactable>(
        e: &mut E,
        x: E::In<'_, T>,
    ) -> Result<(E::Buf<T>, E::Buf<u64>, E::Buf<u64>, usize)> {
        let len = E::len(&x);
        let (cfg, mut status) = tiles(e, "unique_counts", len)?;
        let mut runs = e.filled::<u64>(1, 0)?;
        let n = e.counted_len(len, |e| {
            let mut heads = e.filled::<u64>(1, 0)?;
            if len > 0 {
                e.count_runs(count_config(len, 16), x, &mut heads)?;
            }
            Ok(heads)
        })?;
        // SAFETY: the unique kernel stores the value and start of every run (`n`
        // of them, each at its rank) and `offsets[n] = x.len()` (the thread of the
        // last element); recording, the buffers are zeroed. For an empty input
        // `offsets` is zeroed instead.
        let mut values = unsafe { e.alloc_uninit::<T>(n, AllocTag("unique values")) }?;
        let mut offsets = if len == 0 {
            e.zeroed::<u64>(1)?
        } else {
            // SAFETY: as above.
            unsafe { e.alloc_uninit::<u64>(n + 1, AllocTag("run offsets")) }?
        };
        if len > 0 {
            e.unique(cfg, x, &mut values, &mut offsets, &mut runs, &mut status)?;
        }
        Ok((values, offsets, runs, n))
    }

    /// Copies the elements of `x` whose flag is non-zero to the front of `out`, in
    /// order, without synchronising: returns their number as a one-element device
    /// buffer that later work on `s` can read (download it to read it on the host).
    /// `out[count..]` keeps its values. One launch, `O(n)`
    /// ([module docs](super)).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` (nothing launched) when `flags` and `x` differ in length or
    /// `out` is shorter than `x`; a budget refusal of the count or the look-back
    /// status (`BudgetExceeded`, nothing launched); a launch error.
    pub fn select_flagged_into<T: Compactable>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        flags: &(impl ReadBuffer<u8> + ?Sized),
        out: &mut (impl WriteBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<u64>> {
        let mut e = Now(s);
        let (x, flags, mut out) = (e.input(x), e.input(flags), e.output(out));
        select_into_on(&mut e, x, flags, &mut out)
    }

    /// [`select_flagged_into`] recorded into a graph: a fill node zeroing the
    /// count, then the kernel node. The count is allocated now on the recorder's
    /// stream and kept in `arena`, which outlives the graph; after each replay it
    /// holds the number kept.
    ///
    /// # Errors
    ///
    /// As [`select_flagged_into`], and those of recording.
    pub fn record_select_flagged_into<'g, T: Compactable>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
        flags: &'g impl ReadBuffer<u8>,
        out: &'g impl WriteBuffer<T>,
    ) -> Result<&'g DeviceBuffer<u64>> {
        let mut e = Record::new(rec, arena);
        let (x, flags, mut out) = (e.input(x), e.input(flags), e.output(out));
        select_into_on(&mut e, x, flags, &mut out)
    }

    /// The elements of `x` whose flag is non-zero, in order, as a new buffer of
    /// exactly their number (`torch.masked_select`). Counts the flags first and
    /// reads the count back to size the output, so it synchronises `s`; use
    /// [`select_flagged_into`] to stay asynchronous. Two launches, `O(n)`
    /// ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[1.0f32, 2.0, 3.0, 4.0])?;
    /// let keep = rt.upload_on(&s, &[1u8, 0, 1, 1])?;
    /// let got = xlog_kernels::compact::select_flagged(&s, &x, &keep)?;
    /// assert_eq!(got.download(&s)?, [1.0, 3.0, 4.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `flags` and `x` differ in length (nothing launched); a
    /// budget refusal (`BudgetExceeded`: nothing launched when the count or status
    /// is refused, only the counting pass when the output is); a launch error.
    pub fn select_flagged<T: Compactable>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        flags: &(impl ReadBuffer<u8> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (x, flags) = (e.input(x), e.input(flags));
        Ok(select_on(&mut e, x, flags)?.0)
    }

    /// A selection recorded into a graph: [`record_select_flagged`]'s result.
    #[derive(Clone, Copy, Debug)]
    pub struct RecordedSelection<'g, T: xlog::DeviceCopy> {
        /// As long as the input: the kept elements at the front, in order; past
        /// them, what earlier replays left (zeros at first).
        pub values: &'g DeviceBuffer<T>,
        /// One word: the number kept by the last replay.
        pub count: &'g DeviceBuffer<u64>,
    }

    /// [`select_flagged`] recorded into a graph. A graph cannot size its output
    /// by a count only the device knows, so the output is as long as `x` and the
    /// number kept stays on the device ([`RecordedSelection::count`]); no
    /// counting pass is recorded (the selection counts as it goes). Buffers are
    /// allocated now and kept in `arena`, which outlives the graph.
    ///
    /// # Errors
    ///
    /// As [`select_flagged`], and those of recording.
    pub fn record_select_flagged<'g, T: Compactable>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
        flags: &'g impl ReadBuffer<u8>,
    ) -> Result<RecordedSelection<'g, T>> {
        let mut e = Record::new(rec, arena);
        let (x, flags) = (e.input(x), e.input(flags));
        let (values, count) = select_on(&mut e, x, flags)?;
        Ok(RecordedSelection { values, count })
    }

    /// A stable partition: the result of [`partition_flagged`].
    #[derive(Debug)]
    pub struct Partitioned<T: xlog::DeviceCopy> {
        /// The elements with a non-zero flag, in order, then the others, in order.
        pub values: DeviceBuffer<T>,
        /// The number of kept elements (the front part), a one-element device
        /// buffer.
        pub kept: DeviceBuffer<u64>,
    }

    impl<T: xlog::DeviceCopy> Partitioned<T> {
        /// Reads the number of kept elements back (synchronises `s`).
        ///
        /// # Errors
        ///
        /// A download error.
        pub fn kept_on_host(&self, s: &Stream) -> Result<usize> {
            Ok(self.kept.download(s)?[0] as usize)
        }
    }

    /// Stable partition of `x` by `flags`: the elements with a non-zero flag first,
    /// in order, then the others, in order, in a new buffer as long as `x`; with
    /// the number kept on the device. No synchronisation: a counting pass, then one
    /// single-pass launch, `O(n)` ([module docs](super)).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `flags` and `x` differ in length; a budget refusal of
    /// the output, the count or the status (`BudgetExceeded`; nothing launched); a
    /// launch error.
    pub fn partition_flagged<T: Compactable>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        flags: &(impl ReadBuffer<u8> + ?Sized),
    ) -> Result<Partitioned<T>> {
        let mut e = Now(s);
        let (x, flags) = (e.input(x), e.input(flags));
        let (values, kept) = partition_on(&mut e, x, flags)?;
        Ok(Partitioned { values, kept })
    }

    /// [`partition_flagged`] recorded into a graph (its sizes are known on the
    /// host): the values and the number kept (one word), allocated now and kept
    /// in `arena`, which outlives the graph; the count is zeroed by a fill node at
    /// every replay.
    ///
    /// # Errors
    ///
    /// As [`partition_flagged`], and those of recording.
    #[allow(clippy::type_complexity)]
    pub fn record_partition_flagged<'g, T: Compactable>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
        flags: &'g impl ReadBuffer<u8>,
    ) -> Result<(&'g DeviceBuffer<T>, &'g DeviceBuffer<u64>)> {
        let mut e = Record::new(rec, arena);
        let (x, flags) = (e.input(x), e.input(flags));
        partition_on(&mut e, x, flags)
    }

    /// The runs of equal values of a sorted input: the result of
    /// [`unique_counts`].
    #[derive(Debug)]
    pub struct Runs<T: xlog::DeviceCopy> {
        /// The value of each run, in order (the unique values of a sorted input).
        pub values: DeviceBuffer<T>,
        /// The length of each run.
        pub counts: DeviceBuffer<u64>,
        /// Where each run starts, and the input's length after the last: `runs + 1`
        /// offsets, the segments of [`crate::segmented`].
        pub offsets: DeviceBuffer<u64>,
        /// The number of runs, a one-element device buffer.
        pub runs: DeviceBuffer<u64>,
    }

    /// Run-length encoding of `x` (sorted, or any input whose equal values are
    /// adjacent): each run's value, length and start, in order
    /// (`torch.unique_consecutive(return_counts=True)`). One read of `x`: the
    /// outputs are sized for one run per element, and shortened to the runs found
    /// once their number is read back, so it synchronises `s` (the memory past them
    /// stays allocated with them until they drop). Two launches, `O(n)`
    /// ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[1u32, 1, 4, 4, 4, 9])?;
    /// let r = xlog_kernels::compact::unique_counts(&s, &x)?;
    /// assert_eq!(r.values.download(&s)?, [1, 4, 9]);
    /// assert_eq!(r.counts.download(&s)?, [2, 3, 1]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A budget refusal (`BudgetExceeded`: nothing launched; every buffer is
    /// allocated first); a launch error.
    pub fn unique_counts<T: Compactable>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<Runs<T>> {
        let x = x.as_view();
        let len = x.len();
        let (cfg, mut status) = tiles(&mut Now(s), "unique_counts", len)?;
        let tiles = cfg.grid[0] as usize;
        let rt = s.runtime()?;
        let mut runs = rt.alloc_zeroed_on::<u64>(s, 1)?;
        // Sized for the most runs there can be (one per element), then shortened
        // to the runs found.
        // SAFETY: the runs kernel stores the value, start and (but for each tile's
        // last run) length of every run, each at its rank, `offsets[runs] =
        // x.len()` (the last tile) and every tile's `ends` entry; the ends kernel
        // stores the remaining lengths. Every buffer is shortened to what was
        // written before it is returned. For an empty input nothing is launched:
        // the outputs are empty but `offsets`, which is zeroed.
        let mut values = unsafe { rt.alloc_uninit::<T>(s, len, AllocTag("unique values")) }?;
        // SAFETY: as above.
        let mut counts = unsafe { rt.alloc_uninit::<u64>(s, len, AllocTag("run lengths")) }?;
        let mut offsets = if len == 0 {
            rt.alloc_zeroed_on::<u64>(s, 1)?
        } else {
            // SAFETY: as above.
            unsafe { rt.alloc_uninit::<u64>(s, len + 1, AllocTag("run offsets")) }?
        };
        if len > 0 {
            // SAFETY: as above.
            let mut ends = unsafe { rt.alloc_uninit::<u64>(s, tiles, AllocTag("run ends")) }?;
            super::unique_runs::launch(
                s,
                cfg,
                &x,
                &mut values,
                &mut offsets,
                &mut counts,
                &mut ends,
                &mut runs,
                &mut status,
            )?;
            super::run_ends::launch(
                s,
                LaunchConfig::for_len(tiles),
                &offsets,
                &ends,
                &mut counts,
            )?;
        }
        let n = runs.download(s)?[0] as usize;
        values.truncate(n);
        counts.truncate(n);
        offsets.truncate(n + 1);
        Ok(Runs {
            values,
            counts,
            offsets,
            runs,
        })
    }

    /// The runs of a sorted input recorded into a graph: [`record_unique`]'s
    /// result.
    #[derive(Clone, Copy, Debug)]
    pub struct RecordedRuns<'g, T: xlog::DeviceCopy> {
        /// As long as the input: each run's value at the front, in order.
        pub values: &'g DeviceBuffer<T>,
        /// One longer than the input: where each run starts, then the input's
        /// length (`runs + 1` offsets; the run lengths are their differences).
        pub offsets: &'g DeviceBuffer<u64>,
        /// One word: the number of runs of the last replay.
        pub runs: &'g DeviceBuffer<u64>,
    }

    /// The values and offsets of [`unique_counts`] recorded into a graph: one
    /// kernel node (after a fill node zeroing the count). A graph cannot size its
    /// outputs by the number of runs, which only the device knows: they are sized
    /// for the most there can be (one run per element), only their first `runs`
    /// (`runs + 1` offsets) are the result, and the run lengths, which a graph
    /// could only compute over that whole capacity, are left to the offsets'
    /// differences. Buffers are allocated now and kept in `arena`, which outlives
    /// the graph.
    ///
    /// # Errors
    ///
    /// A budget refusal or an error of recording.
    pub fn record_unique<'g, T: Compactable>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<RecordedRuns<'g, T>> {
        let mut e = Record::new(rec, arena);
        let x = e.input(x);
        let (values, offsets, runs, _) = unique_on(&mut e, x)?;
        Ok(RecordedRuns {
            values,
            offsets,
            runs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_masks_match_a_byte_by_byte_test() {
        let mut r = xlog_test_support::Rng::new(7);
        for round in 0..2000 {
            let seed = r.next_u64().to_le_bytes();
            // Bytes from every class: 0, 0x80 (top bit alone), 0x7f, 1 and random.
            let v: [u8; 16] = core::array::from_fn(|j| match (seed[j % 8] >> (j / 8 * 3)) & 7 {
                0 | 1 => 0,
                2 => 0x80,
                3 => 0x7f,
                4 => 1,
                _ => seed[(j + round) % 8] | 1,
            });
            // The words as `as_words` gives them: the bytes as stored.
            let words = core::array::from_fn(|q| {
                u32::from_ne_bytes([v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]])
            });
            let want = (0..16).fold(0u32, |m, j| m | u32::from(v[j] != 0) << j);
            assert_eq!(nonzero_mask(words), want, "{v:?}");
        }
        assert_eq!(nonzero_mask([u32::MAX; 4]), 0xffff);
        assert_eq!(nonzero_mask([0; 4]), 0);
    }
}
