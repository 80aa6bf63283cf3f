//! Reductions: the sum, minimum or maximum of a buffer, or its fold under an
//! operator of your own, left on the device as a one-element buffer.
//!
//! # Algorithm
//!
//! Two launches of one kernel (CUB's `DeviceReduce` shape). The first runs at most
//! [`MAX_BLOCKS`] blocks of [`BLOCK`] threads; each thread folds a grid-stride
//! sequence of 16-byte chunks (four 32-bit or two 64-bit elements, one vector load
//! each, four loads in flight per step), the block folds its threads' values
//! ([`collective::block_reduce`]) and its leader writes one partial. The second
//! launch is one block over the partials, writing the result. An input of at most
//! one block's worth of chunks takes the second launch only.
//!
//! | | |
//! | --- | --- |
//! | work | `O(n)`, every element read once |
//! | launches | 2 (1 when `n ≤ BLOCK · elements per chunk`) |
//! | temporary memory | one element per first-pass block: at most `MAX_BLOCKS` elements, from the stream's runtime (its budget applies) |
//! | determinism | the combination order depends only on `n`: the same input gives the same bits, floats included |
//!
//! # Edge cases
//!
//! An empty input gives the operator's identity (`0`, `T::MAX` / `+∞` for the
//! minimum, `T::MIN` / `-∞` for the maximum). Integer sums wrap. Float sums are
//! summed in a tree order, not left to right, so they may differ from a sequential
//! sum by rounding; a NaN or an infinity propagates as in any sum. Float minimum
//! and maximum follow [`f32::min`] / [`f32::max`]: NaNs are ignored (an all-NaN
//! input gives the identity, `+∞` or `-∞`).
//!
//! # Your own operator
//!
//! The operator runs on the device, so it is compiled into a kernel: write a kernel
//! whose body is [`fold_block`] with your operator and identity, and name it in an
//! (`unsafe`) [`FoldKernel`] implementation; [`fold`] then runs it like [`sum`]:
//!
//! ```ignore
//! #[xlog_kernel(read(x), write(partials per block), block = 256)]
//! pub fn fold_xor_u64(x: &[u64], partials: &mut [u64]) {
//!     xlog_kernels::reduce::fold_block::<u64, 2>(x, partials, 0, |a, b| a ^ b);
//! }
//! pub struct Xor;
//! // SAFETY: the body is `fold_block` and `cfg` is passed unchanged, so every
//! // block writes its partial.
//! unsafe impl xlog_kernels::reduce::FoldKernel<u64> for Xor {
//!     fn launch(s: &Stream, cfg: LaunchConfig, x: &BufferView<'_, u64>, partials: &mut DeviceBuffer<u64>) -> Result<()> {
//!         fold_xor_u64::launch(s, cfg, x, partials)
//!     }
//! }
//! let x_xor = xlog_kernels::reduce::fold::<u64, Xor>(&s, &x)?;
//! ```
//!
//! Without `unsafe`: implement the safe [`Fold`] instead and call [`fold_safely`],
//! which starts the partials and the result zeroed (a memset more). A kernel
//! generic over its element type folds with [`fold_block_chunked`], and one
//! `impl<T: KernelType> Fold<T>` covers every type it lists ([`fold_safely`]'s docs
//! show [`Xor`], the library's own example).
//!
//! The operator must be associative and commutative: threads and blocks are
//! combined in an order fixed by the launch shape, not the elements' order.
//!
//! # 8- and 16-bit integers
//!
//! [`min`] and [`max`] take `u8`, `u16`, `i8` and `i16` too, through kernels of
//! their own ([`reduce_min_narrow`], [`reduce_max_narrow`]) that read element by
//! element and fold in 32 bits ([`Narrow`]). Their sum is [`sum_widened`]'s, in
//! `u64` (unsigned) or `i64` (signed), as PyTorch sums them into `int64`; [`sum`]
//! does not take them, since in their own type it would wrap.

use xlog::device::vector::Vector;
use xlog::device::view::{read_chunk, read_chunks, Out, PerBlock};
use xlog::device::warp::Shuffle;
use xlog::prelude::*;

/// Threads per block of every reduction kernel.
pub const BLOCK: u32 = 256;

/// The most blocks a first pass launches (and so the most partials it leaves).
pub const MAX_BLOCKS: u32 = 1024;

/// Chunks each thread loads before folding them (loads in flight per thread).
const UNROLL: usize = 4;

/// The elements of one chunk folded under `op`, left to right.
#[inline(always)]
fn fold_chunk<T: Copy, const K: usize>(v: [T; K], op: impl Fn(T, T) -> T) -> T {
    let mut acc = v[0];
    for &e in &v[1..] {
        acc = op(acc, e);
    }
    acc
}

