//! A kernel with two type parameters launched with a pair its lists leave out.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x, idx), write(out), for T in [f32, u64], for I in [u32, u64])]
pub fn gather<T, I>(x: &[T], idx: &[I], out: &mut [T]) {}

fn call(s: &Stream, x: &DeviceBuffer<f32>, idx: &DeviceBuffer<u16>, out: &mut DeviceBuffer<f32>) -> xlog::Result<()> {
    gather::launch::<f32, u16>(s, LaunchConfig::for_len(4), x, idx, out)
}

fn main() {}
