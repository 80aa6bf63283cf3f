//! An atomic view of bytes stores and loads, but has no atomic add.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(atomic(bins))]
pub fn count(bins: &mut [u8]) {
    bins.store(0, 1);
    bins.fetch_add(0, 1);
}

fn main() {}
