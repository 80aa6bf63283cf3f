//! A write through a parameter declared `read(..)`.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x))]
pub fn zero(x: &[f32]) {
    let i = thread::index_1d();
    if i < x.len() {
        x[i] = 0.0;
    }
}
