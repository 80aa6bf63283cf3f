//! `exclusive_prefix` consumes the ticket: a tile's aggregate is published once.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(lookback(status))]
pub fn twice(status: &mut [u64]) {
    if let Some(t) = status.next_tile() {
        t.exclusive_prefix(1u32, u32::wrapping_add);
        t.exclusive_prefix(2u32, u32::wrapping_add);
    }
}

fn main() {}
