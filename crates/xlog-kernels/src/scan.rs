//! Prefix scans in one pass: inclusive and exclusive sums of `u32`, `i32`, `u64`,
//! `i64`, `f32`, `f64`, and scans under an operator of your own.
//!
//! # Algorithm
//!
//! One launch, one block of [`BLOCK`] threads per tile (CUB's `DeviceScan` with
//! decoupled look-back). A tile is 64 bytes per thread: [`ITEMS_32`] elements of a
//! 32-bit type or [`ITEMS_64`] of a 64-bit one, each thread loading and storing its
//! consecutive elements as 16-byte vectors. A thread scans its elements, the block
//! scans the threads' totals ([`collective::block_exclusive_scan`]), and the tile
//! publishes its aggregate and learns the total of every tile before it from a
//! warp-wide look-back ([`Ticket::exclusive_prefix`](xlog::device::lookback::Ticket::exclusive_prefix):
//! 32 predecessors per step). Block `b` scans tile `b`, so a block waits only on
//! blocks the hardware started before it (blocks start in index order, the
//! assumption CUB's scan makes too; see [`LookBack::next_tile`](xlog::device::lookback::LookBack::next_tile)).
//! Each block also prefetches into L2 the inputs of the tile
//! [`PREFETCH_TILES`](crate::PREFETCH_TILES) ahead of its own, so DRAM keeps
//! streaming while blocks wait on their look-back.
//!
//! | | |
//! | --- | --- |
//! | work | `O(n)`: every element read once and written once |
//! | launches | 1 (and the launcher's zeroing of the status words) |
//! | temporary memory | the look-back status: `8 · (1 + 4 · tiles)` bytes, about 1 % of the input, from the stream's runtime (its budget applies) |
//! | determinism | the combination order depends only on `n`: the same input gives the same bits, floats included |
//!
//! # Edge cases
//!
//! An empty input gives an empty output without a launch. Integer sums wrap. Float
//! sums are combined in a tree order within a thread's elements, the block and the
//! tiles, so they may differ from a sequential sum by rounding; a NaN or infinity
//! propagates to every later element, as in a sequential sum. An exclusive scan
//! starts from the identity (`0` for sums): `out[0] = 0`, `out[i] = x[0] + … + x[i-1]`.
//!
//! # Your own operator
//!
//! Write a kernel whose body is [`scan_tile`] with your operator (associative;
//! it need not be commutative: elements are combined in order) and identity, and
//! name it in an (`unsafe`) [`ScanKernel`] implementation; [`scan`] runs it. [`InclusiveMaxU32`]
//! is one, written the way yours would be. Without `unsafe`: implement the safe
//! [`Scan`] and call [`scan_safely`], which zeroes the output first (one more write
//! of it); a kernel generic over its element type needs one implementation,
//! `impl<T: KernelType> Scan<T>`, as [`InclusiveXor`] shows.

use xlog::device::lookback::{self, LookBack};
use xlog::device::vector::Vector;
use xlog::device::view::{self, Out, Tiles};
use xlog::device::warp::Shuffle;
use xlog::prelude::*;

use crate::reduce::Reduced;

/// Threads per block of every scan kernel.
pub const BLOCK: u32 = 256;
/// Elements per thread of a 32-bit scan (four 16-byte vectors).
pub const ITEMS_32: usize = 16;
/// Elements per thread of a 64-bit scan (four 16-byte vectors).
pub const ITEMS_64: usize = 8;

