//! Inter-block communication for single-pass algorithms: tile tickets and decoupled
//! look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan with Decoupled
//! Look-back", 2016; CUB's `single_pass_scan_operators.cuh`).
//!
//! A single-pass scan cuts its input into tiles, one per block. Each block reduces
//! its tile, then needs the reduction of every tile before it. Decoupled look-back
//! gets it without a second pass: each tile publishes its aggregate as soon as it
//! has it, and its inclusive prefix once it knows it; a block walks back over its
//! predecessors, combining aggregates until it meets an inclusive prefix.
//!
//! A kernel declares the status buffer `lookback(status)` with `status: &mut [u64]`
//! and receives a [`&mut LookBack`](LookBack):
//!
//! ```no_run
//! use xlog_device::{collective, lookback::{self, LookBack}, view::{Out, Tiles}};
//!
//! /// The body of `#[xlog_kernel(read(x), write(out per tile(4)), lookback(status))]`:
//! /// an inclusive sum, four elements per thread.
//! fn scan(x: &[u32], out: &mut Out<'_, u32, Tiles<4>>, status: &mut LookBack<'_>) {
//!     if let Some(tile) = status.next_tile() {
//!         let c = tile.chunk::<4>();
//!         let mut v: [u32; 4] = lookback::load_chunk(x, c.get(), 0);
//!         for j in 1..4 {
//!             v[j] = v[j].wrapping_add(v[j - 1]);
//!         }
//!         let (before, total) = collective::block_exclusive_scan(v[3], 0, u32::wrapping_add);
//!         let prefix = tile.exclusive_prefix(total, u32::wrapping_add).unwrap_or(0);
//!         out.store_chunk(c, v.map(|e| prefix.wrapping_add(before).wrapping_add(e)));
//!     }
//! }
//! ```
//!
//! # The protocol
//!
//! The buffer holds [`status_words(tiles)`](status_words) words: word 0 is the ticket
//! counter, then four regions of `tiles` words each: the tiles' owners
//! (`blockIdx.x + 1` of the block that holds the tile; the counter and the owners
//! are used only when blocks take tickets), their status words, and the
//! aggregates and inclusive prefixes of 64-bit values. A status word's low two bits
//! are the tile's status (0 none, 1 aggregate published, 2 inclusive prefix
//! published); for a 32-bit value (and for [`Ticket::exclusive_count`]) the value
//! sits above them in the same word, so one 64-bit access moves both. Status words
//! are contiguous, so a warp reads 32 of them in one 256-byte transaction. The
//! typed launcher zeroes the whole buffer on the launch's stream, right before the
//! kernel, as part of the same recorded launch, so every launch starts from "no
//! tickets, no status".
//!
//! - [`LookBack::next_tile`] (the whole block) numbers tiles one of two ways,
//!   chosen by `gridDim.x` against the buffer's tiles (both the same in every
//!   thread), so every block of a launch uses the same one:
//!   - **A block per tile** (`gridDim.x` ≥ tiles, what the library's host functions
//!     launch): block `b` takes tile `b`, computed by every thread from
//!     `blockIdx.x` with no atomic, no barrier and nothing to check, and its inputs
//!     are read at once. A block waits only for blocks with smaller indices, and
//!     this mode assumes the hardware starts a grid's blocks in index order, so
//!     those have started (and, being resident, run to completion). This is the assumption CUB's single-pass
//!     scans make; CUDA does not promise it in writing, and where it failed the
//!     result would be a hang, never a wrong value or a race.
//!   - **Fewer blocks than tiles** (each block loops): thread 0 takes a ticket with
//!     an atomic `fetch_add` on word 0 and records its block as the tile's owner;
//!     the block then learns the ticket. Tiles are numbered in the order blocks
//!     *start*: a block only ever waits for tiles whose blocks have already
//!     started, so this mode makes progress whatever order the hardware schedules
//!     blocks in.
//! - [`Ticket::exclusive_prefix`] (the whole block): thread 0 — the block's leader,
//!   the one thread that publishes — publishes the aggregate: a 32-bit value with
//!   its status in *one relaxed* store of the status word (a reader that sees the
//!   status sees the value: it is the same word); a 64-bit value in its own word,
//!   then the status with *release* ordering. The block's first warp then walks
//!   back a window of 32 predecessors at a time (CUB's `TilePrefixCallbackOp`):
//!   lane `l` polls the status word of tile `end − 32 + l` (a 64-bit value's status
//!   with *acquire* ordering, so the value word it then reads is the one published
//!   before it), and the warp polls the window again while any tile of it has
//!   published nothing. A grid of 500 blocks or more paces its polls as CUB's
//!   tuning for sm_90 does: a pause before the first poll (1100 ns for a value's
//!   look-back, 800 ns for a count's, each measured best for its kernels), then a
//!   short one between polls (hundreds of warps polling at once slow the
//!   L2 the publications go through); a smaller grid spins for a few rounds, then
//!   sleeps with growing pauses. A ballot finds the nearest predecessor with an
//!   inclusive prefix, and a shuffle reduction combines the window from there on,
//!   in tile order. Windows
//!   repeat until one holds an inclusive prefix (tile 0 always publishes one). The
//!   leader publishes the inclusive prefix the same way and broadcasts the exclusive
//!   prefix to the block. Blocks narrower than a warp walk back one tile at a time.
//!
//! # Soundness
//!
//! - **No data race on the status buffer.** The launcher passes it to this parameter
//!   only (it holds the buffer `&mut`), and every access here is an atomic load,
//!   store or `fetch_add` on an in-bounds, aligned word. Whatever a kernel does with
//!   its `LookBack` — tickets never published, collectives called from one thread,
//!   statuses read in any order, one tile published packed and another split —
//!   gives wrong values or a hang, never a race: every bit pattern is a valid
//!   number. Packing changes no access: the status word is still one aligned
//!   `u64`, read and written only atomically.
//! - **Chunk witnesses are unique.** A [`TileChunk`] owns elements
//!   `[K·c, K·c + K)` of a `per tile(K)` view with `c = k·blockDim.x + threadIdx.x`,
//!   `k` its tile. With a block per tile, `k = blockIdx.x`, which each thread reads
//!   itself from its own special register (nothing shared could hand it another
//!   block's number), and a block takes one tile. With tickets, the counter hands
//!   each `k` out once per launch, and
//!   `next_tile` records `blockIdx.x + 1` as its owner before the block barrier. Each
//!   thread then reads, itself, the owner word of the ticket it received, and
//!   [`Ticket::chunk`] (the only source of chunk witnesses) and the publications
//!   panic unless it names the thread's own block: even a misused broadcast (or
//!   uninitialised shared memory) cannot give a thread a chunk of a tile another
//!   block holds. The check waits until a chunk is asked for, so the owner word's
//!   round trip overlaps the reads of the tile's inputs. Block indices
//!   are distinct in the one-dimensional launches typed launchers make, and
//!   `threadIdx.x < blockDim.x`, so no two threads hold the same `c`; `K` is the
//!   view's, fixed by the attribute. A kernel has at most one `lookback` parameter
//!   (the macro checks), so all tickets come from one counter and every block
//!   numbers its tiles the same way (two buffers of different lengths could put
//!   one block in each mode, and both could then hold tile `k`).
//! - [`LookBack`], [`Ticket`] and [`TileChunk`] are `!Send`, `!Sync` and not
//!   [`DeviceCopy`](crate::DeviceCopy); `next_tile` borrows the `LookBack`
//!   mutably for as long as the ticket lives, so a thread holds one ticket at a time
//!   (a block cannot wait on a tile it holds itself), and `exclusive_prefix`
//!   consumes the ticket, so each tile is published once.
//!
//! Forward progress needs every block that takes a ticket to publish it: a ticket
//! dropped without [`Ticket::exclusive_prefix`] makes later tiles wait forever (a
//! hang, not undefined behaviour). With a block per tile it also needs every block
//! `b < tiles` to call `next_tile` and publish, and blocks to start in index order
//! (see [`LookBack::next_tile`]); a kernel that must not rely on the order launches
//! fewer blocks than tiles.

