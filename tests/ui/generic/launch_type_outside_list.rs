//! A generic kernel launched with an element type its list leaves out.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out), for T in [f32, f64, u32])]
pub fn copy<T>(x: &[T], out: &mut [T]) {}

fn call(s: &Stream, x: &DeviceBuffer<u8>, out: &mut DeviceBuffer<u8>) -> xlog::Result<()> {
    copy::launch(s, LaunchConfig::for_len(4), x, out)
}

fn main() {}
