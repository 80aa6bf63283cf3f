//! Writing an output element through a usize instead of the thread witness.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out))]
pub fn k(out: &mut [f32]) {
    out[0] = 1.0;
}

fn main() {}
