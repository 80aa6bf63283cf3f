//! Slices of zero-sized elements would be built from a null device pointer.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out))]
pub fn units(x: &[[u32; 0]], out: &mut [u32]) {}

fn main() {}
