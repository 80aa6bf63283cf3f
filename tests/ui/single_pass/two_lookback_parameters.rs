//! Two status buffers would hand out two ticket 0s, and two blocks would own the
//! same chunks of a `per tile` view.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out per tile(1)), lookback(a, b))]
pub fn two_counters(out: &mut [u32], a: &mut [u64], b: &mut [u64]) {}

fn main() {}
