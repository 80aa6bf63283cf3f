//! A library of GPU kernels written in Rust with `#[xlog_kernel]`, and host
//! functions that launch them: each takes a stream and buffers (or views), checks
//! its inputs, allocates its outputs and temporaries from the stream's runtime (so
//! from its budget), launches on that stream and returns device buffers. Inputs are
//! fenced against work on other streams like any launch; kernel bodies have no
//! `unsafe`.
//!
//! | module | what |
//! | --- | --- |
//! | [`elementwise`] (host functions at the crate root) | [`fill`], [`copy`], [`cast_f32`] / [`cast_f64`], [`scale`], [`axpy`] (vectorised), [`add`], [`sub`], [`mul`], [`min`], [`max`] |
//! | [`reduce`] | sum, minimum, maximum, and [`reduce::fold`] under a kernel of your own |
//! | [`scan`] | single-pass inclusive and exclusive scans with a warp-wide decoupled look-back |
//! | [`gather`] | gather and scatter by index (an index out of range is an error) |
//! | [`predicate`] | comparisons and range tests making `u8` filter flags, flags combined |
//! | [`compact`] | select by flags, stable partition, run-length encoding |
//! | [`histogram`] | even bins over a range, counts by key (privatised per block) |
//! | [`dense_group`] | count, sum, minimum and maximum by a key from a small dense domain, without a sort |
//! | [`segmented`] | segmented reduce by offsets, reduce-by-key |
//! | [`sort`] | a stable onesweep radix sort of keys or key–value pairs, or of keys by their low bits |
//! | [`set`] | merge, difference and intersection of sorted runs |
//! | [`join`] | hash joins (inner, semi, anti) on `u32` and `u64` keys |
//! | [`single_pass`] | single-pass scans ([`scan_u32`], [`scan_u64`], [`scan_f32`], [`max_scan_u32`]) and tiled transposes ([`transpose_matrix_f32`], [`transpose_matrix_f64`]) |
//!
//! Each module's docs give its element types; the guide's chapter "The kernel
//! library" (`docs/guide.md`) has the table of algorithms by element type and a
//! filter, join and group-by written with these calls.
//!
//! ```no_run
//! # fn main() -> xlog::Result<()> {
//! let rt = xlog::Runtime::get(0)?;
//! let s = rt.stream()?;
//! let x = rt.upload(&[1.0f32, 2.0, 3.0])?;
//! let y = rt.upload(&[10.0f32, 20.0, 30.0])?;
//! let z = xlog_kernels::add(&s, &x, &y)?;
//! assert_eq!(z.download(&s)?, vec![11.0, 22.0, 33.0]);
//! # Ok(()) }
//! ```
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

xlog::kernel_module!();

/// How many tiles ahead of its own a block of the [`scan`] and [`compact`] kernels
/// prefetches inputs into L2: 256 tiles, 4 MiB ahead for the scans and the 32-bit
/// compactions (tiles of 16 KiB, plus 1 MiB of flags for select and partition), 8
/// MiB for the 64-bit compactions (tiles of 32 KiB). The scans of [`single_pass`]
/// do not prefetch.
/// While a block waits on its look-back, DRAM keeps fetching a later block's
/// inputs, which then load from L2. On an H100 this took the inclusive scan of
/// 10^8 `i32`s from 0.555 to 0.486 ms; at 1024 tiles ahead (16 MiB) prefetched
/// lines were evicted before use and the scan got slower than with none.
pub const PREFETCH_TILES: usize = 256;

/// The first element of the chunk [`PREFETCH_TILES`] tiles after chunk `c` of a
/// block's tile (chunks of `items` elements, one per thread), saturating: where the
/// single-pass kernels prefetch. It may lie past the end of the input.
#[inline(always)]
fn prefetch_start(c: usize, items: usize) -> usize {
    let ahead = PREFETCH_TILES * xlog::device::thread::block_dim().x as usize;
    c.saturating_add(ahead).saturating_mul(items)
}

/// Runs `$body` with `$j` bound to each item number, written out once per item with
/// `$j` a constant: `0..16` (the per-thread tiles of the selection), `0..$limit`
/// for a constant `$limit` from 16 to 32 (the sort's tiles: items from 16 on are
/// each behind a test of `$limit` that the compiler folds), or the numbers listed
/// after `in`. LLVM leaves some loops over ballots and shared memory rolled, and a
/// rolled loop indexes per-item arrays in local memory instead of registers. Each
/// user asserts that its tile's items per thread are what it writes out.
macro_rules! each_item {
    ($j:ident => $body:block) => {
        each_item!(@ $j $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    ($j:ident in $($n:literal)* => $body:block) => {
        each_item!(@ $j $body; $($n)*)
    };
    ($j:ident < $limit:expr => $body:block) => {{
        const { assert!($limit >= 16 && $limit <= 32, "each_item! writes out 16 to 32 items") };
        each_item!(@ $j $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
        each_item!(@ $j {
            if $j < $limit $body
        }; 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    }};
    (@ $j:ident $body:block; $($n:literal)*) => {{
        $({
            let $j: usize = $n;
            $body
        })*
    }};
}

#[cfg(not(target_arch = "nvptx64"))]
#[macro_use]
mod exec;

pub mod compact;
pub mod dense_group;
pub mod elementwise;
pub mod gather;
pub mod histogram;
pub mod join;
pub mod predicate;
pub mod reduce;
pub mod scan;
pub mod segmented;
pub mod set;
pub mod single_pass;
pub mod sort;

#[cfg(not(target_arch = "nvptx64"))]
mod host;

/// The launch of a grid-stride kernel over `n` elements: one thread per element in
/// blocks of 256, capped at the grid's limit (the loop covers the rest).
#[cfg(not(target_arch = "nvptx64"))]
fn per_element(n: usize) -> xlog::LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, xlog::MAX_GRID_BLOCKS as usize) as u32;
    xlog::LaunchConfig::new([blocks, 1, 1], [256, 1, 1])
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;
#[cfg(not(target_arch = "nvptx64"))]
pub use single_pass::{
    max_scan_u32, scan_f32, scan_u32, scan_u64, transpose_matrix_f32, transpose_matrix_f64,
};
