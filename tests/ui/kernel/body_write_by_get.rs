//! Writing an output element at `i.get()`, a plain number, instead of the witness:
//! the message says why writes need the `ThreadIndex`.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out))]
pub fn k(x: &[f32], out: &mut [f32]) {
    let i = thread::index_1d();
    if i < out.len() && i < x.len() {
        out[i.get()] = x[i];
    }
}

fn main() {}
