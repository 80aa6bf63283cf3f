//! A macro in a parameter's type is expanded once for the launcher, once for the
//! entry point and once for the ABI descriptor; a procedural macro may expand
//! differently each time (a slice of `u32` launched as one of `u64`), so parameter
//! types invoke no macro, as a type or in an array length.
#![allow(dead_code, unused_variables, unused_macros)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

macro_rules! elem {
    () => {
        u32
    };
}

macro_rules! four {
    () => {
        4
    };
}

#[xlog_kernel(read(x), write(out))]
pub fn copy(x: &[elem!()], out: &mut [u32], pad: [u8; four!()]) {}

type Elem = elem!();

// Named once, through an alias: accepted.
#[xlog_kernel(read(x), write(out))]
pub fn copy_alias(x: &[Elem], out: &mut [u32]) {}

fn main() {}
