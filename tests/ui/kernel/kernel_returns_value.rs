//! A kernel that returns a value.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[xlog_kernel(read(x))]
pub fn k(x: &[f32]) -> f32 {
    0.0
}

fn main() {}
