//! A parameter typed by an associated type through the shorthand `T::Assoc`.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

pub trait Widen: Copy {
    type Wide: Copy;
}
impl Widen for u32 {
    type Wide = u64;
}

#[xlog_kernel(read(x), write(out), for T in [u32])]
pub fn widen<T: Widen>(x: &[T], out: &mut [T], w: T::Wide) {}

fn main() {}
