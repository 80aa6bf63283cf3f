//! Block and warp witnesses are not device data: they cannot be buffer elements (or
//! shared memory, or shuffled), so no thread can hand one to another through memory.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out per block))]
pub fn borrowed(x: &[xlog::device::thread::BlockIndex], out: &mut [u32]) {
    out[x[0]] = 1;
}

fn main() {}
