//! [`BudgetAdaptor`]: a global byte budget over any resource.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::{AllocTag, DeviceBlock, DeviceMemoryResource};
use crate::error::{Error, Result};
use crate::stream::Stream;

#[derive(Debug)]
struct Budget {
    limit: AtomicUsize,
    used: AtomicUsize,
}

/// Refuses allocations that would take live bytes past a limit.
///
/// Reservation is one atomic compare-and-swap: concurrent allocations can never
/// overshoot the limit. A refused allocation changes no counter; an upstream
/// failure after reservation rolls the reservation back.
pub struct BudgetAdaptor<R> {
    upstream: R,
    budget: Arc<Budget>,
}

/// A handle to read or change a budget after it has been stacked.
#[derive(Clone, Debug)]
pub struct BudgetHandle(Arc<Budget>);

impl BudgetHandle {
    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.0.limit.load(Ordering::Acquire)
    }

    /// Bytes currently reserved by live blocks.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::Acquire)
    }

    /// Bytes still available.
    pub fn remaining(&self) -> usize {
        self.limit().saturating_sub(self.used())
    }

    /// Change the limit. Live blocks above a lowered limit stay valid; new
    /// allocations are refused until enough is freed.
    pub fn set_limit(&self, limit: usize) {
        self.0.limit.store(limit, Ordering::Release);
    }
}

impl<R: DeviceMemoryResource> BudgetAdaptor<R> {
    /// Wrap `upstream` with a budget of `limit` bytes.
    pub fn new(upstream: R, limit: usize) -> Self {
        BudgetAdaptor {
            upstream,
            budget: Arc::new(Budget {
                limit: AtomicUsize::new(limit),
                used: AtomicUsize::new(0),
            }),
        }
    }

    /// The decorated resource.
    pub fn upstream(&self) -> &R {
        &self.upstream
    }

    /// A handle to this budget.
    pub fn handle(&self) -> BudgetHandle {
        BudgetHandle(self.budget.clone())
    }

    fn reserve(&self, bytes: usize) -> Result<()> {
        let limit = self.budget.limit.load(Ordering::Acquire);
        self.budget
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= limit)
            })
            .map(|_| ())
            .map_err(|used| Error::BudgetExceeded {
                requested: bytes,
                remaining: limit.saturating_sub(used),
                limit,
                cached: 0,
            })
    }

    fn release(&self, bytes: usize) {
        self.budget.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

// SAFETY: allocation and free are forwarded to `upstream` unchanged (a refused
// allocation never reaches it), so upstream's guarantees hold for this adaptor.
unsafe impl<R: DeviceMemoryResource> DeviceMemoryResource for BudgetAdaptor<R> {
    fn allocate(&self, bytes: usize, stream: &Stream, tag: AllocTag) -> Result<DeviceBlock> {
        self.reserve(bytes)?;
        self.upstream
            .allocate(bytes, stream, tag)
            .inspect_err(|_| self.release(bytes))
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        let bytes = block.bytes();
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe { self.upstream.deallocate(block, stream) }?;
        self.release(bytes);
        Ok(())
    }

    super::forward_to_upstream!();

    fn describe(&self) -> String {
        format!("budget({})", self.upstream.describe())
    }
}
