//! The elementwise kernels, each generic over the element types `f32`, `f64`,
//! `i32`, `u32` and `u64`: one entry point per type (`add__f32`, `add__u64`), one
//! launcher (`elementwise::add::launch::<f32>`, the type usually inferred from the
//! buffers).
//!
//! [`axpy_vec`] and [`axpy_vec2`] are the vectorised `axpy`: a thread owns a chunk
//! of 16 bytes, four 32-bit or two 64-bit elements, moved with one 128-bit load and
//! store. The chunk length is part of a write view's type, so each width is a
//! kernel of its own.

use xlog::prelude::*;

use ops::Arith;

/// `out[i] = value`.
#[xlog_kernel(write(out), for T in [f32, f64, i32, u32, u64])]
pub fn fill<T>(out: &mut [T], value: T) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(i) {
        *o = value;
    }
}

/// `out[i] = x[i]`.
#[xlog_kernel(read(x), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn copy<T>(x: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i] = x[i.get()];
    }
}

/// `out[i] = x[i] as f32`.
#[xlog_kernel(read(x), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn cast_f32<T: Arith>(x: &[T], out: &mut [f32]) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i] = x[i.get()].to_f32();
    }
}

/// `out[i] = x[i] as f64`.
#[xlog_kernel(read(x), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn cast_f64<T: Arith>(x: &[T], out: &mut [f64]) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i] = x[i.get()].to_f64();
    }
}

/// `out[i] = a * x[i]` (wrapping for integers).
#[xlog_kernel(read(x), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn scale<T: Arith>(x: &[T], out: &mut [T], a: T) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i] = a.mul(x[i.get()]);
    }
}

/// `y[i] = a * x[i] + y[i]` (wrapping for integers).
#[xlog_kernel(read(x), read_write(y), for T in [f32, f64, i32, u32, u64])]
pub fn axpy<T: Arith>(a: T, x: &[T], y: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < y.len() {
        y[i] = a.mul(x[i.get()]).add(y[i]);
    }
}

/// `y[i] = a * x[i] + y[i]` (wrapping for integers) for `i < min(x.len(),
/// y.len())` over 32-bit elements, each thread owning one chunk of `y` (4
/// elements, moved as one vector load and store when the chunk is whole; the short
/// last chunk element by element). Launch one thread per chunk:
/// `LaunchConfig::for_len(y.len().div_ceil(4))`.
#[xlog_kernel(read(x), read_write(y per chunk(4)), for T in [f32, i32, u32])]
pub fn axpy_vec<T: Arith>(a: T, x: &[T], y: &mut [T])
where
    [T; 4]: xlog::device::vector::Vector,
{
    let c = thread::index_1d();
    if let (Some(xv), Some(yv)) = (view::read_chunk::<T, 4>(x, c.get()), y.vector(c)) {
        y.set_vector(c, core::array::from_fn(|k| a.mul(xv[k]).add(yv[k])));
    } else if c < y.chunk_count() {
        let base = c.get() * 4;
        for (k, e) in y.chunk_mut(c).iter_mut().enumerate() {
            if let Some(&xk) = x.get(base + k) {
                *e = a.mul(xk).add(*e);
            }
        }
    }
}

/// [`axpy_vec`] over 64-bit elements: chunks of 2 elements. Launch one thread per
/// chunk: `LaunchConfig::for_len(y.len().div_ceil(2))`.
#[xlog_kernel(read(x), read_write(y per chunk(2)), for T in [f64, u64])]
pub fn axpy_vec2<T: Arith>(a: T, x: &[T], y: &mut [T])
where
    [T; 2]: xlog::device::vector::Vector,
{
    let c = thread::index_1d();
    if let (Some(xv), Some(yv)) = (view::read_chunk::<T, 2>(x, c.get()), y.vector(c)) {
        y.set_vector(c, core::array::from_fn(|k| a.mul(xv[k]).add(yv[k])));
    } else if c < y.chunk_count() {
        let base = c.get() * 2;
        for (k, e) in y.chunk_mut(c).iter_mut().enumerate() {
            if let Some(&xk) = x.get(base + k) {
                *e = a.mul(xk).add(*e);
            }
        }
    }
}

