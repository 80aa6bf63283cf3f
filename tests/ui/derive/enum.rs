//! DeviceCopy derived for an enum.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("ui", "");

#[derive(Clone, Copy, DeviceCopy)]
#[repr(u8)]
pub enum Op { Add, Mul }

fn main() {}
