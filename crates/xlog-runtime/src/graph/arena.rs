//! [`GraphArena`]: buffers a graph's library calls allocate, kept for as long as
//! the graph may run.

use std::any::Any;
use std::cell::RefCell;
use std::ptr::NonNull;

use xlog_device::DeviceCopy;

use crate::buffer::DeviceBuffer;

/// Owns buffers that recorded work allocates (a library call's output and
/// temporaries) and lends them for the arena's whole life, so a graph can borrow
/// them like any other buffer: create the arena before the recorder, and it
/// outlives the graph.
///
/// ```no_run
/// # use xlog_runtime::*;
/// # fn main() -> Result<()> {
/// # let rt = Runtime::get(0)?;
/// # let s = rt.stream()?;
/// let arena = GraphArena::new();
/// let mut rec = GraphRecorder::new(&s);
/// let out = arena.keep(rt.alloc_zeroed_on::<u32>(&s, 256)?);
/// rec.fill(out, 7u32)?;
/// let graph = rec.instantiate()?;
/// graph.launch(&s)?;
/// assert_eq!(out.download(&s)?, vec![7; 256]);
/// # Ok(()) }
/// ```
///
/// Dropping the arena frees its buffers, each after every use recorded on it; a
/// buffer cannot be used after that:
///
/// ```compile_fail,E0597
/// # use xlog_runtime::*;
/// # fn main() -> Result<()> {
/// # let rt = Runtime::get(0)?;
/// # let s = rt.stream()?;
/// let kept;
/// {
///     let arena = GraphArena::new();
///     kept = arena.keep(rt.alloc_zeroed_on::<u32>(&s, 4)?);
/// }
/// kept.download(&s)?; // the arena, and its buffer, are gone
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct GraphArena {
    /// Each from `Box::into_raw`, freed in `Drop`: kept as raw pointers, never as
    /// `Box`es, since moving a `Box` asserts unique access to what it points to,
    /// which the borrows `keep` lends out would contradict.
    buffers: RefCell<Vec<NonNull<dyn Any>>>,
}

impl std::fmt::Debug for GraphArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphArena")
            .field("buffers", &self.buffers.borrow().len())
            .finish()
    }
}

impl GraphArena {
    /// An empty arena.
    pub fn new() -> Self {
        GraphArena::default()
    }

    /// Keeps `buffer` until the arena drops; returns it, borrowed for the arena's
    /// life.
    pub fn keep<T: DeviceCopy>(&self, buffer: DeviceBuffer<T>) -> &DeviceBuffer<T> {
        let at = NonNull::from(Box::leak(Box::new(buffer)));
        self.buffers.borrow_mut().push(at);
        // SAFETY: the buffer lives in its own heap allocation, which no `Box` owns
        // any more, so nothing asserts unique access to it; it does not move, and is
        // freed only in `Drop` (no method removes one); the returned borrow of `self`
        // keeps the arena alive, and nothing hands out a mutable reference to a kept
        // buffer.
        unsafe { at.as_ref() }
    }

    /// Number of buffers kept.
    pub fn len(&self) -> usize {
        self.buffers.borrow().len()
    }

    /// Whether no buffer is kept.
    pub fn is_empty(&self) -> bool {
        self.buffers.borrow().is_empty()
    }
}

impl Drop for GraphArena {
    fn drop(&mut self) {
        for at in self.buffers.get_mut().drain(..) {
            // SAFETY: `at` came from `Box::leak` in `keep` and is freed only here,
            // once; the borrows `keep` lent out ended with the arena's.
            drop(unsafe { Box::from_raw(at.as_ptr()) });
        }
    }
}
