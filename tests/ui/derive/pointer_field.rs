//! DeviceCopy derived for a struct holding a pointer.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct P { pub a: f32, pub p: *const f32 }

fn main() {}
