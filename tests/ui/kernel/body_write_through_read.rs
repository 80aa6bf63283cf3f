//! Writing through a read parameter inside the kernel body.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out))]
pub fn k(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    x[i.get()] = 1.0;
    out[i] = 2.0;
}

fn main() {}
