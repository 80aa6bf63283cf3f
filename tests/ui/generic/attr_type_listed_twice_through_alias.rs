//! Two names of one type in a list (a type alias): one entry point would be
//! compiled twice for the same type.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

pub type Real = f32;

#[xlog_kernel(read(x), write(out), for T in [f32, u32, Real])]
pub fn copy<T>(x: &[T], out: &mut [T]) {}

fn main() {}
