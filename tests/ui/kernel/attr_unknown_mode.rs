//! A misspelled access mode.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[xlog_kernel(reed(x))]
pub fn k(x: &[f32]) {}

fn main() {}
