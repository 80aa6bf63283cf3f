//! The launcher of an unsafe kernel called outside unsafe.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

/// # Safety
/// `n` must not exceed the length of `out`.
#[xlog_kernel(write(out))]
pub unsafe fn raw(out: &mut [u32], n: usize) {}

fn call(s: &Stream, out: &mut DeviceBuffer<u32>) -> xlog::Result<()> {
    raw::launch(s, LaunchConfig::for_len(4), out, 4)
}

fn main() {}