use core::marker::PhantomData;
use core::sync::atomic::AtomicU64;

use crate::thread::ThreadBound;
use crate::vector::Vector;
use crate::view::{InOut, Out, Tiles};
use crate::warp::{Shuffle, WARP_SIZE};

/// Words per tile: its owner, its status word, and the two value words of a wide
/// (64-bit) value.
const WORDS_PER_TILE: usize = 4;
// The buffer after the ticket counter is four regions of `tiles` words each, so the
// status words of 32 consecutive tiles, which a warp reads at once, are 256
// contiguous bytes.
const OWNER: usize = 0;
const STATUS: usize = 1;
const AGGREGATE: usize = 2;
const INCLUSIVE: usize = 3;

/// Nothing published yet.
const NONE: u64 = 0;
/// The tile's aggregate is published.
const PARTIAL: u64 = 1;
/// The tile's inclusive prefix is published.
const DONE: u64 = 2;
/// The status bits of a status word; a packed word holds its value above them.
const STATUS_BITS: u32 = 2;

/// Grids of at least this many blocks pace their look-backs (CUB's threshold). A
/// smaller grid runs in about one wave: a tile's predecessors run beside it, and a
/// pause would only add its length to the tile's wait.
const PACED_GRID: u32 = 500;
/// In a paced grid, the pause before the first poll of a value's look-back
/// ([`Ticket::exclusive_prefix`]). A block reaches its look-back about when its
/// predecessors, started just before it, publish their aggregates; polling at once
/// mostly finds them unpublished, and hundreds of polling warps slow the L2 that
/// the publications and the tiles' loads go through. CUB's tuning of 32-bit scans
/// for sm_90 waits 1140 ns; on an H100 this made a 10^8-element scan 9 % faster
/// than polling at once (800 ns: 6 % slower than 1100; 1500 and 2000: the same).
const VALUE_FIRST_POLL_NS: u32 = 1100;
/// In a paced grid, the pause before the first poll of a count's look-back
/// ([`Ticket::exclusive_count`], the compactions). On an H100 a 10^8-element
/// selection took 0.822 ms after 800 ns against 0.846 after 1100.
const COUNT_FIRST_POLL_NS: u32 = 800;
/// In a paced grid, the pause between two polls of a window that still holds a
/// tile that has published nothing (CUB's sm_90 tuning: 168 ns).
const POLL_PAUSE_NS: u32 = 170;
/// In a grid too small to pace, polls of a predecessor's status before the first
/// back-off sleep: a predecessor usually publishes within a few L2 round trips,
/// and a sleep, whose granularity is coarse, would add its length to every tile's
/// wait.
const SPINS: u32 = 8;
/// In a grid too small to pace, the longest back-off sleep, in nanoseconds.
const MAX_PAUSE_NS: u32 = 256;

/// The length, in `u64` words, of a status buffer for `tiles` tiles: one ticket
/// counter and four words per tile. Saturates at `usize::MAX` (a length no
/// allocation can have, so asking for it fails) rather than wrapping to a short
/// buffer.
pub const fn status_words(tiles: usize) -> usize {
    WORDS_PER_TILE.saturating_mul(tiles).saturating_add(1)
}

/// The device side of a `lookback(status)` parameter: tile tickets and the tiles'
/// published aggregates and prefixes. See the [module docs](self).
pub struct LookBack<'a> {
    words: Words,
    /// Whether this block has taken its tile, with a block per tile (every thread of
    /// the block agrees).
    taken: bool,
    _buffer: PhantomData<&'a mut [u64]>,
}

