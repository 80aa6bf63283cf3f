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
            // The arena lives for one launch, so the region may be in use by the
            // running block (a handle to it passes its block check): it is never
            // freed or replaced before the arena drops.
            Some(i) => layouts_differ(key, self.regions[i].layout, layout),
            None => {
                // SAFETY: `layout` has a non-zero size.
                let ptr = unsafe { alloc(layout) };
                let ptr = NonNull::new(ptr).unwrap_or_else(|| handle_alloc_error(layout));
                self.regions.push(Region {
                    key,
                    ptr,
                    layout,
                    block: 0,
                });
                self.regions.len() - 1
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

/// Panics: two shared arrays have one key but different layouts. Each
/// `static_shared!` site is its own static with one type, and the dynamic shared
/// memory has one size per launch, so this means two sites' statics were merged
/// (identical code folding by the linker, say).
#[cold]
#[inline(never)]
fn layouts_differ(key: usize, had: Layout, wanted: Layout) -> ! {
    panic!(
        "xlog simulator: two shared arrays with one site key ({key:#x}) and different \
         layouts ({} then {} bytes, aligned to {} then {}); were two `static_shared!` \
         sites merged, by identical code folding in the linker for instance?",
        had.size(),
        wanted.size(),
        had.align(),
        wanted.align()
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_keeps_its_region_from_block_to_block() {
        let mut arena = Arena::default();
        arena.next_block();
        let a = arena.get(8, 64, 16);
        arena.next_block();
        assert_eq!(arena.get(8, 64, 16), a);
    }

    /// A region may be in use by the running block, so a second layout for its key
    /// is refused rather than freeing it.
    #[test]
    #[should_panic(expected = "two shared arrays with one site key (0x8) and different layouts")]
    fn one_key_with_two_layouts_panics() {
        let mut arena = Arena::default();
        arena.next_block();
        arena.get(8, 64, 16);
        arena.get(8, 128, 16);
    }
}
