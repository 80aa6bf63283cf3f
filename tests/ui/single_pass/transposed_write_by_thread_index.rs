//! A transposed output is written only through the `TransposedIndex` of the
//! block's tile: `out[thread index]` is the unpermuted position, another thread's.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out per transposed(32, rows)))]
pub fn transpose(x: &[f32], out: &mut [f32], rows: usize) {
    let i = thread::index_1d();
    out[i] = x[i];
}

fn main() {}