/// This thread's grid-stride share of the `K`-element chunks of `x` folded into
/// `init` by `f(acc, chunk index, chunk)`, in ascending chunk order: `UNROLL` (4)
/// chunks loaded together (16-byte vector loads when `[T; K]` is 16 bytes) before
/// any is folded, since folding each as it arrives leaves one load in flight per
/// thread. The last chunk, when `x` ends inside it, comes padded with `fill`.
#[inline(always)]
pub(crate) fn fold_chunks<T: Copy, A, const K: usize>(
    x: &[T],
    fill: T,
    init: A,
    f: impl Fn(A, usize, [T; K]) -> A,
) -> A
where
    [T; K]: Vector,
{
    let stride = thread::total_threads();
    let mut c = thread::index_1d().get();
    let mut acc = init;
    while let Some(v) = read_chunks::<T, K, UNROLL>(x, c, stride) {
        for (u, chunk) in v.iter().enumerate() {
            acc = f(acc, c + u * stride, *chunk);
        }
        c = c.saturating_add(UNROLL * stride);
    }
    while c < x.len().div_ceil(K) {
        let v: [T; K] = read_chunk::<T, K>(x, c).unwrap_or_else(|| {
            core::array::from_fn(|j| {
                *x.get(c.saturating_mul(K).saturating_add(j))
                    .unwrap_or(&fill)
            })
        });
        acc = f(acc, c, v);
        c += stride;
    }
    acc
}

/// One block's share of a reduction: this block's threads fold a grid-stride
/// sequence of `K`-element chunks of `x` (16-byte vector loads, `UNROLL` (4) in
/// flight), the block folds its threads, and its leader stores the block's value in
/// `partials[blockIdx.x]` (nothing when `partials` is shorter).
///
/// The body of every reduction kernel, for any element type and operator; every
/// thread of the block must call it (it contains a block collective). `op` must be
/// associative and commutative, with `identity` its identity element.
#[inline(always)]
pub fn fold_block<T: Shuffle, const K: usize>(
    x: &[T],
    partials: &mut Out<'_, T, PerBlock>,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) where
    [T; K]: Vector,
{
    let acc = fold_chunks::<T, T, K>(x, identity, identity, |acc, _, v| {
        op(acc, fold_chunk(v, op))
    });
    let total = collective::block_reduce(acc, op);
    if let Some(b) = thread::block_leader() {
        if let Some(p) = partials.get_mut(b) {
            *p = total;
        }
    }
}

/// The elements whose 16-byte chunks the reductions load: one [`fold_block`] over
/// each type's chunk, so a kernel generic over the element type folds with
/// [`fold_block_chunked`] (`K` is 4 for 32-bit types, 2 for 64-bit ones).
pub trait Chunked: Shuffle + sealed::Chunked {
    /// Elements per 16-byte chunk.
    const CHUNK: usize;
    /// [`fold_block`] with this type's chunk.
    fn fold_block(
        x: &[Self],
        partials: &mut Out<'_, Self, PerBlock>,
        identity: Self,
        op: impl Fn(Self, Self) -> Self + Copy,
    );
}

mod sealed {
    pub trait Chunked {}
    pub trait Narrow {}
}

// Each type's chunk: four 32-bit or two 64-bit elements.
macro_rules! chunked {
    ($($k:literal: $($t:ty),*;)*) => {$($(
        impl sealed::Chunked for $t {}
        impl Chunked for $t {
            const CHUNK: usize = $k;
            #[inline(always)]
            fn fold_block(
                x: &[$t],
                partials: &mut Out<'_, $t, PerBlock>,
                identity: $t,
                op: impl Fn($t, $t) -> $t + Copy,
            ) {
                fold_block::<$t, $k>(x, partials, identity, op)
            }
        }
    )*)*};
}

chunked! {
    4: u32, i32, f32;
    2: u64, i64, f64;
}

/// [`fold_block`] for any [`Chunked`] element type: the body of a reduction kernel
/// generic over its element type (see the [module docs](self)).
#[inline(always)]
pub fn fold_block_chunked<T: Chunked>(
    x: &[T],
    partials: &mut Out<'_, T, PerBlock>,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
) {
    T::fold_block(x, partials, identity, op)
}

/// The built-in operators on each element type: [`sum`] (wrapping addition for
/// integers, `+` for floats), [`min`] and [`max`] (for floats [`f32::min`] and
/// [`f32::max`], which ignore NaNs), with their identities.
pub trait Reduced: Chunked {
    /// The sum's identity, 0.
    const ZERO: Self;
    /// The minimum's identity: the greatest value (`+∞` for floats).
    const HIGHEST: Self;
    /// The maximum's identity: the least value (`−∞` for floats).
    const LOWEST: Self;
    /// `a + b`, wrapping for integers.
    fn sum(a: Self, b: Self) -> Self;
    /// The lesser of `a` and `b` (for floats the other when one is NaN).
    fn min(a: Self, b: Self) -> Self;
    /// The greater of `a` and `b` (for floats the other when one is NaN).
    fn max(a: Self, b: Self) -> Self;
}

// One arithmetic per kind of type, the same for every width.
macro_rules! reduced {
    (int: $($t:ty),*) => {$(
        impl Reduced for $t {
            const ZERO: Self = 0;
            const HIGHEST: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
            #[inline(always)]
            fn sum(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                Ord::min(a, b)
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                Ord::max(a, b)
            }
        }
    )*};
    (float: $($t:ty),*) => {$(
        impl Reduced for $t {
            const ZERO: Self = 0.0;
            const HIGHEST: Self = <$t>::INFINITY;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            #[inline(always)]
            fn sum(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                <$t>::min(a, b)
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                <$t>::max(a, b)
            }
        }
    )*};
}

reduced!(int: u32, i32, u64, i64);
reduced!(float: f32, f64);

/// Per-block partial sums (wrapping for integers): the first pass of [`sum`], and
/// its second over the partials.
#[xlog_kernel(
    read(x), write(partials per block), block = 256,
    for T in [u32, i32, f32, u64, i64, f64]
)]
pub fn reduce_sum<T: Reduced>(x: &[T], partials: &mut [T]) {
    fold_block_chunked(x, partials, T::ZERO, T::sum);
}

