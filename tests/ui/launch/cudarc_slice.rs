//! A plain cudarc slice passed to a launcher.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out))]
pub fn copy(x: &[f32], out: &mut [f32]) {}

fn call(s: &Stream, x: &cudarc::driver::CudaSlice<f32>, out: &mut DeviceBuffer<f32>) -> xlog::Result<()> {
    copy::launch(s, LaunchConfig::for_len(4), x, out)
}

fn main() {}
