//! Tiled transposes through shared memory, with a write witness for the permuted
//! output positions.
//!
//! A transpose writes element `(r, c)` of a `rows × cols` row-major input to
//! position `(c, r)` of the `cols × rows` output: no thread writes "its own"
//! [`ThreadIndex`](crate::ThreadIndex). A kernel declares the output
//! `write(out per transposed(TILE, rows))` — `rows` naming a value parameter, the
//! input's row count — and receives a [`TransposeOut`]. Block `b` of a one-dimensional
//! launch takes input tile `b` (row-major over the grid of `TILE × TILE` tiles,
//! [`TransposeOut::tiles`] of them), loads it into a shared [`Tile`](crate::shared::Tile)
//! with coalesced reads, and after the barrier stores the transposed tile with
//! coalesced writes, each element through a [`TransposedIndex`]:
//!
//! ```no_run
//! use xlog_device::{static_shared, transpose::TransposeOut};
//!
//! /// The body of `#[xlog_kernel(read(x), write(out per transposed(32, rows)))]`
//! /// `fn transpose(x: &[f32], out: &mut [f32], rows: usize)`.
//! fn transpose(x: &[f32], out: &mut TransposeOut<'_, f32, 32>) {
//!     let Some(tile) = out.tile() else { return };
//!     let mut shared = static_shared!(T: [f32; 32 * 33]).padded_tile::<32>();
//!     for (slot, i) in tile.loads() {
//!         shared.set(slot, x[i]);
//!     }
//!     let shared = shared.sync();
//!     for (o, slot) in tile.stores() {
//!         out[o] = shared.get(slot);
//!     }
//! }
//! ```
//!
//! For 32 × 32 tiles, [`TransposeOut::transpose_tile`] is that whole body in one
//! call, written for speed: with 256 threads a block each thread reads its four
//! input elements before storing any (the loop above keeps one load in flight per
//! thread), through a staging tile that only it reaches; the input's length is
//! checked once per call instead of per element, and a tile that lies inside the
//! matrix takes a path with no check per element at all. Nothing in it can reach
//! a formatted panic, which would cost the kernel 56 registers instead of 32 and
//! so half its resident blocks.
//!
//! The shared tile has `TILE + 1` slots a row ([`TransposeTile::SLOTS`]), so the
//! column-wise reads of the store phase fall in different banks. It is a
//! [`Padded<TILE>`](crate::shared::Padded) tile (`padded_tile::<TILE>()`), written
//! only through the [`PaddedSlot`]s of [`TransposeTile::loads`]: slot
//! `r·(TILE + 1) + c` belongs to the thread loading item `r·TILE + c`, which is not
//! the thread a [`LocalIndex`](crate::thread::LocalIndex) of that number names, so
//! the two kinds of slot never meet in one tile.
//!
//! # Soundness
//!
//! A [`TransposedIndex`] names output element `(row, col)`, `row = tc·TILE + r'`,
//! `col = tr·TILE + c'`, where `(tr, tc)` is the block's tile and `e' = r'·TILE + c'`
//! an item of [`block_stride`](crate::thread::block_stride)`(TILE²)`:
//!
//! - the view's shape (`rows` from the named value parameter, `cols = len / rows`)
//!   is the same in every thread, since kernel parameters are, and a kernel has at
//!   most one `per transposed` parameter (the macro checks), so every thread derives
//!   its tile from the same shape: `b ↦ (b / tiles_c, b mod tiles_c)` is injective,
//!   and block indices are distinct in a one-dimensional launch;
//! - within a block, `block_stride` gives each `e'` to one thread;
//! - `(tr, tc, r', c') ↦ (row, col)` is injective for `r', c' < TILE`, and the view
//!   maps `(row, col)` to `row·rows + col` only for `col < rows` and `row < cols`,
//!   which is injective too.
//!
//! So no two threads hold witnesses of one element. Witnesses, tiles and their
//! iterators are `!Send`, `!Sync` and not [`DeviceCopy`](crate::DeviceCopy), and
//! have no public constructor. The shared tile is a phased
//! [`Tile`](crate::shared::Tile) of the [`Padded<TILE>`](crate::shared::Padded)
//! layout: its write phases take only [`PaddedSlot<TILE>`](PaddedSlot)s, which
//! `loads()` alone makes, `r·(TILE + 1) + c` for this thread's item
//! `e = r·TILE + c` of `block_stride(TILE²)`; `e ↦ r·(TILE + 1) + c` is injective, so
//! no two threads of the block hold one slot. A [`LocalIndex`](crate::thread::LocalIndex)
//! (slot `s` of thread `s mod blockDim.x`) cannot index that tile, nor a
//! `PaddedSlot` a [`Linear`](crate::shared::Linear) one.
//!
//! [`TransposeOut::transpose_tile`] writes, in thread `t`, the elements of items
//! `t, t + blockDim.x, …` of the transposed tile: the ones its `TransposedIndex`es
//! from `stores()` would name, so the argument above holds. It reads `x` unchecked
//! only after checking `x.len() >= rows · cols`, and only elements `(row, col)` of
//! the shape (`row·cols + col < rows · cols`), and writes unchecked only elements
//! of the output's shape (`row·rows + col < cols · rows ≤ len`): a whole tile
//! because it lies inside the shape, an edge tile's elements each checked; its
//! staging array is private, of
//! `2 · 32 · 33` words, and every access to it is a relaxed 4-byte atomic of an
//! in-bounds word, as every safe shared-memory access is, so a call on a divergent
//! path gives unspecified numbers, never a data race (see `docs/SOUNDNESS.md`).

