//! In the write phase a thread stores only into its own slot, named by its
//! `LocalIndex`: two threads storing into slot 0 would race.
#![allow(dead_code, unused_variables)]

fn body(x: &[f32]) {
    let mut tile = xlog::device::static_shared!(T: [f32; 256]).tile();
    tile.set(0, x[0]);
}

fn main() {}
