//! Allocation statistics: [`Counts`] (the arithmetic, kept under a lock by whoever
//! counts), [`StatsHandle`] (how a caller reads them) and [`StatsAdaptor`] (counts
//! over any resource).
//!
//! The backends keep their own counts in their ledgers, in the lock they take for
//! every allocation and free anyway, so the default stack counts live bytes once
//! and pays no extra atomic operation for its statistics. The adaptor is for
//! resources written outside this crate.

use std::sync::{Arc, Mutex};

use super::{AllocTag, DeviceBlock, DeviceMemoryResource};
use crate::error::Result;
use crate::stream::Stream;
use crate::sync::Unpoisoned;

/// A snapshot of allocation statistics.
///
/// `current_*` are live values; `peak_*` and `total_*` cover the window since the
/// last [`StatsHandle::reset_window`] (or since creation). Zero-byte blocks count
/// as blocks. A snapshot is taken under the counter's lock: every figure in it
/// held at one instant.
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

/// One statistic (bytes or blocks): live, highest live and allocated in the window.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    live: usize,
    peak: usize,
    total: usize,
}

impl Tally {
    fn add(&mut self, n: usize) {
        self.total = self.total.wrapping_add(n);
        self.restore(n);
    }

    fn restore(&mut self, n: usize) {
        self.live += n;
        self.peak = self.peak.max(self.live);
    }

    /// A free the counter never saw allocated (a broken resource contract) cannot
    /// take the live value below zero.
    fn sub(&mut self, n: usize) {
        self.live = self.live.saturating_sub(n);
    }

    fn reset(&mut self) {
        self.peak = self.live;
        self.total = 0;
    }
}

/// Live, peak and window totals of bytes and blocks. Plain numbers: the owner
/// keeps them under its lock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    bytes: Tally,
    blocks: Tally,
}

impl Counts {
    /// A block of `bytes` handed out.
    pub(crate) fn allocated(&mut self, bytes: usize) {
        self.bytes.add(bytes);
        self.blocks.add(1);
    }

    /// A block of `bytes` given back.
    pub(crate) fn freed(&mut self, bytes: usize) {
        self.bytes.sub(bytes);
        self.blocks.sub(1);
    }

    /// A block of `bytes` live again after its free failed: not a new allocation.
    pub(crate) fn restored(&mut self, bytes: usize) {
        self.bytes.restore(bytes);
        self.blocks.restore(1);
    }

    /// Live bytes.
    pub(crate) fn live_bytes(&self) -> usize {
        self.bytes.live
    }

    fn snapshot(&self) -> AllocStats {
        AllocStats {
            current_bytes: self.bytes.live,
            peak_bytes: self.bytes.peak,
            total_bytes: self.bytes.total,
            current_count: self.blocks.live,
            peak_count: self.blocks.peak,
            total_count: self.blocks.total,
        }
    }

    fn reset_window(&mut self) {
        self.bytes.reset();
        self.blocks.reset();
    }
}

/// Whatever holds [`Counts`] under a lock: a ledger's books, an adaptor's counter.
pub(crate) trait Counted: Send + Sync {
    /// Run `f` on the counts, under the lock.
    fn with_counts(&self, f: &mut dyn FnMut(&mut Counts));
}

impl Counted for Mutex<Counts> {
    fn with_counts(&self, f: &mut dyn FnMut(&mut Counts)) {
        f(&mut self.lock_unpoisoned())
    }
}

/// A handle to read statistics after their resource has been stacked.
#[derive(Clone)]
pub struct StatsHandle(Arc<dyn Counted>);

impl std::fmt::Debug for StatsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StatsHandle")
            .field(&self.snapshot())
            .finish()
    }
}

impl StatsHandle {
    pub(crate) fn new(counted: Arc<dyn Counted>) -> StatsHandle {
        StatsHandle(counted)
    }

    /// Current statistics.
    pub fn snapshot(&self) -> AllocStats {
        let mut snap = AllocStats::default();
        self.0.with_counts(&mut |c| snap = c.snapshot());
        snap
    }

    /// Start a new window: peaks restart from the current values, totals from zero.
    pub fn reset_window(&self) {
        self.0.with_counts(&mut Counts::reset_window);
    }
}

/// Counts what passes through it; forwards everything to `upstream`.
///
/// The built-in backends count for themselves (`AsyncResource::stats` and the
/// like); this adaptor gives the same statistics over any other resource, at the
/// cost of a lock per allocation and per free.
pub struct StatsAdaptor<R> {
    upstream: R,
    counts: Arc<Mutex<Counts>>,
}

impl<R: DeviceMemoryResource> StatsAdaptor<R> {
    /// Wrap `upstream`.
    pub fn new(upstream: R) -> Self {
        StatsAdaptor {
            upstream,
            counts: Arc::default(),
        }
    }

    /// The decorated resource.
    pub fn upstream(&self) -> &R {
        &self.upstream
    }

    /// A handle to these statistics.
    pub fn handle(&self) -> StatsHandle {
        StatsHandle::new(self.counts.clone())
    }
}

// SAFETY: allocation and free are forwarded to `upstream` unchanged (a refused
// allocation never reaches it), so upstream's guarantees hold for this adaptor.
unsafe impl<R: DeviceMemoryResource> DeviceMemoryResource for StatsAdaptor<R> {
    fn allocate(&self, bytes: usize, stream: &Stream, tag: AllocTag) -> Result<DeviceBlock> {
        let block = self.upstream.allocate(bytes, stream, tag)?;
        self.counts.lock_unpoisoned().allocated(bytes);
        Ok(block)
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        let bytes = block.bytes();
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe { self.upstream.deallocate(block, stream) }?;
        self.counts.lock_unpoisoned().freed(bytes);
        Ok(())
    }

    super::forward_to_upstream!();

    fn describe(&self) -> String {
        format!("stats({})", self.upstream.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window starts at the live values: its peak from what is live, its totals
    /// from zero; a restored block is live again but not allocated again.
    #[test]
    fn windows_and_restores() {
        let mut c = Counts::default();
        c.allocated(100);
        c.allocated(50);
        c.freed(100);
        c.reset_window();
        assert_eq!(
            c.snapshot(),
            AllocStats {
                current_bytes: 50,
                peak_bytes: 50,
                total_bytes: 0,
                current_count: 1,
                peak_count: 1,
                total_count: 0,
            }
        );
        c.freed(50);
        c.restored(50);
        c.allocated(0);
        let s = c.snapshot();
        assert_eq!((s.current_bytes, s.current_count), (50, 2));
        assert_eq!((s.total_bytes, s.total_count), (0, 1));
    }

    /// A free never seen allocated leaves the live value at zero rather than
    /// wrapping into an enormous one; window totals wrap rather than overflow.
    #[test]
    fn counters_neither_underflow_nor_overflow() {
        let mut c = Counts::default();
        c.freed(64);
        assert_eq!(c.snapshot(), AllocStats::default());
        c.bytes.total = usize::MAX - 10;
        c.allocated(100);
        let s = c.snapshot();
        assert_eq!(
            (s.current_bytes, s.peak_bytes, s.total_bytes),
            (100, 100, 89)
        );
    }
}
