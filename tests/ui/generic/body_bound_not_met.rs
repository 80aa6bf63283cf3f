//! A listed type without a bound the body needs: reported on the list entry.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Rgb([u8; 3]);

#[xlog_kernel(read(x, y), write(out), for T in [f32, Rgb])]
pub fn add<T: core::ops::Add<Output = T>>(x: &[T], y: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < out.len() && i < x.len() && i < y.len() {
        out[i] = x[i.get()] + y[i.get()];
    }
}

fn main() {}
