//! The CPU simulator: runs kernel bodies on the host with the GPU's execution model.
//!
//! [`run`] executes a kernel body once per simulated thread of a [`Launch`]. Every
//! hardware function of this crate reads the simulated launch when compiled for the
//! host: indices come from a thread-local context, block barriers and warp
//! collectives exchange values between the threads of one block, shared memory is a
//! per-block host allocation, and atomics are host atomics on the same memory.
//! Device pointers are host addresses (the runtime's simulated backend allocates host
//! memory), so views dereference them directly.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use xlog_device::sim::{self, Launch};
//! use xlog_device::{barrier, thread, Dim3};
//!
//! let hits = AtomicU32::new(0);
//! let launch = Launch {
//!     grid: Dim3 { x: 4, y: 1, z: 1 },
//!     block: Dim3 { x: 64, y: 1, z: 1 },
//!     dynamic_shared_bytes: 0,
//! };
//! sim::run(&launch, &|| {
//!     let before = barrier::sync_threads_count(true);
//!     assert_eq!(before, thread::threads_per_block() as u32);
//!     hits.fetch_add(1, Ordering::Relaxed);
//! }, 2)
//! .unwrap();
//! assert_eq!(hits.load(Ordering::Relaxed), 256);
//! ```
//!
//! # How a launch runs
//!
//! - **Blocks** are handed out in linear order (`x` fastest) to `workers` OS threads
//!   (`std::thread::scope`); each worker runs one block at a time, to completion,
//!   so a block that has started keeps running until it ends, as on the GPU.
//! - **Threads of a block** run on their worker's OS thread as stackful coroutines
//!   (`corosensei`), one at a time, and switch only where the GPU makes them wait for
//!   each other: block barriers, warp collectives and [`sleep_ns`](crate::thread::sleep_ns)
//!   (the back-off of spin waits). A thread that never waits runs start to end
//!   without a switch, and the coroutine that ran it goes on with the next thread of
//!   the block, so an elementwise kernel uses one coroutine. A worker keeps its
//!   coroutines from block to block (idle between them) and coroutine stacks are
//!   pooled for the whole process.
//! - **Collectives** of [`crate::collective`] suspend each thread once: the last
//!   thread of the warp or block to arrive replays the GPU algorithm over every
//!   thread's operand (`collective.rs`), instead of each shuffle and barrier
//!   suspending every thread.
//! - **Scheduling inside a block**: threads released by a barrier or collective run
//!   first, then threads not started yet, then threads that yielded in a spin wait.
//!   A spin wait therefore never starves the thread it waits for. When only spinning
//!   threads are left the worker also yields its OS thread once per round, so blocks
//!   on other workers progress.
//! - **Divergence**: a barrier completes when every thread of the block has reached
//!   it, a warp instruction when every lane of its mask has reached it (with the same
//!   mask and operation), a collective when every thread of its warp or block has. When no thread of a block can run and some wait, the launch
//!   stops with [`Fault::Divergence`] (on the GPU: a hang or unspecified values).
//! - **Deadlock**: when a worker's block has only spinning threads left and, for
//!   [`deadlock_timeout`] (wall-clock), no thread of the launch ends, no block
//!   starts and no thread runs long without suspending, the launch stops with
//!   [`Fault::Deadlock`] naming the wait (on the GPU: a hang), e.g. a look-back
//!   tile that is never published.
//! - **Panics**: the first simulated thread to panic stops the launch with
//!   [`Fault::Panic`]; a chained panic hook captures its message and location without
//!   printing anything, and the panic hook installed before keeps handling every
//!   other thread's panics. Other blocks stop at their next thread or scheduling
//!   point. The simulator needs `panic = "unwind"`.
//!
//! What the simulator models and what it does not (timing, the memory model,
//! independent thread scheduling) is in the repository's `docs/simulator.md`.

mod block;
mod capture;
pub(crate) mod collective;
pub(crate) mod context;
mod shared;
mod stacks;

use std::boxed::Box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::panic::PanicRecord;
use crate::thread::Dim3;

pub(crate) use block::live_lanes;
pub(crate) use block::{
    barrier, spin_yield, warp_exchange, BarrierKind, Reduce, ShuffleMode, WarpOp,
};
pub(crate) use context::{block_number, current, thread_number};
pub use shared::FILL as SHARED_FILL;
pub(crate) use shared::{dynamic_shared, static_shared};
pub use stacks::STACK_BYTES;

/// The shape of a simulated launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Blocks in the grid (`gridDim`).
    pub grid: Dim3,
    /// Threads in a block (`blockDim`).
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block ([`DynamicShared`](crate::shared::DynamicShared)).
    pub dynamic_shared_bytes: u32,
}

/// Why a simulated launch stopped early.
#[derive(Clone, Debug)]
pub enum Fault {
    /// A thread panicked: the same record the GPU's panic handler fills
    /// ([`PanicRecord`]), with location, thread and block; the message is the full
    /// formatted one (cut to [`MESSAGE_CAPACITY`](crate::panic::MESSAGE_CAPACITY) bytes).
    Panic(Box<PanicRecord>),
    /// A block barrier or warp collective reached by only part of its block / warp (a
    /// hang or unspecified values on the GPU): what it was, and the block and a
    /// thread that waited.
    Divergence {
        /// The function that waited, e.g. `"barrier::sync_threads"`.
        what: &'static str,
        /// `blockIdx` of the block.
        block: Dim3,
        /// `threadIdx` of a thread that waited there.
        thread: Dim3,
    },
    /// A block had only spinning threads left ([`sleep_ns`](crate::thread::sleep_ns)
    /// or a look-back poll) and, for [`deadlock_timeout`], no thread of the launch
    /// ended and none computed (a hang on the GPU): the wait, and the block and the
    /// thread that spun there last.
    Deadlock {
        /// The spin wait, e.g. `"thread::sleep_ns"`.
        what: &'static str,
        /// `blockIdx` of the block.
        block: Dim3,
        /// `threadIdx` of a thread that spun there.
        thread: Dim3,
        /// How long nothing had moved when the launch stopped.
        waited: std::time::Duration,
    },
}