/// The calling block's tile of a single-pass scan under `op` (associative,
/// `identity` its identity): scan its `blockDim.x · K` elements (`K` consecutive
/// ones per thread, moved as vectors of `V`), publish its aggregate, look back for
/// the total of the tiles before it and store the scanned tile: `out[i] = x[0] op
/// … op x[i]` when `INCLUSIVE`, `identity op x[0] op … op x[i-1]` otherwise.
///
/// The body of every scan kernel; every thread of the block must call it (it holds
/// block collectives). `status` needs `lookback::status_words(⌈len / (blockDim.x · K)⌉)`
/// words, and the launch a block per tile, as [`scan`] makes it.
///
/// One tile per block, in straight-line code: a loop over tiles would let the
/// compiler keep the loop's invariant addresses and indices in registers across
/// the whole tile, and the 32-bit scans then need 80 registers a thread instead of
/// 48 (three blocks a multiprocessor instead of five, with fewer loads in flight;
/// at 48, ptxas spills at most 20 bytes). The scans therefore always rely on
/// blocks starting in index order (see [`LookBack::next_tile`]).
///
/// # Panics
///
/// When the grid has fewer blocks than `status` has tiles, or `status` has fewer
/// tiles than `out` needs: some of `out` would be left unwritten.
#[inline(always)]
#[track_caller]
pub fn scan_tile<T: Shuffle, const K: usize, const V: usize, const INCLUSIVE: bool>(
    x: &[T],
    out: &mut Out<'_, T, Tiles<K>>,
    status: &mut LookBack<'_>,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) where
    [T; V]: Vector,
{
    assert!(
        status.one_tile_per_block(),
        "scan_tile needs a block per tile: launch as many blocks as the status has tiles"
    );
    const { assert!(K > 0, "a scan tile has at least one element per thread") };
    let tile_len = (thread::block_dim().x as usize).saturating_mul(K);
    assert!(
        out.len() <= status.tiles().saturating_mul(tile_len),
        "scan_tile needs a status with a tile for every blockDim.x * K elements of out"
    );
    let Some(tile) = status.next_tile() else {
        return;
    };
    let v: [T; K] = lookback::load_chunk_by::<T, K, V>(x, tile.chunk_index(), identity);
    // While this block looks back, DRAM fetches the inputs of a later tile.
    view::prefetch_l2(x, crate::prefetch_start(tile.chunk_index(), K));
    let c = tile.chunk::<K>();
    let mut run = v;
    for j in 1..K {
        run[j] = op(run[j - 1], v[j]);
    }
    let (before, total) = collective::block_exclusive_scan(run[K - 1], identity, op);
    let base = match tile.exclusive_prefix(total, op) {
        Some(prefix) => op(prefix, before),
        None => before,
    };
    let scanned: [T; K] = if INCLUSIVE {
        run.map(|e| op(base, e))
    } else {
        core::array::from_fn(|j| if j == 0 { base } else { op(base, run[j - 1]) })
    };
    out.store_chunk_by::<V>(c, scanned);
}

/// The launch every scan kernel needs, for `K` elements per thread. (Docs reach
/// only the host's launchers, so the device build never expands it.)
#[allow(unused_macros)]
macro_rules! launch_rule {
    ($k:tt) => {
        concat!(
            "Launch it as [`scan`] does: blocks of 256 threads, `status` of ",
            "`lookback::status_words(tiles)` words with `tiles = ⌈len / (",
            stringify!($k),
            " · 256)⌉`, and at least `tiles` blocks. A smaller grid or status is a device panic."
        )
    };
}

/// `out[i] = x[0] + … + x[i]` over 32-bit numbers (wrapping for integers), in one
/// pass: the kernel of [`inclusive_sum`] for `u32`, `i32` and `f32` (16 elements a
/// thread). The sum is [`Reduced::sum`], the reductions' own.
#[doc = launch_rule!(16)]
#[xlog_kernel(
    read(x), write(out per tile(16)), lookback(status), block = 256, min_blocks = 5,
    for T in [u32, i32, f32]
)]
pub fn scan_inclusive_sum<T: Reduced>(x: &[T], out: &mut [T], status: &mut [u64])
where
    [T; 4]: Vector,
{
    scan_tile::<T, 16, 4, true>(x, out, status, T::ZERO, T::sum);
}

/// `out[i] = x[0] + … + x[i-1]` over 32-bit numbers, in one pass: the kernel of
/// [`exclusive_sum`] for `u32`, `i32` and `f32`.
#[doc = launch_rule!(16)]
#[xlog_kernel(
    read(x), write(out per tile(16)), lookback(status), block = 256, min_blocks = 5,
    for T in [u32, i32, f32]
)]
pub fn scan_exclusive_sum<T: Reduced>(x: &[T], out: &mut [T], status: &mut [u64])
where
    [T; 4]: Vector,
{
    scan_tile::<T, 16, 4, false>(x, out, status, T::ZERO, T::sum);
}