/// `out[i] = x[i] + y[i]` (wrapping for integers).
#[xlog_kernel(read(x, y), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn add<T: Arith>(x: &[T], y: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < y.len() && i < out.len() {
        out[i] = x[i.get()].add(y[i.get()]);
    }
}

/// `out[i] = x[i] - y[i]` (wrapping for integers).
#[xlog_kernel(read(x, y), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn sub<T: Arith>(x: &[T], y: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < y.len() && i < out.len() {
        out[i] = x[i.get()].sub(y[i.get()]);
    }
}

/// `out[i] = x[i] * y[i]` (wrapping for integers).
#[xlog_kernel(read(x, y), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn mul<T: Arith>(x: &[T], y: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < y.len() && i < out.len() {
        out[i] = x[i.get()].mul(y[i.get()]);
    }
}

/// `out[i] = min(x[i], y[i])`.
#[xlog_kernel(read(x, y), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn min<T: Arith>(x: &[T], y: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < y.len() && i < out.len() {
        out[i] = x[i.get()].min(y[i.get()]);
    }
}

/// `out[i] = max(x[i], y[i])`.
#[xlog_kernel(read(x, y), write(out), for T in [f32, f64, i32, u32, u64])]
pub fn max<T: Arith>(x: &[T], y: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < y.len() && i < out.len() {
        out[i] = x[i.get()].max(y[i.get()]);
    }
}

mod ops {
    /// Arithmetic that is wrapping for integers and IEEE for floats, so one kernel
    /// body serves every element type. Sealed: the kernels' types are listed in
    /// their attributes.
    pub trait Arith: Copy + sealed::Sealed {
        /// `self + o`.
        fn add(self, o: Self) -> Self;
        /// `self - o`.
        fn sub(self, o: Self) -> Self;
        /// `self * o`.
        fn mul(self, o: Self) -> Self;
        /// The smaller of the two (`f32::min` for floats: a NaN loses).
        fn min(self, o: Self) -> Self;
        /// The larger of the two (`f32::max` for floats: a NaN loses).
        fn max(self, o: Self) -> Self;
        /// `self as f32`.
        fn to_f32(self) -> f32;
        /// `self as f64`.
        fn to_f64(self) -> f64;
    }

    mod sealed {
        pub trait Sealed {}
    }

    // The operations per type: wrapping for integers, IEEE for floats.
    macro_rules! arith {
        ($($t:ty: $add:ident, $sub:ident, $mul:ident, $min:path, $max:path;)*) => {$(
            impl sealed::Sealed for $t {}
            impl Arith for $t {
                #[inline(always)]
                fn add(self, o: Self) -> Self { arith!(@ $add self o +) }
                #[inline(always)]
                fn sub(self, o: Self) -> Self { arith!(@ $sub self o -) }
                #[inline(always)]
                fn mul(self, o: Self) -> Self { arith!(@ $mul self o *) }
                #[inline(always)]
                fn min(self, o: Self) -> Self { $min(self, o) }
                #[inline(always)]
                fn max(self, o: Self) -> Self { $max(self, o) }
                #[inline(always)]
                fn to_f32(self) -> f32 { self as f32 }
                #[inline(always)]
                fn to_f64(self) -> f64 { self as f64 }
            }
        )*};
        (@ ieee $a:ident $b:ident $op:tt) => { $a $op $b };
        (@ $wrapping:ident $a:ident $b:ident $op:tt) => { $a.$wrapping($b) };
    }
    arith! {
        f32: ieee, ieee, ieee, f32::min, f32::max;
        f64: ieee, ieee, ieee, f64::min, f64::max;
        i32: wrapping_add, wrapping_sub, wrapping_mul, Ord::min, Ord::max;
        u32: wrapping_add, wrapping_sub, wrapping_mul, Ord::min, Ord::max;
        u64: wrapping_add, wrapping_sub, wrapping_mul, Ord::min, Ord::max;
    }
}
