//! DeviceCopy derived for an enum.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
#[repr(u8)]
pub enum Op { Add, Mul }

fn main() {}
