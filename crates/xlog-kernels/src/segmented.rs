//! Segmented reductions: the sum, minimum, maximum or a fold of your own over each
//! segment `x[offsets[s]..offsets[s + 1]]` ([`segmented_reduce`]), and reductions
//! of the values of each run of equal keys ([`reduce_by_key`]), for `u32`, `i32`,
//! `u64`, `i64`, `f32`, `f64`. Each built-in operator is one generic kernel, an
//! entry point per type (`segment_sum__f32`).
//!
//! # Algorithm
//!
//! The built-in operators ([`Sum`], [`Min`], [`Max`]) take one of two shapes by
//! the average segment length (CUB's `DeviceSegmentedReduce` splits segments by
//! size the same way):
//!
//! - up to [`WARP_SEGMENT_LEN`] elements on average, one warp per segment, eight
//!   segments a block ([`reduce_segment_warp`]): the warp's lanes fold its
//!   segment's 16-byte chunks, four loads in flight per lane (the last few chunks,
//!   and the elements before the first whole chunk and after the last, one by
//!   one), the
//!   warp folds its lanes with shuffles, and lane 0 writes the segment's value. No
//!   barrier, no shared memory: a block per segment of a thousand elements spends
//!   most of its time starting up and in its block reduction.
//! - longer, one block of [`BLOCK`] threads per segment ([`reduce_segment`]): the
//!   block's threads fold a block-stride sequence of the segment and the block
//!   folds its threads ([`collective::block_reduce`]); its leader writes the
//!   segment's value. A user's operator ([`SegmentKernel`]) always takes this
//!   shape.
//!
//! [`reduce_by_key`] finds the runs of its keys with
//! [`compact::unique_counts`](crate::compact::unique_counts), then reduces the
//! values over the run offsets.
//!
//! | | |
//! | --- | --- |
//! | work | `O(n + segments)` for the warp shape; `O(n + segments · BLOCK)` for the block shape (a block per segment) |
//! | launches | 1 ([`reduce_by_key`]: the three of `unique_counts`, then 1) |
//! | temporary memory | none ([`reduce_by_key`]: that of `unique_counts`) |
//! | determinism | the same inputs give the same result: the combination order depends only on the offsets and the address of `x` (which decides the whole chunks) |
//!
//! A warp per segment is slow for a few very long segments among many short ones
//! (one warp reads each long one): with such skew, reduce the long segments
//! apart.
//!
//! # Edge cases
//!
//! An empty segment gives the operator's identity (`0`, `T::MAX` / `+∞` for the
//! minimum, `T::MIN` / `-∞` for the maximum). Offsets must not decrease and must
//! not pass `x.len()`: a segment is clamped to `x` and a decreasing pair gives an
//! empty segment. Float sums are tree sums; float minimum and maximum ignore NaNs
//! as [`reduce`](crate::reduce) does. The operator must be associative and
//! commutative.
//!
//! # Your own operator
//!
//! Write a kernel whose body is [`reduce_segment`] with your operator and identity
//! and name it in an (`unsafe`) [`SegmentKernel`] implementation, as [`BitOr`] is
//! ([`segment_or`], a generic kernel: one implementation covers its types).

use xlog::device::vector::Vector;
use xlog::device::view::{self, Out, PerBlock, PerWarp};
use xlog::device::warp::Shuffle;
use xlog::prelude::*;

use ops::Reducible;

/// Threads per block of the segmented reductions.
pub const BLOCK: u32 = 256;

/// Segments per block of the warp-per-segment kernels: a warp each.
pub const WARP_SEGMENTS: u32 = BLOCK / 32;

/// The longest average segment, in elements, that the built-in operators reduce
/// with a warp per segment; longer ones get a block each.
pub const WARP_SEGMENT_LEN: usize = 4096;

/// Chunk loads in flight per lane in [`reduce_segment_warp`].
const UNROLL: usize = 4;

/// Segment `s` of `offsets`, clamped to `x` (empty when `offsets` has no segment
/// `s` or its offsets decrease).
#[inline(always)]
fn bounds(len: usize, offsets: &[u64], s: usize) -> (usize, usize) {
    match (offsets.get(s), offsets.get(s.wrapping_add(1))) {
        (Some(&lo), Some(&hi)) => {
            let hi = core::cmp::min(hi as usize, len);
            (core::cmp::min(lo as usize, hi), hi)
        }
        _ => (0, 0),
    }
}

