//! A type list with no type: no entry point would be compiled.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out), for T in [])]
pub fn copy<T>(x: &[T], out: &mut [T]) {}

fn main() {}
