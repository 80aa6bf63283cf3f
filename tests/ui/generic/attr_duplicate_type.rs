//! A type listed twice, and two types whose names would give one entry point.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

mod a {
    pub type V = u32;
}
mod b {
    pub type V = u64;
}

#[xlog_kernel(read(x), write(out), for T in [f32, u32, f32, a::V, b::V])]
pub fn copy<T>(x: &[T], out: &mut [T]) {}

fn main() {}
