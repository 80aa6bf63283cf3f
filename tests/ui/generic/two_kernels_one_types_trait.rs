//! Two generic kernels whose names give one types trait name.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out), for T in [f32])]
pub fn copy<T>(x: &[T], out: &mut [T]) {}

#[xlog_kernel(read(x), write(out), for T in [u32])]
pub fn copy_<T>(x: &[T], out: &mut [T]) {}

fn main() {}
