//! write() on a &[T] parameter.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(write(out))]
pub fn k(out: &[f32]) {}

fn main() {}
