//! A byte memset without `unsafe`: 2 in every byte of a `bool` buffer is not a `bool`.
#![allow(dead_code)]
use xlog::prelude::*;

fn call(s: &Stream, b: &mut DeviceBuffer<bool>) -> xlog::Result<()> {
    xlog::memset_bytes(s, b, 2)
}

fn main() {}