use core::marker::PhantomData;
use core::ops::{Index, IndexMut};

use crate::thread::{BlockStride, ThreadBound};
use crate::warp::Shuffle;

/// The device side of a `write(out per transposed(TILE, rows))` parameter: the
/// `cols × rows` output of a transpose of a `rows × cols` input. See the
/// [module docs](self).
pub struct TransposeOut<'a, T, const TILE: usize> {
    ptr: *mut T,
    len: usize,
    rows: usize,
    _buffer: PhantomData<&'a mut [T]>,
}

impl<'a, T, const TILE: usize> TransposeOut<'a, T, TILE> {
    const NONEMPTY_TILE: () = assert!(TILE > 0, "a transpose tile has at least one element");

    /// Builds the view from a kernel's pointer and length parameters and the value
    /// of the parameter the attribute names as `rows`.
    ///
    /// # Safety
    ///
    /// Only the code `#[xlog_kernel]` generates calls this; the generated entry point
    /// and launcher uphold:
    ///
    /// 1. `ptr` is valid for reads and writes of `len` consecutive `T`s in device
    ///    memory for the kernel's run, and aligned (`ptr` may dangle when `len == 0`);
    /// 2. nothing but the views built for this parameter accesses that memory while
    ///    the kernel runs;
    /// 3. every thread passes the same `ptr`, `len` and `rows` (a kernel parameter)
    ///    in a one-dimensional launch, and the kernel has no other
    ///    `per transposed` parameter.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn __from_raw_parts(ptr: *mut T, len: usize, rows: usize) -> Self {
        TransposeOut {
            ptr,
            len,
            rows,
            _buffer: PhantomData,
        }
    }

    /// Number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rows of the input, the length of an output row.
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of the input, the number of output rows: `len / rows` (0 when
    /// `rows` is 0).
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.len.checked_div(self.rows).unwrap_or(0)
    }

    /// The number of `TILE × TILE` tiles, the blocks a launch needs:
    /// `⌈rows / TILE⌉ · ⌈cols / TILE⌉` (saturating).
    #[inline(always)]
    pub fn tiles(&self) -> usize {
        let () = Self::NONEMPTY_TILE;
        self.rows
            .div_ceil(TILE)
            .saturating_mul(self.cols().div_ceil(TILE))
    }

    /// The calling block's tile: tile `blockIdx.x`, row-major over the tile grid;
    /// `None` for blocks past the last tile.
    #[inline(always)]
    pub fn tile(&self) -> Option<TransposeTile<TILE>> {
        tile_of(
            self.rows,
            self.cols(),
            crate::thread::block_idx().x as usize,
        )
    }
}

/// Threads per block of [`TransposeOut::transpose_tile`]'s unrolled path: 32 × 8,
/// each moving [`STAGE_ITEMS`] elements of a 32 × 32 tile.
pub const STAGE_THREADS: usize = 256;

/// Elements each thread moves in [`TransposeOut::transpose_tile`]'s unrolled path:
/// `32 · 32 / STAGE_THREADS`, rows `r, r + 8, r + 16, r + 24` of column `t mod 32`.
pub const STAGE_ITEMS: usize = 32 * 32 / STAGE_THREADS;

/// Words of one plane of the staging tile: 32 rows of 33 (the padding column puts
/// the column-wise reads of the store phase in 32 different banks).
const PLANE: usize = 32 * 33;

