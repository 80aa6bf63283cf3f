//! An atomic operation on a parameter declared `read(..)` instead of `atomic(..)`.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(data), read(bins))]
pub fn histogram(data: &[u32], bins: &[u32]) {
    for i in thread::grid_stride(data.len()) {
        bins.fetch_add(data[i] as usize, 1);
    }
}
