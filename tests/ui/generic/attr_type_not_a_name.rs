//! A listed type that is not a name, so it cannot end an entry point symbol.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), for T in [f32, [u8; 4], Option<u32>])]
pub fn k<T>(x: &[T]) {}

fn main() {}
