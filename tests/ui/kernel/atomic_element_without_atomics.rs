//! Atomic views exist for the 32- and 64-bit integers and floats, and `u8` and `u16` (loads and stores).
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(atomic(bins))]
pub fn count(bins: &mut [i16]) {}

fn main() {}
