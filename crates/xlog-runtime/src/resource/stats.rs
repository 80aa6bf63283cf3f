//! [`StatsAdaptor`]: allocation statistics over any resource.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::{AllocTag, DeviceBlock, DeviceMemoryResource};
use crate::error::Result;
use crate::stream::Stream;

/// A snapshot of allocation statistics.
///
/// `current_*` are live values; `peak_*` and `total_*` cover the window since the
/// last [`StatsHandle::reset_window`] (or since creation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Live bytes.
    pub current_bytes: usize,
    /// Highest live bytes in the window.
    pub peak_bytes: usize,
    /// Bytes allocated in the window.
    pub total_bytes: usize,
    /// Live blocks.
    pub current_count: usize,
    /// Highest live blocks in the window.
    pub peak_count: usize,
    /// Blocks allocated in the window.
    pub total_count: usize,
}

/// Lifetime counters moved by every allocation (`allocated_*`) and every free
/// (`freed_*`): one read-modify-write each, the current values being their
/// differences. Peaks and the window's start move only at a new peak or a reset.
#[derive(Debug, Default)]
struct Counters {
    allocated_bytes: AtomicUsize,
    allocated_count: AtomicUsize,
    freed_bytes: AtomicUsize,
    freed_count: AtomicUsize,
    peak_bytes: AtomicUsize,
    peak_count: AtomicUsize,
    /// `allocated_*` when the window started.
    window_bytes: AtomicUsize,
    window_count: AtomicUsize,
}

impl Counters {
    /// Live bytes and blocks. The freed counters are read first: every free
    /// follows its allocation, so they never exceed the allocated ones read after.
    fn current(&self) -> (usize, usize) {
        let freed = (
            self.freed_bytes.load(Ordering::Acquire),
            self.freed_count.load(Ordering::Acquire),
        );
        (
            self.allocated_bytes
                .load(Ordering::Acquire)
                .saturating_sub(freed.0),
            self.allocated_count
                .load(Ordering::Acquire)
                .saturating_sub(freed.1),
        )
    }
}

/// Counts what passes through it; forwards everything to `upstream`.
pub struct StatsAdaptor<R> {
    upstream: R,
    counters: Arc<Counters>,
}

/// A handle to read statistics after the adaptor has been stacked.
#[derive(Clone, Debug)]
pub struct StatsHandle(Arc<Counters>);

impl StatsHandle {
    /// Current statistics.
    pub fn snapshot(&self) -> AllocStats {
        let c = &self.0;
        let (current_bytes, current_count) = c.current();
        AllocStats {
            current_bytes,
            peak_bytes: c.peak_bytes.load(Ordering::Acquire).max(current_bytes),
            total_bytes: c
                .allocated_bytes
                .load(Ordering::Acquire)
                .saturating_sub(c.window_bytes.load(Ordering::Acquire)),
            current_count,
            peak_count: c.peak_count.load(Ordering::Acquire).max(current_count),
            total_count: c
                .allocated_count
                .load(Ordering::Acquire)
                .saturating_sub(c.window_count.load(Ordering::Acquire)),
        }
    }

    /// Start a new window: peaks restart from the current values, totals from zero.
    pub fn reset_window(&self) {
        let c = &self.0;
        let (bytes, count) = c.current();
        c.peak_bytes.store(bytes, Ordering::Release);
        c.peak_count.store(count, Ordering::Release);
        c.window_bytes
            .store(c.allocated_bytes.load(Ordering::Acquire), Ordering::Release);
        c.window_count
            .store(c.allocated_count.load(Ordering::Acquire), Ordering::Release);
    }
}

impl<R: DeviceMemoryResource> StatsAdaptor<R> {
    /// Wrap `upstream`.
    pub fn new(upstream: R) -> Self {
        StatsAdaptor {
            upstream,
            counters: Arc::default(),
        }
    }

    /// The decorated resource.
    pub fn upstream(&self) -> &R {
        &self.upstream
    }

    /// A handle to these statistics.
    pub fn handle(&self) -> StatsHandle {
        StatsHandle(self.counters.clone())
    }
}

// SAFETY: allocation and free are forwarded to `upstream` unchanged (a refused
// allocation never reaches it), so upstream's guarantees hold for this adaptor.
unsafe impl<R: DeviceMemoryResource> DeviceMemoryResource for StatsAdaptor<R> {
    fn allocate(&self, bytes: usize, stream: &Stream, tag: AllocTag) -> Result<DeviceBlock> {
        let block = self.upstream.allocate(bytes, stream, tag)?;
        let c = &self.counters;
        let bytes_now = c.allocated_bytes.fetch_add(bytes, Ordering::AcqRel) + bytes
            - c.freed_bytes.load(Ordering::Acquire);
        let count_now = c.allocated_count.fetch_add(1, Ordering::AcqRel) + 1
            - c.freed_count.load(Ordering::Acquire);
        // Peaks rarely move in steady state: a load avoids a read-modify-write.
        if bytes_now > c.peak_bytes.load(Ordering::Relaxed) {
            c.peak_bytes.fetch_max(bytes_now, Ordering::AcqRel);
        }
        if count_now > c.peak_count.load(Ordering::Relaxed) {
            c.peak_count.fetch_max(count_now, Ordering::AcqRel);
        }
        Ok(block)
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        let bytes = block.bytes();
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe { self.upstream.deallocate(block, stream) }?;
        self.counters.freed_bytes.fetch_add(bytes, Ordering::AcqRel);
        self.counters.freed_count.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    super::forward_to_upstream!();

    fn describe(&self) -> String {
        format!("stats({})", self.upstream.describe())
    }
}
