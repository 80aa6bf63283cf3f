//! `transpose_tile` stages a 32 × 32 tile in a fixed array: a transposed output of
//! another tile size has no such method.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out per transposed(64, rows)))]
pub fn transpose(x: &[f32], out: &mut [f32], rows: usize) {
    out.transpose_tile(x);
}

fn main() {}
