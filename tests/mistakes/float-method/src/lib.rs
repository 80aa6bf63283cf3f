//! A kernel that calls `f32::sqrt`, a method of `std` the device does not have.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x), write(out))]
pub fn root(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i] = x[i].sqrt();
    }
}
