//! Each transposed view derives its tiles from its own shape: two of them in one
//! kernel would let a witness made from one index the other, where another block's
//! tile lies.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(a per transposed(32, rows), b per transposed(32, cols)))]
pub fn two_shapes(a: &mut [f32], b: &mut [f32], rows: usize, cols: usize) {}

fn main() {}
