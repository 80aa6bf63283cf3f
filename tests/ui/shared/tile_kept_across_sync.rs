//! `sync` consumes the tile: the write-phase handle cannot be kept to store after the
//! barrier.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

fn body(x: &[f32]) {
    let mut tile = xlog::device::static_shared!(T: [f32; 256]).tile();
    let read = tile.sync();
    tile.set(thread::local_index(), x[0]);
}

fn main() {}
