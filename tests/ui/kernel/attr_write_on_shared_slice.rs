//! write() on a &[T] parameter.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[xlog_kernel(write(out))]
pub fn k(out: &[f32]) {}

fn main() {}
