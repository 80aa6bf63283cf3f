//! A parameter type written through a macro that names `T`: in the generic body and
//! the launcher it is the type parameter, at the entry point's scope the module's
//! `T` (a `u32` slice launched as one of `u64`). Refused as every macro in a
//! parameter type is; without that refusal the entry point's call of the body with
//! the instantiation's types (`body::<u32>(..)`) fails to compile on it.
#![allow(dead_code, unused_variables, unused_macros, non_camel_case_types)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

type T = u64;

macro_rules! tee {
    () => {
        T
    };
}

#[xlog_kernel(read(x), write(out), for T in [u32])]
pub fn k<T>(x: &[tee!()], out: &mut [T]) {}

fn main() {}
