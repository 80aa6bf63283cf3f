//! A per-thread view does not take a `BlockIndex`: block 1's leader and thread 1 of
//! block 0 would both write element 1.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out))]
pub fn mixed(out: &mut [u32]) {
    if let Some(b) = thread::block_leader() {
        out[b] = 1;
    }
}

fn main() {}
