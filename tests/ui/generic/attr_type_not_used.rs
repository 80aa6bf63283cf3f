//! A type parameter no parameter type mentions: launches could not tell the instantiations apart.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out), for T in [f32, u32])]
pub fn copy<T>(x: &[f32], out: &mut [f32]) {}

fn main() {}
