//! A kernel that relies on its declared block size.
use xlog::prelude::*;

xlog::kernel_module!();

/// Reverses each 256-element tile.
#[xlog_kernel(read(x), write(out), block = 256)]
pub fn tile_rev(x: &[u32], out: &mut [u32]) {
    let i = thread::index_1d();
    if i < out.len() && i < x.len() {
        out[i] = x[i.get()];
    }
}
