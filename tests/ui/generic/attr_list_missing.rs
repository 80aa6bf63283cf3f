//! A type parameter without its list of types.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x))]
pub fn k<T: Copy>(x: &[T]) {}

fn main() {}
