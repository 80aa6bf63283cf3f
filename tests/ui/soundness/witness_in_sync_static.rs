//! A thread's witness parked in a `Sync` static for other threads to take: every
//! thread would write the element of the first one (hole: witnesses were `Send + Sync`).
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

static FIRST: std::sync::Mutex<Option<ThreadIndex>> = std::sync::Mutex::new(None);

#[xlog_kernel(write(out))]
pub fn all_write_one(out: &mut [u32]) {
    let mine = thread::index_1d();
    let first = *FIRST.lock().unwrap().get_or_insert(mine);
    out[first] = 1;
}

fn main() {}