impl<T: Shuffle> TransposeOut<'_, T, 32> {
    /// Transposes this block's 32 × 32 tile of `x` into the output: the whole
    /// step of a transpose kernel, `#[xlog_kernel(read(x), write(out per
    /// transposed(32, rows)))]` with the body `out.transpose_tile(x)`.
    ///
    /// Blocks past [`tiles()`](Self::tiles) return at once. With
    /// [`STAGE_THREADS`] threads a block, each thread first reads its
    /// [`STAGE_ITEMS`] input elements (rows `t / 32 + 8k`, column `t mod 32` of the
    /// tile) and only then stores them into a staging tile that only this function
    /// reaches, so the reads are in flight together; after the barrier it reads its
    /// four transposed elements back and writes them out, coalesced on both sides,
    /// and waits at a second barrier, which leaves the tile free for another call.
    /// Edge tiles and other block sizes take the same steps one element at a
    /// time, each checked against the shape. Every thread
    /// of the block must call it (see the module's # Soundness for what a call on
    /// a divergent path gives).
    ///
    /// # Panics
    ///
    /// When `x` is shorter than the `rows × cols` the output's shape implies (in
    /// every block with a tile, before it reads anything).
    ///
    /// The staging tile holds 32 × 32 elements, so other tile sizes have no such
    /// method:
    ///
    /// ```compile_fail
    /// fn f(out: &mut xlog_device::transpose::TransposeOut<'_, f32, 64>, x: &[f32]) {
    ///     out.transpose_tile(x);
    /// }
    /// ```
    #[inline(always)]
    #[track_caller]
    pub fn transpose_tile(&mut self, x: &[T]) {
        let Some(tile) = self.tile() else { return };
        let (rows, cols) = (self.rows, tile.cols);
        // One check for the whole call: then every element `(row, col)` of the
        // shape, at `row·cols + col < rows·cols`, is inside `x`. (`rows·cols <= len`
        // cannot overflow.) Its panic carries a fixed message: a formatted one
        // would put `core::fmt` in reach of the kernel, which costs it 56
        // registers instead of 32 (half the resident blocks).
        if x.len() < rows * cols {
            short_input();
        }
        let stage = crate::static_shared!(XLOG_TRANSPOSE_STAGE: [u32; 2 * PLANE]);
        let stage = Stage {
            base: crate::window::base(stage.as_mut_ptr()),
            _owner: stage.owner(),
        };
        // Input origin of the tile; its output origin is (c0, r0).
        let (r0, c0) = (tile.tr * 32, tile.tc * 32);
        let n = crate::thread::block_dim().x as usize;
        let t = crate::thread::thread_idx().x as usize;
        if n == STAGE_THREADS && r0 + 32 <= rows && c0 + 32 <= cols {
            // A whole tile with 256 threads: `t < 256`, so `t / 32 < 8`; the `% 8`
            // tells the compiler, which then drops the slot checks of `Stage` (a
            // branch between a load and its store keeps ptxas from issuing the
            // four loads together).
            let (r, c) = ((t / 32) % 8, t % 32);
            let base = (r0 + r) * cols + c0 + c;
            let v: [T; STAGE_ITEMS] = core::array::from_fn(|k| {
                // SAFETY: `base + 8k·cols = (r0 + r + 8k)·cols + c0 + c` with
                // `r0 + r + 8k < r0 + 32 <= rows` and `c0 + c < c0 + 32 <= cols`:
                // an element of the shape, inside `x` (checked above).
                unsafe { *x.get_unchecked(base + 8 * k * cols) }
            });
            for (k, v) in v.into_iter().enumerate() {
                stage.store((r + 8 * k) * 33 + c, v);
            }
            phase_barrier();
            let v: [T; STAGE_ITEMS] = core::array::from_fn(|k| stage.load(c * 33 + r + 8 * k));
            let base = (c0 + r) * rows + r0 + c;
            for (k, v) in v.into_iter().enumerate() {
                // SAFETY: output `(c0 + r + 8k, r0 + c)` is in the shape (the tile
                // is), and this thread's (`write_out`).
                unsafe { self.write_out(base + 8 * k * rows, v) };
            }
        } else {
            // An edge tile, or another block size: the same steps one element at
            // a time, each checked against the shape.
            let step = n.max(1);
            let mut e = t;
            while e < 32 * 32 {
                let (r, c) = ((e / 32) % 32, e % 32);
                let (row, col) = (r0 + r, c0 + c);
                if row < rows && col < cols {
                    // SAFETY: `(row, col)` is in the shape, so inside `x` (above).
                    let v = unsafe { *x.get_unchecked(row * cols + col) };
                    stage.store(r * 33 + c, v);
                }
                e += step;
            }
            phase_barrier();
            let mut e = t;
            while e < 32 * 32 {
                let (r, c) = ((e / 32) % 32, e % 32);
                let (row, col) = (c0 + r, r0 + c);
                if row < cols && col < rows {
                    let v = stage.load(c * 33 + r);
                    // SAFETY: output `(row, col)` is in the shape (just checked),
                    // and item `e` is this thread's (`write_out`).
                    unsafe { self.write_out(row * rows + col, v) };
                }
                e += step;
            }
        }
        crate::barrier::sync_threads();
    }

    /// Writes output element `o = row·rows + col` of the transposed tile.
    ///
    /// # Safety
    ///
    /// 1. `(row, col)` is inside the shape (`row < cols`, `col < rows`), so
    ///    `o < cols·rows <= len`;
    /// 2. it is output `(row, col)` of this block's tile for the calling thread's
    ///    item `t + k·blockDim.x` of `block_stride(1024)`: the element its
    ///    [`TransposedIndex`] from [`TransposeTile::stores`] would name, which no
    ///    other thread holds (module # Soundness).
    #[inline(always)]
    unsafe fn write_out(&mut self, o: usize, v: T) {
        // SAFETY: `o < len` (obligation 1) is inside the buffer (`__from_raw_parts`
        // obligation 1); no other thread writes it (obligation 2), and `&mut self`
        // excludes another reference from this thread.
        unsafe { self.ptr.add(o).write(v) };
    }
}

