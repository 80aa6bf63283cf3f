//! Thread, block and grid indices, and [`ThreadIndex`], the witness that makes
//! per-thread writes safe.
//!
//! CUDA names: `threadIdx` = [`thread_idx`], `blockIdx` = [`block_idx`],
//! `blockDim` = [`block_dim`], `gridDim` = [`grid_dim`]
//! ([PTX special registers](https://docs.nvidia.com/cuda/parallel-thread-execution/#special-registers)).
//!
//! # Why [`index_1d`] is unique per thread
//!
//! [`index_1d`] linearises all three dimensions of the block and of the grid:
//!
//! ```text
//! t = tid.x + ntid.x * (tid.y + ntid.y * tid.z)                  // 0 <= t < T = ntid.x*ntid.y*ntid.z
//! b = ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z)        // 0 <= b < B
//! index = b * T + t
//! ```
//!
//! Within a block `t` is a bijection onto `0..T` (mixed-radix digits with
//! `tid.d < ntid.d`), likewise `b` onto `0..B`, and `(b, t) -> b*T + t` with `t < T` is
//! a bijection onto `0..B*T`. So for every launch shape each thread of the grid gets a
//! different value, and the values are exactly `0..total_threads()`. For the usual 1D
//! launch it is `blockIdx.x * blockDim.x + threadIdx.x`. The arithmetic is done in
//! `usize` (64-bit on nvptx64), which cannot overflow: a grid has fewer than 2^63
//! threads.

use core::cmp::Ordering;
use core::fmt;

/// Three extents or coordinates, as CUDA's `dim3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dim3 {
    /// x component.
    pub x: u32,
    /// y component.
    pub y: u32,
    /// z component.
    pub z: u32,
}

impl Dim3 {
    /// The product `x * y * z`, as `usize`.
    pub const fn volume(self) -> usize {
        self.x as usize * self.y as usize * self.z as usize
    }

    /// `x + self.x * (y + self.y * z)`: the linear index of `at` in a box of extent
    /// `self`.
    pub const fn linearize(self, at: Dim3) -> usize {
        at.x as usize + self.x as usize * (at.y as usize + self.y as usize * at.z as usize)
    }
}

#[cfg(target_arch = "nvptx64")]
mod sreg {
    use core::arch::nvptx;

    macro_rules! sreg {
        ($($name:ident => $intrinsic:ident),* $(,)?) => {
            $(
                #[inline(always)]
                pub(super) fn $name() -> u32 {
                    // SAFETY: reading a PTX special register has no preconditions;
                    // core marks all nvptx intrinsics unsafe.
                    unsafe { nvptx::$intrinsic() as u32 }
                }
            )*
        };
    }

    sreg!(
        tid_x => _thread_idx_x, tid_y => _thread_idx_y, tid_z => _thread_idx_z,
        ntid_x => _block_dim_x, ntid_y => _block_dim_y, ntid_z => _block_dim_z,
        ctaid_x => _block_idx_x, ctaid_y => _block_idx_y, ctaid_z => _block_idx_z,
        nctaid_x => _grid_dim_x, nctaid_y => _grid_dim_y, nctaid_z => _grid_dim_z,
    );

    #[inline(always)]
    pub(super) fn laneid() -> u32 {
        let r: u32;
        // SAFETY: reads the %laneid special register; no memory is touched.
        unsafe {
            core::arch::asm!("mov.u32 {r}, %laneid;", r = out(reg32) r, options(pure, nomem, nostack))
        };
        r
    }
}

/// `threadIdx`: this thread's coordinates within its block.
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    device_only!("thread::thread_idx", {
        Dim3 {
            x: sreg::tid_x(),
            y: sreg::tid_y(),
            z: sreg::tid_z(),
        }
    })
}

/// `blockDim`: the extent of a block, in threads.
#[inline(always)]
pub fn block_dim() -> Dim3 {
    device_only!("thread::block_dim", {
        Dim3 {
            x: sreg::ntid_x(),
            y: sreg::ntid_y(),
            z: sreg::ntid_z(),
        }
    })
}

/// `blockIdx`: this block's coordinates within the grid.
#[inline(always)]
pub fn block_idx() -> Dim3 {
    device_only!("thread::block_idx", {
        Dim3 {
            x: sreg::ctaid_x(),
            y: sreg::ctaid_y(),
            z: sreg::ctaid_z(),
        }
    })
}

/// `gridDim`: the extent of the grid, in blocks.
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    device_only!("thread::grid_dim", {
        Dim3 {
            x: sreg::nctaid_x(),
            y: sreg::nctaid_y(),
            z: sreg::nctaid_z(),
        }
    })
}

