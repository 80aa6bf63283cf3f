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

use core::marker::PhantomData;
use core::ops::{Index, IndexMut};

use crate::thread::{BlockStride, ThreadBound};

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