/// The panic of [`TransposeOut::transpose_tile`] for an input shorter than its
/// shape, out of line and with a fixed message (no `core::fmt` in reach).
#[cold]
#[inline(never)]
#[track_caller]
fn short_input() -> ! {
    panic!("transpose_tile: the input is shorter than the rows × cols of the output's shape")
}

/// The barrier between the load and the store phase of
/// [`TransposeOut::transpose_tile`]: the block barrier (in the unit tests, skipped
/// when a test asks for the broken variant, to show the check catches it).
#[inline(always)]
fn phase_barrier() {
    #[cfg(test)]
    if tests::SKIP_PHASE_BARRIER.with(|s| s.get()) {
        return;
    }
    crate::barrier::sync_threads();
}

/// The staging tile of [`TransposeOut::transpose_tile`]: two planes of 32 × 33
/// words (the low and the high words of each element), reached by nothing else.
/// Every access is a relaxed 4-byte atomic on an in-bounds aligned word, as every
/// safe shared-memory access is, so a misuse (a call on a divergent path, two
/// calls racing) gives unspecified numbers, never a data race. On the GPU it is
/// addressed as [`SharedWords`](crate::exchange::SharedWords) is, by the array's
/// 32-bit `.shared` window address plus a 32-bit byte offset
/// ([`crate::window`]): 64-bit generic addresses cost the block step about 40
/// instructions a thread.
struct Stage {
    base: crate::window::Base,
    _owner: crate::shared::Owner,
}

impl Stage {
    /// Stores `v` in slot `s` (`s < 32 · 33`): its low word in plane 0, its high
    /// word (64-bit `T`) in plane 1.
    #[inline(always)]
    #[track_caller]
    fn store<T: Shuffle>(&self, s: usize, v: T) {
        self._owner.check();
        assert_slot(s);
        let (lo, hi) = v.__to_bits();
        let at = (4 * s) as u32;
        // SAFETY: `s < PLANE` (above), so bytes `4s` and `4(PLANE + s)` past `base`
        // are aligned words of the `2·PLANE`-word static array `base` came from,
        // which this block owns (checked above); every access to it is one of
        // these 4-byte atomics.
        unsafe {
            crate::window::store(self.base, at, lo);
            if T::__WIDE {
                crate::window::store(self.base, at + 4 * PLANE as u32, hi);
            }
        }
    }

    /// Loads slot `s` (`s < 32 · 33`).
    #[inline(always)]
    #[track_caller]
    fn load<T: Shuffle>(&self, s: usize) -> T {
        self._owner.check();
        assert_slot(s);
        let at = (4 * s) as u32;
        // SAFETY: as in `store`.
        let (lo, hi) = unsafe {
            let lo = crate::window::load(self.base, at);
            let hi = if T::__WIDE {
                crate::window::load(self.base, at + 4 * PLANE as u32)
            } else {
                0
            };
            (lo, hi)
        };
        T::__from_bits(lo, hi)
    }
}

