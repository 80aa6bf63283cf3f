//! A grid-stride sequence (its items are witnesses) handed to other threads.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

static LOOP: std::sync::Mutex<Option<thread::GridStride>> = std::sync::Mutex::new(None);

#[xlog_kernel(write(out))]
pub fn steal_loop(out: &mut [u32]) {
    let mut slot = LOOP.lock().unwrap();
    let indices = slot.get_or_insert_with(|| thread::grid_stride(out.len()));
    if let Some(i) = indices.next() {
        out[i] = 1;
    }
}

fn main() {}
