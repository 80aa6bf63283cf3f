//! The row count of a transposed view comes from a value parameter, the one thing
//! every thread of the launch holds alike.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(shape), write(out per transposed(32, shape)))]
pub fn transpose(shape: &[usize], out: &mut [f32]) {}

fn main() {}
