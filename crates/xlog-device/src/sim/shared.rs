//! Shared memory in the simulator: one host allocation per `static_shared!` site and
//! one for the dynamic shared memory, per worker, refilled for every block.
//!
//! GPU shared memory starts undefined. Here every byte of an array reads
//! [`FILL`] (`0xcd`) when a block first touches it, so a read of a slot nobody wrote
//! gives a recognisable value (`0xcdcdcdcd` as `u32`, about `-4.3e8` as `f32`) rather
//! than the previous block's data.

use core::ptr::NonNull;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::vec::Vec;

use super::context::current;

/// The byte every shared array holds when a block first uses it.
pub const FILL: u8 = 0xcd;

/// The key of the dynamic shared memory (site keys are addresses, never 0).
const DYNAMIC: usize = 0;

struct Region {
    key: usize,
    ptr: NonNull<u8>,
    layout: Layout,
    /// The block that last filled it.
    block: u64,
}

/// A worker's shared arrays.
#[derive(Default)]
pub(crate) struct Arena {
    regions: Vec<Region>,
    block: u64,
}

impl Arena {
    /// A new block starts: every array reads [`FILL`] again when it first uses it.
    pub(super) fn next_block(&mut self) {
        self.block += 1;
    }

    /// The block's array for `key`, `bytes` long (at least 1) and aligned to `align`.
    fn get(&mut self, key: usize, bytes: usize, align: usize) -> *mut u8 {
        let layout = Layout::from_size_align(bytes.max(1), align.max(16))
            .expect("a shared array's size fits a layout");
        let block = self.block;
        let i = match self.regions.iter().position(|r| r.key == key) {
            Some(i) if self.regions[i].layout == layout => i,
            found => {
                // SAFETY: `layout` has a non-zero size.
                let ptr = unsafe { alloc(layout) };
                let ptr = NonNull::new(ptr).unwrap_or_else(|| handle_alloc_error(layout));
                let region = Region {
                    key,
                    ptr,
                    layout,
                    block: 0,
                };
                match found {
                    Some(i) => {
                        let old = core::mem::replace(&mut self.regions[i], region);
                        // SAFETY: `old` was allocated above with its own layout, and
                        // no block uses it any more (its layout changed only between
                        // launches).
                        unsafe { dealloc(old.ptr.as_ptr(), old.layout) };
                        i
                    }
                    None => {
                        self.regions.push(region);
                        self.regions.len() - 1
                    }
                }
            }
        };
        let r = &mut self.regions[i];
        if r.block != block {
            // SAFETY: the region is `layout.size()` writable bytes.
            unsafe { r.ptr.as_ptr().write_bytes(FILL, r.layout.size()) };
            r.block = block;
        }
        r.ptr.as_ptr()
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for r in self.regions.drain(..) {
            // SAFETY: each region was allocated with its layout and is freed once.
            unsafe { dealloc(r.ptr.as_ptr(), r.layout) };
        }
    }
}

/// The calling block's array of the `static_shared!` site `site`: `bytes` bytes
/// aligned to `align`.
#[track_caller]
pub(crate) fn static_shared(site: usize, bytes: usize, align: usize) -> *mut u8 {
    let ctx = current("static_shared!");
    ctx.block().shared.borrow_mut().get(site, bytes, align)
}

/// The calling block's dynamic shared memory and its length in bytes (16-byte
/// aligned).
#[track_caller]
pub(crate) fn dynamic_shared() -> (*mut u8, usize) {
    let ctx = current("shared::DynamicShared::get");
    let block = ctx.block();
    let bytes = block.launch.dynamic_shared_bytes as usize;
    (block.shared.borrow_mut().get(DYNAMIC, bytes, 16), bytes)
}