impl<'a> LookBack<'a> {
    /// Builds the view from a kernel's pointer and length parameters.
    ///
    /// # Safety
    ///
    /// Only the code `#[xlog_kernel]` generates calls this; the generated entry point
    /// and launcher uphold:
    ///
    /// 1. `ptr` is valid for reads and writes of `len` consecutive `u64`s in device
    ///    memory for the kernel's run, and aligned (`ptr` may dangle when `len == 0`);
    /// 2. the words were zero when the kernel started (the launcher zeroes them on
    ///    the launch's stream), and nothing but the `LookBack`s built for this
    ///    parameter accesses them while it runs;
    /// 3. the launch is one-dimensional, and the kernel has no other `lookback`
    ///    parameter.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn __from_raw_parts(ptr: *mut u64, len: usize) -> Self {
        LookBack {
            words: Words { ptr, len },
            taken: false,
            _buffer: PhantomData,
        }
    }

    /// How many tiles the buffer has room for: `(len - 1) / 4`.
    #[inline(always)]
    pub fn tiles(&self) -> usize {
        self.words.tiles()
    }

    /// Whether each block takes at most one tile: the grid has a block per tile
    /// (`gridDim.x` ≥ [`tiles`](Self::tiles)), so [`next_tile`](Self::next_tile)
    /// gives block `b` tile `b` and then `None`. A kernel can then handle its one
    /// tile in straight-line code rather than a loop, whose loop-invariant values
    /// the compiler would keep in registers across the whole tile.
    #[inline(always)]
    pub fn one_tile_per_block(&self) -> bool {
        crate::thread::grid_dim().x as usize >= self.tiles()
    }

    /// Takes the next tile for the calling block: `None` once every tile the buffer
    /// has room for is taken. A block collective: every thread of the block calls it,
    /// and all get the same tile.
    ///
    /// With a block per tile (`gridDim.x` ≥ tiles) block `b` gets tile `b` on its
    /// first call and `None` after: no atomic, no barrier, no memory access. A
    /// later tile then waits on earlier blocks, so progress relies on the hardware
    /// starting blocks in index order, as CUB's single-pass scans do ([module
    /// docs](self)).
    ///
    /// With fewer blocks, one atomic ticket (tiles in the order blocks start,
    /// progress whatever the scheduling) and two block barriers per call; every
    /// thread reads the tile's owner word, and [`Ticket::chunk`] and the
    /// publications check it names the thread's block (they panic when the block's
    /// threads did not all make the call).
    #[inline(always)]
    #[track_caller]
    // The elided `'_` is load-bearing: it ties the ticket to this `&mut self`
    // borrow (its buffer is a copy, so nothing else does), which is what keeps a
    // thread to one ticket at a time (`tests/ui/single_pass/two_tickets_at_once.rs`).
    pub fn next_tile(&mut self) -> Option<Ticket<'_>> {
        let tiles = self.tiles();
        let block = crate::thread::block_idx().x as u64;
        if self.one_tile_per_block() {
            // A block per tile: each thread derives the block's tile itself, so no
            // broadcast, and no owner to check, is involved.
            if self.taken || block >= tiles as u64 {
                return None;
            }
            self.taken = true;
            return Some(Ticket {
                words: self.words,
                tile: block as usize,
                owner: block + 1,
                _status: PhantomData,
                _thread: PhantomData,
            });
        }
        let tiles = tiles as u64;
        let mut taken = u64::MAX;
        if crate::thread::thread_idx().x == 0 {
            let k = gpu::fetch_add(self.words.word(0), 1);
            if k < tiles {
                gpu::store_relaxed(self.words.tile_word(k as usize, OWNER), block + 1);
                taken = k;
            }
        }
        // The broadcast's barrier makes the owner store visible to the block.
        let k = crate::collective::block_broadcast(taken, 0);
        if k >= tiles {
            return None;
        }
        // Checked before the ticket hands out a chunk or publishes, not here: the
        // load's round trip then overlaps the block's first input loads.
        let owner = gpu::load_relaxed(self.words.tile_word(k as usize, OWNER));
        Some(Ticket {
            words: self.words,
            tile: k as usize,
            owner,
            _status: PhantomData,
            _thread: PhantomData,
        })
    }
}

/// The status buffer's pointer and length: a plain copy that a [`Ticket`] carries
/// by value, so the compiler keeps it in registers rather than behind a reference
/// to the [`LookBack`] (in local memory).
#[derive(Clone, Copy, Debug)]
struct Words {
    ptr: *mut u64,
    len: usize,
}

impl Words {
    /// How many tiles the buffer has room for: `(len - 1) / 4`.
    #[inline(always)]
    fn tiles(&self) -> usize {
        self.len.saturating_sub(1) / WORDS_PER_TILE
    }

    #[inline(always)]
    #[track_caller]
    fn word(&self, i: usize) -> &AtomicU64 {
        if i >= self.len {
            crate::panic::cold::status_out_of_bounds(self.len, i);
        }
        // SAFETY: `i < len`: in bounds and aligned (obligation 1 of
        // `LookBack::__from_raw_parts`, whose pointer and length these are); every
        // access to the buffer during the launch is atomic (obligation 2, the
        // public `LookBack` / `Ticket` API, and `Words` staying private to this
        // module).
        unsafe { AtomicU64::from_ptr(self.ptr.add(i)) }
    }

    /// Word `which` of `tile`: `1 + which·tiles + tile`, for `tile < tiles`.
    #[inline(always)]
    #[track_caller]
    fn tile_word(&self, tile: usize, which: usize) -> &AtomicU64 {
        let tiles = self.tiles();
        if tile >= tiles {
            crate::panic::cold::status_out_of_bounds(tiles, tile);
        }
        self.word(1 + which * tiles + tile)
    }