/// Per-block minima: the passes of [`min`].
#[xlog_kernel(
    read(x), write(partials per block), block = 256,
    for T in [u32, i32, f32, u64, i64, f64]
)]
pub fn reduce_min<T: Reduced>(x: &[T], partials: &mut [T]) {
    fold_block_chunked(x, partials, T::HIGHEST, T::min);
}

/// Per-block maxima: the passes of [`max`].
#[xlog_kernel(
    read(x), write(partials per block), block = 256,
    for T in [u32, i32, f32, u64, i64, f64]
)]
pub fn reduce_max<T: Reduced>(x: &[T], partials: &mut [T]) {
    fold_block_chunked(x, partials, T::LOWEST, T::max);
}

/// Per-block bitwise exclusive ors of `u32`s or `u64`s: an operator outside the
/// built-in ones, written the way a generic kernel of your own is (the [`Xor`] of
/// [`fold_safely`]).
#[xlog_kernel(read(x), write(partials per block), block = 256, for T in [u32, u64])]
pub fn fold_xor<T>(x: &[T], partials: &mut [T])
where
    T: Chunked + core::ops::BitXor<Output = T> + Default,
{
    fold_block_chunked(x, partials, T::default(), |a, b| a ^ b);
}

/// Per-block bitwise ors of `u32`s: an operator outside the built-in ones, written
/// the way a kernel of your own is (the [`BitOr`] of [`fold`]).
#[xlog_kernel(read(x), write(partials per block), block = 256)]
pub fn fold_or_u32(x: &[u32], partials: &mut [u32]) {
    fold_block::<u32, 4>(x, partials, 0, |a, b| a | b);
}

/// The 8- and 16-bit integers, which the reductions fold in a wider accumulator:
/// each element is widened as it is read, a block folds the widened values
/// ([`collective::block_reduce`] moves 32- and 64-bit numbers only), and a block's
/// minimum or maximum is narrowed back (losslessly: it is one of the elements, or
/// the identity). Their sum is [`sum_widened`]'s, in [`Narrow::Total`].
pub trait Narrow: Copy + sealed::Narrow {
    /// What blocks fold the minimum and maximum in: `u32` for the unsigned types,
    /// `i32` for the signed ones.
    type Wide: Shuffle + Ord;
    /// The type of the sum: `u64` for `u8` and `u16`, `i64` for `i8` and `i16`
    /// (PyTorch sums them into `int64`), so a sum of up to
    /// 2^47 elements cannot wrap.
    type Total: Reduced;
    /// The minimum's identity, `Self::MAX`.
    const HIGHEST: Self;
    /// The maximum's identity, `Self::MIN`.
    const LOWEST: Self;
    /// `self` in the accumulator of the minimum and maximum.
    fn widen(self) -> Self::Wide;
    /// A widened value of this type back in it (the value of an element or an
    /// identity, so nothing is lost).
    fn narrow(w: Self::Wide) -> Self;
}

// Zero-extension for the unsigned types, sign-extension for the signed ones.
macro_rules! narrow {
    ($($t:ty => $wide:ty, $total:ty;)*) => {$(
        impl sealed::Narrow for $t {}
        impl Narrow for $t {
            type Wide = $wide;
            type Total = $total;
            const HIGHEST: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
            #[inline(always)]
            fn widen(self) -> $wide {
                self as $wide
            }
            #[inline(always)]
            fn narrow(w: $wide) -> Self {
                w as $t
            }
        }
    )*};
}

narrow! {
    u8 => u32, u64;
    u16 => u32, u64;
    i8 => i32, i64;
    i16 => i32, i64;
}

