//! Kernels of the saxpy example, written in Rust with `#[xlog_kernel]`.

use xlog::prelude::*;

xlog::kernel_module!();

/// `y = a * x + y`, one thread per element.
#[xlog_kernel(read(x), read_write(y))]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = thread::index_1d();
    if i < y.len() && i < x.len() {
        y[i] += a * x[i.get()];
    }
}

/// `out = x * x`, one thread per element.
#[xlog_kernel(read(x), write(out))]
pub fn square(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    if i < out.len() && i < x.len() {
        let v = x[i.get()];
        out[i] = v * v;
    }
}
