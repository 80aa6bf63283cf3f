//! Gather and scatter by index, with out-of-range indices checked on the device and
//! reported as an error naming the first bad one.
//!
//! - [`gather`]: `out[i] = x[idx[i]]`, a new buffer as long as `idx`.
//! - [`scatter`]: `out[idx[i]] = x[i]` into a buffer you pass.
//!
//! Element types `u32`, `i32`, `f32`, `u64`, `i64`, `f64`; index types `u32` and
//! `u64`.
//!
//! # Algorithm and cost
//!
//! One launch, one thread per element (a grid-stride loop): `O(n)` work, each index
//! read once and each element moved once, in random order on the indexed side (the
//! speed of random 4- or 8-byte accesses, not of a copy). Every index is compared
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

use xlog::prelude::*;

macro_rules! kernels {
    ($($t:ty, $i:ty, $gather:ident, $scatter:ident;)*) => {$(
        #[doc = concat!("`out[i] = x[idx[i]]` for `", stringify!($t), "` by `", stringify!($i), "` indices: `out[i] = 0` and `bad[0] = min(bad[0], i)` where `idx[i]` is out of range. The kernel of [`gather`].")]
        #[xlog_kernel(read(x, idx), write(out), atomic(bad))]
        pub fn $gather(x: &[$t], idx: &[$i], out: &mut [$t], bad: &mut [u64]) {
            for i in thread::grid_stride(out.len()) {
                let j = idx.get(i.get()).map_or(usize::MAX, |&j| j as usize);
                out[i] = match x.get(j) {
                    Some(&v) => v,
                    None => {
                        bad.fetch_min(0, i.get() as u64);
                        0 as $t
                    }
                };
            }
        }

        #[doc = concat!("`out[idx[i]] = x[i]` for `", stringify!($t), "` by `", stringify!($i), "` indices (atomic stores): `bad[0] = min(bad[0], i)` where `idx[i]` is out of range. The kernel of [`scatter`].")]
        #[xlog_kernel(read(x, idx), atomic(out, bad))]
        pub fn $scatter(x: &[$t], idx: &[$i], out: &mut [$t], bad: &mut [u64]) {
            for i in thread::grid_stride(x.len()) {
                let j = idx.get(i.get()).map_or(usize::MAX, |&j| j as usize);
                if j < out.len() {
                    out.store(j, x[i]);
                } else {
                    bad.fetch_min(0, i.get() as u64);
                }
            }
        }
    )*};
}

/// Feeds the table of (element type, index type, gather kernel, scatter kernel)
/// to `$m`: the kernels and their host impls are made from the one list.
macro_rules! each_pair {
    ($m:ident) => {
        $m! {
            u32, u32, gather_u32_by_u32, scatter_u32_by_u32;
            i32, u32, gather_i32_by_u32, scatter_i32_by_u32;
            f32, u32, gather_f32_by_u32, scatter_f32_by_u32;
            u64, u32, gather_u64_by_u32, scatter_u64_by_u32;
            i64, u32, gather_i64_by_u32, scatter_i64_by_u32;
            f64, u32, gather_f64_by_u32, scatter_f64_by_u32;
            u32, u64, gather_u32_by_u64, scatter_u32_by_u64;
            i32, u64, gather_i32_by_u64, scatter_i32_by_u64;
            f32, u64, gather_f32_by_u64, scatter_f32_by_u64;
            u64, u64, gather_u64_by_u64, scatter_u64_by_u64;
            i64, u64, gather_i64_by_u64, scatter_i64_by_u64;
            f64, u64, gather_f64_by_u64, scatter_f64_by_u64;
        }
    };
}