/// This thread's linear index within its block, `0..threads_per_block()`.
#[inline(always)]
pub fn block_thread_index() -> usize {
    block_dim().linearize(thread_idx())
}

/// This block's linear index within the grid, `0..blocks_per_grid()`.
#[inline(always)]
pub fn block_index() -> usize {
    grid_dim().linearize(block_idx())
}

/// Threads per block (`blockDim.x * blockDim.y * blockDim.z`).
#[inline(always)]
pub fn threads_per_block() -> usize {
    block_dim().volume()
}

/// Blocks in the grid.
#[inline(always)]
pub fn blocks_per_grid() -> usize {
    grid_dim().volume()
}

/// Threads in the whole launch.
#[inline(always)]
pub fn total_threads() -> usize {
    threads_per_block() * blocks_per_grid()
}

/// This thread's lane within its warp, `0..32` (`%laneid`).
#[inline(always)]
pub fn lane_id() -> u32 {
    device_only!("thread::lane_id", { sreg::laneid() })
}

/// This thread's warp within its block: `block_thread_index() / 32`.
#[inline(always)]
pub fn warp_index() -> usize {
    block_thread_index() / crate::warp::WARP_SIZE as usize
}

/// Number of warps in a block (the last one may be partial).
#[inline(always)]
pub fn warps_per_block() -> usize {
    threads_per_block().div_ceil(crate::warp::WARP_SIZE as usize)
}

/// Global x and y coordinates for 2D launches:
/// `(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y)`.
/// Plain numbers, not witnesses; use [`index_1d`] to index write views.
#[inline(always)]
pub fn index_2d() -> (usize, usize) {
    let (t, b, d) = (thread_idx(), block_idx(), block_dim());
    (
        b.x as usize * d.x as usize + t.x as usize,
        b.y as usize * d.y as usize + t.y as usize,
    )
}

/// Global x, y and z coordinates for 3D launches (see [`index_2d`]).
#[inline(always)]
pub fn index_3d() -> (usize, usize, usize) {
    let (t, b, d) = (thread_idx(), block_idx(), block_dim());
    (
        b.x as usize * d.x as usize + t.x as usize,
        b.y as usize * d.y as usize + t.y as usize,
        b.z as usize * d.z as usize + t.z as usize,
    )
}

/// This thread's globally unique index over the whole launch, as a [`ThreadIndex`]
/// witness. See the module docs for why no two threads share one.
#[inline(always)]
pub fn index_1d() -> ThreadIndex {
    let (b, d) = (block_dim(), grid_dim());
    // Most launches are one-dimensional: then the full linearisation reduces to
    // `blockIdx.x * blockDim.x + threadIdx.x`, one 32×32→64 multiply-add instead of
    // two 64-bit ones. The branch is uniform across the launch, so it never diverges.
    if (b.y | b.z | d.y | d.z) == 1 {
        ThreadIndex(block_idx().x as usize * b.x as usize + thread_idx().x as usize)
    } else {
        ThreadIndex(block_index() * threads_per_block() + block_thread_index())
    }
}

/// A grid-stride loop over `0..len`: yields `i, i + T, i + 2T, ...` below `len`, where
/// `i` is [`index_1d`] and `T` is [`total_threads`]. Each index in `0..len` is yielded
/// by exactly one thread of the launch, so the items are [`ThreadIndex`] witnesses too.
///
/// ```no_run
/// # use xlog_device::{thread, view::InOut};
/// fn scale(y: &mut InOut<'_, f32>, a: f32) {
///     for i in thread::grid_stride(y.len()) {
///         y[i] *= a;
///     }
/// }
/// ```
#[inline(always)]
pub fn grid_stride(len: usize) -> GridStride {
    GridStride {
        next: index_1d().0,
        stride: total_threads(),
        len,
    }
}

/// The iterator of [`grid_stride`].
#[derive(Debug, Clone)]
pub struct GridStride {
    next: usize,
    stride: usize,
    len: usize,
}

impl Iterator for GridStride {
    type Item = ThreadIndex;

    #[inline(always)]
    fn next(&mut self) -> Option<ThreadIndex> {
        if self.next < self.len {
            let i = self.next;
            // Saturating: past `len` the loop ends anyway, and an overflowing add
            // must not wrap back into range.
            self.next = self.next.saturating_add(self.stride);
            Some(ThreadIndex(i))
        } else {
            None
        }
    }
}