/// One warp's segment: `out[w]`, `w` the warp's number in the launch, is the fold
/// of `x[offsets[w]..offsets[w + 1]]` under `op` (`identity` for an empty
/// segment; nothing is written when `offsets` has no segment `w`). The lanes fold
/// the segment's whole `K`-element chunks (one vector load each when `x` is
/// aligned for it, four in flight per lane) and its at most `K − 1`
/// elements before and after them one by one; the warp folds its lanes. Every
/// thread of the warp must call it (it holds a warp collective). `op` must be
/// associative and commutative.
#[inline(always)]
pub fn reduce_segment_warp<T: Shuffle, const K: usize>(
    x: &[T],
    offsets: &[u64],
    out: &mut Out<'_, T, PerWarp>,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) where
    [T; K]: Vector,
{
    const WARP: usize = 32;
    let w = thread::block_idx().x as usize * thread::warps_per_block() + thread::warp_index();
    let (lo, hi) = bounds(x.len(), offsets, w);
    // Chunk `c` of `x` is `x[K·c..K·c + K]`; `xs` ends with the segment, so a chunk
    // reads as `Some` exactly when it lies before `hi`.
    let xs = &x[..hi];
    let lane = thread::lane_id() as usize;
    let (first, end) = (lo.div_ceil(K), hi / K);
    let mut acc = identity;
    if first < end {
        // The elements before the first whole chunk and after the last (fewer
        // than `K` each), a lane each.
        let head = lo + lane;
        if head < first * K {
            acc = op(acc, xs[head]);
        }
        let tail = end * K + lane;
        if tail < hi {
            acc = op(acc, xs[tail]);
        }
        // `UNROLL` chunks a step, all loaded before any is folded, then the last
        // few one by one. The chunks are folded through references: an array
        // iterated by value (or an array of optional chunks) goes to local
        // memory.
        let mut c = first + lane;
        while let Some(v) = view::read_chunks::<T, K, UNROLL>(xs, c, WARP) {
            for chunk in &v {
                for &e in chunk {
                    acc = op(acc, e);
                }
            }
            c += UNROLL * WARP;
        }
        while let Some(chunk) = view::read_chunk::<T, K>(xs, c) {
            for &e in &chunk {
                acc = op(acc, e);
            }
            c += WARP;
        }
    } else {
        let mut i = lo + lane;
        while i < hi {
            acc = op(acc, xs[i]);
            i += WARP;
        }
    }
    let total = collective::warp_reduce(acc, op);
    if let Some(leader) = thread::warp_leader() {
        if let Some(o) = out.get_mut(leader) {
            *o = total;
        }
    }
}

/// One block's segment: `out[b]`, `b = blockIdx.x`, is the fold of
/// `x[offsets[b]..offsets[b + 1]]` under `op` (`identity` for an empty segment;
/// nothing is written when `offsets` has no segment `b`). The body of every
/// segmented reduction; every thread of the block must call it (it holds a block
/// collective). `op` must be associative and commutative.
#[inline(always)]
pub fn reduce_segment<T: Shuffle>(
    x: &[T],
    offsets: &[u64],
    out: &mut Out<'_, T, PerBlock>,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) {
    let b = thread::block_idx().x as usize;
    let (lo, hi) = bounds(x.len(), offsets, b);
    let mut acc = identity;
    let mut i = lo + thread::thread_idx().x as usize;
    let stride = thread::block_dim().x as usize;
    while i < hi {
        acc = op(acc, x[i]);
        i += stride;
    }
    let total = collective::block_reduce(acc, op);
    if let Some(leader) = thread::block_leader() {
        if let Some(o) = out.get_mut(leader) {
            *o = total;
        }
    }
}

/// Per-segment sums (wrapping for integers): the kernel of [`segmented_reduce`]
/// with [`Sum`].
#[xlog_kernel(
    read(x, offsets), write(out per block), block = 256,
    for T in [u32, i32, u64, i64, f32, f64]
)]
pub fn segment_sum<T: Reducible>(x: &[T], offsets: &[u64], out: &mut [T]) {
    reduce_segment(x, offsets, out, T::ZERO, T::sum);
}

/// Per-segment minima: the kernel of [`segmented_reduce`] with [`Min`].
#[xlog_kernel(
    read(x, offsets), write(out per block), block = 256,
    for T in [u32, i32, u64, i64, f32, f64]
)]
pub fn segment_min<T: Reducible>(x: &[T], offsets: &[u64], out: &mut [T]) {
    reduce_segment(x, offsets, out, T::HIGHEST, T::min);
}

