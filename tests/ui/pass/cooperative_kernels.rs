//! Every cooperative tool in a safe kernel: atomics, per-block, per-warp and chunked
//! writes, a tile, collectives.
#![allow(dead_code, unused_variables)]
#![deny(unsafe_code)]
use xlog::prelude::*;

// SAFETY: never launched.
#[allow(unsafe_code)]
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(data), atomic(bins), write(partials per block, warps per warp), read_write(y per chunk(4)), block = 64)]
pub fn everything(data: &[u32], bins: &mut [u32], partials: &mut [u64], warps: &mut [f32], y: &mut [f32]) {
    for i in thread::grid_stride(data.len()) {
        bins.fetch_add(data[i] as usize % bins.len(), 1);
    }
    let mut tile = xlog::device::static_shared!(T: [u32; 64]).tile();
    tile.set(thread::local_index(), 1);
    let tile = tile.sync();
    let v = tile.get(0) as u64;
    let s = collective::block_reduce(v, u64::wrapping_add);
    if let Some(b) = thread::block_leader() {
        partials[b] = s;
    }
    let w = collective::warp_inclusive_scan(1.0f32, |a, b| a + b);
    if let Some(k) = thread::warp_leader() {
        warps[k] = w;
    }
    let c = thread::index_1d();
    if let Some(v) = y.vector(c) {
        y.set_vector(c, v.map(|e| e * 2.0));
    } else if c < y.chunk_count() {
        for e in y.chunk_mut(c) {
            *e *= 2.0;
        }
    }
}

fn main() {}
