//! A write view indexed by a plain number instead of the thread's witness.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x), write(out))]
pub fn copy(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i.get()] = x[i];
    }
}
