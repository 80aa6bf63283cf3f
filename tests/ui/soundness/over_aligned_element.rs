//! Elements aligned beyond what device allocations guarantee.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C, align(512))]
pub struct Page {
    pub first: u32,
}

#[xlog_kernel(write(out))]
pub fn pages(out: &mut [Page]) {}

fn main() {}
