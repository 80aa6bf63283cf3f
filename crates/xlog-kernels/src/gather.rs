//! Gather and scatter by index, with out-of-range indices checked on the device and
//! reported as an error naming the first bad one.
//!
//! - [`gather`]: `out[i] = x[idx[i]]`, a new buffer as long as `idx`.
//! - [`scatter`]: `out[idx[i]] = x[i]` into a buffer you pass.
//!
//! Element types `u8`, `u16`, `u32`, `i32`, `f32`, `u64`, `i64`, `f64`; index types
//! `u32` and `u64`. Each kernel is generic over both, one entry point per pair
//! (`gather_indexed__u8__u32`).
//!
//! # Algorithm and cost
//!
//! One launch, one thread per element (a grid-stride loop): `O(n)` work, each index
//! read once and each element moved once, in random order on the indexed side (the
//! speed of random 1- to 8-byte accesses, not of a copy). Every index is compared
//! with the indexed buffer's length on the device; a thread that finds one out of
//! range leaves its element alone (a gather writes 0 there) and records its
//! position with an atomic minimum in an 8-byte error word. The host function then
//! reads the word back, which waits for the stream: these calls synchronise.
//!
//! | | |
//! | --- | --- |
//! | temporary memory | one `u64` (the error word), from the stream's runtime |
//! | duplicates | a gather may repeat indices freely; a scatter with repeated indices leaves one of the colliding elements (which is unspecified), each write atomic, never torn |
//! | errors | `InvalidArgument` naming the first (lowest) position with a bad index, its value and the bound; the valid elements are written even then |

use xlog::device::atomic::AtomicStore;
use xlog::prelude::*;

/// `out[i] = x[idx[i]]`: `out[i] = 0` and `bad[0] = min(bad[0], i)` where `idx[i]`
/// is out of range. The kernel of [`gather`].
#[xlog_kernel(
    read(x, idx), write(out), atomic(bad),
    for T in [u8, u16, u32, i32, f32, u64, i64, f64], for I in [u32, u64]
)]
pub fn gather_indexed<T: Default, I: Into<u64>>(
    x: &[T],
    idx: &[I],
    out: &mut [T],
    bad: &mut [u64],
) {
    for i in thread::grid_stride(out.len()) {
        let j = idx.get(i.get()).map_or(usize::MAX, |&j| j.into() as usize);
        out[i] = match x.get(j) {
            Some(&v) => v,
            None => {
                bad.fetch_min(0, i.get() as u64);
                T::default()
            }
        };
    }
}

