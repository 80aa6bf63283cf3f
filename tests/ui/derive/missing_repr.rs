//! DeviceCopy derived for a struct without #[repr(C)].
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
pub struct P { pub a: f32 }

fn main() {}
