//! Device memory resources: the allocator stack every buffer comes from.
//!
//! A [`DeviceMemoryResource`] allocates blocks in stream order and frees them in
//! stream order. Backends talk to the driver ([`AsyncResource`] with
//! `cuMemAllocAsync` / `cuMemFreeAsync`, [`DirectResource`] with `cuMemAlloc` /
//! `cuMemFree` for sanitizer runs); adaptors decorate any resource and can be
//! stacked in any order: [`BudgetAdaptor`] (a global byte budget),
//! [`StatsAdaptor`] (current / peak / total bytes and counts, for resources that
//! do not keep them: every backend here does, see [`AsyncResource::stats`]),
//! [`LoggingAdaptor`] (CSV lines and `tracing` events), [`PoolAdaptor`] (a caching
//! pool: hot sizes served from a host-side free list, reused across streams behind
//! the event wait their last free needs). [`HostResource`] allocates host memory so the
//! adaptors and the accounting can be tested without a GPU; it never backs a launch.
//!
//! # The stream-ordered contract
//!
//! - `allocate(bytes, stream, tag)` returns memory usable on `stream` once the work
//!   queued there before the call has run. Other streams must wait for the
//!   allocation point first; the buffer tracker does that (see `track`).
//! - `deallocate(block, stream)` releases the block after everything queued on
//!   `stream` so far. The caller first makes `stream` wait for every use of the
//!   block on other streams.
//! - `bytes_outstanding()` counts live blocks plus freed blocks whose stream has
//!   not been synchronised by a reap yet. `reap_pending()` synchronises those
//!   streams and stops counting only what it synchronised.
//! - Zero-byte allocations are legal, return a null block and touch no driver call.
//! - A block whose memory was freed is stale: presenting it again is refused with
//!   [`Error::StaleBlock`](crate::Error::StaleBlock) and changes nothing.

mod allocator;
mod async_pool;
mod budget;
mod direct;
mod host;
mod ledger;
mod logging;
mod pool;
mod stats;

pub use async_pool::AsyncResource;
pub use budget::{BudgetAdaptor, BudgetHandle};
pub use direct::DirectResource;
pub use host::HostResource;
pub use logging::LoggingAdaptor;
pub use pool::{PoolAdaptor, PoolHandle, PoolStats, SMALL_MAX};
pub use stats::{AllocStats, StatsAdaptor, StatsHandle};

pub(crate) use allocator::Allocator;
pub(crate) use ledger::Ledger;

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::stream::Stream;

/// Refuse a host placeholder, or a stream of another device than `device`, as
/// the stream of the backend `backend` (stream-ordered calls run on the
/// stream's device, whatever the backend's is).
pub(crate) fn require_device_stream(backend: &str, device: u32, stream: &Stream) -> Result<()> {
    let reason = if !stream.has_device() {
        format!("{} is a host placeholder, not a CUDA stream", stream.id())
    } else if stream.device_ordinal() != device {
        format!(
            "{} is on device {}, the resource allocates on device {device}",
            stream.id(),
            stream.device_ordinal()
        )
    } else {
        return Ok(());
    };
    Err(crate::error::Error::InvalidArgument {
        what: backend.into(),
        reason,
    })
}

/// Allocation number, unique in the process: the same address reused later gets a
/// new one. Numbers say nothing about order: each thread draws them from a batch
/// of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Generation(pub u64);

/// Generations a thread takes from the process-wide counter at a time, so that an
/// allocation costs no atomic read-modify-write (one per batch instead).
pub(crate) const GENERATION_BATCH: u64 = 256;

impl Generation {
    /// A fresh generation, distinct from every other in the process.
    pub fn next() -> Generation {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            /// The next number of this thread's batch and the batch's end.
            static BATCH: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        BATCH.with(|batch| {
            let (mut next, mut end) = batch.get();
            if next == end {
                next = NEXT.fetch_add(GENERATION_BATCH, Ordering::Relaxed);
                end = next + GENERATION_BATCH;
            }
            batch.set((next + 1, end));
            Generation(next)
        })
    }
}

/// A caller-chosen label carried into logs and statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AllocTag(pub &'static str);

impl AllocTag {
    /// The tag of allocations that named none.
    pub const UNTAGGED: AllocTag = AllocTag("untagged");
}

impl fmt::Display for AllocTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Full identity of a block: device, address and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockId {
    /// Device ordinal.
    pub device: u32,
    /// Device address (0 for zero-byte blocks).
    pub ptr: u64,
    /// Allocation generation.
    pub generation: Generation,
}

/// One allocation handed out by a resource. Not `Clone`: it is given back once.
#[derive(Debug)]
pub struct DeviceBlock {
    id: BlockId,
    bytes: usize,
    tag: AllocTag,
}

