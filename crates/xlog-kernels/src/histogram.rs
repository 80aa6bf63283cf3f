//! Histograms with per-block privatised bins: even bins over a range
//! ([`even`], `f32` / `u8` / `u16` / `u32` / `i32` samples) and counts by small
//! integer key ([`counts`], `u8` / `u16` / `u32` / `i32` / `u64` / `i64` keys).
//! Each is one generic kernel, an entry point per type (`histogram_counts__u8`).
//!
//! # Algorithm
//!
//! One launch (CUB's `DeviceHistogram` shape). Each block keeps its own copy of the
//! first [`SHARED_BINS`] bins in shared memory: it zeroes them, its threads walk a
//! grid-stride sequence of the input (16-byte vector loads for 32- and 64-bit
//! samples, one at a time for `u8` and `u16` ones) and add one to a shared bin per sample, and after a
//! block barrier each thread adds a share of the block's non-zero bins into the
//! output with one global atomic each. Bins past [`SHARED_BINS`] (only with more
//! bins than that) take global atomics directly.
//!
//! | | |
//! | --- | --- |
//! | work | `O(n + blocks · bins)`: one shared atomic per sample, one global atomic per block and non-empty bin |
//! | launches | 1, plus the zeroing of the output |
//! | temporary memory | none on the device heap; `4 · min(bins, SHARED_BINS)` bytes of shared memory per block |
//! | determinism | counts are exact integers: the same input gives the same counts |
//!
//! # Edge cases
//!
//! Samples outside `[lo, hi)` are ignored (not counted anywhere), as are float
//! NaNs; keys `≥ bins` (and negative signed keys) likewise. An empty input gives
//! `bins` zeros. Counts are `u32`: inputs of more than `u32::MAX` elements are
//! refused rather than risk a wrapped count.
//!
//! Even bin `b` covers `[lo + b·w, lo + (b+1)·w)` with `w = (hi − lo) / bins`. For
//! integer samples the bin is exact, `⌊(x − lo) · bins / (hi − lo)⌋`; for `f32`
//! samples it is computed in `f32` as `⌊fma(x, ½, −lo/2) · (bins / (hi/2 − lo/2))⌋`
//! (clamped to the last bin), so a sample within rounding of an edge may land on
//! either side of it, as in CUB. Halving is exact for normal numbers, and keeps
//! every difference finite: `[f32::MIN, f32::MAX)` splits like any other range.
//! `f32` bounds must be finite, and bins no narrower than the smallest normal
//! `f32` (`even` refuses other ranges).

use xlog::device::exchange::SharedWords;
use xlog::device::shared::DynamicShared;
use xlog::device::vector::Vector;
use xlog::device::view::read_chunk;
use xlog::prelude::*;

/// Threads per block of the histogram kernels.
pub const BLOCK: u32 = 256;

/// The most bins a block privatises in shared memory (48 KiB of `u32`s, the shared
/// memory every launch may take without opting in); bins past it use global atomics.
pub const SHARED_BINS: usize = 12 * 1024;

/// The most bins a histogram may have.
pub const MAX_BINS: usize = 1 << 24;

/// The block's privatised bins: the first `min(bins, dynamic shared words)` words of
/// the launch's dynamic shared memory, as [`SharedWords`] (every access a relaxed,
/// bounds-checked 4-byte atomic, so a missing barrier gives wrong counts, never
/// undefined behaviour).
#[derive(Clone, Copy)]
struct SharedBins {
    words: SharedWords<u32>,
    len: usize,
}

