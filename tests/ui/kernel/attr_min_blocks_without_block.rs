//! `min_blocks` sizes registers for blocks of a declared size, and is bounded.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out), min_blocks = 2)]
pub fn no_block(out: &mut [f32]) {}

#[xlog_kernel(write(out), block = 256, min_blocks = 0)]
pub fn zero(out: &mut [f32]) {}

#[xlog_kernel(write(out), block = 256, min_blocks = 2)]
pub fn fine(out: &mut [f32]) {}

fn main() {}