/// The slots `transpose_tile` computes are `r·33 + c` with `r, c < 32`; the check
/// folds away on the device when the compiler sees that bound, and its panic has a
/// fixed message (see `short_input`).
#[inline(always)]
#[track_caller]
fn assert_slot(s: usize) {
    if s >= PLANE {
        slot_outside();
    }
}

/// The panic of a staging slot past the tile.
#[cold]
#[inline(never)]
#[track_caller]
fn slot_outside() -> ! {
    panic!("transpose_tile: staging slot outside the 32 × 33 tile")
}

/// The tile of block `b` for a `rows × cols` input, or `None` past the last one.
#[inline(always)]
fn tile_of<const TILE: usize>(rows: usize, cols: usize, b: usize) -> Option<TransposeTile<TILE>> {
    let tiles_c = cols.div_ceil(TILE);
    if tiles_c == 0 || b >= rows.div_ceil(TILE).saturating_mul(tiles_c) {
        return None;
    }
    Some(TransposeTile {
        tr: b / tiles_c,
        tc: b % tiles_c,
        rows,
        cols,
        _thread: ThreadBound::here(),
    })
}

impl<T, const TILE: usize> TransposeOut<'_, T, TILE> {
    #[inline(always)]
    #[track_caller]
    fn at(&self, i: TransposedIndex<TILE>) -> *mut T {
        i._thread.check();
        let cols = self.cols();
        if i.col >= self.rows || i.row >= cols {
            crate::panic::cold::transposed_outside(self.rows, cols, (i.row, i.col));
        }
        // SAFETY: `row < cols` and `col < rows`, so `row·rows + col < cols·rows <=
        // len`: inside the buffer (obligation 1).
        unsafe { self.ptr.add(i.row * self.rows + i.col) }
    }
}

impl<T, const TILE: usize> Index<TransposedIndex<TILE>> for TransposeOut<'_, T, TILE> {
    type Output = T;

    /// # Panics
    ///
    /// When the element is outside the output.
    #[inline(always)]
    #[track_caller]
    fn index(&self, i: TransposedIndex<TILE>) -> &T {
        // SAFETY: in bounds (`at`); the element is this thread's (module
        // # Soundness), so no other thread writes it.
        unsafe { &*self.at(i) }
    }
}

impl<T, const TILE: usize> IndexMut<TransposedIndex<TILE>> for TransposeOut<'_, T, TILE> {
    /// # Panics
    ///
    /// When the element is outside the output.
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, i: TransposedIndex<TILE>) -> &mut T {
        // SAFETY: as in `index`, and `&mut self` excludes a second reference from
        // this thread.
        unsafe { &mut *self.at(i) }
    }
}

impl<T, const TILE: usize> core::fmt::Debug for TransposeOut<'_, T, TILE> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TransposeOut")
            .field("ptr", &self.ptr)
            .field("rows", &self.rows)
            .field("cols", &self.cols())
            .finish()
    }
}

/// The calling block's tile of a transpose: input rows `tr·TILE ..`, columns
/// `tc·TILE ..`. From [`TransposeOut::tile`].
#[derive(Debug)]
pub struct TransposeTile<const TILE: usize> {
    tr: usize,
    tc: usize,
    rows: usize,
    cols: usize,
    /// The tile names its block's elements: the thread that made it (in the
    /// simulator, checked by `loads` and `stores`).
    _thread: ThreadBound,
}

impl<const TILE: usize> TransposeTile<TILE> {
    /// Slots the shared tile needs: `TILE` rows of `TILE + 1`.
    pub const SLOTS: usize = TILE * (TILE + 1);

    /// The tile's position in the tile grid: `(tile row, tile column)` of the input.
    #[inline(always)]
    pub fn position(&self) -> (usize, usize) {
        (self.tr, self.tc)
    }

    /// The load phase: for each input element of the tile this thread loads, the
    /// slot of the [`Padded<TILE>`](crate::shared::Padded) staging tile to store it
    /// in and its index in the input, `(slot, r·cols + c)`. Elements past the
    /// input's edge are skipped.
    #[inline(always)]
    #[track_caller]
    pub fn loads(&self) -> Loads<TILE> {
        self._thread.check();
        Loads {
            items: crate::thread::block_stride(TILE * TILE),
            r0: self.tr * TILE,
            c0: self.tc * TILE,
            rows: self.rows,
            cols: self.cols,
        }
    }