    /// Publishes `v` as the tile's aggregate (`PARTIAL`) or inclusive prefix
    /// (`DONE`). Packed (`P`): one relaxed store of the status word, value and
    /// status together, so a reader that sees the status sees the value. Split:
    /// the value word, then the status word with release ordering.
    #[inline(always)]
    fn publish<T: Shuffle, const P: bool>(&self, tile: usize, status: u64, v: T) {
        let w = self.tile_word(tile, STATUS);
        if P {
            gpu::store_relaxed(w, to_word(v) << STATUS_BITS | status);
        } else {
            let slot = if status == DONE { INCLUSIVE } else { AGGREGATE };
            gpu::store_relaxed(self.tile_word(tile, slot), to_word(v));
            gpu::store_release(w, status);
        }
    }

    /// One poll of `tile`: its status and, unless it is [`NONE`], its published
    /// value. Packed: one relaxed load. Split: the status with acquire ordering
    /// (so the value word then read is the one published before it), then the
    /// value.
    #[inline(always)]
    fn poll<T: Shuffle, const P: bool>(&self, tile: usize) -> (u64, T) {
        let w = self.tile_word(tile, STATUS);
        if P {
            let w = gpu::load_relaxed(w);
            (w & ((1 << STATUS_BITS) - 1), from_word(w >> STATUS_BITS))
        } else {
            let s = gpu::load_acquire(w);
            if s == NONE {
                return (NONE, from_word(0));
            }
            let slot = if s == DONE { INCLUSIVE } else { AGGREGATE };
            (s, from_word(gpu::load_relaxed(self.tile_word(tile, slot))))
        }
    }

    /// The reduction of tiles `0..tile` (`tile > 0`), in tile order: walks back from
    /// `tile - 1`, combining aggregates until an inclusive prefix.
    #[inline(always)]
    fn look_back<T: Shuffle, const P: bool>(
        &self,
        tile: usize,
        op: &impl Fn(T, T) -> T,
        first_poll_ns: u32,
    ) -> T {
        let mut j = tile - 1;
        let mut acc: Option<T> = None;
        let paced = paced();
        before_first_poll(paced, first_poll_ns);
        loop {
            let mut round = 0;
            let (s, v) = loop {
                let (s, v) = self.poll::<T, P>(j);
                if s != NONE {
                    break (s, v);
                }
                back_off(&mut round, paced);
            };
            let sum = match acc {
                None => v,
                Some(later) => op(v, later),
            };
            if s == DONE || j == 0 {
                return sum;
            }
            acc = Some(sum);
            j -= 1;
        }
    }
}

impl Words {
    /// The reduction of tiles `0..tile` (`tile > 0`), in tile order, walked back a
    /// window of 32 tiles at a time by the 32 lanes of the calling warp (all of
    /// them call it; every lane gets the result). Lane `l` reads tile
    /// `end − 32 + l`, so the oldest tile of the window is on lane 0; the warp
    /// polls the whole window again while any of its tiles has published nothing.
    #[inline(always)]
    fn warp_look_back<T: Shuffle, const P: bool>(
        &self,
        tile: usize,
        op: &impl Fn(T, T) -> T,
        first_poll_ns: u32,
    ) -> T {
        let lane = (crate::thread::thread_idx().x % WARP_SIZE) as usize;
        let mut end = tile;
        let mut acc: Option<T> = None;
        let paced = paced();
        before_first_poll(paced, first_poll_ns);
        loop {
            // Lanes before tile 0 (`end < 32`) read nothing: they lie below tile 0,
            // which always holds an inclusive prefix, so they are never combined.
            let j = (end + lane).checked_sub(WARP_SIZE as usize);
            let mut round = 0;
            let (s, v) = loop {
                let (s, v) = match j {
                    Some(j) => self.poll::<T, P>(j),
                    None => (PARTIAL, from_word(0)),
                };
                // A warp-uniform exit: every lane polls until the whole window is
                // published.
                if warp_ballot(s == NONE) == 0 {
                    break (s, v);
                }
                back_off(&mut round, paced);
            };
            let done = warp_ballot(s == DONE);
            // The nearest tile with an inclusive prefix, or the whole window.
            let first = if done == 0 {
                0
            } else {
                WARP_SIZE - 1 - done.leading_zeros()
            };
            // Suffix reduction: lane `l` ends with the window's tiles `l..32`
            // combined in tile order.
            let mut r = v;
            let mut d = 1;
            while d < WARP_SIZE {
                let later = warp_shuffle_down(r, d);
                if lane + (d as usize) < WARP_SIZE as usize {
                    r = op(r, later);
                }
                d <<= 1;
            }
            let window = warp_shuffle_idx(r, first);
            let sum = match acc {
                None => window,
                Some(later) => op(window, later),
            };
            if done != 0 {
                return sum;
            }
            acc = Some(sum);
            end -= WARP_SIZE as usize;
        }
    }
}

/// Whether this grid paces its look-backs: on the device, at least
/// [`PACED_GRID`] blocks; on the host never (there nothing sleeps for long).
#[inline(always)]
fn paced() -> bool {
    #[cfg(target_arch = "nvptx64")]
    return crate::thread::grid_dim().x >= PACED_GRID;
    #[cfg(not(target_arch = "nvptx64"))]
    return false;
}

