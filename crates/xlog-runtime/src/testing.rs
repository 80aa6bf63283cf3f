//! Test-only switches (feature `test-switches`): fault injection at the runtime's
//! failure points, and a switch that disables cross-stream fencing so a stress test
//! can prove it would see the hazards fencing prevents. Never enable the feature in
//! a build that runs real work: the switches that break xlog's guarantees
//! ([`set_fencing`], [`crate::host::buffer`]) are `unsafe fn`s, so that a
//! dependency turning the feature on cannot make safe code unsound.
//!
//! Without the feature only the two hooks the runtime calls are compiled:
//! [`fault_point!`] expands to nothing and [`fencing_enabled`] is `true`. The one
//! injection mechanism, [`Faults`], is always compiled: `HostResource` arms its own.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result};

/// A number of pending injected failures: each pass through [`check`](Self::check)
/// takes one and fails with [`Error::InjectedFault`] until none are left.
#[derive(Debug, Default)]
pub(crate) struct Faults(AtomicUsize);

impl Faults {
    #[cfg(feature = "test-switches")]
    pub(crate) const fn new() -> Faults {
        Faults(AtomicUsize::new(0))
    }

    /// Make the next `n` checks fail.
    pub(crate) fn arm(&self, n: usize) {
        self.0.store(n, Ordering::SeqCst);
    }

    /// Failures still pending.
    #[cfg(feature = "test-switches")]
    pub(crate) fn pending(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Fail as `site` if a failure is pending (taking it).
    pub(crate) fn check(&self, site: &'static str) -> Result<()> {
        let taken = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if taken {
            Err(Error::InjectedFault { site })
        } else {
            Ok(())
        }
    }
}

/// Fail here with [`Error::InjectedFault`] when a fault is pending at `$site`
/// (feature `test-switches`); nothing otherwise.
#[cfg(feature = "test-switches")]
macro_rules! fault_point {
    ($site:ident, $name:literal) => {
        crate::testing::check(crate::testing::Site::$site, $name)?
    };
}
#[cfg(not(feature = "test-switches"))]
macro_rules! fault_point {
    ($site:ident, $name:literal) => {};
}
pub(crate) use fault_point;

/// Whether cross-stream fencing is on: always, unless a test switched it off.
#[inline]
pub(crate) fn fencing_enabled() -> bool {
    #[cfg(feature = "test-switches")]
    return fencing();
    #[cfg(not(feature = "test-switches"))]
    true
}

#[cfg(feature = "test-switches")]
pub use switches::*;

#[cfg(feature = "test-switches")]
mod switches {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::Faults;
    use crate::error::Result;

    /// Where a fault can be injected.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Site {
        /// The stream synchronisation of a reap.
        Reap,
        /// A cross-stream wait queued before a free.
        DeallocWait,
        /// Loading a module.
        ModuleLoad,
        /// `cuLaunchKernel`.
        Launch,
        /// The simulator's queueing of a group of collectives, right after one
        /// rank's part is queued (so the group fails partway).
        SimCommQueue,
    }

    const SITES: usize = 5;
    static PENDING: [Faults; SITES] = [const { Faults::new() }; SITES];
    static FENCING: AtomicBool = AtomicBool::new(true);

    fn index(site: Site) -> usize {
        match site {
            Site::Reap => 0,
            Site::DeallocWait => 1,
            Site::ModuleLoad => 2,
            Site::Launch => 3,
            Site::SimCommQueue => 4,
        }
    }

    /// Make the next `n` passes through `site` fail with [`Error::InjectedFault`].
    pub fn inject(site: Site, n: usize) {
        PENDING[index(site)].arm(n);
    }

    /// Faults still pending at `site`.
    pub fn pending(site: Site) -> usize {
        PENDING[index(site)].pending()
    }

    /// Turn cross-stream fencing on or off, process-wide. Off, preflight plans no
    /// waits and frees wait for nothing: work on different streams races.
    ///
    /// ```compile_fail,E0133
    /// // Turning fencing off is a promise only the caller can make.
    /// xlog_runtime::testing::set_fencing(false);
    /// ```
    ///
    /// # Safety
    /// 1. With `enabled == false`, until fencing is turned back on, no two pieces of
    ///    work in the process that conflict on a buffer (a write and any other use)
    ///    run on different streams, and no buffer is dropped while another stream
    ///    may still use it; or the caller accepts the data races and
    ///    use-after-free that follow, in a test that exists to observe them on
    ///    plain numbers (a stress test's teeth), never in real work.
    pub unsafe fn set_fencing(enabled: bool) {
        FENCING.store(enabled, Ordering::SeqCst);
    }

    pub(crate) fn fencing() -> bool {
        FENCING.load(Ordering::Relaxed)
    }

    pub(crate) fn check(site: Site, name: &'static str) -> Result<()> {
        PENDING[index(site)].check(name)
    }
}