    /// The store phase: for each output element of the transposed tile this thread
    /// owns, its witness and the shared slot holding its value. Elements past the
    /// output's edge are skipped.
    #[inline(always)]
    #[track_caller]
    pub fn stores(&self) -> Stores<TILE> {
        self._thread.check();
        Stores {
            items: crate::thread::block_stride(TILE * TILE),
            row0: self.tc * TILE,
            col0: self.tr * TILE,
            rows: self.rows,
            cols: self.cols,
        }
    }
}

/// The iterator of [`TransposeTile::loads`].
#[derive(Debug)]
pub struct Loads<const TILE: usize> {
    items: BlockStride,
    r0: usize,
    c0: usize,
    rows: usize,
    cols: usize,
}

impl<const TILE: usize> Iterator for Loads<TILE> {
    type Item = (PaddedSlot<TILE>, usize);

    #[inline(always)]
    fn next(&mut self) -> Option<(PaddedSlot<TILE>, usize)> {
        for e in self.items.by_ref() {
            let (r, c) = (e.get() / TILE, e.get() % TILE);
            let (row, col) = (self.r0 + r, self.c0 + c);
            if row < self.rows && col < self.cols {
                // `e ↦ r·(TILE + 1) + c` is injective, and `e` is this thread's.
                // `e.get()` checked that this thread made `e`: the slot is ours.
                let slot = PaddedSlot {
                    slot: r * (TILE + 1) + c,
                    _thread: ThreadBound::here(),
                };
                return Some((slot, row * self.cols + col));
            }
        }
        None
    }
}

/// The iterator of [`TransposeTile::stores`].
#[derive(Debug)]
pub struct Stores<const TILE: usize> {
    items: BlockStride,
    row0: usize,
    col0: usize,
    rows: usize,
    cols: usize,
}

impl<const TILE: usize> Iterator for Stores<TILE> {
    type Item = (TransposedIndex<TILE>, usize);

    #[inline(always)]
    fn next(&mut self) -> Option<(TransposedIndex<TILE>, usize)> {
        for e in self.items.by_ref() {
            let (r, c) = (e.get() / TILE, e.get() % TILE);
            let (row, col) = (self.row0 + r, self.col0 + c);
            if row < self.cols && col < self.rows {
                let w = TransposedIndex {
                    row,
                    col,
                    _thread: ThreadBound::here(),
                };
                // Output (row, col) is input (col, row): local (c, r) of the tile.
                return Some((w, c * (TILE + 1) + r));
            }
        }
        None
    }
}

/// The witness that the calling thread owns slot `r·(TILE + 1) + c` of a
/// [`Padded<TILE>`](crate::shared::Padded) staging tile in its write phase: from
/// [`TransposeTile::loads`], for this thread's item `r·TILE + c` of the tile. See the
/// module's # Soundness.
///
/// It indexes only padded tiles of the same `TILE`, never a tile from `tile()`,
/// whose slots [`LocalIndex`](crate::thread::LocalIndex)es name:
///
/// ```compile_fail
/// use xlog_device::{static_shared, thread, transpose::TransposeTile};
/// fn mix(t: &TransposeTile<4>) {
///     let mut s = static_shared!(S: [u32; 20]).padded_tile::<4>();
///     s.set(thread::local_index(), 1);
/// }
/// ```
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// fn f(t: &xlog_device::transpose::TransposeTile<4>) {
///     needs_send(t.loads().next().unwrap().0);
/// }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PaddedSlot<const TILE: usize> {
    slot: usize,
    _thread: ThreadBound,
}

impl<const TILE: usize> PaddedSlot<TILE> {
    /// The slot as a number, `r·(TILE + 1) + c` (in the simulator, after checking
    /// that this thread made the witness).
    #[inline(always)]
    #[track_caller]
    pub fn get(self) -> usize {
        self._thread.check();
        self.slot
    }
}

/// The witness that the calling thread owns output element `(row, col)` of a
/// [`TransposeOut`]: from [`TransposeTile::stores`]. See the module's # Soundness.
///
/// ```compile_fail
/// let w = xlog_device::transpose::TransposedIndex::<32> { row: 0, col: 0, _thread: core::marker::PhantomData };
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TransposedIndex<const TILE: usize> {
    row: usize,
    col: usize,
    _thread: ThreadBound,
}