/// Before a look-back's first poll: on the device, in a paced grid, a pause of
/// `ns`; otherwise nothing.
#[inline(always)]
fn before_first_poll(paced: bool, ns: u32) {
    #[cfg(target_arch = "nvptx64")]
    if paced {
        crate::thread::sleep_ns(ns);
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (paced, ns);
}

/// Between two polls of a status that is still [`NONE`]: on the device, in a
/// paced grid, a pause of [`POLL_PAUSE_NS`]; in a smaller grid nothing for the
/// first [`SPINS`] polls, then a sleep growing from 32 ns to [`MAX_PAUSE_NS`]; on
/// the host (the simulator and unit tests) a `sleep_ns` every time, which yields
/// to the block's other threads.
#[inline(always)]
fn back_off(round: &mut u32, paced: bool) {
    #[cfg(target_arch = "nvptx64")]
    if paced {
        crate::thread::sleep_ns(POLL_PAUSE_NS);
    } else if *round >= SPINS {
        let pause = 32u32 << core::cmp::min(*round - SPINS, 3);
        crate::thread::sleep_ns(core::cmp::min(pause, MAX_PAUSE_NS));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = (SPINS, MAX_PAUSE_NS, POLL_PAUSE_NS, PACED_GRID, paced);
        crate::sim::spin_yield("lookback: a poll of an earlier tile's status");
    }
    *round = round.saturating_add(1);
}

/// The status words' accesses at GPU scope. `core::sync::atomic` lowers to PTX's
/// *system* scope (`ld.acquire.sys`, `st.release.sys`), which also orders against
/// the host and peer devices and costs microseconds per publication; the tiles of
/// one launch only talk to each other, so GPU scope is enough (as in CUB). On the
/// host (the simulator and unit tests) the same operations go through
/// `core::sync::atomic`, and `wait`'s `sleep_ns` yields to the block's other threads.
mod gpu {
    use core::sync::atomic::AtomicU64;
    #[cfg(not(target_arch = "nvptx64"))]
    use core::sync::atomic::Ordering;

    macro_rules! access {
        ($(#[$doc:meta])* $name:ident($($v:ident)?) -> $ret:ty, $ptx:literal, $host:expr) => {
            $(#[$doc])*
            #[inline(always)]
            pub(super) fn $name(w: &AtomicU64 $(, $v: u64)?) -> $ret {
                #[cfg(target_arch = "nvptx64")]
                {
                    let p = w.as_ptr();
                    access!(@asm $ptx, p $(, $v)?)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let f: fn(&AtomicU64 $(, access!(@ty $v))?) -> $ret = $host;
                    f(w $(, $v)?)
                }
            }
        };
        (@ty $v:ident) => { u64 };
        (@asm $ptx:literal, $p:ident) => {{
            let r: u64;
            // SAFETY: `p` comes from a reference to an aligned atomic word in device
            // memory; the access is atomic, so it races with no other access to the
            // word (all of which are atomic). No options: the asm is a compiler
            // barrier for the memory accesses the ordering covers.
            unsafe { core::arch::asm!($ptx, r = out(reg64) r, p = in(reg64) $p, options(nostack)) };
            r
        }};
        (@asm $ptx:literal, $p:ident, $v:ident) => {{
            // SAFETY: as above.
            unsafe { core::arch::asm!($ptx, p = in(reg64) $p, v = in(reg64) $v, options(nostack)) };
        }};
    }

    access!(
        /// `ld.acquire.gpu`.
        load_acquire() -> u64, "ld.acquire.gpu.b64 {r}, [{p}];", |w| w.load(Ordering::Acquire)
    );
    access!(
        /// `ld.relaxed.gpu`.
        load_relaxed() -> u64, "ld.relaxed.gpu.b64 {r}, [{p}];", |w| w.load(Ordering::Relaxed)
    );
    access!(
        /// `st.release.gpu`.
        store_release(v) -> (), "st.release.gpu.b64 [{p}], {v};", |w, v| w.store(v, Ordering::Release)
    );
    access!(
        /// `st.relaxed.gpu`.
        store_relaxed(v) -> (), "st.relaxed.gpu.b64 [{p}], {v};", |w, v| w.store(v, Ordering::Relaxed)
    );

    /// `atom.relaxed.gpu.add`: the previous value.
    #[inline(always)]
    pub(super) fn fetch_add(w: &AtomicU64, v: u64) -> u64 {
        #[cfg(target_arch = "nvptx64")]
        {
            let r: u64;
            // SAFETY: as in `access!`.
            unsafe {
                core::arch::asm!(
                    "atom.relaxed.gpu.add.u64 {r}, [{p}], {v};",
                    r = out(reg64) r, p = in(reg64) w.as_ptr(), v = in(reg64) v,
                    options(nostack)
                )
            };
            r
        }
        #[cfg(not(target_arch = "nvptx64"))]
        w.fetch_add(v, Ordering::Relaxed)
    }
}

/// `vote.sync.ballot` over the whole warp.
#[inline(always)]
fn warp_ballot(pred: bool) -> u32 {
    // SAFETY: the full mask contains the calling lane, which is the one requirement
    // whose violation PTX leaves undefined on sm_70 and newer (the `collective`
    // module's contract): a lane that does not arrive makes the others wait (a
    // hang) or yields unspecified values, never undefined behaviour.
    unsafe { crate::warp::ballot(crate::warp::FULL_MASK, pred) }
}

/// `shfl.sync.down` over the whole warp.
#[inline(always)]
fn warp_shuffle_down<T: Shuffle>(v: T, delta: u32) -> T {
    // SAFETY: as in `warp_ballot`.
    unsafe { crate::warp::shuffle_down(crate::warp::FULL_MASK, v, delta) }
}

/// `shfl.sync.idx` over the whole warp.
#[inline(always)]
fn warp_shuffle_idx<T: Shuffle>(v: T, src: u32) -> T {
    // SAFETY: as in `warp_ballot`.
    unsafe { crate::warp::shuffle_idx(crate::warp::FULL_MASK, v, src) }
}

impl core::fmt::Debug for LookBack<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LookBack")
            .field("ptr", &self.words.ptr)
            .field("tiles", &self.tiles())
            .finish()
    }
}

/// The calling block's tile, from [`LookBack::next_tile`]: its number, the chunk
/// witnesses of its elements, and the one publication of its aggregate.
///
/// `!Send`, `!Sync`, not `Clone`; it borrows the `LookBack` it came from.
#[derive(Debug)]
pub struct Ticket<'a> {
    /// The buffer, copied out of the `LookBack` this ticket mutably borrows.
    words: Words,
    /// The `&mut LookBack` borrow of `next_tile`, by lifetime only.
    _status: PhantomData<&'a ()>,
    tile: usize,
    /// The tile's owner word as this thread read it in `next_tile` (`blockIdx.x + 1`
    /// itself with a block per tile).
    owner: u64,
    _thread: PhantomData<*const ()>,
}

