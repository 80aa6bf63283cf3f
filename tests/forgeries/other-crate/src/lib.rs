//! Embeds another crate's compiled kernels and declares a launcher for one of them
//! with another signature.
use xlog::prelude::*;

xlog::kernel_module!();

#[cfg(not(target_arch = "nvptx64"))]
#[xlog_kernel(write(y))]
pub fn saxpy(a: f32, y: &mut [u64]) {}
