//! Several attribute errors are all reported, not just the first.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[xlog_kernel(read(q), write(x), read_write(x))]
pub fn k(x: &mut [f32], y: &[f32]) {}

fn main() {}