impl<'a> Ticket<'a> {
    /// The tile's number: the block's index with a block per tile; otherwise `0`
    /// for the first block to start, then `1`, ….
    #[inline(always)]
    pub fn index(&self) -> usize {
        self.tile
    }

    /// The number of this thread's chunk, `c = index()·blockDim.x + threadIdx.x`,
    /// for reading inputs ([`load_chunk`]`(x, c, ..)`) before the ticket is
    /// checked; writing a `per tile(K)` view takes [`chunk`](Self::chunk).
    #[inline(always)]
    pub fn chunk_index(&self) -> usize {
        let b = crate::thread::block_dim().x as usize;
        let t = crate::thread::thread_idx().x as usize;
        self.tile * b + t
    }

    /// This thread's chunk of the tile for `K` elements per thread:
    /// `c = index()·blockDim.x + threadIdx.x`, elements `[K·c, K·c + K)` of a
    /// `per tile(K)` view. Read inputs at the same positions with
    /// [`load_chunk`]`(x, c.get(), ..)`.
    ///
    /// # Panics
    ///
    /// When the ticket this thread received is not its block's (only when the
    /// block's threads did not all call [`LookBack::next_tile`]).
    #[inline(always)]
    #[track_caller]
    pub fn chunk<const K: usize>(&self) -> TileChunk<K> {
        self.check_owner();
        // Made from this thread's `threadIdx`: it names this thread's chunk.
        TileChunk(self.chunk_index(), ThreadBound::here())
    }

    /// Panics unless the tile's owner word, as this thread read it, names this
    /// thread's block.
    #[inline(always)]
    #[track_caller]
    fn check_owner(&self) {
        let block = crate::thread::block_idx().x as u64;
        if self.owner != block + 1 {
            crate::panic::cold::foreign_ticket(self.tile as u64, self.owner);
        }
    }

    /// Publishes `aggregate` (the reduction of this tile under `op`, the same value
    /// in every thread) and returns the reduction of every earlier tile to every
    /// thread: `None` for tile 0. A block collective; the block's leader (thread 0)
    /// publishes and its warp looks back while the others wait at the broadcast.
    /// `op` must be associative; tiles are combined in order (`op(earlier,
    /// later)`). A 32-bit `T` travels packed with its status in one word; a 64-bit
    /// one in a word of its own, published before its status.
    ///
    /// # Panics
    ///
    /// As [`chunk`](Self::chunk), when the ticket is not this thread's block's.
    #[inline(always)]
    #[track_caller]
    pub fn exclusive_prefix<T: Shuffle>(self, aggregate: T, op: impl Fn(T, T) -> T) -> Option<T> {
        if T::__WIDE {
            self.prefix::<T, false>(aggregate, &op, VALUE_FIRST_POLL_NS)
        } else {
            self.prefix::<T, true>(aggregate, &op, VALUE_FIRST_POLL_NS)
        }
    }

    /// [`exclusive_prefix`](Self::exclusive_prefix) for counts: publishes `count`
    /// (this tile's, the same in every thread) and returns the sum of the counts of
    /// every earlier tile (`0` for tile 0), packed with the status in one word like
    /// a 32-bit value. Exact while the total stays below `2^62`; sums wrap modulo
    /// `2^62` past it.
    ///
    /// # Panics
    ///
    /// As [`chunk`](Self::chunk), when the ticket is not this thread's block's.
    #[inline(always)]
    #[track_caller]
    pub fn exclusive_count(self, count: u64) -> u64 {
        const MASK: u64 = u64::MAX >> STATUS_BITS;
        let add = |a: u64, b: u64| a.wrapping_add(b) & MASK;
        self.prefix::<u64, true>(count & MASK, &add, COUNT_FIRST_POLL_NS)
            .unwrap_or(0)
    }

    #[inline(always)]
    #[track_caller]
    fn prefix<T: Shuffle, const P: bool>(
        self,
        aggregate: T,
        op: &impl Fn(T, T) -> T,
        first_poll_ns: u32,
    ) -> Option<T> {
        self.check_owner();
        let k = self.tile;
        let t = crate::thread::thread_idx().x;
        let mut prefix = 0u64;
        if k == 0 {
            if t == 0 {
                self.words.publish::<T, P>(0, DONE, aggregate);
            }
        } else if crate::thread::block_dim().x >= WARP_SIZE {
            // A uniform branch: the whole first warp walks back together.
            if t < WARP_SIZE {
                if t == 0 {
                    self.words.publish::<T, P>(k, PARTIAL, aggregate);
                }
                let before = self.words.warp_look_back::<T, P>(k, op, first_poll_ns);
                if t == 0 {
                    self.words.publish::<T, P>(k, DONE, op(before, aggregate));
                    prefix = to_word(before);
                }
            }
        } else if t == 0 {
            self.words.publish::<T, P>(k, PARTIAL, aggregate);
            let before = self.words.look_back::<T, P>(k, op, first_poll_ns);
            self.words.publish::<T, P>(k, DONE, op(before, aggregate));
            prefix = to_word(before);
        }
        let prefix = crate::collective::block_broadcast(prefix, 0);
        if k == 0 {
            None
        } else {
            Some(from_word(prefix))
        }
    }
}

