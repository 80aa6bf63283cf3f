//! Atomic views exist for the 32- and 64-bit integers and floats, and the 8- and 16-bit integers (loads and stores); not for `bool`.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(atomic(bins))]
pub fn count(bins: &mut [bool]) {}

fn main() {}
