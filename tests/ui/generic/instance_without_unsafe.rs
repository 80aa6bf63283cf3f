//! Safe code cannot add a type to a generic kernel: its types trait is unsafe to implement.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out), for T in [f32])]
pub fn copy<T>(x: &[T], out: &mut [T]) {}

impl CopyType for u32 {
    const __NAME: &'static str = "copy__f32";
    fn __handle() -> &'static xlog::KernelHandle {
        <f32 as CopyType>::__handle()
    }
}

fn main() {}
