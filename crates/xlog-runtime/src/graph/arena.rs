//! [`GraphArena`]: buffers a graph's library calls allocate, kept for as long as
//! the graph may run.

use std::any::Any;
use std::cell::RefCell;

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
    buffers: RefCell<Vec<Box<dyn Any>>>,
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
        let boxed = Box::new(buffer);
        let at: *const DeviceBuffer<T> = &*boxed;
        self.buffers.borrow_mut().push(boxed);
        // SAFETY: the buffer lives in its own heap allocation, which does not move
        // when the vector does and is dropped only with the arena (no method removes
        // one); the returned borrow of `self` keeps the arena alive, and nothing
        // hands out a mutable reference to a kept buffer.
        unsafe { &*at }
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
