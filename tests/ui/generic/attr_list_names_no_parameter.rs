//! A list for a type parameter the kernel does not have, and a second list for one it has.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), for T in [f32], for U in [u32], for T in [u64])]
pub fn k<T>(x: &[T]) {}

fn main() {}
