//! A buffer dropped while a preflighted recorder still borrows it.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

fn call(rt: &Runtime, s: &Stream) -> xlog::Result<()> {
    let x = rt.upload(&[1.0f32; 4])?;
    let pre = xlog::WorkRecorder::new(s).read(&x).preflight()?;
    drop(x);
    let _ = pre.wait_count();
    Ok(())
}

fn main() {}
