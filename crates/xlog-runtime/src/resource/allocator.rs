//! [`Allocator`]: one runtime's resource stack, as its buffers see it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{AllocTag, DeviceBlock, DeviceMemoryResource};
use crate::error::{Error, Result};
use crate::stream::Stream;

/// The top of a runtime's resource stack, the runtime's id, and the count of
/// frees that failed in a destructor. Every buffer holds its allocator, so a
/// buffer outliving its `Runtime` handle still frees into the right stack.
///
/// A runtime hands its buffers one of several [`stripe`](Self::stripe)s of one
/// allocator, chosen by thread, each on cache lines of its own: the reference
/// count every buffer takes and gives back is then not one line all threads
/// contend for.
#[repr(align(128))]
pub(crate) struct Allocator {
    runtime_id: u64,
    resource: Arc<dyn DeviceMemoryResource>,
    /// The stack's answer to `tracks_streams`, asked once: a resource that answers
    /// `true` has promised the stream-ordered contract for every block it hands out.
    tracks_streams: bool,
    drop_errors: Arc<AtomicU64>,
}

impl Allocator {
    pub(crate) fn new(runtime_id: u64, resource: Box<dyn DeviceMemoryResource>) -> Allocator {
        Allocator {
            runtime_id,
            tracks_streams: resource.tracks_streams(),
            resource: Arc::from(resource),
            drop_errors: Arc::default(),
        }
    }

    /// Another handle to the same stack, runtime and failure count.
    pub(crate) fn stripe(&self) -> Allocator {
        Allocator {
            runtime_id: self.runtime_id,
            resource: self.resource.clone(),
            tracks_streams: self.tracks_streams,
            drop_errors: self.drop_errors.clone(),
        }
    }

    /// Id of the runtime this stack belongs to.
    #[inline]
    pub(crate) fn runtime_id(&self) -> u64 {
        self.runtime_id
    }

    /// The stack (for what the allocator does not wrap).
    pub(crate) fn resource(&self) -> &dyn DeviceMemoryResource {
        &*self.resource
    }

    #[inline]
    pub(crate) fn allocate(
        &self,
        bytes: usize,
        stream: &Stream,
        tag: AllocTag,
    ) -> Result<DeviceBlock> {
        self.resource.allocate(bytes, stream, tag)
    }

    /// # Safety
    /// The obligations of [`DeviceMemoryResource::deallocate`].
    #[inline]
    pub(crate) unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe { self.resource.deallocate(block, stream) }
    }

    /// Refuse device work on blocks of a stack that cannot fence streams.
    #[inline]
    pub(crate) fn require_stream_tracking(&self) -> Result<()> {
        if self.tracks_streams {
            Ok(())
        } else {
            Err(self.untrackable())
        }
    }

    #[cold]
    #[inline(never)]
    fn untrackable(&self) -> Error {
        Error::UntrackableResource {
            resource: self.resource.describe(),
        }
    }

    /// Count and log a failure that a destructor cannot return.
    pub(crate) fn report_drop_error(&self, doing: &str, e: &Error) {
        self.drop_errors.fetch_add(1, Ordering::Relaxed);
        tracing::error!(target: "xlog::runtime", runtime = self.runtime_id, "{doing} failed: {e}");
    }

    /// Failures counted by [`report_drop_error`](Self::report_drop_error).
    pub(crate) fn drop_errors(&self) -> u64 {
        self.drop_errors.load(Ordering::Relaxed)
    }
}
