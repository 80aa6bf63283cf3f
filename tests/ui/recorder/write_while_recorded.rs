//! Touching a buffer while a recorder holds its write borrow.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

fn call(s: &Stream, y: &mut DeviceBuffer<f32>) -> xlog::Result<()> {
    let rec = xlog::WorkRecorder::new(s).write(y);
    y.fill(s, 1.0)?;
    let _ = rec.preflight()?;
    Ok(())
}

fn main() {}
