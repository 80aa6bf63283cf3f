//! The running simulated thread: a thread-local pointer to its [`ThreadCtx`], set by
//! the coroutine that runs it each time it is resumed.

use core::cell::Cell;
use core::ptr;

use corosensei::Yielder;

use super::block::{Block, Resume, Suspend};
use crate::thread::Dim3;
use crate::warp::WARP_SIZE;

std::thread_local! {
    /// The simulated thread running on this OS thread, or null outside a launch (and
    /// in the block scheduler, between two threads).
    static CURRENT: Cell<*const ThreadCtx> = const { Cell::new(ptr::null()) };
}

/// What one simulated thread reads: its indices and the block it belongs to. Lives on
/// the stack of the coroutine running the thread, for as long as the thread runs.
pub(crate) struct ThreadCtx {
    /// `threadIdx`.
    pub(crate) thread_idx: Dim3,
    /// `blockIdx`.
    pub(crate) block_idx: Dim3,
    /// `blockDim`.
    pub(crate) block_dim: Dim3,
    /// `gridDim`.
    pub(crate) grid_dim: Dim3,
    /// The thread's linear index in its block.
    pub(crate) linear: u32,
    pub(super) block: *const Block<'static>,
    yielder: *const Yielder<Resume, Suspend>,
}

impl ThreadCtx {
    /// The context of thread `linear` of `block`, suspending through `yielder`.
    pub(super) fn new(block: &Block<'_>, linear: u32, yielder: &Yielder<Resume, Suspend>) -> Self {
        let d = block.launch.block;
        let thread_idx = if d.y == 1 && d.z == 1 {
            Dim3 {
                x: linear,
                y: 0,
                z: 0,
            }
        } else {
            Dim3 {
                x: linear % d.x,
                y: linear / d.x % d.y,
                z: linear / (d.x * d.y),
            }
        };
        ThreadCtx {
            thread_idx,
            block_idx: block.idx,
            block_dim: d,
            grid_dim: block.launch.grid,
            linear,
            block: ptr::from_ref(block).cast(),
            yielder,
        }
    }

    /// `%laneid`.
    #[inline(always)]
    pub(crate) fn lane(&self) -> u32 {
        self.linear % WARP_SIZE
    }

    /// The block this thread belongs to.
    #[inline(always)]
    pub(super) fn block(&self) -> &Block<'static> {
        // SAFETY: the block outlives every coroutine that runs its threads (the
        // scheduler drives them all to their end before `run_block` returns), and so
        // every context of its threads.
        unsafe { &*self.block }
    }

    /// Makes this the running thread of its OS thread.
    #[inline(always)]
    pub(super) fn enter(&self) {
        CURRENT.with(|c| c.set(self));
    }

    /// Suspends the thread (it waits at a barrier or collective, or yields in a spin
    /// wait) until the scheduler resumes it. Unwinds with [`Aborted`] when the launch
    /// stopped meanwhile.
    pub(super) fn suspend(&self, why: Suspend) {
        // SAFETY: the yielder belongs to the coroutine running this thread, whose
        // stack holds this context: it is live, and we are on that coroutine now.
        let resumed = unsafe { &*self.yielder }.suspend(why);
        self.enter();
        self.block().running.set(self.linear);
        if let Resume::Abort = resumed {
            std::panic::resume_unwind(std::boxed::Box::new(Aborted));
        }
    }
}

/// The panic payload that unwinds a suspended thread when its launch stops; it
/// bypasses the panic hook (`resume_unwind`).
pub(super) struct Aborted;

/// Clears the running thread (the scheduler calls it between threads).
pub(super) fn leave() {
    CURRENT.with(|c| c.set(ptr::null()));
}

/// Whether a simulated thread runs on this OS thread now.
pub(super) fn in_launch() -> bool {
    !CURRENT.with(Cell::get).is_null()
}

/// The number of the block whose thread runs on this OS thread now, or 0 outside a
/// launch: blocks are numbered from 1 as they start, across every launch of the
/// process, and a number is never reused. Shared-memory handles record it when they
/// are made and compare it before every access ([`crate::shared`]).
#[inline(always)]
pub(crate) fn block_number() -> u64 {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        return 0;
    }
    // SAFETY: as in `current`: a non-null pointer is the context of the running
    // simulated thread, whose block outlives it.
    unsafe { &*p }.block().number
}

/// The simulated thread running on this OS thread now, unique in the process (its
/// block's [`block_number`] and its linear index in the block), or 0 outside a
/// launch. Witnesses record it when they are made and compare it when they are
/// used ([`crate::thread`]).
#[inline(always)]
pub(crate) fn thread_number() -> u64 {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        return 0;
    }
    // SAFETY: as in `block_number`.
    let t = unsafe { &*p };
    // The linear index is a u32: 32 bits each, no two threads of the process alike
    // until 2^32 blocks have started.
    (t.block().number << 32) | t.linear as u64
}

/// The running simulated thread; panics naming `what` outside a launch.
///
/// The reference is valid while the calling simulated thread runs: device functions
/// use it within their call and never keep it.
#[inline(always)]
#[track_caller]
pub(crate) fn current(what: &'static str) -> &'static ThreadCtx {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        outside_launch(what);
    }
    // SAFETY: a non-null pointer is the context of the simulated thread running on
    // this OS thread now (set by `enter`, cleared by the scheduler when the thread
    // suspends or ends); it lives on that thread's coroutine stack while it runs.
    unsafe { &*p }
}

/// Panics: `what` was called outside a kernel launch.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn outside_launch(what: &str) -> ! {
    panic!("xlog_device::{what} runs only inside a kernel launch (GPU or the xlog simulator)")
}
