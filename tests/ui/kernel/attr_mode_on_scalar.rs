//! An access mode on a by-value scalar.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[xlog_kernel(read(a), read(x))]
pub fn k(a: f32, x: &[f32]) {}

fn main() {}