/// Per-segment maxima: the kernel of [`segmented_reduce`] with [`Max`].
#[xlog_kernel(
    read(x, offsets), write(out per block), block = 256,
    for T in [u32, i32, u64, i64, f32, f64]
)]
pub fn segment_max<T: Reducible>(x: &[T], offsets: &[u64], out: &mut [T]) {
    reduce_segment(x, offsets, out, T::LOWEST, T::max);
}

/// Per-segment sums a warp per segment: the kernel of [`segmented_reduce`] with
/// [`Sum`] when segments are short ([`WARP_SEGMENT_LEN`]).
#[xlog_kernel(
    read(x, offsets), write(out per warp), block = 256,
    for T in [u32, i32, u64, i64, f32, f64]
)]
pub fn segment_sum_warps<T: Reducible>(x: &[T], offsets: &[u64], out: &mut [T]) {
    T::reduce_warps(x, offsets, out, T::ZERO, T::sum);
}

/// Per-segment minima a warp per segment: [`segment_sum_warps`] with [`Min`].
#[xlog_kernel(
    read(x, offsets), write(out per warp), block = 256,
    for T in [u32, i32, u64, i64, f32, f64]
)]
pub fn segment_min_warps<T: Reducible>(x: &[T], offsets: &[u64], out: &mut [T]) {
    T::reduce_warps(x, offsets, out, T::HIGHEST, T::min);
}

/// Per-segment maxima a warp per segment: [`segment_sum_warps`] with [`Max`].
#[xlog_kernel(
    read(x, offsets), write(out per warp), block = 256,
    for T in [u32, i32, u64, i64, f32, f64]
)]
pub fn segment_max_warps<T: Reducible>(x: &[T], offsets: &[u64], out: &mut [T]) {
    T::reduce_warps(x, offsets, out, T::LOWEST, T::max);
}

mod ops {
    use xlog::device::view::{Out, PerWarp};
    use xlog::device::warp::Shuffle;

    /// The built-in operators on each element type, with their identities: the
    /// sum (wrapping for integers), and the minimum and maximum (for floats
    /// `f32::min` and `f32::max`, which ignore NaNs). Sealed: the kernels' types
    /// are listed in their attributes.
    pub trait Reducible: Shuffle + sealed::Sealed {
        /// The sum's identity, 0.
        const ZERO: Self;
        /// The minimum's identity: the greatest value (`+∞` for floats).
        const HIGHEST: Self;
        /// The maximum's identity: the least value (`−∞` for floats).
        const LOWEST: Self;
        /// `a + b`, wrapping for integers.
        fn sum(a: Self, b: Self) -> Self;
        /// The lesser of `a` and `b`.
        fn min(a: Self, b: Self) -> Self;
        /// The greater of `a` and `b`.
        fn max(a: Self, b: Self) -> Self;
        /// [`reduce_segment_warp`](super::reduce_segment_warp) with this type's
        /// 16-byte chunk (four 32-bit or two 64-bit elements).
        fn reduce_warps(
            x: &[Self],
            offsets: &[u64],
            out: &mut Out<'_, Self, PerWarp>,
            identity: Self,
            op: impl Fn(Self, Self) -> Self + Copy,
        );
    }

    mod sealed {
        pub trait Sealed {}
    }

    // One arithmetic per kind of type, the same for every width.
    macro_rules! reducible {
        ($($t:ty: $k:literal, $zero:expr, $add:expr, $min:path, $max:path, $lo:expr, $hi:expr;)*) => {$(
            impl sealed::Sealed for $t {}
            impl Reducible for $t {
                const ZERO: Self = $zero;
                const HIGHEST: Self = $hi;
                const LOWEST: Self = $lo;
                #[inline(always)]
                fn sum(a: Self, b: Self) -> Self {
                    $add(a, b)
                }
                #[inline(always)]
                fn min(a: Self, b: Self) -> Self {
                    $min(a, b)
                }
                #[inline(always)]
                fn max(a: Self, b: Self) -> Self {
                    $max(a, b)
                }
                #[inline(always)]
                fn reduce_warps(
                    x: &[Self],
                    offsets: &[u64],
                    out: &mut Out<'_, Self, PerWarp>,
                    identity: Self,
                    op: impl Fn(Self, Self) -> Self + Copy,
                ) {
                    super::reduce_segment_warp::<Self, $k>(x, offsets, out, identity, op);
                }
            }
        )*};
    }
    reducible! {
        u32: 4, 0, u32::wrapping_add, Ord::min, Ord::max, u32::MIN, u32::MAX;
        i32: 4, 0, i32::wrapping_add, Ord::min, Ord::max, i32::MIN, i32::MAX;
        u64: 2, 0, u64::wrapping_add, Ord::min, Ord::max, u64::MIN, u64::MAX;
        i64: 2, 0, i64::wrapping_add, Ord::min, Ord::max, i64::MIN, i64::MAX;
        f32: 4, 0.0, |a: f32, b: f32| a + b, f32::min, f32::max, f32::NEG_INFINITY, f32::INFINITY;
        f64: 2, 0.0, |a: f64, b: f64| a + b, f64::min, f64::max, f64::NEG_INFINITY, f64::INFINITY;
    }
}

