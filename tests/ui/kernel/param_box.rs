//! A Box parameter.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[xlog_kernel()]
pub fn k(v: Box<u32>) {}

fn main() {}