/// One block's share of the minimum or maximum of 8- or 16-bit integers: this
/// block's threads fold a grid-stride sequence of `x`'s elements, widened, under
/// `op`, the block folds its threads, and its leader stores the result, narrowed,
/// in `partials[blockIdx.x]` (nothing when `partials` is shorter). Every thread of
/// the block must call it (it contains a block collective).
#[inline(always)]
fn fold_block_narrow<T: Narrow>(
    x: &[T],
    partials: &mut Out<'_, T, PerBlock>,
    identity: T,
    op: impl Fn(T::Wide, T::Wide) -> T::Wide + Copy,
) {
    let mut acc = identity.widen();
    for i in thread::grid_stride(x.len()) {
        acc = op(acc, x[i].widen());
    }
    let total = collective::block_reduce(acc, op);
    if let Some(b) = thread::block_leader() {
        if let Some(p) = partials.get_mut(b) {
            *p = T::narrow(total);
        }
    }
}

/// One block's share of a widened sum: as [`fold_block_narrow`], each element
/// converted to `W` and added (wrapping, which a sum of fewer than 2^47 8- or
/// 16-bit elements never does).
#[inline(always)]
fn sum_block_widened<T: Copy + Into<W>, W: Reduced>(x: &[T], partials: &mut Out<'_, W, PerBlock>) {
    let mut acc = W::ZERO;
    for i in thread::grid_stride(x.len()) {
        acc = W::sum(acc, x[i].into());
    }
    let total = collective::block_reduce(acc, W::sum);
    if let Some(b) = thread::block_leader() {
        if let Some(p) = partials.get_mut(b) {
            *p = total;
        }
    }
}

/// Per-block minima of 8- and 16-bit integers: the passes of [`min`] for them.
#[xlog_kernel(
    read(x), write(partials per block), block = 256,
    for T in [u8, u16, i8, i16]
)]
pub fn reduce_min_narrow<T: Narrow>(x: &[T], partials: &mut [T]) {
    fold_block_narrow(x, partials, T::HIGHEST, Ord::min);
}

/// Per-block maxima of 8- and 16-bit integers: the passes of [`max`] for them.
#[xlog_kernel(
    read(x), write(partials per block), block = 256,
    for T in [u8, u16, i8, i16]
)]
pub fn reduce_max_narrow<T: Narrow>(x: &[T], partials: &mut [T]) {
    fold_block_narrow(x, partials, T::LOWEST, Ord::max);
}

/// Per-block sums of `u8`s or `u16`s as `u64`s: the first pass of
/// [`sum_widened`] for them (the second is [`reduce_sum`] over the `u64`s).
#[xlog_kernel(read(x), write(partials per block), block = 256, for T in [u8, u16])]
pub fn reduce_sum_widened_u64<T: Copy + Into<u64>>(x: &[T], partials: &mut [u64]) {
    sum_block_widened(x, partials);
}

