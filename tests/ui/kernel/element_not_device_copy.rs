//! A slice of a type that is not plain device data.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy)]
pub struct Pair { pub a: f32, pub b: f32 }

#[xlog_kernel(read(x))]
pub fn k(x: &[Pair]) {}

fn main() {}
