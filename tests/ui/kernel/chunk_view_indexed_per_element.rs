//! In a `per chunk(4)` view thread `c` owns elements `4c..4c + 4`: element `c` may
//! belong to another thread, so the view is not indexed by a `ThreadIndex`.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read_write(y per chunk(4)))]
pub fn scale(y: &mut [f32]) {
    let i = thread::index_1d();
    y[i] = 0.0;
}

fn main() {}
