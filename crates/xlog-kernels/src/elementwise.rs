//! The elementwise kernels, one module per element type (a kernel is one concrete
//! entry point, so the family is stamped out per type).

macro_rules! elementwise {
    ($m:ident, $t:ident, lanes = $k:tt, min = $min:path, max = $max:path) => {
        #[doc = concat!("Elementwise kernels over `", stringify!($t), "`; entry points end in `_", stringify!($m), "`.")]
        pub mod $m {
            use xlog::prelude::*;

            /// `out[i] = value`.
            #[xlog_kernel(write(out), suffix = $m)]
            pub fn fill(out: &mut [$t], value: $t) {
                let i = thread::index_1d();
                if let Some(o) = out.get_mut(i) {
                    *o = value;
                }
            }

            /// `out[i] = x[i]`.
            #[xlog_kernel(read(x), write(out), suffix = $m)]
            pub fn copy(x: &[$t], out: &mut [$t]) {
                let i = thread::index_1d();
                if i < x.len() && i < out.len() {
                    out[i] = x[i.get()];
                }
            }

            /// `out[i] = x[i] as f32`.
            #[xlog_kernel(read(x), write(out), suffix = $m)]
            pub fn cast_f32(x: &[$t], out: &mut [f32]) {
                let i = thread::index_1d();
                if i < x.len() && i < out.len() {
                    out[i] = x[i.get()] as f32;
                }
            }

            /// `out[i] = x[i] as f64`.
            #[xlog_kernel(read(x), write(out), suffix = $m)]
            pub fn cast_f64(x: &[$t], out: &mut [f64]) {
                let i = thread::index_1d();
                if i < x.len() && i < out.len() {
                    out[i] = x[i.get()] as f64;
                }
            }

            /// `out[i] = a * x[i]` (wrapping for integers).
            #[xlog_kernel(read(x), write(out), suffix = $m)]
            pub fn scale(x: &[$t], out: &mut [$t], a: $t) {
                let i = thread::index_1d();
                if i < x.len() && i < out.len() {
                    out[i] = super::ops::mul(a, x[i.get()]);
                }
            }

            /// `y[i] = a * x[i] + y[i]` (wrapping for integers).
            #[xlog_kernel(read(x), read_write(y), suffix = $m)]
            pub fn axpy(a: $t, x: &[$t], y: &mut [$t]) {
                let i = thread::index_1d();
                if i < x.len() && i < y.len() {
                    y[i] = super::ops::add(super::ops::mul(a, x[i.get()]), y[i]);
                }
            }

            /// `y[i] = a * x[i] + y[i]` (wrapping for integers) for `i < min(x.len(),
            /// y.len())`, each thread owning one chunk of `y`
            #[doc = concat!("(", stringify!($k), " elements, moved as one vector load and store")]
            /// when the chunk is whole; the short last chunk element by element).
            /// Launch one thread per chunk: `LaunchConfig::for_len(y.len().div_ceil(K))`.
            #[xlog_kernel(read(x), read_write(y per chunk($k)), suffix = $m)]
            pub fn axpy_vec(a: $t, x: &[$t], y: &mut [$t]) {
                let c = thread::index_1d();
                if let (Some(xv), Some(yv)) = (view::read_chunk::<$t, $k>(x, c.get()), y.vector(c)) {
                    y.set_vector(
                        c,
                        core::array::from_fn(|k| super::ops::add(super::ops::mul(a, xv[k]), yv[k])),
                    );
                } else if c < y.chunk_count() {
                    let base = c.get() * $k;
                    for (k, e) in y.chunk_mut(c).iter_mut().enumerate() {
                        if let Some(&xk) = x.get(base + k) {
                            *e = super::ops::add(super::ops::mul(a, xk), *e);
                        }
                    }
                }
            }

            elementwise!(@binary $m, $t, add, "`out[i] = x[i] + y[i]` (wrapping for integers).", super::ops::add);
            elementwise!(@binary $m, $t, sub, "`out[i] = x[i] - y[i]` (wrapping for integers).", super::ops::sub);
            elementwise!(@binary $m, $t, mul, "`out[i] = x[i] * y[i]` (wrapping for integers).", super::ops::mul);
            elementwise!(@binary $m, $t, min, "`out[i] = min(x[i], y[i])`.", $min);
            elementwise!(@binary $m, $t, max, "`out[i] = max(x[i], y[i])`.", $max);
        }
    };
    (@binary $m:ident, $t:ident, $name:ident, $doc:literal, $op:path) => {
        #[doc = $doc]
        #[xlog_kernel(read(x, y), write(out), suffix = $m)]
        pub fn $name(x: &[$t], y: &[$t], out: &mut [$t]) {
            let i = thread::index_1d();
            if i < x.len() && i < y.len() && i < out.len() {
                out[i] = $op(x[i.get()], y[i.get()]);
            }
        }
    };
}

/// Arithmetic that is wrapping for integers and IEEE for floats, so the same
/// kernel text serves every element type.
mod ops {
    pub trait Arith: Copy {
        fn add(self, o: Self) -> Self;
        fn sub(self, o: Self) -> Self;
        fn mul(self, o: Self) -> Self;
    }
    macro_rules! int {
        ($($t:ty),*) => {$(
            impl Arith for $t {
                #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
                #[inline(always)] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
                #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            }
        )*};
    }
    macro_rules! float {
        ($($t:ty),*) => {$(
            impl Arith for $t {
                #[inline(always)] fn add(self, o: Self) -> Self { self + o }
                #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
                #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            }
        )*};
    }
    int!(i32, u32, u64);
    float!(f32, f64);

    #[inline(always)]
    pub fn add<T: Arith>(a: T, b: T) -> T {
        a.add(b)
    }
    #[inline(always)]
    pub fn sub<T: Arith>(a: T, b: T) -> T {
        a.sub(b)
    }
    #[inline(always)]
    pub fn mul<T: Arith>(a: T, b: T) -> T {
        a.mul(b)
    }
}

elementwise!(f32, f32, lanes = 4, min = f32::min, max = f32::max);
elementwise!(f64, f64, lanes = 2, min = f64::min, max = f64::max);
elementwise!(i32, i32, lanes = 4, min = i32::min, max = i32::max);
elementwise!(u32, u32, lanes = 4, min = u32::min, max = u32::max);
elementwise!(u64, u64, lanes = 2, min = u64::min, max = u64::max);
