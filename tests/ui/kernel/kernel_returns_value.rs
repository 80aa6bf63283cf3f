//! A kernel that returns a value.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x))]
pub fn k(x: &[f32]) -> f32 {
    0.0
}

fn main() {}