/// Per-segment bitwise ors of `u32`s or `u64`s: an operator written the way a
/// user's is, as a generic kernel (the kernel of [`BitOr`]).
#[xlog_kernel(
    read(x, offsets), write(out per block), block = 256,
    for T in [u32, u64]
)]
pub fn segment_or<T: Shuffle + Default + core::ops::BitOr<Output = T>>(
    x: &[T],
    offsets: &[u64],
    out: &mut [T],
) {
    reduce_segment(x, offsets, out, T::default(), |a, b| a | b);
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, BufferView, DeviceBuffer, Error, GraphArena, GraphRecorder, LaunchConfig, NodeId,
        ReadBuffer, Result, Stream,
    };

    use super::BLOCK;
    use crate::compact::{self, Compactable};
    use crate::exec::{Exec, Now, Record};

    /// A segmented reduction kernel: its launch. The kernel's body is
    /// [`reduce_segment`](super::reduce_segment) (or one keeping its contract:
    /// block `b` writes `out[b]`, the fold of segment `b`).
    ///
    /// # Safety
    ///
    /// [`segmented_reduce`] (and [`reduce_by_key`]) hand `launch` an uninitialised
    /// `out` and return it to safe code. An implementation must, whenever `launch`
    /// returns `Ok`, have queued on `s` work that writes `out[b]` for every block
    /// `b` of `cfg` (one block per segment), and must not read an element of `out`
    /// before it is written: with [`reduce_segment`](super::reduce_segment) as the
    /// body, that is the given `cfg` passed unchanged. A safe implementation is
    /// refused, so a launcher that writes nothing cannot hand out unwritten memory:
    ///
    /// ```compile_fail,E0200
    /// use xlog::{BufferView, DeviceBuffer, LaunchConfig, Result, Stream};
    /// struct Lazy;
    /// impl xlog_kernels::segmented::SegmentKernel<bool> for Lazy {
    ///     fn launch(
    ///         _: &Stream,
    ///         _: LaunchConfig,
    ///         _: &BufferView<'_, bool>,
    ///         _: &BufferView<'_, u64>,
    ///         _: &mut DeviceBuffer<bool>,
    ///     ) -> Result<()> {
    ///         Ok(())
    ///     }
    /// }
    /// ```
    pub unsafe trait SegmentKernel<T: xlog::DeviceCopy> {
        /// Launches the kernel: one block per segment of `x` by `offsets`.
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            offsets: &BufferView<'_, u64>,
            out: &mut DeviceBuffer<T>,
        ) -> Result<()>;
    }

    pub use crate::reduce::{Max, Min, Sum};

    /// Bitwise or of `u32`s or `u64`s (an operator written the way a user's is).
    #[derive(Clone, Copy, Debug)]
    pub struct BitOr;

    mod sealed {
        pub trait Sealed<T> {}
    }

    /// A segmented reduction the library can record into a graph: the built-in
    /// operators (sealed).
    pub trait SegmentRecord<T: xlog::DeviceCopy>: SegmentKernel<T> + sealed::Sealed<T> {
        /// Records the kernel as `SegmentKernel::launch` launches it.
        #[doc(hidden)]
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            offsets: &'g dyn ReadBuffer<u64>,
            out: &'g DeviceBuffer<T>,
        ) -> Result<NodeId>;
    }

    /// The warp-per-segment configuration for a launch of one block per segment
    /// (`cfg`) over `len` elements, when its segments are short enough on average
    /// ([`WARP_SEGMENT_LEN`](super::WARP_SEGMENT_LEN)); `None` to keep `cfg`.
    fn warp_config(cfg: LaunchConfig, len: usize) -> Option<LaunchConfig> {
        let segments = cfg.grid[0];
        let one_per_block = cfg.block == [BLOCK, 1, 1] && cfg.grid[1..] == [1, 1];
        (one_per_block && len <= segments as usize * super::WARP_SEGMENT_LEN).then(|| {
            LaunchConfig::new(
                [segments.div_ceil(super::WARP_SEGMENTS), 1, 1],
                [BLOCK, 1, 1],
            )
        })
    }

    // One implementation of each trait per operator, over every type its kernel
    // lists; a built-in operator launches its warp-per-segment kernel instead when
    // segments are short.
    macro_rules! kernel {
        ($op:ident, $kernel:ident, $types:ident $(, $warps:ident: $wtypes:ident)?) => {
            // SAFETY: the kernel's body is `reduce_segment`, launched with the given
            // configuration: block `b` writes `out[b]`; or (short segments) it is
            // `reduce_segment_warp`, launched with a warp per block `b` of the given
            // configuration: warp `b` writes `out[b]`.
            unsafe impl<T: super::$types $(+ super::$wtypes)?> SegmentKernel<T> for $op {
                fn launch(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, T>,
                    offsets: &BufferView<'_, u64>,
                    out: &mut DeviceBuffer<T>,
                ) -> Result<()> {
                    $(if let Some(w) = warp_config(cfg, x.len()) {
                        return super::$warps::launch(s, w, x, offsets, out);
                    })?
                    super::$kernel::launch(s, cfg, x, offsets, out)
                }
            }

            impl<T: super::$types $(+ super::$wtypes)?> sealed::Sealed<T> for $op {}

            impl<T: super::$types $(+ super::$wtypes)?> SegmentRecord<T> for $op {
                fn record<'g>(
                    rec: &mut GraphRecorder<'g>,
                    cfg: LaunchConfig,
                    x: &'g dyn ReadBuffer<T>,
                    offsets: &'g dyn ReadBuffer<u64>,
                    out: &'g DeviceBuffer<T>,
                ) -> Result<NodeId> {
                    $(if let Some(w) = warp_config(cfg, x.as_view().len()) {
                        return super::$warps::record(rec, w, x, offsets, out);
                    })?
                    super::$kernel::record(rec, cfg, x, offsets, out)
                }
            }
        };
    }
    kernel!(Sum, segment_sum, SegmentSumType, segment_sum_warps: SegmentSumWarpsType);
    kernel!(Min, segment_min, SegmentMinType, segment_min_warps: SegmentMinWarpsType);
    kernel!(Max, segment_max, SegmentMaxType, segment_max_warps: SegmentMaxWarpsType);
    kernel!(BitOr, segment_or, SegmentOrType);

    /// The fold of every segment `x[offsets[s]..offsets[s + 1]]` under kernel
    /// `K`'s operator, as a new buffer of `offsets.len() − 1` values (none for
    /// fewer than two offsets); an empty segment gives the identity. One launch (a
    /// warp or a block per segment), no temporary memory ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// use xlog_kernels::segmented::{segmented_reduce, Sum};
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[1u32, 2, 3, 4, 5])?;
    /// let offsets = rt.upload_on(&s, &[0u64, 2, 2, 5])?;
    /// let sums = segmented_reduce::<u32, Sum>(&s, &x, &offsets)?;
    /// assert_eq!(sums.download(&s)?, [3, 0, 12]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when there are more segments than a grid holds
    /// (`2^31 − 1`); a budget refusal of the output (`BudgetExceeded`, nothing
    /// launched); a launch error.
    pub fn segmented_reduce<T: xlog::DeviceCopy, K: SegmentKernel<T>>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        offsets: &(impl ReadBuffer<u64> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (x, offsets) = (e.input(x), e.input(offsets));
        // SAFETY: `K` keeps `SegmentKernel`'s contract.
        unsafe {
            segmented_on(&mut e, x, offsets, |e, cfg, x, offsets, out| {
                K::launch(e.0, cfg, &x, &offsets, out)
            })
        }
    }

    /// [`segmented_reduce`] recorded into a graph: one kernel node; the output is
    /// allocated now on the recorder's stream, zeroed, and kept in `arena`, which
    /// outlives the graph. Over the offsets of
    /// [`compact::record_unique`] (sized for one run per element), the first
    /// `runs` values are the folds of the runs: [`reduce_by_key`] in a graph.
    ///
    /// # Errors
    ///
    /// As [`segmented_reduce`], and those of recording.
    pub fn record_segmented_reduce<'g, T: xlog::DeviceCopy, K: SegmentRecord<T>>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
        offsets: &'g impl ReadBuffer<u64>,
    ) -> Result<&'g DeviceBuffer<T>> {
        let mut e = Record::new(rec, arena);
        let (x, offsets) = (e.input(x), e.input(offsets));
        // SAFETY: recorded buffers are zeroed, and `K` keeps `SegmentKernel`'s
        // contract besides.
        unsafe {
            segmented_on(&mut e, x, offsets, |e, cfg, x, offsets, out| {
                K::record(e.rec, cfg, x, offsets, out).map(drop)
            })
        }
    }

    /// [`segmented_reduce`] through `e`, `launch` running the kernel: one block
    /// per segment.
    ///
    /// # Safety
    /// `launch` keeps `SegmentKernel`'s contract: block `b` writes `out[b]`.
    unsafe fn segmented_on<E: Exec, T: xlog::DeviceCopy>(
        e: &mut E,
        x: E::In<'_, T>,
        offsets: E::In<'_, u64>,
        launch: impl FnOnce(
            &mut E,
            LaunchConfig,
            E::In<'_, T>,
            E::In<'_, u64>,
            &mut E::Buf<T>,
        ) -> Result<()>,
    ) -> Result<E::Buf<T>> {
        let segments = E::len(&offsets).saturating_sub(1);
        let grid = u32::try_from(segments)
            .ok()
            .filter(|&g| g <= xlog::MAX_GRID_BLOCKS)
            .ok_or_else(|| Error::InvalidArgument {
                what: "xlog_kernels::segmented::segmented_reduce".to_owned(),
                reason: format!(
                    "{segments} segments, more than a grid holds (2^31 - 1); reduce them in parts"
                ),
            })?;
        // SAFETY: block `b` of the launch writes `out[b]` (the caller's
        // obligation), one block per segment, so every element is written.
        let mut out = unsafe { e.alloc_uninit::<T>(segments, AllocTag("segmented output")) }?;
        if segments > 0 {
            launch(
                e,
                LaunchConfig::new([grid, 1, 1], [BLOCK, 1, 1]),
                x,
                offsets,
                &mut out,
            )?;
        }
        Ok(out)
    }

    /// The result of [`reduce_by_key`].
    #[derive(Debug)]
    pub struct ByKey<K: xlog::DeviceCopy, V: xlog::DeviceCopy> {
        /// The key of each run, in order (the unique keys of sorted keys).
        pub keys: DeviceBuffer<K>,
        /// The fold of the values of each run.
        pub values: DeviceBuffer<V>,
        /// The length of each run.
        pub counts: DeviceBuffer<u64>,
    }

    /// Reduce-by-key: for each run of equal adjacent `keys` (sorted keys: each
    /// distinct key), its key and the fold of its `values` under kernel `Op`'s
    /// operator. Synchronises `s` once (to size the outputs, as
    /// [`compact::unique_counts`]). Four launches, `O(n)` ([module docs](super)).
    /// Not recordable as one call (a graph cannot read the number of runs back):
    /// record [`compact::record_unique`] and [`record_segmented_reduce`] over its
    /// offsets instead.
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `keys` and `values` differ in length; as
    /// [`compact::unique_counts`] and [`segmented_reduce`] otherwise.
    pub fn reduce_by_key<K: Compactable, V: xlog::DeviceCopy, Op: SegmentKernel<V>>(
        s: &Stream,
        keys: &(impl ReadBuffer<K> + ?Sized),
        values: &(impl ReadBuffer<V> + ?Sized),
    ) -> Result<ByKey<K, V>> {
        let (keys, values) = (keys.as_view(), values.as_view());
        if keys.len() != values.len() {
            return Err(Error::InvalidArgument {
                what: "xlog_kernels::segmented::reduce_by_key".to_owned(),
                reason: format!(
                    "{} keys but {} values; pass one key per value",
                    keys.len(),
                    values.len()
                ),
            });
        }
        let runs = compact::unique_counts(s, &keys)?;
        let folded = if keys.is_empty() {
            segmented_reduce::<V, Op>(s, &values, &runs.offsets.slice(0..0))?
        } else {
            segmented_reduce::<V, Op>(s, &values, &runs.offsets)?
        };
        Ok(ByKey {
            keys: runs.values,
            values: folded,
            counts: runs.counts,
        })
    }
}
