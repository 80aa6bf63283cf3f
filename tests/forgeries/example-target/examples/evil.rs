//! Another target of the same package claims the package's module and declares a
//! launcher of the same kernel without its `block = 256`.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x), write(out))]
pub fn tile_rev(x: &[u32], out: &mut [u32]) {}

fn main() {}