/// Per-block sums of `i8`s or `i16`s as `i64`s: the first pass of
/// [`sum_widened`] for them.
#[xlog_kernel(read(x), write(partials per block), block = 256, for T in [i8, i16])]
pub fn reduce_sum_widened_i64<T: Copy + Into<i64>>(x: &[T], partials: &mut [i64]) {
    sum_block_widened(x, partials);
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, BufferView, DeviceBuffer, GraphArena, GraphRecorder, LaunchConfig, NodeId,
        ReadBuffer, Result, Stream,
    };

    use crate::exec::{Exec, Now, Record};

    use super::{BLOCK, MAX_BLOCKS, UNROLL};

    /// A reduction kernel: its element type, the elements each thread loads per
    /// chunk, and its launch. The kernel's body is [`fold_block`](super::fold_block)
    /// (or one that keeps its contract: every block's leader writes
    /// `partials[blockIdx.x]`, the fold of what its block read, and a one-block launch
    /// over all of `x` writes the fold of `x`).
    ///
    /// # Safety
    ///
    /// [`fold`] hands `launch` uninitialised `partials` (and an uninitialised
    /// one-element result) and returns the result to safe code. An implementation
    /// must, whenever `launch` returns `Ok`, have queued on `s` work that writes
    /// `partials[b]` for every block `b` of `cfg` (a one-dimensional grid), and
    /// must not read an element of `partials` before it is written (download it,
    /// say): with [`fold_block`](super::fold_block) as the body, that is the given
    /// `cfg` passed unchanged, whatever `CHUNK` is. A safe implementation is
    /// refused, so a launcher that writes nothing cannot hand out unwritten memory:
    ///
    /// ```compile_fail,E0200
    /// use xlog::{BufferView, DeviceBuffer, LaunchConfig, Result, Stream};
    /// struct Lazy;
    /// impl xlog_kernels::reduce::FoldKernel<bool> for Lazy {
    ///     fn launch(
    ///         _: &Stream,
    ///         _: LaunchConfig,
    ///         _: &BufferView<'_, bool>,
    ///         _: &mut DeviceBuffer<bool>,
    ///     ) -> Result<()> {
    ///         Ok(())
    ///     }
    /// }
    /// ```
    pub unsafe trait FoldKernel<T: xlog::DeviceCopy> {
        /// Elements per 16-byte chunk (`K` of `fold_block::<T, K>`).
        const CHUNK: usize = 16 / core::mem::size_of::<T>();

        /// Launches the kernel over `x`, writing one value per block into `partials`.
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            partials: &mut DeviceBuffer<T>,
        ) -> Result<()>;
    }

    /// The fold of `x` under kernel `K`'s operator, as a one-element buffer on the
    /// device (`K`'s identity for an empty `x`). See the [module docs](super) for
    /// the algorithm, its temporary memory and the order elements are combined in.
    ///
    /// # Errors
    ///
    /// A budget refusal of the partials or the result (`BudgetExceeded`; nothing
    /// was launched), or a launch error.
    pub fn fold<T: xlog::DeviceCopy, K: FoldKernel<T>>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let x = e.input(x);
        // SAFETY: `K` keeps `FoldKernel`'s contract.
        unsafe {
            fold_on(&mut e, x, K::CHUNK, false, |e, cfg, x, out| {
                K::launch(e.0, cfg, &x, out)
            })
        }
    }

    /// The fold of `x` through `e`, `launch` running the kernel: one block when
    /// `x` fits one, else a block per chunk of the input and one more over their
    /// partials. Nothing depends on device data, so it records as it launches.
    ///
    /// # Safety
    /// Unless `zeroed`, `launch` keeps `FoldKernel`'s contract: whenever it
    /// returns `Ok`, the work it queued writes `partials[b]` for every block `b` of
    /// its configuration before anything reads it.
    unsafe fn fold_on<E: Exec, T: xlog::DeviceCopy>(
        e: &mut E,
        x: E::In<'_, T>,
        chunk: usize,
        zeroed: bool,
        mut launch: impl FnMut(&mut E, LaunchConfig, E::In<'_, T>, &mut E::Buf<T>) -> Result<()>,
    ) -> Result<E::Buf<T>> {
        let len = E::len(&x);
        let per_block = BLOCK as usize * chunk;
        let blocks = len
            .div_ceil(per_block * UNROLL)
            .clamp(1, MAX_BLOCKS as usize);
        let alloc = |e: &mut E, n: usize, tag: &'static str| {
            if zeroed {
                e.zeroed::<T>(n)
            } else {
                // SAFETY: the caller's obligation: each launch writes every
                // element of its output (a one-block launch its element 0) before
                // anything reads it.
                unsafe { e.alloc_uninit::<T>(n, AllocTag(tag)) }
            }
        };
        let mut out = alloc(e, 1, "reduce result")?;
        if len <= per_block {
            launch(e, one_block(), x, &mut out)?;
            return Ok(out);
        }
        let mut partials = alloc(e, blocks, "reduce partials")?;
        launch(
            e,
            LaunchConfig::new([blocks as u32, 1, 1], [BLOCK, 1, 1]),
            x,
            &mut partials,
        )?;
        launch(e, one_block(), E::view(&partials), &mut out)?;
        Ok(out)
    }

    /// Records the fold of `x` under `K` into a graph, as [`fold`] and
    /// [`fold_safely`] launch it (one kernel node, or two over more than one
    /// block's worth): the result and the partials are allocated now on the
    /// recorder's stream, zeroed, and kept in `arena`, which outlives the graph;
    /// every replay folds `x` again into the same one-element result. For the
    /// built-in operators and for a kernel of your own that implements
    /// [`RecordFold`]: the buffers start zeroed, so no contract beyond the safe
    /// [`Fold`]'s is needed.
    ///
    /// # Errors
    ///
    /// As [`fold`], and those of recording a kernel.
    pub fn record_fold<'g, T: xlog::DeviceCopy, K: RecordFold<T>>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>> {
        let mut e = Record::new(rec, arena);
        let x = e.input(x);
        // SAFETY: `zeroed`: every buffer starts zeroed.
        unsafe {
            fold_on(&mut e, x, K::CHUNK, true, |e, cfg, x, out| {
                K::record(e.rec, cfg, x, *out).map(drop)
            })
        }
    }

    /// [`sum`] recorded into a graph (see [`record_fold`]).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[1u32, 2, 3])?;
    /// let arena = xlog::GraphArena::new();
    /// let mut rec = xlog::GraphRecorder::new(&s);
    /// let total = xlog_kernels::reduce::record_sum(&mut rec, &arena, &x)?;
    /// let graph = rec.instantiate()?;
    /// graph.launch(&s)?;
    /// assert_eq!(total.download(&s)?, [6]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`record_fold`].
    pub fn record_sum<'g, T: xlog::DeviceCopy>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>>
    where
        Sum: RecordFold<T>,
    {
        record_fold::<T, Sum>(rec, arena, x)
    }

    /// [`min`] recorded into a graph (see [`record_fold`]).
    ///
    /// # Errors
    ///
    /// As [`record_fold`].
    pub fn record_min<'g, T: xlog::DeviceCopy>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>>
    where
        Min: RecordFold<T>,
    {
        record_fold::<T, Min>(rec, arena, x)
    }

    /// [`max`] recorded into a graph (see [`record_fold`]).
    ///
    /// # Errors
    ///
    /// As [`record_fold`].
    pub fn record_max<'g, T: xlog::DeviceCopy>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>>
    where
        Max: RecordFold<T>,
    {
        record_fold::<T, Max>(rec, arena, x)
    }

    /// A reduction kernel of your own, for [`fold_safely`]: safe to implement,
    /// since [`fold_safely`] hands it zeroed memory. Its body is
    /// [`fold_block_chunked`](super::fold_block_chunked) or
    /// [`fold_block`](super::fold_block) (every block's leader writes
    /// `partials[blockIdx.x]`, the fold of what its block read); a kernel that
    /// keeps no such contract gives a wrong result, never undefined behaviour.
    pub trait Fold<T: xlog::DeviceCopy> {
        /// Elements per 16-byte chunk (`K` of `fold_block::<T, K>`).
        const CHUNK: usize = 16 / core::mem::size_of::<T>();

        /// Launches the kernel over `x`, writing one value per block into `partials`.
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            partials: &mut DeviceBuffer<T>,
        ) -> Result<()>;
    }

    /// The fold of `x` under kernel `K`'s operator, as [`fold`] computes it, for a
    /// kernel implementing the safe [`Fold`]: the partials and the result start
    /// zeroed (two memsets of at most [`MAX_BLOCKS`](super::MAX_BLOCKS) elements
    /// and one), so no implementation can hand out unwritten memory.
    ///
    /// With a generic kernel, one implementation serves every listed type:
    ///
    /// ```ignore
    /// #[xlog_kernel(read(x), write(partials per block), block = 256, for T in [u32, u64])]
    /// pub fn fold_xor<T>(x: &[T], partials: &mut [T])
    /// where
    ///     T: Chunked + core::ops::BitXor<Output = T> + Default,
    /// {
    ///     fold_block_chunked(x, partials, T::default(), |a, b| a ^ b);
    /// }
    /// pub struct Xor;
    /// impl<T: FoldXorType> Fold<T> for Xor {
    ///     fn launch(s: &Stream, cfg: LaunchConfig, x: &BufferView<'_, T>, partials: &mut DeviceBuffer<T>) -> Result<()> {
    ///         fold_xor::launch(s, cfg, x, partials)
    ///     }
    /// }
    /// let x_xor = xlog_kernels::reduce::fold_safely::<u64, Xor>(&s, &x)?;
    /// ```
    ///
    /// # Errors
    ///
    /// As [`fold`].
    pub fn fold_safely<T: xlog::DeviceCopy, K: Fold<T>>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let x = e.input(x);
        // SAFETY: `zeroed`: every buffer starts zeroed.
        unsafe {
            fold_on(&mut e, x, K::CHUNK, true, |e, cfg, x, out| {
                K::launch(e.0, cfg, &x, out)
            })
        }
    }

    /// A [`Fold`] that can also be recorded into a graph ([`record_fold`]):
    /// `record` records the kernel `launch` launches (its generated `record`,
    /// given the same arguments). Safe to implement, as [`Fold`] is.
    ///
    /// ```ignore
    /// impl<T: FoldXorType> RecordFold<T> for Xor {
    ///     fn record<'g>(rec: &mut GraphRecorder<'g>, cfg: LaunchConfig, x: &'g dyn ReadBuffer<T>, partials: &'g DeviceBuffer<T>) -> Result<NodeId> {
    ///         fold_xor::record(rec, cfg, x, partials)
    ///     }
    /// }
    /// ```
    pub trait RecordFold<T: xlog::DeviceCopy>: Fold<T> {
        /// Records the kernel over `x`, writing one value per block into
        /// `partials`.
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            partials: &'g DeviceBuffer<T>,
        ) -> Result<NodeId>;
    }

    /// Bitwise exclusive or of `u32`s or `u64`s, through the generic kernel
    /// [`fold_xor`](super::fold_xor): an operator written the way a user's is.
    #[derive(Clone, Copy, Debug)]
    pub struct Xor;

    impl<T: super::FoldXorType> Fold<T> for Xor {
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, T>,
            partials: &mut DeviceBuffer<T>,
        ) -> Result<()> {
            super::fold_xor::launch(s, cfg, x, partials)
        }
    }

    impl<T: super::FoldXorType> RecordFold<T> for Xor {
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<T>,
            partials: &'g DeviceBuffer<T>,
        ) -> Result<NodeId> {
            super::fold_xor::record(rec, cfg, x, partials)
        }
    }

    fn one_block() -> LaunchConfig {
        LaunchConfig::new([1, 1, 1], [BLOCK, 1, 1])
    }

    /// The operator of [`sum`]: wrapping addition for integers, `+` for floats.
    #[derive(Clone, Copy, Debug)]
    pub struct Sum;
    /// The operator of [`min`].
    #[derive(Clone, Copy, Debug)]
    pub struct Min;
    /// The operator of [`max`].
    #[derive(Clone, Copy, Debug)]
    pub struct Max;
    /// Bitwise or of `u32`s (an operator written the way a user's is, for the GPU
    /// suite and the docs).
    #[derive(Clone, Copy, Debug)]
    pub struct BitOr;

    // The built-in operators: one generic kernel each, so one implementation of
    // each trait covers every type the kernel lists.
    macro_rules! built_in {
        ($op:ident, $kernel:ident, $types:ident) => {
            // SAFETY: the kernel's body is `fold_block_chunked` (`fold_block`),
            // launched with the given configuration: every block's leader writes
            // its partial.
            unsafe impl<T: super::$types + xlog::DeviceCopy> FoldKernel<T> for $op {
                fn launch(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, T>,
                    partials: &mut DeviceBuffer<T>,
                ) -> Result<()> {
                    super::$kernel::launch(s, cfg, x, partials)
                }
            }

            // The built-in kernels keep the safe contract too: `fold_safely` and
            // `record_fold` run them.
            impl<T: super::$types + xlog::DeviceCopy> Fold<T> for $op {
                fn launch(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, T>,
                    partials: &mut DeviceBuffer<T>,
                ) -> Result<()> {
                    super::$kernel::launch(s, cfg, x, partials)
                }
            }

            impl<T: super::$types + xlog::DeviceCopy> RecordFold<T> for $op {
                fn record<'g>(
                    rec: &mut GraphRecorder<'g>,
                    cfg: LaunchConfig,
                    x: &'g dyn ReadBuffer<T>,
                    partials: &'g DeviceBuffer<T>,
                ) -> Result<NodeId> {
                    super::$kernel::record(rec, cfg, x, partials)
                }
            }
        };
    }

    built_in!(Sum, reduce_sum, ReduceSumType);
    built_in!(Min, reduce_min, ReduceMinType);
    built_in!(Max, reduce_max, ReduceMaxType);

    // The minimum and maximum of the 8- and 16-bit integers: their own kernels
    // (folded widened), one implementation per type, since a second blanket
    // implementation would overlap the built-in one.
    macro_rules! narrow_built_in {
        ($op:ident, $kernel:ident: $($t:ty),*) => {$(
            // SAFETY: the kernel's body is `fold_block_narrow`, launched with the
            // given configuration: every block's leader writes its partial.
            unsafe impl FoldKernel<$t> for $op {
                fn launch(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, $t>,
                    partials: &mut DeviceBuffer<$t>,
                ) -> Result<()> {
                    super::$kernel::launch(s, cfg, x, partials)
                }
            }

            impl Fold<$t> for $op {
                fn launch(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, $t>,
                    partials: &mut DeviceBuffer<$t>,
                ) -> Result<()> {
                    super::$kernel::launch(s, cfg, x, partials)
                }
            }

            impl RecordFold<$t> for $op {
                fn record<'g>(
                    rec: &mut GraphRecorder<'g>,
                    cfg: LaunchConfig,
                    x: &'g dyn ReadBuffer<$t>,
                    partials: &'g DeviceBuffer<$t>,
                ) -> Result<NodeId> {
                    super::$kernel::record(rec, cfg, x, partials)
                }
            }
        )*};
    }

    narrow_built_in!(Min, reduce_min_narrow: u8, u16, i8, i16);
    narrow_built_in!(Max, reduce_max_narrow: u8, u16, i8, i16);

    mod sealed {
        pub trait Widened {}
    }

    /// The 8- and 16-bit integers, whose sum [`sum_widened`] takes in a wider type:
    /// [`Narrow::Total`](super::Narrow::Total), `u64` for `u8` and `u16`, `i64` for
    /// `i8` and `i16`.
    pub trait Widened:
        super::Narrow<Total: xlog::DeviceCopy> + xlog::DeviceCopy + sealed::Widened
    {
        /// The first pass of the sum: per-block sums of `x` in the wide type.
        #[doc(hidden)]
        fn __launch_sum(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, Self>,
            partials: &mut DeviceBuffer<Self::Total>,
        ) -> Result<()>;
    }

    macro_rules! widened {
        ($kernel:ident: $($t:ty),*) => {$(
            impl sealed::Widened for $t {}
            impl Widened for $t {
                fn __launch_sum(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, Self>,
                    partials: &mut DeviceBuffer<Self::Total>,
                ) -> Result<()> {
                    super::$kernel::launch(s, cfg, x, partials)
                }
            }
        )*};
    }

    widened!(reduce_sum_widened_u64: u8, u16);
    widened!(reduce_sum_widened_i64: i8, i16);

    /// The sum of 8- or 16-bit integers in a wider type, as a one-element device
    /// buffer: `u64` for `u8` and `u16`, `i64` for `i8` and `i16` (as PyTorch sums
    /// them into `int64`); `0` when `x` is empty. Exact for fewer than 2^47
    /// elements. ([`sum`] keeps its element type and is not defined for these
    /// types, where it would wrap after a few hundred elements.)
    ///
    /// Two launches as [`sum`]'s: per-block sums of the widened elements (each
    /// thread reads its grid-stride share element by element), then
    /// [`reduce_sum`](super::reduce_sum) over the at most
    /// [`MAX_BLOCKS`](super::MAX_BLOCKS) partials; one launch when `x` fits one
    /// block's share.
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[200u8, 100, 250])?;
    /// assert_eq!(xlog_kernels::reduce::sum_widened(&s, &x)?.download(&s)?, [550u64]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`fold`].
    pub fn sum_widened<T: Widened>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T::Total>>
    where
        Sum: FoldKernel<T::Total>,
    {
        let x = x.as_view();
        let rt = s.runtime()?;
        let per_block = BLOCK as usize * (16 / core::mem::size_of::<T>());
        // SAFETY: every launch below writes each element of its output before
        // anything reads it (the first-pass kernel's body is `sum_block_widened`,
        // whose block leaders write their partials, and a one-block launch writes
        // element 0; `reduce_sum` keeps `FoldKernel`'s contract), and later uses of
        // the buffers are fenced on those launches.
        let mut out = unsafe { rt.alloc_uninit::<T::Total>(s, 1, AllocTag("reduce result")) }?;
        if x.len() <= per_block {
            T::__launch_sum(s, one_block(), &x, &mut out)?;
            return Ok(out);
        }
        let blocks = x
            .len()
            .div_ceil(per_block * UNROLL)
            .clamp(1, MAX_BLOCKS as usize);
        // SAFETY: as `out`'s.
        let mut partials =
            unsafe { rt.alloc_uninit::<T::Total>(s, blocks, AllocTag("reduce partials")) }?;
        let cfg = LaunchConfig::new([blocks as u32, 1, 1], [BLOCK, 1, 1]);
        T::__launch_sum(s, cfg, &x, &mut partials)?;
        <Sum as FoldKernel<T::Total>>::launch(s, one_block(), &partials.as_view(), &mut out)?;
        Ok(out)
    }

    // SAFETY: the kernel's body is `fold_block`, launched with the given
    // configuration: every block's leader writes its partial.
    unsafe impl FoldKernel<u32> for BitOr {
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, u32>,
            partials: &mut DeviceBuffer<u32>,
        ) -> Result<()> {
            super::fold_or_u32::launch(s, cfg, x, partials)
        }
    }

    impl Fold<u32> for BitOr {
        fn launch(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, u32>,
            partials: &mut DeviceBuffer<u32>,
        ) -> Result<()> {
            super::fold_or_u32::launch(s, cfg, x, partials)
        }
    }

    impl RecordFold<u32> for BitOr {
        fn record<'g>(
            rec: &mut GraphRecorder<'g>,
            cfg: LaunchConfig,
            x: &'g dyn ReadBuffer<u32>,
            partials: &'g DeviceBuffer<u32>,
        ) -> Result<NodeId> {
            super::fold_or_u32::record(rec, cfg, x, partials)
        }
    }

    /// The sum of `x` (wrapping for integers; a tree order for floats) as a
    /// one-element device buffer; `0` when `x` is empty. For `u32`, `i32`, `u64`,
    /// `i64`, `f32`, `f64`; the 8- and 16-bit integers sum with [`sum_widened`]. `O(n)`, two launches, at most
    /// [`MAX_BLOCKS`](super::MAX_BLOCKS) elements of temporary memory
    /// ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[1u32, 2, 3])?;
    /// assert_eq!(xlog_kernels::reduce::sum(&s, &x)?.download(&s)?, [6]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`fold`].
    pub fn sum<T: xlog::DeviceCopy>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>>
    where
        Sum: FoldKernel<T>,
    {
        fold::<T, Sum>(s, x)
    }

    /// The minimum of `x` as a one-element device buffer; `T::MAX` (`+∞` for
    /// floats) when `x` is empty. For `u8`, `u16`, `i8`, `i16` (folded widened
    /// to 32 bits, element by element), `u32`, `i32`, `u64`, `i64`, `f32`, `f64`. Float NaNs are ignored (all NaN gives `+∞`);
    /// `-0.0` and `+0.0` compare equal (either may come back). As [`sum`]
    /// otherwise.
    ///
    /// # Errors
    ///
    /// As [`fold`].
    pub fn min<T: xlog::DeviceCopy>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>>
    where
        Min: FoldKernel<T>,
    {
        fold::<T, Min>(s, x)
    }

    /// The maximum of `x` as a one-element device buffer; `T::MIN` (`-∞` for
    /// floats) when `x` is empty. NaNs and zeros as in [`min`].
    ///
    /// # Errors
    ///
    /// As [`fold`].
    pub fn max<T: xlog::DeviceCopy>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>>
    where
        Max: FoldKernel<T>,
    {
        fold::<T, Max>(s, x)
    }
}
