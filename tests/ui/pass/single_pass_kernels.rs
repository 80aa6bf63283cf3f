//! A single-pass scan with decoupled look-back and a tiled transpose, in safe code.
#![allow(dead_code, unused_variables)]
#![deny(unsafe_code)]
use xlog::device::lookback;
use xlog::prelude::*;

// SAFETY: never launched.
#[allow(unsafe_code)]
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out per tile(2)), lookback(status), block = 128)]
pub fn scan(x: &[u64], out: &mut [u64], status: &mut [u64]) {
    while let Some(tile) = status.next_tile() {
        let c = tile.chunk::<2>();
        let v: [u64; 2] = lookback::load_chunk(x, c.get(), 0);
        let s = [v[0], v[0] + v[1]];
        let (before, total) = collective::block_exclusive_scan(s[1], 0, u64::wrapping_add);
        let base = tile.exclusive_prefix(total, u64::wrapping_add).unwrap_or(0) + before;
        out.store_chunk(c, s.map(|e| e + base));
    }
}

#[xlog_kernel(read(x), write(out per transposed(16, rows)))]
pub fn transpose(x: &[u32], out: &mut [u32], rows: usize) {
    if let Some(tile) = out.tile() {
        let mut shared = xlog::device::static_shared!(T: [u32; 16 * 17]).padded_tile::<16>();
        for (slot, i) in tile.loads() {
            shared.set(slot, x[i]);
        }
        let shared = shared.sync();
        for (o, slot) in tile.stores() {
            out[o] = shared.get(slot);
        }
    }
}

fn main() {}
