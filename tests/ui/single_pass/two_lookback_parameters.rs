//! Two status buffers would number tiles twice: with tickets, two counters hand
//! out two tile 0s; with buffers of different lengths, one could take tile
//! `blockIdx.x` while the other hands out tickets. Either way two blocks would own
//! the same chunks of a `per tile` view.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out per tile(1)), lookback(a, b))]
pub fn two_counters(out: &mut [u32], a: &mut [u64], b: &mut [u64]) {}

fn main() {}
