//! Single-pass kernels whose blocks talk to each other: inclusive scans with
//! decoupled look-back, and a shared-memory tiled transpose, all without `unsafe`.
//!
//! | kernel | tool |
//! | --- | --- |
//! | `inclusive_scan_{u32,u64,f32}`, [`inclusive_max_scan_u32`] | `lookback(status)`: tile = block index with a block per tile, tickets in start order when blocks loop, aggregates and prefixes published packed with their status (32-bit) or with release/acquire (64-bit); `write(out per tile(K))` |
//! | [`transpose`] (`u32`, `i32`, `f32`, `u64`, `i64`, `f64`) | `write(out per transposed(32, rows))`: [`TransposeOut::transpose_tile`](xlog::device::view::TransposeOut::transpose_tile), a padded shared tile, coalesced on both sides |

use xlog::device::lookback::{self, LookBack};
use xlog::device::vector::Vector;
use xlog::device::view::{Out, Tiles};
use xlog::device::warp::Shuffle;
use xlog::prelude::*;

/// Threads per block of the scans (each thread scans `K` elements, so a tile is
/// `256·K` elements).
pub const SCAN_BLOCK: u32 = 256;

/// One block's share of a single-pass inclusive scan under `op` (associative, with
/// `identity`): while tiles remain, take one, scan its `blockDim.x·K` elements
/// (`K` per thread, loaded and stored as vectors), publish its aggregate, look back
/// for the prefix of the tiles before it and store the scanned tile.
#[inline(always)]
fn scan_tiles<T: Shuffle, const K: usize>(
    x: &[T],
    out: &mut Out<'_, T, Tiles<K>>,
    status: &mut LookBack<'_>,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) where
    [T; K]: Vector,
{
    while let Some(tile) = status.next_tile() {
        let mut v: [T; K] = lookback::load_chunk(x, tile.chunk_index(), identity);
        let c = tile.chunk::<K>();
        for j in 1..K {
            v[j] = op(v[j - 1], v[j]);
        }
        let (before, total) = collective::block_exclusive_scan(v[K - 1], identity, op);
        let base = match tile.exclusive_prefix(total, op) {
            Some(prefix) => op(prefix, before),
            None => before,
        };
        out.store_chunk(c, v.map(|e| op(base, e)));
    }
}

/// `out[i] = x[0] + … + x[i]` (wrapping), in one pass: `status` needs
/// `lookback::status_words(⌈len / 1024⌉)` words (the launcher zeroes it). Any
/// number of 256-thread blocks: each takes tiles until none is left.
#[xlog_kernel(read(x), write(out per tile(4)), lookback(status), block = 256)]
pub fn inclusive_scan_u32(x: &[u32], out: &mut [u32], status: &mut [u64]) {
    scan_tiles(x, out, status, 0, u32::wrapping_add);
}

/// `out[i] = x[0] + … + x[i]` (wrapping), in one pass; tiles of 512 elements
/// (`lookback::status_words(⌈len / 512⌉)` status words).
#[xlog_kernel(read(x), write(out per tile(2)), lookback(status), block = 256)]
pub fn inclusive_scan_u64(x: &[u64], out: &mut [u64], status: &mut [u64]) {
    scan_tiles(x, out, status, 0, u64::wrapping_add);
}

/// `out[i] = x[0] + … + x[i]` in one pass, summed in a tree order within tiles of
/// 1024 elements and left to right across them.
#[xlog_kernel(read(x), write(out per tile(4)), lookback(status), block = 256)]
pub fn inclusive_scan_f32(x: &[f32], out: &mut [f32], status: &mut [u64]) {
    scan_tiles(x, out, status, 0.0, |a: f32, b: f32| a + b);
}

/// `out[i] = max(x[0], …, x[i])` in one pass: the scan with another operator.
#[xlog_kernel(read(x), write(out per tile(4)), lookback(status), block = 256)]
pub fn inclusive_max_scan_u32(x: &[u32], out: &mut [u32], status: &mut [u64]) {
    scan_tiles(x, out, status, 0, u32::max);
}

/// `out` (`cols × rows`) = the transpose of `x` (`rows × cols`, row-major): block
/// `b` moves tile `b` of 32 × 32 elements through shared memory, reading and
/// writing whole rows ([`TransposeOut::transpose_tile`]). Needs `out.tiles()`
/// blocks (more do nothing), of any size; 256 threads take the unrolled path,
/// four elements a thread, and the kernel fits eight such blocks a
/// multiprocessor (32 registers). An `x` shorter than `rows × cols` is a device
/// panic (`transpose_matrix` refuses it before launching).
#[xlog_kernel(
    read(x), write(out per transposed(32, rows)),
    for T in [u32, i32, f32, u64, i64, f64]
)]
pub fn transpose<T: Shuffle>(x: &[T], out: &mut [T], rows: usize) {
    // The view carries the shape: `rows` came with it.
    let _ = rows;
    out.transpose_tile(x);
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::device::lookback::status_words;
    use xlog::{DeviceBuffer, LaunchConfig, ReadBuffer, Result, Stream};

    use super::SCAN_BLOCK;

    macro_rules! scan_fn {
        ($name:ident, $t:ty, $k:literal, $doc:literal) => {
            #[doc = $doc]
            ///
            /// One launch, one block per tile; the look-back status buffer is
            /// allocated here and zeroed by the launcher.
            pub fn $name(
                s: &Stream,
                x: &(impl ReadBuffer<$t> + ?Sized),
            ) -> Result<DeviceBuffer<$t>> {
                let x = x.as_view();
                let rt = s.runtime()?;
                let mut out = rt.alloc_zeroed_on::<$t>(s, x.len())?;
                if x.is_empty() {
                    return Ok(out);
                }
                let tiles = x.len().div_ceil(SCAN_BLOCK as usize * $k);
                let mut status = rt.alloc_zeroed_on::<u64>(s, status_words(tiles))?;
                let cfg = LaunchConfig::new([tiles as u32, 1, 1], [SCAN_BLOCK, 1, 1]);
                crate::single_pass::$name::launch(s, cfg, &x, &mut out, &mut status)?;
                Ok(out)
            }
        };
    }

    scan_fn!(
        inclusive_scan_u32,
        u32,
        4,
        "The inclusive wrapping sum of `x`, in one pass."
    );
    scan_fn!(
        inclusive_scan_u64,
        u64,
        2,
        "The inclusive wrapping sum of `x`, in one pass."
    );
    scan_fn!(
        inclusive_scan_f32,
        f32,
        4,
        "The inclusive sum of `x`, in one pass (a tree order within tiles of 1024)."
    );
    scan_fn!(
        inclusive_max_scan_u32,
        u32,
        4,
        "The running maximum of `x`, in one pass."
    );

    /// The `cols × rows` transpose of `x`, a `rows × cols` row-major matrix of
    /// 32- or 64-bit numbers: one launch of [`transpose`](super::transpose), a
    /// 256-thread block per 32 × 32 tile.
    ///
    /// # Errors
    ///
    /// [`xlog::Error::InvalidArgument`] when `rows × cols` is not `x.len()`
    /// (nothing is allocated or queued); launch and allocation errors otherwise.
    pub fn transpose_matrix<T: super::TransposeType + xlog::DeviceCopy>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        rows: usize,
        cols: usize,
    ) -> Result<DeviceBuffer<T>> {
        let x = x.as_view();
        if rows.checked_mul(cols) != Some(x.len()) {
            return Err(xlog::Error::InvalidArgument {
                what: "xlog_kernels::transpose_matrix".to_owned(),
                reason: format!(
                    "a {rows} × {cols} matrix has {} elements but the input has {}; pass its shape",
                    rows as u128 * cols as u128,
                    x.len()
                ),
            });
        }
        let mut out = s.runtime()?.alloc_zeroed_on::<T>(s, x.len())?;
        if x.is_empty() {
            return Ok(out);
        }
        let tiles = rows.div_ceil(32) * cols.div_ceil(32);
        let Ok(blocks) = u32::try_from(tiles) else {
            return Err(xlog::Error::InvalidArgument {
                what: "xlog_kernels::transpose_matrix".to_owned(),
                reason: format!(
                    "a {rows} × {cols} matrix has {tiles} tiles of 32 × 32, more than a launch's {} blocks",
                    u32::MAX
                ),
            });
        };
        let cfg = LaunchConfig::new([blocks, 1, 1], [256, 1, 1]);
        crate::single_pass::transpose::launch(s, cfg, &x, &mut out, rows)?;
        Ok(out)
    }

    /// [`transpose_matrix`] of `f32`s.
    pub fn transpose_f32(
        s: &Stream,
        x: &(impl ReadBuffer<f32> + ?Sized),
        rows: usize,
        cols: usize,
    ) -> Result<DeviceBuffer<f32>> {
        transpose_matrix(s, x, rows, cols)
    }

    /// [`transpose_matrix`] of `f64`s.
    pub fn transpose_f64(
        s: &Stream,
        x: &(impl ReadBuffer<f64> + ?Sized),
        rows: usize,
        cols: usize,
    ) -> Result<DeviceBuffer<f64>> {
        transpose_matrix(s, x, rows, cols)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::{
    inclusive_max_scan_u32 as max_scan_u32, inclusive_scan_f32 as scan_f32,
    inclusive_scan_u32 as scan_u32, inclusive_scan_u64 as scan_u64,
    transpose_f32 as transpose_matrix_f32, transpose_f64 as transpose_matrix_f64, transpose_matrix,
};