/// [`scan_inclusive_sum`] over 64-bit numbers (`u64`, `i64`, `f64`; 8 elements a
/// thread, the same 64 bytes).
#[doc = launch_rule!(8)]
#[xlog_kernel(
    read(x), write(out per tile(8)), lookback(status), block = 256, min_blocks = 4,
    for T in [u64, i64, f64]
)]
pub fn scan_inclusive_sum64<T: Reduced>(x: &[T], out: &mut [T], status: &mut [u64])
where
    [T; 2]: Vector,
{
    scan_tile::<T, 8, 2, true>(x, out, status, T::ZERO, T::sum);
}

/// [`scan_exclusive_sum`] over 64-bit numbers (`u64`, `i64`, `f64`).
#[doc = launch_rule!(8)]
#[xlog_kernel(
    read(x), write(out per tile(8)), lookback(status), block = 256, min_blocks = 4,
    for T in [u64, i64, f64]
)]
pub fn scan_exclusive_sum64<T: Reduced>(x: &[T], out: &mut [T], status: &mut [u64])
where
    [T; 2]: Vector,
{
    scan_tile::<T, 8, 2, false>(x, out, status, T::ZERO, T::sum);
}

/// `out[i]` = the last non-zero element of `x[0..=i]` (0 if none): a scan under an
/// associative, non-commutative operator of the kind a user writes, so the GPU
/// suite sees elements combined in order.
#[doc = launch_rule!(16)]
#[xlog_kernel(read(x), write(out per tile(16)), lookback(status), block = 256, min_blocks = 5)]
pub fn scan_last_nonzero_u32(x: &[u32], out: &mut [u32], status: &mut [u64]) {
    scan_tile::<u32, 16, 4, true>(x, out, status, 0, |a, b| if b == 0 { a } else { b });
}

/// `out[i] = x[0] ^ … ^ x[i]` over the 32-bit integers: a scan kernel generic over
/// its element type, written the way a user's is (the [`InclusiveXor`] of
/// [`scan_safely`]).
#[doc = launch_rule!(16)]
#[xlog_kernel(
    read(x), write(out per tile(16)), lookback(status), block = 256, min_blocks = 5,
    for T in [u32, i32]
)]
pub fn scan_inclusive_xor<T>(x: &[T], out: &mut [T], status: &mut [u64])
where
    T: Shuffle + core::ops::BitXor<Output = T> + Default,
    [T; 4]: Vector,
{
    scan_tile::<T, 16, 4, true>(x, out, status, T::default(), |a, b| a ^ b);
}

