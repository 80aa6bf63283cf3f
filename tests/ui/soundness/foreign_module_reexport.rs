//! A crate re-exports another crate's compiled module and declares a kernel of the
//! same name: its launcher would run the other crate's code with this signature.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

pub use saxpy_kernels::MODULE;

#[xlog_kernel(write(y))]
pub fn saxpy(a: f32, y: &mut [u64]) {}

fn main() {}
