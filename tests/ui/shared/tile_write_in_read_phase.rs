//! After the barrier any thread may read any slot, so nobody may write one until the
//! next barrier.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

fn body(x: &[f32]) {
    let mut tile = xlog::device::static_shared!(T: [f32; 256]).tile();
    tile.set(thread::local_index(), x[0]);
    let mut tile = tile.sync();
    tile.set(thread::local_index(), 1.0);
}

fn main() {}