impl SharedBins {
    #[inline(always)]
    fn new(bins: usize) -> Self {
        let words = DynamicShared::<u32>::get().words();
        SharedBins {
            words,
            len: core::cmp::min(bins, words.len()),
        }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    /// Zeroes every bin (the block's threads share the work); a block barrier must
    /// follow before any thread adds.
    #[inline(always)]
    fn zero(&self) {
        for s in thread::block_stride(self.len) {
            self.words.store(s.get(), 0);
        }
    }

    /// Adds one to bin `i < len()`.
    #[inline(always)]
    fn add(&self, i: usize) {
        if i < self.len {
            self.words.fetch_add(i, 1);
        }
    }

    /// Adds every non-zero bin into `out` (one global atomic each; the block's
    /// threads share the bins); a block barrier must precede it.
    #[inline(always)]
    fn merge_into(&self, out: &AtomicView<'_, u32>) {
        for s in thread::block_stride(self.len) {
            let i = s.get();
            let c = self.words.load(i);
            if c != 0 && i < out.len() {
                out.fetch_add(i, c);
            }
        }
    }
}

/// Adds one to bin `b`: in the block's shared copy when it has one, else in `out`.
#[inline(always)]
fn count(shared: &SharedBins, out: &AtomicView<'_, u32>, b: usize) {
    if b < shared.len() {
        shared.add(b);
    } else if b < out.len() {
        out.fetch_add(b, 1);
    }
}

/// Calls `f` on every element of `x` this thread visits in a grid-stride loop over
/// `K`-element vector chunks, then on the tail elements past the last whole chunk.
#[inline(always)]
fn each_sample<T: Copy, const K: usize>(x: &[T], mut f: impl FnMut(T))
where
    [T; K]: Vector,
{
    let whole = x.len() / K;
    for c in thread::grid_stride(whole) {
        if let Some(v) = read_chunk::<T, K>(x, c.get()) {
            for e in v {
                f(e);
            }
        }
    }
    let tail = whole * K + thread::index_1d().get();
    if tail < x.len() {
        f(x[tail]);
    }
}

/// A block's privatised bins, zeroed (every thread of the block must call it: it
/// holds a block barrier).
#[inline(always)]
fn begin(out: &AtomicView<'_, u32>) -> SharedBins {
    let shared = SharedBins::new(out.len());
    shared.zero();
    barrier::sync_threads();
    shared
}

/// Merges a block's privatised bins into `out` after a block barrier (every thread
/// of the block must call it).
#[inline(always)]
fn finish(shared: SharedBins, out: &AtomicView<'_, u32>) {
    barrier::sync_threads();
    shared.merge_into(out);
}

/// The even bin of an integer sample `x` (`lo ≤ x < hi` given as `d = x − lo` and
/// `range = hi − lo`): `⌊d · bins / range⌋`, estimated in `f64` and corrected by
/// one step, exact for `d, range < 2^33` and `bins ≤ MAX_BINS`.
#[inline(always)]
fn int_bin(d: u64, range: u64, bins: u64, scale: f64) -> usize {
    let num = d * bins;
    let mut b = (d as f64 * scale) as u64;
    if b * range > num {
        b -= 1;
    } else if (b + 1) * range <= num {
        b += 1;
    }
    core::cmp::min(b, bins - 1) as usize
}

/// Counts samples into even bins over `[lo, hi)`, `scale` being `bins / (hi − lo)`
/// as the host computes it for the type (see [`Even::even_bin`]). The kernel of
/// [`even`].
#[xlog_kernel(read(x), atomic(out), block = 256, for T in [f32, u8, u16, u32, i32])]
pub fn histogram_even<T: Even>(x: &[T], lo: T, hi: T, scale: f64, out: &mut [u32]) {
    let bins = out.len();
    let shared = begin(out);
    T::each_sample(x, |v| {
        if let Some(b) = T::even_bin(v, lo, hi, scale, bins) {
            count(&shared, out, b);
        }
    });
    finish(shared, out);
}

/// `out[k] += |{ i : keys[i] == k }|` (negative keys and keys `≥ out.len()`
/// ignored). The kernel of [`counts`].
#[xlog_kernel(
    read(keys), atomic(out), block = 256,
    for K in [u8, u16, u32, i32, u64, i64]
)]
pub fn histogram_counts<K: CountKey>(keys: &[K], out: &mut [u32]) {
    let shared = begin(out);
    K::each_sample(keys, |k| {
        if let Some(b) = k.bin() {
            count(&shared, out, b);
        }
    });
    finish(shared, out);
}

pub use samples::{CountKey, Even, Sample};

mod samples {
    use super::*;

    /// A histogram's sample type: how a thread visits its samples. Sealed: the
    /// kernels' types are listed in their attributes.
    pub trait Sample: Copy + sealed::Sealed {
        /// Calls `f` on every element of `x` this thread visits in the kernels'
        /// grid-stride loop (16-byte vector loads where the type has them).
        fn each_sample(x: &[Self], f: impl FnMut(Self));
    }

    /// A key type of [`counts`](super::counts).
    pub trait CountKey: Sample {
        /// The bin of key `self`: `None` for a negative key.
        fn bin(self) -> Option<usize>;
    }

    /// A sample type of even bins.
    pub trait Even: Sample {
        /// The even bin of `v` among `bins` over `[lo, hi)`, `None` outside it.
        /// `scale` is `bins / (hi − lo)`: for integers in `f64`, an estimate an
        /// exact correction follows; for `f32` an `f32` value,
        /// `bins / (hi/2 − lo/2)` (halved bounds keep every difference finite),
        /// widened losslessly to pass it.
        fn even_bin(v: Self, lo: Self, hi: Self, scale: f64, bins: usize) -> Option<usize>;
    }