/// `out[idx[i]] = x[i]` (atomic stores): `bad[0] = min(bad[0], i)` where `idx[i]`
/// is out of range. The kernel of [`scatter`].
#[xlog_kernel(
    read(x, idx), atomic(out, bad),
    for T in [u8, u16, u32, i32, f32, u64, i64, f64], for I in [u32, u64]
)]
pub fn scatter_indexed<T: AtomicStore, I: Into<u64>>(
    x: &[T],
    idx: &[I],
    out: &mut [T],
    bad: &mut [u64],
) {
    for i in thread::grid_stride(x.len()) {
        let j = idx.get(i.get()).map_or(usize::MAX, |&j| j.into() as usize);
        if j < out.len() {
            out.store(j, x[i]);
        } else {
            bad.fetch_min(0, i.get() as u64);
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, BufferView, DeviceBuffer, Error, GraphArena, GraphRecorder, ReadBuffer, Result,
        Stream, WriteBuffer,
    };

    use crate::exec::{Now, Record};

    /// Index types: `u32` and `u64`.
    pub trait Index: xlog::DeviceCopy + Into<u64> + std::fmt::Display {}
    impl Index for u32 {}
    impl Index for u64 {}

    /// Element types gathered and scattered by index type `I`: `u8`, `u16`, `u32`,
    /// `i32`, `f32`, `u64`, `i64`, `f64`, the types both kernels are compiled for
    /// ([`gather_indexed`](super::gather_indexed),
    /// [`scatter_indexed`](super::scatter_indexed)). Implemented for exactly those:
    /// [`gather`] returns an output it allocated uninitialised, which only its own
    /// kernels are trusted to write in full.
    ///
    /// ```compile_fail,E0119
    /// #[derive(Clone, Copy, xlog::DeviceCopy)]
    /// #[repr(C)]
    /// struct Flag(u32);
    /// impl xlog_kernels::gather::Indexed<u32> for Flag {}
    /// ```
    pub trait Indexed<I: Index>:
        xlog::DeviceCopy + super::GatherIndexedType<I> + super::ScatterIndexedType<I>
    {
    }

    impl<T, I: Index> Indexed<I> for T where
        T: super::GatherIndexedType<I> + super::ScatterIndexedType<I>
    {
    }

    use crate::per_element as config;

    kernel_calls! {
        /// The gather and scatter kernels.
        trait Calls<T: Indexed<I>, I: Index> {
            fn gather = super::gather_indexed(x: r T, idx: r I, out: w T, bad: w u64);
            fn scatter = super::scatter_indexed(x: r T, idx: r I, out: o T, bad: w u64);
        }
    }

    /// `out[i] = x[idx[i]]` through `e`: the output and the error word (`u64::MAX`
    /// at the start of every run, the first bad position after it).
    fn gather_on<E: Calls<T, I>, T: Indexed<I>, I: Index>(
        e: &mut E,
        x: E::In<'_, T>,
        idx: E::In<'_, I>,
    ) -> Result<(E::Buf<T>, E::Buf<u64>)> {
        let n = E::len(&idx);
        // SAFETY: the kernel writes every element of `out` (one grid-stride pass
        // over its length) before anything reads it.
        let mut out = unsafe { e.alloc_uninit::<T>(n, AllocTag("gather output")) }?;
        let mut bad = e.filled(1, u64::MAX)?;
        if n > 0 {
            e.gather(config(n), x, idx, &mut out, &mut bad)?;
        }
        Ok((out, bad))
    }

    /// `out[idx[i]] = x[i]` through `e`, after checking the lengths: the error word,
    /// as [`gather_on`]'s.
    fn scatter_on<E: Calls<T, I>, T: Indexed<I>, I: Index>(
        e: &mut E,
        x: E::In<'_, T>,
        idx: E::In<'_, I>,
        out: &mut E::Out<'_, T>,
    ) -> Result<E::Buf<u64>> {
        let n = E::len(&x);
        if n != E::len(&idx) {
            return Err(Error::InvalidArgument {
                what: "xlog_kernels::gather::scatter".to_owned(),
                reason: format!(
                    "{n} values but {} indices; pass one index per value",
                    E::len(&idx)
                ),
            });
        }
        let mut bad = e.filled(1, u64::MAX)?;
        if n > 0 {
            e.scatter(config(n), x, idx, out, &mut bad)?;
        }
        Ok(bad)
    }

    /// Reads the error word back (synchronising `s`) and turns a recorded position
    /// into an error naming it, its index and the bound.
    fn check<I: Index>(
        s: &Stream,
        what: &str,
        bad: &DeviceBuffer<u64>,
        idx: &BufferView<'_, I>,
        bound: usize,
    ) -> Result<()> {
        let first = bad.download(s)?[0];
        if first == u64::MAX {
            return Ok(());
        }
        let at = first as usize;
        let value = idx.slice(at..at + 1).download(s)?[0];
        Err(Error::InvalidArgument {
            what: format!("xlog_kernels::gather::{what}"),
            reason: format!(
                "index {value} at position {at} is out of range for {bound} elements (the first bad index; check the indices)"
            ),
        })
    }

    /// `out[i] = x[idx[i]]`: a new buffer as long as `idx`. `O(n)` random reads of
    /// `x`, one launch; every index is checked on the device ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let x = rt.upload_on(&s, &[10.0f32, 20.0, 30.0])?;
    /// let idx = rt.upload_on(&s, &[2u32, 0, 2])?;
    /// assert_eq!(xlog_kernels::gather::gather(&s, &x, &idx)?.download(&s)?, [30.0, 10.0, 30.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when an index is `≥ x.len()`, naming the first position
    /// holding one (the output is dropped); a budget refusal or a launch error.
    /// Synchronises `s` to read the device's verdict.
    pub fn gather<T: Indexed<I>, I: Index>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        idx: &(impl ReadBuffer<I> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (x, idx) = (e.input(x), e.input(idx));
        let (out, bad) = gather_on(&mut e, x, idx)?;
        if !idx.is_empty() {
            check(s, "gather", &bad, &idx, x.len())?;
        }
        Ok(out)
    }

    /// `out[idx[i]] = x[i]` for every `i` (`x` and `idx` of equal length); the
    /// elements of `out` no index names keep their values. `O(n)` random writes,
    /// one launch, every index checked on the device ([module docs](super)).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `x` and `idx` differ in length (nothing launched) or
    /// an index is `≥ out.len()`, naming the first position holding one (the
    /// elements with valid indices are written); a budget refusal or a launch
    /// error. Synchronises `s` to read the device's verdict.
    pub fn scatter<T: Indexed<I>, I: Index>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        idx: &(impl ReadBuffer<I> + ?Sized),
        out: &mut (impl WriteBuffer<T> + ?Sized),
    ) -> Result<()> {
        let mut e = Now(s);
        let (x, idx, mut out) = (e.input(x), e.input(idx), e.output(out));
        let bad = scatter_on(&mut e, x, idx, &mut out)?;
        if x.is_empty() {
            return Ok(());
        }
        check(s, "scatter", &bad, &idx, out.len())
    }

    /// A gather recorded into a graph: its output, and the device's verdict on the
    /// indices, which a graph cannot turn into an error (that needs a read-back).
    #[derive(Clone, Copy, Debug)]
    pub struct RecordedGather<'g, T: xlog::DeviceCopy> {
        /// `x[idx[i]]`, or `T::default()` where the index is out of range.
        pub out: &'g DeviceBuffer<T>,
        /// One word: `u64::MAX` when every index of the last replay was in range,
        /// else the first position holding a bad one. Download it to check.
        pub first_bad: &'g DeviceBuffer<u64>,
    }

    /// [`gather`] recorded into a graph: a fill node resetting the error word, then
    /// the kernel node. The output and the error word are allocated now on the
    /// recorder's stream and kept in `arena`, which outlives the graph. Out-of-range
    /// indices are reported in [`RecordedGather::first_bad`], not as an error.
    ///
    /// # Errors
    ///
    /// A budget refusal or an error of recording.
    pub fn record_gather<'g, T: Indexed<I>, I: Index>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
        idx: &'g impl ReadBuffer<I>,
    ) -> Result<RecordedGather<'g, T>> {
        let mut e = Record::new(rec, arena);
        let (x, idx) = (e.input(x), e.input(idx));
        let (out, first_bad) = gather_on(&mut e, x, idx)?;
        Ok(RecordedGather { out, first_bad })
    }

    /// [`scatter`] recorded into a graph, as [`record_gather`]: returns the error
    /// word (`u64::MAX` when every index of the last replay was in range, else the
    /// first position holding a bad one).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `x` and `idx` differ in length (nothing recorded); a
    /// budget refusal or an error of recording.
    pub fn record_scatter<'g, T: Indexed<I>, I: Index>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        x: &'g impl ReadBuffer<T>,
        idx: &'g impl ReadBuffer<I>,
        out: &'g impl WriteBuffer<T>,
    ) -> Result<&'g DeviceBuffer<u64>> {
        let mut e = Record::new(rec, arena);
        let (x, idx, mut out) = (e.input(x), e.input(idx), e.output(out));
        scatter_on(&mut e, x, idx, &mut out)
    }
}
