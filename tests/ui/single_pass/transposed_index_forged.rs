//! `TransposedIndex` has no public constructor: a made-up one could name any
//! element.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out per transposed(32, rows)))]
pub fn forge(out: &mut [f32], rows: usize) {
    let w = xlog::device::transpose::TransposedIndex::<32> {
        row: 0,
        col: 0,
        _thread: core::marker::PhantomData,
    };
    out[w] = 1.0;
}

fn main() {}
