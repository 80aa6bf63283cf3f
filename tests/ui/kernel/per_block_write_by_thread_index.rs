//! A `per block` view takes the block leader's `BlockIndex` only: every thread
//! writing `partials[its own index]` would write other blocks' slots.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(partials per block))]
pub fn block_sum(x: &[f32], partials: &mut [f32]) {
    let i = thread::index_1d();
    partials[i] = x[i];
}

fn main() {}
