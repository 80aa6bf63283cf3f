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

#[derive(Debug, Default)]
struct Counters {
    current_bytes: AtomicUsize,
    peak_bytes: AtomicUsize,
    total_bytes: AtomicUsize,
    current_count: AtomicUsize,
    peak_count: AtomicUsize,
    total_count: AtomicUsize,
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
        AllocStats {
            current_bytes: c.current_bytes.load(Ordering::Acquire),
            peak_bytes: c.peak_bytes.load(Ordering::Acquire),
            total_bytes: c.total_bytes.load(Ordering::Acquire),
            current_count: c.current_count.load(Ordering::Acquire),
            peak_count: c.peak_count.load(Ordering::Acquire),
            total_count: c.total_count.load(Ordering::Acquire),
        }
    }

    /// Start a new window: peaks restart from the current values, totals from zero.
    pub fn reset_window(&self) {
        let c = &self.0;
        c.peak_bytes
            .store(c.current_bytes.load(Ordering::Acquire), Ordering::Release);
        c.peak_count
            .store(c.current_count.load(Ordering::Acquire), Ordering::Release);
        c.total_bytes.store(0, Ordering::Release);
        c.total_count.store(0, Ordering::Release);
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
        let now = c.current_bytes.fetch_add(bytes, Ordering::AcqRel) + bytes;
        // Peaks rarely move in steady state: a load avoids a read-modify-write.
        if now > c.peak_bytes.load(Ordering::Relaxed) {
            c.peak_bytes.fetch_max(now, Ordering::AcqRel);
        }
        c.total_bytes.fetch_add(bytes, Ordering::AcqRel);
        let n = c.current_count.fetch_add(1, Ordering::AcqRel) + 1;
        if n > c.peak_count.load(Ordering::Relaxed) {
            c.peak_count.fetch_max(n, Ordering::AcqRel);
        }
        c.total_count.fetch_add(1, Ordering::AcqRel);
        Ok(block)
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        let bytes = block.bytes();
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe { self.upstream.deallocate(block, stream) }?;
        self.counters
            .current_bytes
            .fetch_sub(bytes, Ordering::AcqRel);
        self.counters.current_count.fetch_sub(1, Ordering::AcqRel);
        Ok(())
    }

    super::forward_to_upstream!();

    fn describe(&self) -> String {
        format!("stats({})", self.upstream.describe())
    }
}
