//! Kernels whose crate root lacks the macro that defines the module their
//! launchers load.
use xlog::prelude::*;

#[xlog_kernel(read(x), read_write(y))]
pub fn accumulate(x: &[f32], y: &mut [f32]) {
    let i = thread::index_1d();
    if i < y.len() && i < x.len() {
        y[i] += x[i.get()];
    }
}

#[xlog_kernel(read(x), write(y))]
pub fn copy(x: &[f32], y: &mut [f32]) {
    let i = thread::index_1d();
    if i < y.len() && i < x.len() {
        y[i] = x[i.get()];
    }
}