/// The witness that the calling thread owns chunk `c` of a `per tile(K)` view
/// (elements `[K·c, K·c + K)`): from [`Ticket::chunk`]. See the module's
/// # Soundness for why no two threads hold equal ones.
///
/// No code outside this module can make one:
///
/// ```compile_fail
/// let c = xlog_device::lookback::TileChunk::<4>(0, core::marker::PhantomData);
/// ```
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// fn smuggle(c: xlog_device::lookback::TileChunk<4>) { needs_send(c) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TileChunk<const K: usize>(usize, ThreadBound);

impl<const K: usize> TileChunk<K> {
    /// The chunk's number `c` (in the simulator, after checking that this thread
    /// made the witness).
    #[inline(always)]
    #[track_caller]
    pub fn get(self) -> usize {
        self.1.check();
        self.0
    }

    /// The first element of the chunk, `K·c` (checked as [`get`](Self::get)).
    #[inline(always)]
    #[track_caller]
    pub fn start(self) -> usize {
        self.get().saturating_mul(K)
    }
}

#[inline(always)]
fn to_word<T: Shuffle>(v: T) -> u64 {
    let (lo, hi) = v.__to_bits();
    lo as u64 | (hi as u64) << 32
}

#[inline(always)]
fn from_word<T: Shuffle>(w: u64) -> T {
    T::__from_bits(w as u32, (w >> 32) as u32)
}

/// Chunk `c` of a read slice, `[K·c, K·c + K)`, with `fill` past its end: one vector
/// load when the chunk is whole and aligned.
#[inline(always)]
pub fn load_chunk<T: Copy, const K: usize>(x: &[T], c: usize, fill: T) -> [T; K]
where
    [T; K]: Vector,
{
    if let Some(v) = crate::view::read_chunk::<T, K>(x, c) {
        return v;
    }
    let start = c.saturating_mul(K);
    core::array::from_fn(|j| match start.checked_add(j) {
        Some(i) if i < x.len() => x[i],
        _ => fill,
    })
}

/// Chunk `c` of a read slice, `[K·c, K·c + K)`, with `fill` past its end, as `K / V`
/// vector loads of `V` elements each when the chunk is whole and aligned: the load
/// of a tile with more elements per thread than one vector holds (`K` a multiple
/// of `V`; otherwise element by element).
#[inline(always)]
pub fn load_chunk_by<T: Copy, const K: usize, const V: usize>(x: &[T], c: usize, fill: T) -> [T; K]
where
    [T; V]: Vector,
{
    let start = c.saturating_mul(K);
    let whole = K % V == 0 && start.checked_add(K).is_some_and(|end| end <= x.len());
    if whole {
        let mut out = [fill; K];
        for (q, part) in out.chunks_exact_mut(V).enumerate() {
            match crate::view::read_chunk::<T, V>(x, start / V + q) {
                Some(v) => part.copy_from_slice(&v),
                None => {
                    for (j, e) in part.iter_mut().enumerate() {
                        *e = x[start + q * V + j];
                    }
                }
            }
        }
        return out;
    }
    core::array::from_fn(|j| match start.checked_add(j) {
        Some(i) if i < x.len() => x[i],
        _ => fill,
    })
}

macro_rules! tile_view {
    ($name:ident) => {
        impl<T, const K: usize> $name<'_, T, Tiles<K>> {
            /// The elements of chunk `c` inside the view: `K` of them, fewer at the
            /// end, none past it.
            #[inline(always)]
            pub fn chunk_mut(&mut self, c: TileChunk<K>) -> &mut [T] {
                let len = self.len();
                let start = core::cmp::min(c.start(), len);
                let n = core::cmp::min(K, len - start);
                // SAFETY: the raw pointer is not kept; `start + n <= len` stays inside
                // the buffer, and `c` is this thread's chunk (module # Soundness), so
                // no other thread references these elements; `&mut self` excludes a
                // second reference from this thread.
                unsafe { core::slice::from_raw_parts_mut(self.as_mut_ptr().add(start), n) }
            }

            /// Stores `v` into chunk `c`: one vector store when the chunk is whole and
            /// aligned, the elements inside the view otherwise.
            #[inline(always)]
            pub fn store_chunk(&mut self, c: TileChunk<K>, v: [T; K])
            where
                T: Copy,
                [T; K]: Vector,
            {
                let whole = c
                    .start()
                    .checked_add(K)
                    .is_some_and(|end| end <= self.len());
                if whole {
                    // SAFETY: as in `chunk_mut`, with the whole chunk in bounds.
                    unsafe {
                        <[T; K]>::__store(self.as_mut_ptr().add(c.start()).cast::<[T; K]>(), v)
                    }
                } else {
                    store_partial(self.chunk_mut(c), v);
                }
            }

            /// Stores `v` into chunk `c` as `K / V` vector stores of `V` elements
            /// when the chunk is whole and `K` a multiple of `V`, element by element
            /// otherwise: the store of a tile with more elements per thread than one
            /// vector holds.
            #[inline(always)]
            pub fn store_chunk_by<const V: usize>(&mut self, c: TileChunk<K>, v: [T; K])
            where
                T: Copy,
                [T; V]: Vector,
            {
                let whole = K % V == 0
                    && c.start()
                        .checked_add(K)
                        .is_some_and(|end| end <= self.len());
                if whole {
                    for (q, part) in v.chunks_exact(V).enumerate() {
                        let w: [T; V] = core::array::from_fn(|j| part[j]);
                        // SAFETY: as in `chunk_mut`: `[start + qV, start + qV + V)`
                        // lies inside the whole chunk `c`, which is in bounds and
                        // this thread's alone.
                        unsafe {
                            <[T; V]>::__store(
                                self.as_mut_ptr().add(c.start() + q * V).cast::<[T; V]>(),
                                w,
                            )
                        }
                    }
                } else {
                    store_partial(self.chunk_mut(c), v);
                }
            }
        }
    };
}