    mod sealed {
        pub trait Sealed {}
    }

    /// Visits one element at a time: a grid-stride loop.
    #[inline(always)]
    fn each_one<T: Copy>(x: &[T], mut f: impl FnMut(T)) {
        for i in thread::grid_stride(x.len()) {
            f(x[i.get()]);
        }
    }

    // How each type is visited: 16-byte vectors for 32- and 64-bit types.
    macro_rules! sample {
        ($($t:ty: |$x:ident, $f:ident| $each:expr;)*) => {$(
            impl sealed::Sealed for $t {}
            impl Sample for $t {
                #[inline(always)]
                fn each_sample($x: &[Self], $f: impl FnMut(Self)) {
                    $each
                }
            }
        )*};
    }
    sample! {
        u8: |x, f| each_one(x, f);
        u16: |x, f| each_one(x, f);
        u32: |x, f| each_sample::<u32, 4>(x, f);
        i32: |x, f| each_sample::<i32, 4>(x, f);
        u64: |x, f| each_sample::<u64, 2>(x, f);
        i64: |x, f| each_sample::<i64, 2>(x, f);
        f32: |x, f| each_sample::<f32, 4>(x, f);
    }

    // A key is its own bin, if it fits one.
    macro_rules! count_key {
        ($($t:ty),*) => {$(
            impl CountKey for $t {
                #[inline(always)]
                fn bin(self) -> Option<usize> {
                    usize::try_from(self).ok()
                }
            }
        )*};
    }
    count_key!(u8, u16, u32, i32, u64, i64);

    impl Even for f32 {
        #[inline(always)]
        fn even_bin(v: f32, lo: f32, hi: f32, scale: f64, bins: usize) -> Option<usize> {
            if !(v >= lo && v < hi) {
                return None;
            }
            // `x/2 − lo/2` in one `fma` (one rounding), as many instructions per
            // sample as `(x − lo) · scale`.
            let offset = xlog::device::math::fma(v, 0.5, -(lo * 0.5));
            Some(core::cmp::min((offset * scale as f32) as usize, bins - 1))
        }
    }

