//! A tile in its write phase cannot be read: other threads may not have stored their
//! slots yet. `sync()` (the block barrier) moves it to the read phase.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

fn body(x: &[f32]) -> f32 {
    let mut tile = xlog::device::static_shared!(T: [f32; 256]).tile();
    tile.set(thread::local_index(), x[0]);
    tile.get(255)
}

fn main() {}
