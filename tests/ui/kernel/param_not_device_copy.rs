//! A by-value struct that did not opt into DeviceCopy.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy)]
pub struct Params { pub a: f32 }

#[xlog_kernel(read(x))]
pub fn k(p: Params, x: &[f32]) {}

fn main() {}
