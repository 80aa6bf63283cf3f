//! Recording a buffer after preflight.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

fn call(s: &Stream, x: &DeviceBuffer<f32>) -> xlog::Result<()> {
    let pre = xlog::WorkRecorder::new(s).preflight()?;
    let _ = pre.read(x);
    Ok(())
}

fn main() {}
