//! A written slice parameter missing from the attribute's access lists.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x))]
pub fn copy(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i] = x[i];
    }
}