impl<const TILE: usize> TransposedIndex<TILE> {
    /// The output row (an input column).
    #[inline(always)]
    pub fn row(self) -> usize {
        self.row
    }

    /// The output column (an input row).
    #[inline(always)]
    pub fn col(self) -> usize {
        self.col
    }
}

/// Test-only constructor of a padded slot.
#[cfg(test)]
pub(crate) fn padded_witness<const TILE: usize>(slot: usize) -> PaddedSlot<TILE> {
    PaddedSlot {
        slot,
        _thread: ThreadBound::here(),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::HashSet;
    use std::vec::Vec;

    /// Every (block, thread) pair of a launch over a `rows × cols` transpose, its
    /// loads and stores, with `threads` per block: simulated on the host.
    fn simulate(rows: usize, cols: usize, threads: usize) {
        const TILE: usize = 4;
        let x: Vec<usize> = (0..rows * cols).collect();
        let mut out = std::vec![usize::MAX; rows * cols];
        let blocks = rows.div_ceil(TILE) * cols.div_ceil(TILE);
        let mut owned = HashSet::new();
        for b in 0..blocks + 2 {
            let Some(tile) = tile_of::<TILE>(rows, cols, b) else {
                assert!(b >= blocks);
                continue;
            };
            let mut shared = std::vec![usize::MAX; TransposeTile::<TILE>::SLOTS];
            let mut slots = HashSet::new();
            let stride = |t: usize| BlockStride::__for_test(t, threads, TILE * TILE);
            for t in 0..threads {
                let loads = Loads::<TILE> {
                    items: stride(t),
                    ..tile.loads_for_test()
                };
                for (slot, i) in loads {
                    assert!(slots.insert(slot.get()), "slot {} loaded twice", slot.get());
                    shared[slot.get()] = x[i];
                }
            }
            for t in 0..threads {
                let stores = Stores::<TILE> {
                    items: stride(t),
                    ..tile.stores_for_test()
                };
                for (w, slot) in stores {
                    assert!(
                        owned.insert((w.row, w.col)),
                        "({}, {}) owned twice",
                        w.row,
                        w.col
                    );
                    out[w.row * rows + w.col] = shared[slot];
                }
            }
        }
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(
                    out[c * rows + r],
                    x[r * cols + c],
                    "{rows} × {cols} at ({r}, {c})"
                );
            }
        }
        assert_eq!(owned.len(), rows * cols);
    }

    impl<const TILE: usize> TransposeTile<TILE> {
        fn loads_for_test(&self) -> Loads<TILE> {
            Loads {
                items: BlockStride::__for_test(0, 1, 0),
                r0: self.tr * TILE,
                c0: self.tc * TILE,
                rows: self.rows,
                cols: self.cols,
            }
        }
        fn stores_for_test(&self) -> Stores<TILE> {
            Stores {
                items: BlockStride::__for_test(0, 1, 0),
                row0: self.tc * TILE,
                col0: self.tr * TILE,
                rows: self.rows,
                cols: self.cols,
            }
        }
    }

    #[test]
    fn every_output_element_is_owned_once_and_gets_its_transposed_input() {
        for (rows, cols) in [(1, 1), (1, 9), (9, 1), (5, 7), (8, 8), (13, 6)] {
            for threads in [1, 3, 16, 20] {
                simulate(rows, cols, threads);
            }
        }
    }

    std::thread_local! {
        /// Set by a test to run `transpose_tile` without its phase barrier.
        pub(super) static SKIP_PHASE_BARRIER: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    }

    /// Runs `transpose_tile` on the simulator over a `rows × cols` matrix of `T`
    /// with `threads` per block and two spare blocks, the output between guard
    /// elements, and returns the output and whether the guards are intact; `x` may
    /// be shorter than `rows · cols`.
    fn simulate_tile<T: Shuffle + Send + Sync + PartialEq + core::fmt::Debug>(
        x: &[T],
        rows: usize,
        cols: usize,
        threads: u32,
        guard: T,
    ) -> Result<Vec<T>, crate::sim::Fault> {
        let len = rows * cols;
        let mut mem = std::vec![guard; len + 2];
        let out = mem[1..].as_mut_ptr() as usize;
        let tiles = rows.div_ceil(32) * cols.div_ceil(32);
        let launch = crate::sim::Launch {
            grid: crate::Dim3 {
                x: tiles as u32 + 2,
                y: 1,
                z: 1,
            },
            block: crate::Dim3 {
                x: threads,
                y: 1,
                z: 1,
            },
            dynamic_shared_bytes: 0,
        };
        let res = crate::sim::run(
            &launch,
            &|| {
                // SAFETY: `mem[1..=len]` outlives the launch; every thread builds
                // its view from the same pointer and shape, as a kernel does.
                let mut view =
                    unsafe { TransposeOut::<T, 32>::__from_raw_parts(out as *mut T, len, rows) };
                view.transpose_tile(x);
            },
            // One worker: the calling thread, whose `SKIP_PHASE_BARRIER` counts.
            1,
        );
        assert_eq!(
            (mem[0], mem[len + 1]),
            (guard, guard),
            "{rows} × {cols}: written outside the output"
        );
        res.map(|()| mem[1..=len].to_vec())
    }

    fn transposed<T: Copy>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
        (0..rows * cols)
            .map(|o| x[(o % rows) * cols + o / rows])
            .collect()
    }

    #[test]
    fn transpose_tile_matches_the_cpu_on_awkward_shapes_and_block_sizes() {
        for (rows, cols) in [
            (0, 5),
            (5, 0),
            (1, 1),
            (1, 70),
            (70, 1),
            (32, 32),
            (33, 31),
            (64, 96),
            (45, 70),
        ] {
            let x: Vec<u32> = (0..rows * cols).map(|i| i as u32 * 3 + 1).collect();
            for threads in [256, 100, 32, 1024] {
                let got = simulate_tile(&x, rows, cols, threads, u32::MAX).unwrap();
                assert_eq!(
                    got,
                    transposed(&x, rows, cols),
                    "{rows} × {cols}, {threads} threads"
                );
            }
            let y: Vec<f64> = (0..rows * cols).map(|i| i as f64 * -0.5 - 1e12).collect();
            let got = simulate_tile(&y, rows, cols, 256, f64::MAX).unwrap();
            assert_eq!(got, transposed(&y, rows, cols), "f64 {rows} × {cols}");
        }
    }

    /// The phase barrier is what makes the values right: without it the first
    /// thread of a block reads slots no thread has stored yet.
    #[test]
    fn transpose_tile_without_its_phase_barrier_gives_wrong_values() {
        let (rows, cols) = (64, 64);
        let x: Vec<u32> = (0..rows * cols).map(|i| i as u32).collect();
        SKIP_PHASE_BARRIER.with(|s| s.set(true));
        let got = simulate_tile(&x, rows, cols, 256, u32::MAX);
        SKIP_PHASE_BARRIER.with(|s| s.set(false));
        assert_ne!(got.unwrap(), transposed(&x, rows, cols));
    }

    /// `transpose_tile` reads `x` without a check per element, after one check of
    /// its length against the shape: an input shorter than the shape stops the
    /// kernel with a panic instead of reading past it (here into the rest of a
    /// longer vector), whether the missing element falls in a whole tile or an
    /// edge tile, and whatever the block size.
    #[test]
    fn transpose_tile_refuses_an_input_shorter_than_its_shape() {
        for (rows, cols, threads) in [(64, 64, 256), (45, 70, 256), (45, 70, 100)] {
            let x: Vec<u32> = (0..rows * cols).map(|i| i as u32).collect();
            let short = &x[..rows * cols - 1];
            match simulate_tile(short, rows, cols, threads, u32::MAX) {
                Err(crate::sim::Fault::Panic(p)) => {
                    let m = std::format!("{p}");
                    assert!(m.contains("shorter than the rows × cols"), "{m}");
                }
                other => panic!(
                    "{rows} × {cols}, {threads} threads: a short input was read past its end: {other:?}"
                ),
            }
        }
    }

    #[test]
    #[should_panic(expected = "outside the 3 × 2 output")]
    fn witnesses_are_checked_against_the_shape() {
        let mut data = [0u32; 6];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut out = unsafe { TransposeOut::<u32, 4>::__from_raw_parts(data.as_mut_ptr(), 6, 2) };
        assert_eq!((out.rows(), out.cols(), out.tiles()), (2, 3, 1));
        out[TransposedIndex {
            row: 2,
            col: 1,
            _thread: ThreadBound::here(),
        }] = 5;
        assert_eq!(data[5], 5);
        out[TransposedIndex {
            row: 1,
            col: 2,
            _thread: ThreadBound::here(),
        }] = 5;
    }
}
