//! Only written parameters are partitioned among threads.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x per block), atomic(n per warp), write(o per grid))]
pub fn k(x: &[f32], n: &mut [u32], o: &mut [u32]) {}

fn main() {}
