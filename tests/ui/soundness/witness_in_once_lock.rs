//! A witness published through a third-party-style `Sync` cell (`OnceLock` stands
//! for a no_std spin `Once`).
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

static SHARED: std::sync::OnceLock<ThreadIndex> = std::sync::OnceLock::new();

#[xlog_kernel(read_write(out))]
pub fn swap_owner(out: &mut [u32]) {
    let first = *SHARED.get_or_init(thread::index_1d);
    out[first] += 1;
}

fn main() {}
