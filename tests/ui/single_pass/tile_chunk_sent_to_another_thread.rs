//! A `TileChunk` is `!Send`: parked in a `Sync` static, every thread would write
//! the first thread's chunk.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

static FIRST: std::sync::Mutex<Option<xlog::device::lookback::TileChunk<4>>> =
    std::sync::Mutex::new(None);

#[xlog_kernel(read(x), write(out per tile(4)), lookback(status))]
pub fn all_write_one(x: &[u32], out: &mut [u32], status: &mut [u64]) {
    if let Some(t) = status.next_tile() {
        let first = *FIRST.lock().unwrap().get_or_insert(t.chunk::<4>());
        out.store_chunk(first, [0; 4]);
    }
}

fn main() {}