tile_view!(Out);
tile_view!(InOut);

/// The first `dst.len()` (at most `K`) elements of `v` into `dst`: the tail of a
/// chunk. Indexed by constants once unrolled, so `v` stays in registers (an
/// iterator over it would put it in local memory).
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn store_partial<T: Copy, const K: usize>(dst: &mut [T], v: [T; K]) {
    for j in 0..K {
        if j < dst.len() {
            dst[j] = v[j];
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    fn view(words: &mut [u64]) -> LookBack<'_> {
        // SAFETY: the test owns `words` and accesses it through this view only.
        unsafe { LookBack::__from_raw_parts(words.as_mut_ptr(), words.len()) }
    }

    #[test]
    fn look_back_combines_aggregates_until_an_inclusive_prefix() {
        // Last non-zero wins: associative, not commutative, so order shows.
        fn last_nonzero<const P: bool>() {
            let mut words = std::vec![0u64; status_words(5)];
            let lb = view(&mut words).words;
            assert_eq!(lb.tiles(), 5);
            let op = |a: u32, b: u32| if b == 0 { a } else { b };
            lb.publish::<u32, P>(0, DONE, 7);
            lb.publish::<u32, P>(1, PARTIAL, 0);
            lb.publish::<u32, P>(2, PARTIAL, 9);
            lb.publish::<u32, P>(3, PARTIAL, 0);
            assert_eq!(lb.look_back::<u32, P>(4, &op, 0), 9);
            assert_eq!(lb.look_back::<u32, P>(2, &op, 0), 7);
            lb.publish::<u32, P>(3, DONE, 5);
            assert_eq!(lb.look_back::<u32, P>(4, &op, 0), 5);
        }
        last_nonzero::<true>();
        last_nonzero::<false>();
        let add = |a: u64, b: u64| a + b;
        let mut words = std::vec![0u64; status_words(3)];
        let lb = view(&mut words).words;
        lb.publish::<u64, false>(0, PARTIAL, 1u64 << 40);
        lb.publish::<u64, false>(1, PARTIAL, 3u64);
        assert_eq!(lb.look_back::<u64, false>(2, &add, 0), (1 << 40) + 3);
    }

    #[test]
    fn packed_words_hold_status_and_value_in_one_word() {
        let mut words = std::vec![0u64; status_words(3)];
        let lb = view(&mut words).words;
        lb.publish::<u32, true>(1, PARTIAL, u32::MAX);
        lb.publish::<f32, true>(2, DONE, -1.5);
        assert_eq!(lb.poll::<u32, true>(0), (NONE, 0));
        assert_eq!(lb.poll::<u32, true>(1), (PARTIAL, u32::MAX));
        assert_eq!(lb.poll::<f32, true>(2), (DONE, -1.5));
        lb.publish::<u64, true>(0, DONE, (1 << 61) + 5);
        assert_eq!(lb.poll::<u64, true>(0), (DONE, (1 << 61) + 5));
        // Status words are one region, contiguous tile after tile, after the owners.
        assert_eq!(words[1 + 3], (5 + (1u64 << 61)) << 2 | DONE);
        assert_eq!(words[1 + 3 + 1], (u32::MAX as u64) << 2 | PARTIAL);
    }

    #[test]
    fn values_round_trip_through_status_words() {
        assert_eq!(from_word::<f32>(to_word(-1.5f32)), -1.5);
        assert_eq!(from_word::<f64>(to_word(f64::MIN)), f64::MIN);
        assert_eq!(from_word::<i64>(to_word(-3i64)), -3);
        assert_eq!(status_words(0), 1);
        assert_eq!(status_words(3), 13);
        assert_eq!(status_words(usize::MAX / 4), usize::MAX - 2);
        assert_eq!(status_words(usize::MAX / 4 + 1), usize::MAX);
        assert_eq!(status_words(usize::MAX), usize::MAX);
    }

    #[test]
    fn chunks_of_a_tile_view_stop_at_its_end() {
        let mut data = [0u32; 10];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut out = unsafe { Out::<u32, Tiles<4>>::__from_raw_parts(data.as_mut_ptr(), 10) };
        out.store_chunk(TileChunk(1, ThreadBound::here()), [1, 2, 3, 4]);
        out.store_chunk(TileChunk(2, ThreadBound::here()), [5, 6, 7, 8]);
        assert!(out.chunk_mut(TileChunk(3, ThreadBound::here())).is_empty());
        assert!(out
            .chunk_mut(TileChunk(usize::MAX, ThreadBound::here()))
            .is_empty());
        assert_eq!(data, [0, 0, 0, 0, 1, 2, 3, 4, 5, 6]);
        let x = [1u32, 2, 3, 4, 5, 6];
        assert_eq!(load_chunk::<u32, 4>(&x, 1, 0), [5, 6, 0, 0]);
        assert_eq!(load_chunk::<u32, 4>(&x, 0, 0), [1, 2, 3, 4]);
        assert_eq!(load_chunk::<u32, 4>(&x, usize::MAX, 9), [9; 4]);
    }

    #[test]
    #[should_panic(expected = "look-back status index out of bounds")]
    fn status_bounds_are_checked() {
        let mut words = [0u64; 2];
        let lb = view(&mut words).words;
        lb.publish::<u32, true>(0, DONE, 1u32);
    }
}
