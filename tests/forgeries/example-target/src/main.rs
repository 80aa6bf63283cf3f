//! The package's binary has the lib's crate name (`CARGO_CRATE_NAME`), so only the
//! target kind tells it apart: it claims the lib's module for a launcher without
//! the kernel's `block = 256`.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x), write(out))]
pub fn tile_rev(x: &[u32], out: &mut [u32]) {}

fn main() {}
