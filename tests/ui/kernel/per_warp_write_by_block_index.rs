//! Witnesses of one partition do not index a view of another.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(sums per warp))]
pub fn mixed(sums: &mut [u32]) {
    if let Some(b) = thread::block_leader() {
        sums[b] = 1;
    }
}

fn main() {}
