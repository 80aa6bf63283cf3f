//! Several attribute errors are all reported, not just the first.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(q), write(x), read_write(x))]
pub fn k(x: &mut [f32], y: &[f32]) {}

fn main() {}
