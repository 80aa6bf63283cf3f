//! Launching from a recorder that was never preflighted.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

fn call(s: &Stream, f: &xlog::Function, x: &DeviceBuffer<f32>) -> xlog::Result<()> {
    let rec = xlog::WorkRecorder::new(s).read(x);
    // SAFETY: does not compile.
    let _ = unsafe { rec.launch(f, LaunchConfig::for_len(1), &mut []) }?;
    Ok(())
}

fn main() {}
