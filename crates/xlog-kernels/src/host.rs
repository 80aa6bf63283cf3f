//! Host APIs: validate lengths, allocate outputs from the stream's runtime, launch.

use xlog::{
    AllocTag, BufferView, BufferViewMut, DeviceBuffer, Error, LaunchConfig, ReadBuffer, Result,
    Stream, WriteBuffer,
};

use crate::elementwise;

mod sealed {
    pub trait Sealed {}
}

/// The binary operations of the elementwise kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `x + y` (wrapping for integers).
    Add,
    /// `x - y` (wrapping for integers).
    Sub,
    /// `x * y` (wrapping for integers).
    Mul,
    /// `min(x, y)`.
    Min,
    /// `max(x, y)`.
    Max,
}

/// Element types the elementwise kernels are compiled for: `f32`, `f64`, `i32`,
/// `u32`, `u64` (each kernel of [`elementwise`](crate::elementwise) lists them).
pub trait Element:
    xlog::DeviceCopy
    + sealed::Sealed
    + elementwise::FillType
    + elementwise::CopyType
    + elementwise::CastF32Type
    + elementwise::CastF64Type
    + elementwise::ScaleType
    + elementwise::AxpyType
    + elementwise::AddType
    + elementwise::SubType
    + elementwise::MulType
    + elementwise::MinType
    + elementwise::MaxType
{
    /// `y = a * x + y` by the vectorised kernel of this width: [`axpy_vec`]
    /// (4 lanes) for 32-bit types, [`axpy_vec2`] (2 lanes) for 64-bit ones.
    ///
    /// [`axpy_vec`]: crate::elementwise::axpy_vec
    /// [`axpy_vec2`]: crate::elementwise::axpy_vec2
    #[doc(hidden)]
    fn __axpy_vec(
        s: &Stream,
        a: Self,
        x: &BufferView<'_, Self>,
        y: &mut BufferViewMut<'_, Self>,
    ) -> Result<()>;
}

macro_rules! element {
    ($kernel:ident, $lanes:literal: $($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            fn __axpy_vec(
                s: &Stream,
                a: Self,
                x: &BufferView<'_, Self>,
                y: &mut BufferViewMut<'_, Self>,
            ) -> Result<()> {
                // One thread per chunk.
                elementwise::$kernel::launch(s, cfg(x.len().div_ceil($lanes)), a, x, y)
            }
        }
    )*};
}

element!(axpy_vec, 4: f32, i32, u32);
element!(axpy_vec2, 2: f64, u64);

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_len(n)
}

fn same_len(what: &str, a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what: what.to_owned(),
            reason: format!("inputs have {a} and {b} elements; pass views of equal length"),
        })
    }
}

/// An output of `len` elements on `s`'s runtime, to be fully written by `write`.
fn output<U: xlog::DeviceCopy>(
    s: &Stream,
    len: usize,
    tag: &'static str,
    write: impl FnOnce(&mut BufferViewMut<'_, U>) -> Result<()>,
) -> Result<DeviceBuffer<U>> {
    let rt = s.runtime()?;
    // SAFETY: `write` launches a kernel that writes every element (one thread per
    // element) before anything else can read the buffer: later uses are fenced on
    // that launch. For `len == 0` there is nothing to read.
    let mut out = unsafe { rt.alloc_uninit::<U>(s, len, AllocTag(tag)) }?;
    if len > 0 {
        write(&mut out.as_view_mut())?;
    }
    Ok(out)
}

/// A new buffer of `len` copies of `value`.
pub fn fill<T: Element>(s: &Stream, len: usize, value: T) -> Result<DeviceBuffer<T>> {
    output(s, len, "xlog-kernels::fill", |o| {
        elementwise::fill::launch(s, cfg(len), o, value)
    })
}

/// A copy of `x`.
pub fn copy<T: Element>(s: &Stream, x: &(impl ReadBuffer<T> + ?Sized)) -> Result<DeviceBuffer<T>> {
    let x = x.as_view();
    output(s, x.len(), "xlog-kernels::copy", |o| {
        elementwise::copy::launch(s, cfg(x.len()), &x, o)
    })
}

/// `x` converted to `f32` with `as`.
pub fn cast_f32<T: Element>(
    s: &Stream,
    x: &(impl ReadBuffer<T> + ?Sized),
) -> Result<DeviceBuffer<f32>> {
    let x = x.as_view();
    output(s, x.len(), "xlog-kernels::cast", |o| {
        elementwise::cast_f32::launch(s, cfg(x.len()), &x, o)
    })
}

/// `x` converted to `f64` with `as`.
pub fn cast_f64<T: Element>(
    s: &Stream,
    x: &(impl ReadBuffer<T> + ?Sized),
) -> Result<DeviceBuffer<f64>> {
    let x = x.as_view();
    output(s, x.len(), "xlog-kernels::cast", |o| {
        elementwise::cast_f64::launch(s, cfg(x.len()), &x, o)
    })
}

/// `a * x` (wrapping for integers).
pub fn scale<T: Element>(
    s: &Stream,
    x: &(impl ReadBuffer<T> + ?Sized),
    a: T,
) -> Result<DeviceBuffer<T>> {
    let x = x.as_view();
    output(s, x.len(), "xlog-kernels::scale", |o| {
        elementwise::scale::launch(s, cfg(x.len()), &x, o, a)
    })
}

/// `y = a * x + y` in place (wrapping for integers).
pub fn axpy<T: Element>(
    s: &Stream,
    a: T,
    x: &(impl ReadBuffer<T> + ?Sized),
    y: &mut (impl WriteBuffer<T> + ?Sized),
) -> Result<()> {
    let (x, mut y) = (x.as_view(), y.as_view_mut());
    same_len("xlog_kernels::axpy", x.len(), y.len())?;
    if x.is_empty() {
        return Ok(());
    }
    T::__axpy_vec(s, a, &x, &mut y)
}

/// `op(x, y)` elementwise into a new buffer.
pub fn binary<T: Element>(
    s: &Stream,
    op: Binary,
    x: &(impl ReadBuffer<T> + ?Sized),
    y: &(impl ReadBuffer<T> + ?Sized),
) -> Result<DeviceBuffer<T>> {
    let (x, y) = (x.as_view(), y.as_view());
    same_len("xlog_kernels::binary", x.len(), y.len())?;
    output(s, x.len(), "xlog-kernels::binary", |o| {
        let c = cfg(x.len());
        match op {
            Binary::Add => elementwise::add::launch(s, c, &x, &y, o),
            Binary::Sub => elementwise::sub::launch(s, c, &x, &y, o),
            Binary::Mul => elementwise::mul::launch(s, c, &x, &y, o),
            Binary::Min => elementwise::min::launch(s, c, &x, &y, o),
            Binary::Max => elementwise::max::launch(s, c, &x, &y, o),
        }
    })
}

macro_rules! binary_fn {
    ($($name:ident => $op:ident, $doc:literal;)*) => {$(
        #[doc = $doc]
        pub fn $name<T: Element>(
            s: &Stream,
            x: &(impl ReadBuffer<T> + ?Sized),
            y: &(impl ReadBuffer<T> + ?Sized),
        ) -> Result<DeviceBuffer<T>> {
            binary(s, Binary::$op, x, y)
        }
    )*};
}

binary_fn! {
    add => Add, "`x + y` elementwise (wrapping for integers).";
    sub => Sub, "`x - y` elementwise (wrapping for integers).";
    mul => Mul, "`x * y` elementwise (wrapping for integers).";
    min => Min, "`min(x, y)` elementwise.";
    max => Max, "`max(x, y)` elementwise.";
}
