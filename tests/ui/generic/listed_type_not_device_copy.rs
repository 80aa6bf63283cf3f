//! A listed type that is not plain device data.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy)]
pub struct Host(u32);

#[xlog_kernel(read(x), for T in [u32, Host])]
pub fn k<T>(x: &[T]) {}

fn main() {}
