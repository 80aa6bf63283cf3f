//! A `per tile(K)` view belongs to look-back tiles, numbered in the order blocks
//! start: a thread's `ThreadIndex` (numbered by `blockIdx.x`) names another block's
//! chunk.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out per tile(4)), lookback(status))]
pub fn scan(x: &[u32], out: &mut [u32], status: &mut [u64]) {
    let i = thread::index_1d();
    out.chunk_mut(i)[0] = x[i];
}

fn main() {}
