//! A thread holds one ticket at a time: a block holding two could wait for the
//! first in the look-back of the second, forever.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(lookback(status))]
pub fn greedy(status: &mut [u64]) {
    let first = status.next_tile();
    let second = status.next_tile();
    if let Some(t) = first {
        t.exclusive_prefix(1u32, u32::wrapping_add);
    }
}

fn main() {}
