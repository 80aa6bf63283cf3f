//! A look-back status buffer is `u64` words; the macro says so rather than leaving
//! a type mismatch inside generated code.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out per tile(1)), lookback(status))]
pub fn u32_status(out: &mut [u32], status: &mut [u32]) {}

#[xlog_kernel(write(out per tile(1)), lookback(status))]
pub fn spelled_out(out: &mut [u32], status: &mut [std::primitive::u64]) {}

fn main() {}
