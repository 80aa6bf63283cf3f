//! A read view passed where the kernel writes.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out))]
pub fn copy(x: &[f32], out: &mut [f32]) {}

fn call(s: &Stream, x: &DeviceBuffer<f32>, out: &DeviceBuffer<f32>) -> xlog::Result<()> {
    let mut view = out.slice(0..4);
    copy::launch(s, LaunchConfig::for_len(4), x, &mut view)
}

fn main() {}