    // Integer samples: the exact bin of the difference from `lo` (below 2^33).
    macro_rules! even_int {
        ($($t:ty),*) => {$(
            impl Even for $t {
                #[inline(always)]
                fn even_bin(v: $t, lo: $t, hi: $t, scale: f64, bins: usize) -> Option<usize> {
                    if !(v >= lo && v < hi) {
                        return None;
                    }
                    let d = (v as i64 - lo as i64) as u64;
                    let range = (hi as i64 - lo as i64) as u64;
                    Some(int_bin(d, range, bins as u64, scale))
                }
            }
        )*};
    }
    even_int!(u8, u16, u32, i32);
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        DeviceBuffer, Error, GraphArena, GraphRecorder, LaunchConfig, ReadBuffer, Result, Stream,
    };

    use crate::exec::{Exec, Now, Record};

    use super::{BLOCK, MAX_BINS, SHARED_BINS};

    mod sealed {
        pub trait Sealed {}
    }

    /// Sample types of [`even`]: `f32`, `u8`, `u16`, `u32`, `i32`, the types its
    /// kernel ([`histogram_even`](super::histogram_even)) is compiled for.
    pub trait EvenSample:
        super::HistogramEvenType + PartialOrd + core::fmt::Debug + sealed::Sealed
    {
        /// The kernel's `scale` for `bins` over `[lo, hi)`.
        #[doc(hidden)]
        fn __scale(lo: Self, hi: Self, bins: usize) -> f64;

        /// Why `[lo, hi)` (with `lo < hi`) cannot be split into `bins` even bins,
        /// if it cannot.
        #[doc(hidden)]
        fn __refuse_range(_lo: Self, _hi: Self, _bins: usize) -> Option<String> {
            None
        }
    }

    /// Key types of [`counts`]: `u8`, `u16`, `u32`, `i32`, `u64`, `i64`, the types
    /// its kernel ([`histogram_counts`](super::histogram_counts)) is compiled for.
    pub trait Key: super::HistogramCountsType {}
    impl<K: super::HistogramCountsType> Key for K {}

    impl sealed::Sealed for f32 {}
    impl EvenSample for f32 {
        fn __scale(lo: f32, hi: f32, bins: usize) -> f64 {
            // An `f32` value: the kernel narrows it back exactly.
            f64::from(f32_scale(lo, hi, bins))
        }

        fn __refuse_range(lo: f32, hi: f32, bins: usize) -> Option<String> {
            if !lo.is_finite() || !hi.is_finite() {
                return Some(format!(
                    "the range [{lo:?}, {hi:?}) is not finite; pass finite bounds (samples \
                     outside them are ignored)"
                ));
            }
            if !f32_scale(lo, hi, bins).is_finite() {
                return Some(format!(
                    "{bins} bins over [{lo:?}, {hi:?}) would be narrower than the smallest \
                     normal f32; widen the range or use fewer bins"
                ));
            }
            None
        }
    }

    /// The `f32` kernel's `scale`: `bins / (hi/2 − lo/2)`. Halving both bounds
    /// keeps the width finite for every finite `lo` and `hi` (`f32::MAX − f32::MIN`
    /// is infinite); for normal numbers halving is exact, so the bins are those of
    /// `bins / (hi − lo)`.
    fn f32_scale(lo: f32, hi: f32, bins: usize) -> f32 {
        bins as f32 / (hi * 0.5 - lo * 0.5)
    }

    // The integer kernels' `scale`: `bins / (hi − lo)`, for the estimate.
    macro_rules! even_int {
        ($($t:ty),*) => {$(
            impl sealed::Sealed for $t {}
            impl EvenSample for $t {
                fn __scale(lo: $t, hi: $t, bins: usize) -> f64 {
                    bins as f64 / (hi as f64 - lo as f64)
                }
            }
        )*};
    }
    even_int!(u8, u16, u32, i32);

    kernel_calls! {
        /// The even-bins kernel.
        trait EvenCalls<T: EvenSample> {
            fn even = super::histogram_even(
                x: r T, lo: v T, hi: v T, scale: v f64, out: w u32
            );
        }
    }

    kernel_calls! {
        /// The counting kernel.
        trait CountCalls<K: Key> {
            fn counts = super::histogram_counts(keys: r K, out: w u32);
        }
    }

    fn invalid(what: &str, reason: String) -> Error {
        Error::InvalidArgument {
            what: format!("xlog_kernels::histogram::{what}"),
            reason,
        }
    }

    fn check_sizes(what: &str, n: usize, bins: usize) -> Result<()> {
        if bins == 0 || bins > MAX_BINS {
            return Err(invalid(
                what,
                format!("{bins} bins; pass from 1 to {MAX_BINS} bins"),
            ));
        }
        if n > u32::MAX as usize {
            return Err(invalid(
                what,
                format!(
                    "{n} samples could overflow a u32 count; histogram slices of at most {} and add the counts",
                    u32::MAX
                ),
            ));
        }
        Ok(())
    }

    /// The launch: blocks enough for about 16 samples per thread (at least one
    /// block, at most 2048; fewer with many bins, so merging stays small against the
    /// input), and the shared bins as dynamic shared memory.
    fn config(n: usize, bins: usize) -> LaunchConfig {
        let per_block = BLOCK as usize * 16;
        let cap = (n / bins.max(1)).clamp(64, 2048);
        let blocks = n.div_ceil(per_block).clamp(1, cap);
        let shared = bins.min(SHARED_BINS) * 4;
        LaunchConfig::new([blocks as u32, 1, 1], [BLOCK, 1, 1]).with_shared_bytes(shared as u32)
    }

    /// The histogram of `x` over `bins` even bins of `[lo, hi)`, as a new buffer of
    /// `bins` `u32` counts. Samples outside `[lo, hi)` and NaNs are ignored; for
    /// `f32` a sample within rounding of a bin edge may land on either side
    /// ([module docs](super)). `O(n)`, one launch, no temporary device memory.
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[0.5f32, 1.5, 1.7, 9.0, -1.0])?;
    /// let h = xlog_kernels::histogram::even(&s, &x, 0.0, 4.0, 4)?;
    /// assert_eq!(h.download(&s)?, [1, 2, 0, 0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument` (nothing allocated or launched) when `bins` is 0 or more
    /// than [`MAX_BINS`](super::MAX_BINS), when `lo < hi` does not hold (a NaN
    /// bound included), when an `f32` bound is infinite or the `f32` bins would be
    /// narrower than the smallest normal `f32`, or when `x` has more than
    /// `u32::MAX` elements; a budget
    /// refusal of the output (`BudgetExceeded`, nothing launched); a launch error.
    pub fn even<T: EvenSample>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        lo: T,
        hi: T,
        bins: usize,
    ) -> Result<DeviceBuffer<u32>> {
        let mut e = Now(s);
        let x = e.input(x);
        even_on(&mut e, x, lo, hi, bins)
    }

    /// [`even`] through `e`.
    fn even_on<E: EvenCalls<T>, T: EvenSample>(
        e: &mut E,
        x: E::In<'_, T>,
        lo: T,
        hi: T,
        bins: usize,
    ) -> Result<E::Buf<u32>> {
        check_even(E::len(&x), lo, hi, bins)?;
        let scale = T::__scale(lo, hi, bins);
        histogram_on(e, x, bins, |e, cfg, x, out| {
            e.even(cfg, x, lo, hi, scale, out)
        })
    }

    /// [`even`]'s checks of its arguments.
    fn check_even<T: EvenSample>(n: usize, lo: T, hi: T, bins: usize) -> Result<()> {
        check_sizes("even", n, bins)?;
        if lo.partial_cmp(&hi) != Some(core::cmp::Ordering::Less) {
            return Err(invalid(
                "even",
                format!("the range [{lo:?}, {hi:?}) is empty; pass lo < hi"),
            ));
        }
        if let Some(reason) = T::__refuse_range(lo, hi, bins) {
            return Err(invalid("even", reason));
        }
        Ok(())
    }

    /// A histogram of `x` into `bins` counts through `e`: the counts zeroed (at
    /// every replay of a graph), then `launch` adds into them.
    fn histogram_on<E: Exec, T: xlog::DeviceCopy>(
        e: &mut E,
        x: E::In<'_, T>,
        bins: usize,
        launch: impl FnOnce(&mut E, LaunchConfig, E::In<'_, T>, &mut E::Buf<u32>) -> Result<()>,
    ) -> Result<E::Buf<u32>> {
        let n = E::len(&x);
        let mut out = e.filled::<u32>(bins, 0)?;
        if n > 0 {
            launch(e, config(n, bins), x, &mut out)?;
        }
        Ok(out)
    }

    /// [`even`] recorded into a graph: a fill node zeroing the counts, then the
    /// kernel node, so every replay counts `x` afresh. The counts are allocated
    /// now on the recorder's stream and kept in `arena`, which outlives the graph.
    ///
    /// # Errors
    ///
    /// As [`even`], and those of recording.
    pub fn record_even<'g, T: EvenSample>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
        lo: T,
        hi: T,
        bins: usize,
    ) -> Result<&'g DeviceBuffer<u32>> {
        let mut e = Record::new(rec, arena);
        let x = e.input(x);
        even_on(&mut e, x, lo, hi, bins)
    }

    /// How many times each key `0..bins` occurs in `keys`, as a new buffer of `bins`
    /// `u32` counts (`torch.bincount` with `minlength = bins`). Keys `≥ bins` and
    /// negative keys are ignored. `O(n)`, one launch, no temporary device memory
    /// ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let keys = rt.upload_on(&s, &[3u8, 1, 3, 200])?;
    /// let h = xlog_kernels::histogram::counts(&s, &keys, 4)?;
    /// assert_eq!(h.download(&s)?, [0, 1, 0, 2]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`even`], without the range check.
    pub fn counts<K: Key>(
        s: &Stream,
        keys: &(impl ReadBuffer<K> + ?Sized),
        bins: usize,
    ) -> Result<DeviceBuffer<u32>> {
        let mut e = Now(s);
        let keys = e.input(keys);
        counts_on(&mut e, keys, bins)
    }

    /// [`counts`] through `e`.
    fn counts_on<E: CountCalls<K>, K: Key>(
        e: &mut E,
        keys: E::In<'_, K>,
        bins: usize,
    ) -> Result<E::Buf<u32>> {
        check_sizes("counts", E::len(&keys), bins)?;
        histogram_on(e, keys, bins, |e, cfg, x, out| e.counts(cfg, x, out))
    }

    /// [`counts`] recorded into a graph, as [`record_even`] records [`even`].
    ///
    /// # Errors
    ///
    /// As [`counts`], and those of recording.
    pub fn record_counts<'g, K: Key>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        keys: &'g impl ReadBuffer<K>,
        bins: usize,
    ) -> Result<&'g DeviceBuffer<u32>> {
        let mut e = Record::new(rec, arena);
        let keys = e.input(keys);
        counts_on(&mut e, keys, bins)
    }
}