/// `out[i] = max(x[0], …, x[i])` over `u32`s: the kernel of [`InclusiveMaxU32`].
#[doc = launch_rule!(16)]
#[xlog_kernel(read(x), write(out per tile(16)), lookback(status), block = 256, min_blocks = 5)]
pub fn scan_inclusive_max_u32(x: &[u32], out: &mut [u32], status: &mut [u64]) {
    scan_tile::<u32, 16, 4, true>(x, out, status, 0, Ord::max);
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::device::lookback::status_words;
    use xlog::{
        AllocTag, BufferView, DeviceBuffer, GraphArena, GraphRecorder, LaunchConfig, NodeId,
        ReadBuffer, Result, Stream,
    };

    use crate::exec::{Exec, Now, Record};

    use super::BLOCK;

    /// A scan kernel: its elements per thread and its launch. The kernel's body is
    /// [`scan_tile`](super::scan_tile) (or one keeping its contract: one tile of
    /// `BLOCK · ITEMS` elements per block, every element of `out` written).
    ///
    /// # Safety
    ///
    /// [`scan`] hands `launch` an uninitialised output and uninitialised look-back
    /// words, and returns the output to safe code. An implementation must,
    /// whenever `launch` returns `Ok`, have queued on `s` work that writes every
    /// element of `out`; it must not read an element of `out` before writing it,
    /// and must pass `status` to the kernel only as its `lookback` parameter (whose
    /// typed launcher zeroes the words right before the kernel). With
    /// [`scan_tile`](super::scan_tile) as the body, that is `K = ITEMS` and the
    /// given `cfg` (one block of `BLOCK` threads per tile of `BLOCK · ITEMS`
    /// elements) passed unchanged. A safe implementation is refused, so a launcher
    /// that writes nothing cannot hand out unwritten memory:
    ///
    /// ```compile_fail,E0200
    /// use xlog::{BufferView, DeviceBuffer, LaunchConfig, Result, Stream};
    /// struct Lazy;
    /// impl xlog_kernels::scan::ScanKernel<u32> for Lazy {
    ///     const ITEMS: usize = 16;
    ///     fn launch(
    ///         _: &Stream,
    ///         _: LaunchConfig,
    ///         _: &BufferView<'_, u32>,
    ///         _: &mut DeviceBuffer<u32>,
    ///         _: &mut DeviceBuffer<u64>,
    ///     ) -> Result<()> {
    ///         Ok(())
    ///     }
    /// }
    /// ```
    pub unsafe trait ScanKernel<T: xlog::DeviceCopy> {
        /// Elements per thread (`K` of `scan_tile`).
        const ITEMS: usize;

        /// Launches the kernel: `x` in, `out` (as long as `x`) out, `status` its
        /// look-back words (the launcher zeroes them).
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()>;
    }

    /// The scan of `x` by kernel `K`, into a new buffer as long as `x`: one launch
    /// of one block per tile ([module docs](super)).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `x` needs more tiles than a grid holds (nothing is
    /// allocated); a budget refusal of the output or the status words
    /// (`BudgetExceeded`; nothing was launched), or a launch error.
    pub fn scan<T: xlog::DeviceCopy, K: ScanKernel<T>>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let x = e.input(x);
        // SAFETY: `K` keeps `ScanKernel`'s contract.
        unsafe {
            scan_on(
                &mut e,
                x,
                K::ITEMS,
                false,
                "scan",
                |e, cfg, x, out, status| K::launch(e.0, cfg, &x, out, status),
            )
        }
    }

    /// The scan of `x` through `e`, `launch` running the kernel once over a block
    /// per tile: the output, and (for a non-empty `x`) the look-back words, both
    /// zeroed when `zeroed` (and always when recording), else uninitialised.
    /// Refused before anything is allocated when a grid cannot hold the tiles.
    ///
    /// # Safety
    /// Unless `zeroed`, `launch` keeps `ScanKernel`'s contract: whenever it returns
    /// `Ok`, the work it queued writes every element of `out`, and it hands the
    /// look-back words to the kernel only as its `lookback` parameter (whose typed
    /// launcher zeroes them right before the kernel).
    unsafe fn scan_on<E: Exec, T: xlog::DeviceCopy>(
        e: &mut E,
        x: E::In<'_, T>,
        items: usize,
        zeroed: bool,
        what: &str,
        launch: impl FnOnce(
            &mut E,
            LaunchConfig,
            E::In<'_, T>,
            &mut E::Buf<T>,
            &mut E::Buf<u64>,
        ) -> Result<()>,
    ) -> Result<E::Buf<T>> {
        let len = E::len(&x);
        let (tiles, grid) = tiles_and_grid(len, items, what)?;
        let mut out = if zeroed {
            e.zeroed::<T>(len)?
        } else {
            // SAFETY: the caller's obligation: the launch writes every element of
            // `out` (on an error `out` is dropped unread).
            unsafe { e.alloc_uninit::<T>(len, AllocTag("scan output")) }?
        };
        if len == 0 {
            return Ok(out);
        }
        let words = status_words(tiles);
        let mut status = if zeroed {
            e.zeroed::<u64>(words)?
        } else {
            // SAFETY: the caller's obligation: the words reach the kernel only as
            // its `lookback` parameter, which the typed launcher zeroes on the
            // stream right before the kernel, in the same recorded launch.
            unsafe { e.alloc_uninit::<u64>(words, AllocTag("scan status")) }?
        };
        launch(
            e,
            LaunchConfig::new([grid, 1, 1], [BLOCK, 1, 1]),
            x,
            &mut out,
            &mut status,
        )?;
        Ok(out)
    }

    /// The tiles `len` elements of `items` a thread take, and the grid of one block
    /// per tile; refused when a grid cannot hold them.
    fn tiles_and_grid(len: usize, items: usize, what: &str) -> Result<(usize, u32)> {
        let tiles = len.div_ceil(BLOCK as usize * items);
        let grid = u32::try_from(tiles)
            .ok()
            .filter(|&g| g <= xlog::MAX_GRID_BLOCKS)
            .ok_or_else(|| xlog::Error::InvalidArgument {
                what: format!("xlog_kernels::scan::{what}"),
                reason: format!(
                    "{len} elements need {tiles} tiles, more than a grid holds (2^31 - 1); \
                     scan them in parts"
                ),
            })?;
        Ok((tiles, grid))
    }

    mod sealed {
        pub trait Sealed {}
    }

    /// A scan the library can record into a graph: the built-in operators (sealed).
    pub trait ScanRecord<T: xlog::DeviceCopy>: ScanKernel<T> + sealed::Sealed {
        /// Records the kernel as `ScanKernel::launch` launches it.
        #[doc(hidden)]
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            out: &'g DeviceBuffer<T>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId>;
    }

    /// Records the scan of `x` by `K` into a graph: one kernel node, as [`scan`]
    /// launches it. The output and the look-back words are allocated now, on the
    /// recorder's stream, zero-filled (so the output reads as zeros until a replay
    /// writes it), and kept in `arena`, which must outlive the graph; every replay
    /// scans `x` again into the same output. An empty `x` records nothing.
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[1u32, 2, 3])?;
    /// let arena = xlog::GraphArena::new();
    /// let mut rec = xlog::GraphRecorder::new(&s);
    /// let sums = xlog_kernels::scan::record_inclusive_sum(&mut rec, &arena, &x)?;
    /// let graph = rec.instantiate()?;
    /// graph.launch(&s)?;
    /// assert_eq!(sums.download(&s)?, [1, 3, 6]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`scan`], and those of recording a kernel.
    pub fn record_scan<'g, T: xlog::DeviceCopy, K: ScanRecord<T>>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>> {
        let mut e = Record::new(rec, arena);
        let x = e.input(x);
        // SAFETY: `zeroed`: both buffers start zeroed (as every recorded one does).
        unsafe {
            scan_on(
                &mut e,
                x,
                K::ITEMS,
                true,
                "record_scan",
                |e, cfg, x, out, status| K::record(e.rec, cfg, x, *out, status).map(drop),
            )
        }
    }

    /// A scan kernel of your own, for [`scan_safely`]: safe to implement, since
    /// [`scan_safely`] hands it a zeroed output and zeroed look-back words. Its
    /// body is [`scan_tile`](super::scan_tile) with `K = ITEMS` (one tile of
    /// `BLOCK · ITEMS` elements per block); a kernel that keeps no such contract
    /// gives a wrong result, never undefined behaviour.
    pub trait Scan<T: xlog::DeviceCopy> {
        /// Elements per thread (`K` of `scan_tile`).
        const ITEMS: usize;

        /// Launches the kernel: `x` in, `out` (as long as `x`) out, `status` its
        /// look-back words (its `lookback` parameter).
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()>;
    }

    /// The scan of `x` by kernel `K`, as [`scan`] runs it, for a kernel
    /// implementing the safe [`Scan`]: the output and the look-back words start
    /// zeroed (a memset of the output more than [`scan`], one more write of its
    /// bytes), so no implementation can hand out unwritten memory.
    ///
    /// # Errors
    ///
    /// As [`scan`].
    pub fn scan_safely<T: xlog::DeviceCopy, K: Scan<T>>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let x = e.input(x);
        // SAFETY: `zeroed`: both buffers start zeroed.
        unsafe {
            scan_on(
                &mut e,
                x,
                K::ITEMS,
                true,
                "scan_safely",
                |e, cfg, x, out, status| K::launch(e.0, cfg, &x, out, status),
            )
        }
    }

    /// [`inclusive_sum`] recorded into a graph (see [`record_scan`]).
    ///
    /// # Errors
    ///
    /// As [`record_scan`].
    pub fn record_inclusive_sum<'g, T: xlog::DeviceCopy>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>>
    where
        InclusiveSum: ScanRecord<T>,
    {
        record_scan::<T, InclusiveSum>(rec, arena, x)
    }

    /// [`exclusive_sum`] recorded into a graph (see [`record_scan`]).
    ///
    /// # Errors
    ///
    /// As [`record_scan`].
    pub fn record_exclusive_sum<'g, T: xlog::DeviceCopy>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>>
    where
        ExclusiveSum: ScanRecord<T>,
    {
        record_scan::<T, ExclusiveSum>(rec, arena, x)
    }

    /// The running exclusive or of `u32`s or `i32`s, through the generic kernel
    /// [`scan_inclusive_xor`](super::scan_inclusive_xor): one safe [`Scan`]
    /// implementation for every type the kernel lists.
    #[derive(Clone, Copy, Debug)]
    pub struct InclusiveXor;

    impl<T: super::ScanInclusiveXorType> Scan<T> for InclusiveXor {
        const ITEMS: usize = 16;
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            super::scan_inclusive_xor::launch(s, cfg, x, out, status)
        }
    }

    /// The inclusive sum: `out[i] = x[0] + … + x[i]`.
    #[derive(Clone, Copy, Debug)]
    pub struct InclusiveSum;
    /// The exclusive sum: `out[0] = 0`, `out[i] = x[0] + … + x[i-1]`.
    #[derive(Clone, Copy, Debug)]
    pub struct ExclusiveSum;
    /// The running maximum of `u32`s (a user-style operator).
    #[derive(Clone, Copy, Debug)]
    pub struct InclusiveMaxU32;
    /// The last non-zero element so far, of `u32`s (associative, not commutative).
    #[derive(Clone, Copy, Debug)]
    pub struct LastNonZeroU32;

    /// The element types of the sum scans, each with the kernels of its width:
    /// `u32`, `i32`, `f32` (16 elements a thread) and `u64`, `i64`, `f64` (8).
    pub trait Summed: xlog::DeviceCopy + sealed::Sealed {
        /// The kernels of this type's width.
        #[doc(hidden)]
        type Kernels: SumKernels<Self>;
    }

    /// The inclusive and exclusive sum kernels of one element width.
    #[doc(hidden)]
    pub trait SumKernels<T: xlog::DeviceCopy> {
        /// Elements per thread.
        const ITEMS: usize;
        /// Launches the inclusive (`inclusive`) or exclusive sum kernel.
        fn launch(
            inclusive: bool,
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()>;
        /// Records the kernel `launch` launches.
        fn record<'g>(
            inclusive: bool,
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            out: &'g DeviceBuffer<T>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId>;
    }

    /// The 32-bit sum kernels ([`scan_inclusive_sum`](super::scan_inclusive_sum),
    /// [`scan_exclusive_sum`](super::scan_exclusive_sum)).
    #[doc(hidden)]
    #[derive(Clone, Copy, Debug)]
    pub struct Narrow;
    /// The 64-bit sum kernels ([`scan_inclusive_sum64`](super::scan_inclusive_sum64),
    /// [`scan_exclusive_sum64`](super::scan_exclusive_sum64)).
    #[doc(hidden)]
    #[derive(Clone, Copy, Debug)]
    pub struct Wide;

    impl<T> SumKernels<T> for Narrow
    where
        T: xlog::DeviceCopy + super::ScanInclusiveSumType + super::ScanExclusiveSumType,
    {
        const ITEMS: usize = super::ITEMS_32;
        fn launch(
            inclusive: bool,
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            if inclusive {
                super::scan_inclusive_sum::launch(s, cfg, x, out, status)
            } else {
                super::scan_exclusive_sum::launch(s, cfg, x, out, status)
            }
        }
        fn record<'g>(
            inclusive: bool,
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            out: &'g DeviceBuffer<T>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId> {
            if inclusive {
                super::scan_inclusive_sum::record(rec, cfg, x, out, status)
            } else {
                super::scan_exclusive_sum::record(rec, cfg, x, out, status)
            }
        }
    }

    impl<T> SumKernels<T> for Wide
    where
        T: xlog::DeviceCopy + super::ScanInclusiveSum64Type + super::ScanExclusiveSum64Type,
    {
        const ITEMS: usize = super::ITEMS_64;
        fn launch(
            inclusive: bool,
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            if inclusive {
                super::scan_inclusive_sum64::launch(s, cfg, x, out, status)
            } else {
                super::scan_exclusive_sum64::launch(s, cfg, x, out, status)
            }
        }
        fn record<'g>(
            inclusive: bool,
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            out: &'g DeviceBuffer<T>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId> {
            if inclusive {
                super::scan_inclusive_sum64::record(rec, cfg, x, out, status)
            } else {
                super::scan_exclusive_sum64::record(rec, cfg, x, out, status)
            }
        }
    }

    impl sealed::Sealed for u32 {}
    impl sealed::Sealed for i32 {}
    impl sealed::Sealed for f32 {}
    impl sealed::Sealed for u64 {}
    impl sealed::Sealed for i64 {}
    impl sealed::Sealed for f64 {}
    impl Summed for u32 {
        type Kernels = Narrow;
    }
    impl Summed for i32 {
        type Kernels = Narrow;
    }
    impl Summed for f32 {
        type Kernels = Narrow;
    }
    impl Summed for u64 {
        type Kernels = Wide;
    }
    impl Summed for i64 {
        type Kernels = Wide;
    }
    impl Summed for f64 {
        type Kernels = Wide;
    }

    // SAFETY: the kernels' body is `scan_tile` with `K = ITEMS` of their width,
    // launched with `scan`'s configuration unchanged: every element of `out` is
    // stored.
    unsafe impl<T: Summed> ScanKernel<T> for InclusiveSum {
        const ITEMS: usize = <T::Kernels as SumKernels<T>>::ITEMS;
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            T::Kernels::launch(true, s, cfg, x, out, status)
        }
    }

    impl<T: Summed> ScanRecord<T> for InclusiveSum {
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            out: &'g DeviceBuffer<T>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId> {
            T::Kernels::record(true, rec, cfg, x, out, status)
        }
    }

    // SAFETY: as for `InclusiveSum`.
    unsafe impl<T: Summed> ScanKernel<T> for ExclusiveSum {
        const ITEMS: usize = <T::Kernels as SumKernels<T>>::ITEMS;
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            out: &mut DeviceBuffer<T>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            T::Kernels::launch(false, s, cfg, x, out, status)
        }
    }

    impl<T: Summed> ScanRecord<T> for ExclusiveSum {
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            out: &'g DeviceBuffer<T>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId> {
            T::Kernels::record(false, rec, cfg, x, out, status)
        }
    }

    // SAFETY: the kernel's body is `scan_tile` with `K = ITEMS_32`, launched with
    // `scan`'s configuration unchanged: every element of `out` is stored.
    unsafe impl ScanKernel<u32> for InclusiveMaxU32 {
        const ITEMS: usize = super::ITEMS_32;
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, u32>,
            out: &mut DeviceBuffer<u32>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            super::scan_inclusive_max_u32::launch(s, cfg, x, out, status)
        }
    }

    impl ScanRecord<u32> for InclusiveMaxU32 {
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<u32>,
            out: &'g DeviceBuffer<u32>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId> {
            super::scan_inclusive_max_u32::record(rec, cfg, x, out, status)
        }
    }

    // SAFETY: as for `InclusiveMaxU32`.
    unsafe impl ScanKernel<u32> for LastNonZeroU32 {
        const ITEMS: usize = super::ITEMS_32;
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, u32>,
            out: &mut DeviceBuffer<u32>,
            status: &mut DeviceBuffer<u64>,
        ) -> Result<()> {
            super::scan_last_nonzero_u32::launch(s, cfg, x, out, status)
        }
    }

    impl ScanRecord<u32> for LastNonZeroU32 {
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<u32>,
            out: &'g DeviceBuffer<u32>,
            status: &'g DeviceBuffer<u64>,
        ) -> Result<NodeId> {
            super::scan_last_nonzero_u32::record(rec, cfg, x, out, status)
        }
    }

    impl sealed::Sealed for InclusiveSum {}
    impl sealed::Sealed for ExclusiveSum {}
    impl sealed::Sealed for InclusiveMaxU32 {}
    impl sealed::Sealed for LastNonZeroU32 {}

    /// `out[i] = x[0] + … + x[i]` (wrapping for integers), in one pass, into a new
    /// buffer as long as `x`. `O(n)`, one launch, about 1 % of the input in
    /// temporary status words; deterministic ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[1i32, 2, 3])?;
    /// assert_eq!(xlog_kernels::scan::inclusive_sum(&s, &x)?.download(&s)?, [1, 3, 6]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`scan`].
    pub fn inclusive_sum<T: xlog::DeviceCopy>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>>
    where
        InclusiveSum: ScanKernel<T>,
    {
        scan::<T, InclusiveSum>(s, x)
    }

    /// `out[0] = 0`, `out[i] = x[0] + … + x[i-1]`, in one pass. As
    /// [`inclusive_sum`] otherwise.
    ///
    /// # Errors
    ///
    /// As [`scan`].
    pub fn exclusive_sum<T: xlog::DeviceCopy>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>>
    where
        ExclusiveSum: ScanKernel<T>,
    {
        scan::<T, ExclusiveSum>(s, x)
    }
}