/// A thread's globally unique linear index: the only key that gives safe mutable
/// access to a write view ([`crate::view::Out`], [`crate::view::InOut`]).
///
/// There is no public constructor: values come from [`index_1d`] (one per thread)
/// and [`grid_stride`] (disjoint sets per thread). Because no two threads of a launch
/// can hold equal witnesses, indexing a write view with one never gives two threads
/// `&mut` to the same element.
///
/// Compare it with plain numbers (`i < out.len()`), read it with [`get`](Self::get),
/// and use `get()` to index read-only slices (`x[i.get()]`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadIndex(usize);

impl ThreadIndex {
    /// The index as a number.
    #[inline(always)]
    pub const fn get(self) -> usize {
        self.0
    }
}

impl PartialEq<usize> for ThreadIndex {
    #[inline(always)]
    fn eq(&self, other: &usize) -> bool {
        self.0 == *other
    }
}

impl PartialOrd<usize> for ThreadIndex {
    #[inline(always)]
    fn partial_cmp(&self, other: &usize) -> Option<Ordering> {
        Some(self.0.cmp(other))
    }
}

impl PartialEq<ThreadIndex> for usize {
    #[inline(always)]
    fn eq(&self, other: &ThreadIndex) -> bool {
        *self == other.0
    }
}

impl PartialOrd<ThreadIndex> for usize {
    #[inline(always)]
    fn partial_cmp(&self, other: &ThreadIndex) -> Option<Ordering> {
        Some(self.cmp(&other.0))
    }
}

impl From<ThreadIndex> for usize {
    #[inline(always)]
    fn from(i: ThreadIndex) -> usize {
        i.0
    }
}

impl fmt::Display for ThreadIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for ThreadIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadIndex({})", self.0)
    }
}

/// Test-only constructor: unit tests of views need witnesses without a GPU.
#[cfg(test)]
pub(crate) fn witness(i: usize) -> ThreadIndex {
    ThreadIndex(i)
}

/// Suspend this thread for about `ns` nanoseconds (PTX `nanosleep`, sm_70+; the
/// hardware may sleep anywhere in `[0, 2·ns]`). For tests and back-off loops.
#[inline(always)]
pub fn sleep_ns(ns: u32) {
    device_only!("thread::sleep_ns", {
        // SAFETY: `nanosleep` only delays the calling thread; it touches no memory.
        unsafe { core::arch::asm!("nanosleep.u32 {t};", t = in(reg32) ns, options(nomem, nostack)) }
    })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::HashSet;
    use std::format;

    #[test]
    fn linearization_is_a_bijection_for_any_shape() {
        let grid = Dim3 { x: 3, y: 2, z: 2 };
        let block = Dim3 { x: 4, y: 3, z: 2 };
        let mut seen = HashSet::new();
        for bz in 0..grid.z {
            for by in 0..grid.y {
                for bx in 0..grid.x {
                    for tz in 0..block.z {
                        for ty in 0..block.y {
                            for tx in 0..block.x {
                                let b = grid.linearize(Dim3 {
                                    x: bx,
                                    y: by,
                                    z: bz,
                                });
                                let t = block.linearize(Dim3 {
                                    x: tx,
                                    y: ty,
                                    z: tz,
                                });
                                assert!(seen.insert(b * block.volume() + t));
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(seen.len(), grid.volume() * block.volume());
        assert!(seen.iter().all(|&i| i < grid.volume() * block.volume()));
    }

    #[test]
    fn grid_stride_partitions_the_range() {
        let (threads, len) = (7usize, 40usize);
        let mut seen = HashSet::new();
        for t in 0..threads {
            let it = GridStride {
                next: t,
                stride: threads,
                len,
            };
            for i in it {
                assert!(seen.insert(i.get()), "index {i} yielded twice");
            }
        }
        assert_eq!(seen.len(), len);
        let mut near_max = GridStride {
            next: usize::MAX - 1,
            stride: 5,
            len: usize::MAX,
        };
        assert_eq!(near_max.next().map(ThreadIndex::get), Some(usize::MAX - 1));
        assert_eq!(near_max.next(), None);
    }

    #[test]
    fn witness_compares_with_numbers() {
        let i = witness(5);
        assert!(i < 6 && i == 5 && 4 < i);
        assert_eq!(format!("{i} {i:?}"), "5 ThreadIndex(5)");
        assert_eq!(usize::from(i), 5);
    }

    #[test]
    #[should_panic(expected = "only runs on the GPU")]
    fn host_indices_are_unsupported() {
        let _ = index_1d();
    }
}