impl DeviceBlock {
    /// Describe a block a resource has just allocated. Resource implementations
    /// call this; everyone else receives blocks from a resource.
    pub fn new(device: u32, ptr: u64, bytes: usize, tag: AllocTag) -> DeviceBlock {
        DeviceBlock {
            id: BlockId {
                device,
                ptr,
                generation: Generation::next(),
            },
            bytes,
            tag,
        }
    }

    /// The block's identity.
    pub fn id(&self) -> BlockId {
        self.id
    }

    /// Device address.
    pub fn ptr(&self) -> u64 {
        self.id.ptr
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The tag it was allocated with.
    pub fn tag(&self) -> AllocTag {
        self.tag
    }
}

/// A stream-ordered device memory allocator (see the module docs for the contract).
///
/// # Safety
///
/// The runtime hands blocks of a resource to kernels and copies, so implementing the
/// trait promises:
///
/// 1. When [`tracks_streams`](Self::tracks_streams) returns `true`, every block
///    `allocate` returns addresses at least `bytes` bytes of device memory on
///    [`device_ordinal`](Self::device_ordinal), usable on `stream` after the work
///    queued there before the call, and not handed out again until it has been given
///    back with `deallocate`.
/// 2. `deallocate(block, stream)` frees the memory only after the work queued on
///    `stream` before the call has finished.
/// 3. A resource that cannot keep 1 and 2 returns `false` from `tracks_streams`; the
///    runtime then never passes its blocks to the device.
///
/// Adaptors that forward to a resource that keeps the contract keep it too.
pub unsafe trait DeviceMemoryResource: Send + Sync {
    /// Allocate `bytes` bytes ordered on `stream`.
    fn allocate(&self, bytes: usize, stream: &Stream, tag: AllocTag) -> Result<DeviceBlock>;

    /// Give `block` back, ordered after the work queued on `stream` so far.
    ///
    /// On error the block is not freed and stays counted as outstanding.
    ///
    /// # Safety
    /// 1. `block` was allocated by this resource (or the resource it decorates).
    /// 2. Every use of the block's memory on any stream is ordered before the
    ///    current tail of `stream`, and no later work will touch it.
    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()>;

    /// The CUDA ordinal this resource allocates on.
    fn device_ordinal(&self) -> u32;

    /// Live bytes plus freed bytes not yet reaped.
    fn bytes_outstanding(&self) -> usize;

    /// Synchronise the streams frees were queued on; returns the bytes retired.
    fn reap_pending(&self) -> Result<usize>;

    /// Whether `deallocate` orders frees after work on its stream and the memory is
    /// device memory, which the launch path requires to fence streams.
    fn tracks_streams(&self) -> bool;

    /// A short description of the stack, e.g. `budget(stats(async))` (the default
    /// stack is `pool(budget(async))`: its statistics are the backend's own).
    fn describe(&self) -> String;
}

macro_rules! forward_resource {
    ($ty:ty) => {
        // SAFETY: every method forwards to a resource that keeps the contract.
        unsafe impl<R: DeviceMemoryResource + ?Sized> DeviceMemoryResource for $ty {
            fn allocate(
                &self,
                bytes: usize,
                stream: &Stream,
                tag: AllocTag,
            ) -> Result<DeviceBlock> {
                (**self).allocate(bytes, stream, tag)
            }
            unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
                // SAFETY: the caller's obligations are forwarded unchanged.
                unsafe { (**self).deallocate(block, stream) }
            }
            fn device_ordinal(&self) -> u32 {
                (**self).device_ordinal()
            }
            fn bytes_outstanding(&self) -> usize {
                (**self).bytes_outstanding()
            }
            fn reap_pending(&self) -> Result<usize> {
                (**self).reap_pending()
            }
            fn tracks_streams(&self) -> bool {
                (**self).tracks_streams()
            }
            fn describe(&self) -> String {
                (**self).describe()
            }
        }
    };
}

/// The trait methods an adaptor passes to `self.upstream` unchanged.
macro_rules! forward_to_upstream {
    () => {
        fn device_ordinal(&self) -> u32 {
            self.upstream.device_ordinal()
        }

        fn bytes_outstanding(&self) -> usize {
            self.upstream.bytes_outstanding()
        }

        fn reap_pending(&self) -> Result<usize> {
            self.upstream.reap_pending()
        }

        fn tracks_streams(&self) -> bool {
            self.upstream.tracks_streams()
        }
    };
}
pub(crate) use forward_to_upstream;

forward_resource!(Arc<R>);
forward_resource!(Box<R>);

#[cfg(test)]
mod conformance;

#[cfg(test)]
mod tests {
    use super::Generation;

    /// Threads drawing from batches of their own never hand out a number twice,
    /// across batch boundaries included.
    #[test]
    fn generations_are_unique_across_threads() {
        let per_thread = 3 * super::GENERATION_BATCH as usize + 7;
        let mut all: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(move || {
                        (0..per_thread)
                            .map(|_| Generation::next().0)
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
