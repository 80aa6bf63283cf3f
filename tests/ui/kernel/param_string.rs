//! A String parameter.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[xlog_kernel(read(x))]
pub fn k(name: String, x: &[f32]) {}

fn main() {}