impl core::fmt::Display for Fault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Fault::Panic(record) => write!(f, "{record}"),
            Fault::Divergence {
                what,
                block,
                thread,
            } => write!(
                f,
                "kernel diverged: `{what}` was reached by only part of its block or warp \
                 (block ({}, {}, {}), thread ({}, {}, {}) waited there); on the GPU this hangs \
                 or gives unspecified values",
                block.x, block.y, block.z, thread.x, thread.y, thread.z
            ),
            Fault::Deadlock {
                what,
                block,
                thread,
                waited,
            } => write!(
                f,
                "kernel deadlocked: threads spun in `{what}` for {:.1} s while no thread of the \
                 launch ended or computed (block ({}, {}, {}), thread ({}, {}, {}) waited \
                 there); a wait for something no thread will do, such as a look-back tile \
                 that is never published, hangs on the GPU",
                waited.as_secs_f64(),
                block.x,
                block.y,
                block.z,
                thread.x,
                thread.y,
                thread.z
            ),
        }
    }
}

impl std::error::Error for Fault {}

/// What every worker of one launch shares.
struct LaunchState<'k> {
    launch: Launch,
    kernel: &'k (dyn Fn() + Sync),
    /// The next block (linear index) to hand out.
    next_block: AtomicUsize,
    /// Set on the first fault: workers stop taking blocks, running blocks unwind.
    stop: AtomicBool,
    /// The first fault, which the launch returns.
    fault: Mutex<Option<Fault>>,
    /// Per worker, what deadlock detection reads (`block::Stall`).
    progress: std::vec::Vec<WorkerProgress>,
    /// The next worker slot to hand out.
    next_worker: AtomicUsize,
}

/// One worker's progress, written only by that worker, on a cache line of its own.
#[repr(align(64))]
#[derive(Default)]
struct WorkerProgress {
    /// Blocks started and (in batches) threads ended: what a deadlock does not
    /// change.
    moved: AtomicU64,
    /// Resumes of threads that were not spinning, times two, plus one while such a
    /// resume runs.
    resumes: AtomicU64,
}

impl LaunchState<'_> {
    fn record(&self, fault: Fault) {
        let mut first = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(fault);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Takes blocks until none is left or the launch stops.
    fn work(&self) {
        let blocks = self.launch.grid.volume();
        let me = self.next_worker.fetch_add(1, Ordering::Relaxed);
        let mut worker = block::Worker::new();
        while !self.stop.load(Ordering::Relaxed) {
            let b = self.next_block.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                break;
            }
            if let Err(Some(fault)) = worker.run_block(self, me, b) {
                self.record(fault);
            }
        }
    }
}

/// Runs `kernel` once per simulated thread of `launch` (it reads its indices through
/// [`crate::thread`] as on the GPU); blocks are spread over `workers` OS threads
/// (`std::thread::scope`, the calling thread being one of them), threads of one block
/// interleave at barriers and warp collectives. See the [module docs](self).
///
/// An empty grid or block runs nothing. The first fault wins: the launch stops as
/// soon as practical and returns it.
///
/// # Panics
///
/// When called from inside a simulated thread (launches do not nest).
pub fn run(launch: &Launch, kernel: &(dyn Fn() + Sync), workers: usize) -> Result<(), Fault> {
    assert!(
        !context::in_launch(),
        "xlog_device::sim::run called from inside a simulated kernel thread: launches do not nest"
    );
    let blocks = launch.grid.volume();
    if blocks == 0 || launch.block.volume() == 0 {
        return Ok(());
    }
    capture::install_hook();
    let workers = workers.clamp(1, blocks);
    let state = LaunchState {
        launch: *launch,
        kernel,
        next_block: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        fault: Mutex::new(None),
        progress: (0..workers).map(|_| WorkerProgress::default()).collect(),
        next_worker: AtomicUsize::new(0),
    };
    if workers == 1 {
        state.work();
    } else {
        std::thread::scope(|s| {
            for _ in 1..workers {
                s.spawn(|| state.work());
            }
            state.work();
        });
    }
    match state.fault.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}

/// How long a launch may spin without progress before it stops with
/// [`Fault::Deadlock`], in milliseconds (see [`set_deadlock_timeout`]).
static DEADLOCK_TIMEOUT_MS: AtomicU64 = AtomicU64::new(10_000);

/// How long a block of a launch may have only spinning threads left, with no thread
/// of the launch ending or computing, before the launch stops with
/// [`Fault::Deadlock`] (10 s unless set).
pub fn deadlock_timeout() -> std::time::Duration {
    std::time::Duration::from_millis(DEADLOCK_TIMEOUT_MS.load(Ordering::Relaxed))
}

/// Set [`deadlock_timeout`] for the launches of this process that start spinning
/// from now on (a spin wait that really waits for slow work on the host needs
/// more; a test of a deadlock, less).
pub fn set_deadlock_timeout(timeout: std::time::Duration) {
    let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    DEADLOCK_TIMEOUT_MS.store(ms, Ordering::Relaxed);
}
