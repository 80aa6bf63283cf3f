//! A `static_shared!` array is at most 48 KiB. Past that ptxas refuses the kernel,
//! and past 4 GiB it would not even see the true size: PTX sizes wrap modulo 2^32,
//! so the array would be smaller than the length its tile bounds-checks against.
#![allow(dead_code, unused_variables)]

fn wraps_in_ptx() {
    let big = xlog::device::static_shared!(BIG: [u32; (1 << 30) + 4]);
}

fn just_over_the_limit() {
    let tile = xlog::device::static_shared!(TILE: [f64; 6145]).tile();
}

fn main() {}
