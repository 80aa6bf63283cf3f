//! A kernel that uses the heap and `std`, which the device does not have.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(write(out))]
pub fn heap(out: &mut [u32]) {
    let v: Vec<u32> = Vec::new();
    let i = thread::index_1d();
    if i < out.len() {
        out[i] = v.len() as u32 + std::cmp::min(1, 2);
    }
}
