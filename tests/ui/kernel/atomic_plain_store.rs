//! An atomic view has no plain element access: a store that is not atomic could race
//! with another thread's atomic on the same bin.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(data), atomic(bins))]
pub fn histogram(data: &[u8], bins: &mut [u32]) {
    let i = thread::index_1d();
    bins[data[i] as usize] += 1;
}

fn main() {}
