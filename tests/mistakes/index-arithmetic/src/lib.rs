//! A stencil that adds to the thread's witness instead of to its number.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x), write(out))]
pub fn forward_difference(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    if i + 1 < x.len() && i < out.len() {
        out[i] = x[i + 1] - x[i];
    }
}
