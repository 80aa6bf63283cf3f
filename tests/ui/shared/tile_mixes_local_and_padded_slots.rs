//! A transpose's load slots `r·(TILE + 1) + c` belong to the thread loading item
//! `r·TILE + c`, not to thread `slot mod blockDim.x` as a `LocalIndex` of that
//! number would: storing both kinds into one tile in one write phase would let two
//! threads store into one slot. A tile takes one kind of slot witness: `tile()`
//! takes `LocalIndex`es, `padded_tile::<TILE>()` the `PaddedSlot<TILE>`s of
//! `loads()`.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out per transposed(32, rows)))]
pub fn linear_tile(x: &[u32], out: &mut [u32], rows: usize) {
    if let Some(tile) = out.tile() {
        let mut sh = xlog::device::static_shared!(S: [u32; 32 * 33]).tile();
        for (slot, i) in tile.loads() {
            sh.set(slot, x[i]);
        }
        sh.set(thread::local_index(), 0);
    }
}

#[xlog_kernel(read(x), write(out per transposed(32, rows)))]
pub fn padded_tile(x: &[u32], out: &mut [u32], rows: usize) {
    if let Some(tile) = out.tile() {
        let mut sh = xlog::device::static_shared!(S: [u32; 32 * 33]).padded_tile::<32>();
        for (slot, i) in tile.loads() {
            sh.set(slot, x[i]);
        }
        sh.set(thread::local_index(), 0);
    }
}

#[xlog_kernel(read(x), write(out per transposed(32, rows)))]
pub fn other_tile_size(x: &[u32], out: &mut [u32], rows: usize) {
    if let Some(tile) = out.tile() {
        let mut sh = xlog::device::static_shared!(S: [u32; 32 * 33]).padded_tile::<16>();
        for (slot, i) in tile.loads() {
            sh.set(slot, x[i]);
        }
    }
}

fn main() {}
