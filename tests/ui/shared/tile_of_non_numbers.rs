//! Tiles and collectives move 32- and 64-bit numbers (every bit pattern valid), not
//! arbitrary types.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

fn body(x: &[u8]) -> u8 {
    collective::block_reduce(x[0], |a, b| a.wrapping_add(b))
}

fn main() {}
