//! Zero-sized scalars get no PTX parameter, which would shift every later one.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Marker;

#[xlog_kernel(write(out))]
pub fn unit_struct(m: Marker, out: &mut [u32], n: u32) {}

#[xlog_kernel(write(out))]
pub fn empty_array(m: [u64; 0], out: &mut [u32], n: u32) {}

fn main() {}
