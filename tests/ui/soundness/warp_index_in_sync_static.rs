//! A warp leader's witness parked in a `Sync` static for other threads to take: every thread
//! would then write the first one's slot (the witness must be `!Send`).
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

static FIRST: std::sync::Mutex<Option<xlog::device::thread::WarpIndex>> = std::sync::Mutex::new(None);

#[xlog_kernel(write(out))]
pub fn smuggle(out: &mut [u32]) {
    *FIRST.lock().unwrap() = thread::warp_leader();
}

fn main() {}
