//! Atomic views exist for the 32- and 64-bit integers and floats only.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(atomic(bins))]
pub fn count(bins: &mut [u8]) {}

fn main() {}
