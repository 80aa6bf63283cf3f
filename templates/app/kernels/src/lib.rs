//! The kernels. Kernel bodies are `no_std` on the GPU: use `core::..` (not `std`),
//! no heap (`Vec`, `Box`, `String`), and call plain `fn` helpers (not other kernels).

use xlog::prelude::*;

xlog::kernel_module!();

/// A plain helper: kernels may call any `fn`, on the device and the host.
#[inline]
pub fn clamp_unit(v: f32) -> f32 {
    v.clamp(0.0, 1.0)
}

/// `out[i] = clamp(a * x[i] + b)`: one thread per element.
#[xlog_kernel(read(x), write(out))]
pub fn affine_clamp(a: f32, b: f32, x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    if i < out.len() && i < x.len() {
        out[i] = clamp_unit(a * x[i] + b);
    }
}

/// `y[i] += x[i]`, any number of elements per thread (a grid-stride loop).
#[xlog_kernel(read(x), read_write(y))]
pub fn accumulate(x: &[f32], y: &mut [f32]) {
    for i in thread::grid_stride(y.len()) {
        if i < x.len() {
            y[i] += x[i];
        }
    }
}
