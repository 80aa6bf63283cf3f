//! A kernel that calls another kernel instead of a plain `fn`.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x), read_write(y))]
pub fn accumulate(x: &[f32], y: &mut [f32]) {
    let i = thread::index_1d();
    if i < y.len() && i < x.len() {
        y[i] += x[i];
    }
}

#[xlog_kernel(read(x), read_write(y))]
pub fn twice(x: &[f32], y: &mut [f32]) {
    accumulate(x, y);
    accumulate(x, y);
}
