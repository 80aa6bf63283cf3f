//! An access list naming a parameter the kernel does not have.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(q))]
pub fn k(x: &[f32], out: &mut [f32]) {}

fn main() {}
