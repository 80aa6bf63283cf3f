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

/// One statistic (bytes or blocks): the live value (`live`, one read-modify-write
/// per allocation and per free, so every value it holds was really live) and the
/// lifetime total of allocations (`allocated`); the window's peak and start move
/// only at a new peak or a reset. Counters wrap rather than overflow.
#[derive(Debug, Default)]
struct Tally {
    live: AtomicUsize,
    allocated: AtomicUsize,
    peak: AtomicUsize,
    /// `allocated` when the window started.
    window: AtomicUsize,
}

impl Tally {
    /// A live value as counted: a free counted before its allocation was seen
    /// (another thread's, a transient of concurrent updates) reads as zero rather
    /// than as a wrapped, enormous value.
    fn floor(v: usize) -> usize {
        if v > isize::MAX as usize {
            0
        } else {
            v
        }
    }

    /// Counts an allocation of `n`.
    fn add(&self, n: usize) {
        self.allocated.fetch_add(n, Ordering::AcqRel);
        let now = Self::floor(self.live.fetch_add(n, Ordering::AcqRel).wrapping_add(n));
        // Peaks rarely move in steady state: a load avoids a read-modify-write.
        if now > self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(now, Ordering::AcqRel);
        }
    }

    /// Counts a free of `n`.
    fn sub(&self, n: usize) {
        self.live.fetch_sub(n, Ordering::AcqRel);
    }

    /// The live value.
    fn current(&self) -> usize {
        Self::floor(self.live.load(Ordering::Acquire))
    }

    /// `(current, peak, total)` of the window. The live value read here raises the
    /// peak too (it was really live: one counter holds it), so no later read shows
    /// a peak below a value a reader has seen (an allocation's own peak update may
    /// land after a reader sees its bytes). The window start is read before the
    /// total it is subtracted from, so a concurrent reset cannot make the
    /// difference wrap.
    fn read(&self) -> (usize, usize, usize) {
        let window = self.window.load(Ordering::Acquire);
        let total = self.allocated.load(Ordering::Acquire).wrapping_sub(window);
        let current = self.current();
        let peak = self.peak.fetch_max(current, Ordering::AcqRel).max(current);
        (current, peak, total)
    }

    /// Starts a new window: the peak from the live value, the total from zero.
    fn reset(&self) {
        self.peak.store(self.current(), Ordering::Release);
        self.window
            .store(self.allocated.load(Ordering::Acquire), Ordering::Release);
    }
}

/// The adaptor's statistics, shared with its handles.
#[derive(Debug, Default)]
struct Counters {
    bytes: Tally,
    blocks: Tally,
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
        let (current_bytes, peak_bytes, total_bytes) = self.0.bytes.read();
        let (current_count, peak_count, total_count) = self.0.blocks.read();
        AllocStats {
            current_bytes,
            peak_bytes,
            total_bytes,
            current_count,
            peak_count,
            total_count,
        }
    }

    /// Start a new window: peaks restart from the current values, totals from zero.
    pub fn reset_window(&self) {
        self.0.bytes.reset();
        self.0.blocks.reset();
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
        self.counters.bytes.add(bytes);
        self.counters.blocks.add(1);
        Ok(block)
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        let bytes = block.bytes();
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe { self.upstream.deallocate(block, stream) }?;
        self.counters.bytes.sub(bytes);
        self.counters.blocks.sub(1);
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

    /// Another thread's free of a block allocated after this thread's add can be
    /// counted before this thread's add: the live value floors at zero instead of
    /// wrapping into a bogus peak.
    #[test]
    fn frees_counted_ahead_of_their_allocations_never_wrap() {
        let t = Tally::default();
        t.sub(64);
        t.add(16);
        assert_eq!(t.read(), (0, 0, 16));
        t.reset();
        t.add(64);
        assert_eq!(t.read(), (16, 16, 64));
        t.sub(16);
        assert_eq!(t.read(), (0, 16, 64));
    }

    /// An allocation's bytes are visible to a reader before its own peak update
    /// lands (modelled by counting them without `add`): once a snapshot has shown
    /// a live value, no later snapshot shows a peak below it, frees or not.
    #[test]
    fn a_peak_never_reads_below_a_live_value_already_seen() {
        let t = Tally::default();
        t.allocated.fetch_add(100, Ordering::AcqRel);
        t.live.fetch_add(100, Ordering::AcqRel);
        assert_eq!(t.read(), (100, 100, 100));
        t.sub(100);
        assert_eq!(t.read(), (0, 100, 100));
    }

    /// Lifetime counters wrap after 2^64 bytes: counting goes on (no overflow
    /// panic in a debug build) and live values and totals stay right.
    #[test]
    fn lifetime_counters_wrap_without_losing_live_values() {
        let start = usize::MAX - 10;
        let t = Tally {
            allocated: AtomicUsize::new(start),
            window: AtomicUsize::new(start),
            ..Tally::default()
        };
        t.add(100);
        assert_eq!(t.read(), (100, 100, 100));
        t.sub(40);
        t.add(8);
        assert_eq!(t.read(), (68, 100, 108));
        t.sub(68);
        assert_eq!(t.read(), (0, 100, 108));
    }
}