each_pair!(kernels);

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, BufferView, BufferViewMut, DeviceBuffer, Error, LaunchConfig, ReadBuffer, Result,
        Stream, WriteBuffer,
    };

    /// Index types: `u32` and `u64`.
    pub trait Index: xlog::DeviceCopy + Into<u64> + std::fmt::Display {}
    impl Index for u32 {}
    impl Index for u64 {}

    mod sealed {
        pub trait Indexed<I> {}
    }

    /// Element types gathered and scattered by index type `I`: the library's
    /// numbers, each pair with its own kernels. Sealed: [`gather`] returns an
    /// output it allocated uninitialised, which only its own kernels are trusted
    /// to write in full.
    ///
    /// ```compile_fail,E0277
    /// use xlog::{BufferView, BufferViewMut, DeviceBuffer, LaunchConfig, Result, Stream};
    /// #[derive(Clone, Copy, xlog::DeviceCopy)]
    /// #[repr(C)]
    /// struct Flag(bool);
    /// impl xlog_kernels::gather::Indexed<u32> for Flag {
    ///     fn __gather(_: &Stream, _: LaunchConfig, _: &BufferView<'_, Self>, _: &BufferView<'_, u32>,
    ///                 _: &mut DeviceBuffer<Self>, _: &mut DeviceBuffer<u64>) -> Result<()> { Ok(()) }
    ///     fn __scatter(_: &Stream, _: LaunchConfig, _: &BufferView<'_, Self>, _: &BufferView<'_, u32>,
    ///                  _: &mut BufferViewMut<'_, Self>, _: &mut DeviceBuffer<u64>) -> Result<()> { Ok(()) }
    /// }
    /// ```
    pub trait Indexed<I: Index>: xlog::DeviceCopy + sealed::Indexed<I> {
        #[doc(hidden)]
        fn __gather(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, Self>,
            idx: &BufferView<'_, I>,
            out: &mut DeviceBuffer<Self>,
            bad: &mut DeviceBuffer<u64>,
        ) -> Result<()>;
        #[doc(hidden)]
        fn __scatter(
            s: &Stream,
            cfg: LaunchConfig,
            x: &BufferView<'_, Self>,
            idx: &BufferView<'_, I>,
            out: &mut BufferViewMut<'_, Self>,
            bad: &mut DeviceBuffer<u64>,
        ) -> Result<()>;
    }

    macro_rules! indexed {
        ($($t:ty, $i:ty, $gather:ident, $scatter:ident;)*) => {$(
            impl sealed::Indexed<$i> for $t {}
            impl Indexed<$i> for $t {
                fn __gather(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, Self>,
                    idx: &BufferView<'_, $i>,
                    out: &mut DeviceBuffer<Self>,
                    bad: &mut DeviceBuffer<u64>,
                ) -> Result<()> {
                    super::$gather::launch(s, cfg, x, idx, out, bad)
                }
                fn __scatter(
                    s: &Stream,
                    cfg: LaunchConfig,
                    x: &BufferView<'_, Self>,
                    idx: &BufferView<'_, $i>,
                    out: &mut BufferViewMut<'_, Self>,
                    bad: &mut DeviceBuffer<u64>,
                ) -> Result<()> {
                    super::$scatter::launch(s, cfg, x, idx, out, bad)
                }
            }
        )*};
    }

    each_pair!(indexed);

    use crate::per_element as config;

    /// A fresh error word: `u64::MAX`, no bad index yet.
    fn error_word(s: &Stream) -> Result<DeviceBuffer<u64>> {
        let rt = s.runtime()?;
        // SAFETY: the fill below writes the one element before anything reads it.
        let mut bad = unsafe { rt.alloc_uninit::<u64>(s, 1, AllocTag("gather error word")) }?;
        bad.fill(s, u64::MAX)?;
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
        let (x, idx) = (x.as_view(), idx.as_view());
        let rt = s.runtime()?;
        // SAFETY: the kernel writes every element of `out` (one grid-stride pass
        // over its length) before anything reads it.
        let mut out = unsafe { rt.alloc_uninit::<T>(s, idx.len(), AllocTag("gather output")) }?;
        if idx.is_empty() {
            return Ok(out);
        }
        let mut bad = error_word(s)?;
        T::__gather(s, config(idx.len()), &x, &idx, &mut out, &mut bad)?;
        check(s, "gather", &bad, &idx, x.len())?;
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
        let (x, idx) = (x.as_view(), idx.as_view());
        if x.len() != idx.len() {
            return Err(Error::InvalidArgument {
                what: "xlog_kernels::gather::scatter".to_owned(),
                reason: format!(
                    "{} values but {} indices; pass one index per value",
                    x.len(),
                    idx.len()
                ),
            });
        }
        if x.is_empty() {
            return Ok(());
        }
        let mut out = out.as_view_mut();
        let mut bad = error_word(s)?;
        T::__scatter(s, config(x.len()), &x, &idx, &mut out, &mut bad)?;
        check(s, "scatter", &bad, &idx, out.len())
    }
}
