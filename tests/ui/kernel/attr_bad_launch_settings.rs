//! Launch settings out of range.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out), block = 2048, shared = -1)]
pub fn k(out: &mut [f32]) {}

fn main() {}
