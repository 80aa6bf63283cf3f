//! An access mode on a by-value scalar.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(a), read(x))]
pub fn k(a: f32, x: &[f32]) {}

fn main() {}
