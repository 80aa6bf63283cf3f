//! Lifetime and const parameters: only types can be listed.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), for T in [f32])]
pub fn k<'a, T, const N: usize>(x: &[T]) {}

fn main() {}
