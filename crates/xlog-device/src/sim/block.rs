//! One block's threads as coroutines on one OS thread: the scheduler, block
//! barriers, warp exchanges and spin-wait yields.
//!
//! Everything here runs on the worker's OS thread, one simulated thread at a time,
//! so the block's state uses `Cell`/`RefCell`; no borrow is held across a kernel call
//! or a suspension.

use core::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::vec::Vec;

use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::collective::Gathers;
use super::context::{self, current, Aborted, ThreadCtx};
use super::shared::Arena;
use super::stacks::{SimStack, StackCache};
use super::{capture, Fault, Launch, LaunchState};
use crate::thread::Dim3;
use crate::warp::WARP_SIZE;

/// Why a coroutine hands control back to the scheduler.
pub(crate) enum Suspend {
    /// Its thread waits at a barrier or collective; whoever completes it makes it
    /// ready.
    Wait,
    /// Its thread yields in a spin wait (named) and stays runnable.
    Spin(&'static str),
    /// No thread of the block is left to start: the coroutine is free for the next
    /// block.
    Idle,
}

/// What the scheduler resumes a coroutine with.
pub(crate) enum Resume {
    /// Go on (to a suspended thread).
    Go,
    /// Start the block's threads not started yet (to a new or idle coroutine).
    Start(*const Block<'static>),
    /// The launch stopped, or the worker ends: unwind.
    Abort,
}

/// How a coroutine ended.
enum FiberEnd {
    /// The thread it ran panicked (its capture is in `capture`).
    Panicked,
    /// It unwound because the launch stopped, or its worker ended (or a thread
    /// raised an [`Aborted`] payload it kept: `run_block` tells these apart).
    Aborted,
}

type Fiber = Coroutine<Resume, Suspend, FiberEnd, SimStack>;

/// The four hardware barriers of `crate::barrier`, one per kind, as on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BarrierKind {
    /// `barrier.sync 0`: `sync_threads`.
    Sync = 0,
    /// `barrier.red.popc 1`: `sync_threads_count`.
    Count = 1,
    /// `barrier.red.and 2`: `sync_threads_and`.
    And = 2,
    /// `barrier.red.or 3`: `sync_threads_or`.
    Or = 3,
}

const BARRIER_NAMES: [&str; 4] = [
    "barrier::sync_threads",
    "barrier::sync_threads_count",
    "barrier::sync_threads_and",
    "barrier::sync_threads_or",
];

#[derive(Default)]
struct Barrier {
    arrived: u32,
    count: u32,
    waiters: Vec<u32>,
}

/// The shuffle modes of `shfl.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShuffleMode {
    /// From lane `arg mod 32`.
    Idx,
    /// From lane `lane - arg`, own value below `arg`.
    Up,
    /// From lane `lane + arg`, own value past 31.
    Down,
    /// From lane `lane ^ arg`, own value past 31.
    Xor,
}

/// The reductions of `redux.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduce {
    /// Wrapping `u32` sum.
    AddU32,
    /// `u32` minimum.
    MinU32,
    /// `u32` maximum.
    MaxU32,
    /// `i32` minimum.
    MinI32,
    /// `i32` maximum.
    MaxI32,
}

/// A warp instruction with a member mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WarpOp {
    /// `shfl.sync` of a 64-bit payload (a 32-bit value in the low half).
    Shuffle(ShuffleMode),
    /// `vote.sync.all` (the value is the predicate).
    All,
    /// `vote.sync.any`.
    Any,
    /// `vote.sync.ballot`.
    Ballot,
    /// `redux.sync`.
    Reduce(Reduce),
    /// `bar.warp.sync`.
    Sync,
}

/// A warp instruction some lanes of its mask have reached.
struct Exchange {
    what: &'static str,
    op: WarpOp,
    mask: u32,
    arrived: u32,
    values: [u64; 32],
    args: [u32; 32],
}

impl Exchange {
    /// Lane `lane`'s result, once every lane of the mask has arrived.
    fn result(&self, lane: u32) -> u64 {
        let lanes = || (0..WARP_SIZE).filter(|l| self.mask >> l & 1 == 1);
        match self.op {
            WarpOp::Shuffle(mode) => {
                // `shfl.sync` reads only bits 4:0 of its lane operand
                // (`bval[4:0] = b[4:0]` in the PTX ISA).
                let arg = self.args[lane as usize] % WARP_SIZE;
                let src = match mode {
                    ShuffleMode::Idx => Some(arg),
                    ShuffleMode::Up => lane.checked_sub(arg),
                    ShuffleMode::Down => lane.checked_add(arg).filter(|&j| j < WARP_SIZE),
                    ShuffleMode::Xor => Some(lane ^ arg).filter(|&j| j < WARP_SIZE),
                };
                // A source outside the mask is unspecified on the GPU; the caller's
                // own value here.
                match src {
                    Some(j) if self.mask >> j & 1 == 1 => self.values[j as usize],
                    _ => self.values[lane as usize],
                }
            }
            WarpOp::All => lanes().all(|l| self.values[l as usize] != 0) as u64,
            WarpOp::Any => lanes().any(|l| self.values[l as usize] != 0) as u64,
            WarpOp::Ballot => lanes()
                .filter(|&l| self.values[l as usize] != 0)
                .fold(0u32, |b, l| b | 1 << l) as u64,
            WarpOp::Reduce(r) => {
                let v = lanes().map(|l| self.values[l as usize] as u32);
                match r {
                    Reduce::AddU32 => v.fold(0u32, u32::wrapping_add) as u64,
                    Reduce::MinU32 => v.min().unwrap_or(0) as u64,
                    Reduce::MaxU32 => v.max().unwrap_or(0) as u64,
                    Reduce::MinI32 => v.map(|x| x as i32).min().unwrap_or(0) as u32 as u64,
                    Reduce::MaxI32 => v.map(|x| x as i32).max().unwrap_or(0) as u32 as u64,
                }
            }
            WarpOp::Sync => 0,
        }
    }
}

/// The message of the fault of a thread that unwound with the simulator's [`Aborted`]
/// payload while its launch ran on.
const STOLEN_ABORT: &str = "the thread unwound with the xlog simulator's abort signal, \
    kept from another launch (`catch_unwind`) and raised again (`resume_unwind`)";

/// The number the last block to start took (see [`context::block_number`]).
static BLOCKS_STARTED: AtomicU64 = AtomicU64::new(0);

/// One block being simulated.
pub(crate) struct Block<'l> {
    pub(super) launch: Launch,
    pub(super) idx: Dim3,
    /// This execution's number, never reused (see [`context::block_number`]).
    pub(super) number: u64,
    state: &'l LaunchState<'l>,
    pub(super) threads: u32,
    next_unstarted: Cell<u32>,
    exited: Cell<u32>,
    /// Set when the block stops early: coroutines start no further thread.
    aborting: Cell<bool>,
    /// The thread the running coroutine executes.
    pub(super) running: Cell<u32>,
    fiber_of: Vec<Cell<u32>>,
    /// Results delivered to threads released by a barrier or collective.
    mailbox: Vec<Cell<u64>>,
    /// Per warp: the lanes that ended.
    exited_lanes: Vec<Cell<u32>>,
    barriers: RefCell<[Barrier; 4]>,
    exchanges: RefCell<Vec<Vec<Exchange>>>,
    ready: RefCell<VecDeque<u32>>,
    spinning: RefCell<VecDeque<u32>>,
    pub(super) shared: &'l RefCell<Arena>,
    /// The collectives of `crate::collective` in one exchange each.
    pub(super) gathers: Gathers,
}

impl Block<'_> {
    /// The lanes of warp `w` that exist in this block.
    fn warp_lanes(&self, w: u32) -> u32 {
        let n = (self.threads - w * WARP_SIZE).min(WARP_SIZE);
        if n == WARP_SIZE {
            u32::MAX
        } else {
            (1 << n) - 1
        }
    }

    /// Makes `thread` ready with `result` in its mailbox.
    pub(super) fn release(&self, thread: u32, result: u64) {
        self.mailbox[thread as usize].set(result);
        self.ready.borrow_mut().push_back(thread);
    }

    /// Runs the threads of the block not started yet on coroutine `slot`, one after
    /// the other: `None` when none is left, `Some(Aborted)` when the block stops.
    fn run_threads(&self, slot: u32, yielder: &Yielder<Resume, Suspend>) -> Option<FiberEnd> {
        loop {
            if self.aborting.get() || self.state.stop.load(Ordering::Relaxed) {
                return Some(FiberEnd::Aborted);
            }
            let t = self.next_unstarted.get();
            if t >= self.threads {
                return None;
            }
            self.next_unstarted.set(t + 1);
            self.fiber_of[t as usize].set(slot);
            self.running.set(t);
            let ctx = ThreadCtx::new(self, t, yielder);
            ctx.enter();
            (self.state.kernel)();
            self.exited.set(self.exited.get() + 1);
            let lanes = &self.exited_lanes[(t / WARP_SIZE) as usize];
            lanes.set(lanes.get() | 1 << (t % WARP_SIZE));
        }
    }

    /// The fault when no thread can run but some wait: the first waiting barrier or
    /// warp exchange, and its lowest waiting thread.
    fn divergence(&self) -> Fault {
        let at = |t: u32| current_dims(self.launch.block, t);
        let barriers = self.barriers.borrow();
        for (k, b) in barriers.iter().enumerate() {
            if let Some(&t) = b.waiters.iter().min() {
                return Fault::Divergence {
                    what: BARRIER_NAMES[k],
                    block: self.idx,
                    thread: at(t),
                };
            }
        }
        let exchanges = self.exchanges.borrow();
        for (w, pending) in exchanges.iter().enumerate() {
            if let Some(e) = pending.first() {
                let lane = e.arrived.trailing_zeros();
                return Fault::Divergence {
                    what: e.what,
                    block: self.idx,
                    thread: at(w as u32 * WARP_SIZE + lane),
                };
            }
        }
        if let Some((what, t)) = self.gathers.waiting() {
            return Fault::Divergence {
                what,
                block: self.idx,
                thread: at(t),
            };
        }
        unreachable!("xlog simulator: a block with no runnable thread has no waiting thread")
    }
}

/// `threadIdx` of linear thread `t` in a block of extent `d`.
fn current_dims(d: Dim3, t: u32) -> Dim3 {
    Dim3 {
        x: t % d.x,
        y: t / d.x % d.y,
        z: t / (d.x * d.y),
    }
}

/// The body of coroutine `slot`: whenever it is started on a block, it runs that
/// block's threads not started yet, then waits idle for the next block. It ends only
/// when a thread panics or the scheduler aborts it.
fn fiber_main(slot: u32, yielder: &Yielder<Resume, Suspend>, first: Resume) -> FiberEnd {
    let run = catch_unwind(AssertUnwindSafe(|| {
        let mut input = first;
        loop {
            let Resume::Start(block) = input else {
                return FiberEnd::Aborted;
            };
            // SAFETY: `run_block` passes the block it runs, which lives until every
            // coroutine it started is idle again or ended: it returns only then. The
            // block is not used after the `Idle` suspension below.
            let block = unsafe { &*block };
            if let Some(end) = block.run_threads(slot, yielder) {
                return end;
            }
            input = yielder.suspend(Suspend::Idle);
        }
    }));
    match run {
        Ok(end) => end,
        Err(payload) => {
            let end = if payload.is::<Aborted>() {
                FiberEnd::Aborted
            } else {
                FiberEnd::Panicked
            };
            // Leaked, not dropped: a payload whose `Drop` panics (`panic_any` of
            // such a value) would unwind out of the coroutine, past the scheduler
            // that still has this block's other threads suspended on it. The
            // panic's message was captured when it was raised.
            std::mem::forget(payload);
            end
        }
    }
}

/// What one worker keeps between the blocks it runs: coroutines (idle between
/// blocks, so a barrier-heavy kernel creates them once per launch and worker, not
/// once per block), their stacks and the shared memory arena.
pub(super) struct Worker {
    fibers: Fibers,
    shared: RefCell<Arena>,
}

/// A worker's coroutines and their stacks.
struct Fibers {
    stacks: StackCache,
    all: Vec<Fiber>,
    /// The coroutines with no thread: free to start the next threads.
    idle: Vec<u32>,
}

impl Fibers {
    /// An idle coroutine, or a new one.
    fn idle_or_new(&mut self) -> u32 {
        if let Some(slot) = self.idle.pop() {
            return slot;
        }
        let slot = self.all.len() as u32;
        let body = move |y: &Yielder<Resume, Suspend>, first: Resume| fiber_main(slot, y, first);
        self.all.push(Fiber::with_stack(self.stacks.take(), body));
        slot
    }

    /// Unwinds every coroutine and keeps its stack.
    fn end_all(&mut self) {
        for mut fiber in self.all.drain(..) {
            while !fiber.done() {
                if let CoroutineResult::Return(_) = fiber.resume(Resume::Abort) {
                    break;
                }
            }
            context::leave();
            self.stacks.give(fiber.into_stack());
        }
        self.idle.clear();
    }
}

impl Worker {
    pub(super) fn new() -> Self {
        Worker {
            fibers: Fibers {
                stacks: StackCache::new(),
                all: Vec::new(),
                idle: Vec::new(),
            },
            shared: RefCell::new(Arena::default()),
        }
    }

    /// Runs block `b` (linear index) of the launch to its end: `Err(Some(_))` on a
    /// fault of this block, `Err(None)` when it stopped for another block's fault.
    pub(super) fn run_block(
        &mut self,
        state: &LaunchState<'_>,
        worker: usize,
        b: usize,
    ) -> Result<(), Option<Fault>> {
        let launch = state.launch;
        let threads = launch.block.volume() as u32;
        let warps = threads.div_ceil(WARP_SIZE) as usize;
        let g = launch.grid;
        let b = b as u32;
        self.shared.borrow_mut().next_block();
        let block = Block {
            launch,
            idx: current_dims(g, b),
            number: BLOCKS_STARTED.fetch_add(1, Ordering::Relaxed) + 1,
            state,
            threads,
            next_unstarted: Cell::new(0),
            exited: Cell::new(0),
            aborting: Cell::new(false),
            running: Cell::new(0),
            fiber_of: (0..threads).map(|_| Cell::new(0)).collect(),
            mailbox: (0..threads).map(|_| Cell::new(0)).collect(),
            exited_lanes: (0..warps).map(|_| Cell::new(0)).collect(),
            barriers: RefCell::new(Default::default()),
            exchanges: RefCell::new((0..warps).map(|_| Vec::new()).collect()),
            ready: RefCell::new(VecDeque::new()),
            spinning: RefCell::new(VecDeque::new()),
            shared: &self.shared,
            gathers: Gathers::new(threads),
        };
        let mut spins = 0usize;
        let mut stall = Stall::new(state, worker);
        // The spin wait the last spinning thread yielded in, and that thread.
        let mut last_spin = ("", 0u32);
        // Caught so that a panic out of the scheduling itself still unwinds every
        // thread before `block`, which they point into, goes away. None is known
        // to be reachable: coroutines catch their threads' panics, and every
        // waiting thread stays registered where `Block::divergence` finds it (a
        // collective keeps its group pending while its operator runs).
        let scheduled = catch_unwind(AssertUnwindSafe(|| loop {
            if state.stop.load(Ordering::Relaxed) {
                break Err(None);
            }
            let ready = block.ready.borrow_mut().pop_front();
            let spinning = || block.spinning.borrow_mut().pop_front();
            let (slot, input) = if let Some(t) = ready {
                stall.busy(state, true);
                (block.fiber_of[t as usize].get(), Resume::Go)
            } else if block.next_unstarted.get() < threads {
                stall.busy(state, true);
                let slot = self.fibers.idle_or_new();
                let blk: *const Block<'_> = &block;
                (slot, Resume::Start(blk.cast()))
            } else if let Some(t) = spinning() {
                // Only spinning threads are left: let other workers' blocks, which
                // they may wait for, run once per round.
                spins += 1;
                if spins > block.spinning.borrow().len() {
                    spins = 0;
                    std::thread::yield_now();
                    if let Some(waited) = stall.spinning(state) {
                        let (what, t) = last_spin;
                        break Err(Some(Fault::Deadlock {
                            what,
                            block: block.idx,
                            thread: current_dims(launch.block, t),
                            waited,
                        }));
                    }
                }
                (block.fiber_of[t as usize].get(), Resume::Go)
            } else if block.exited.get() == threads {
                break Ok(());
            } else {
                break Err(Some(block.divergence()));
            };
            let result = self.fibers.all[slot as usize].resume(input);
            context::leave();
            stall.busy(state, false);
            stall.note_exits(state, block.exited.get());
            match result {
                CoroutineResult::Yield(Suspend::Wait) => {}
                CoroutineResult::Yield(Suspend::Spin(what)) => {
                    last_spin = (what, block.running.get());
                    block.spinning.borrow_mut().push_back(block.running.get());
                }
                CoroutineResult::Yield(Suspend::Idle) => self.fibers.idle.push(slot),
                CoroutineResult::Return(FiberEnd::Panicked) => {
                    let t = current_dims(launch.block, block.running.get());
                    break Err(Some(Fault::Panic(std::boxed::Box::new(capture::take(
                        t, block.idx,
                    )))));
                }
                // The scheduler resumes with `Resume::Abort` only in `end_all`, and
                // sets `aborting` only after this loop: here a coroutine ends
                // `Aborted` legitimately only because `run_threads` saw the launch
                // stop, whose fault is recorded already. Otherwise one of its
                // threads raised an `Aborted` payload it kept from another launch
                // (`catch_unwind`, then `resume_unwind`), and ending the block
                // without a fault would let the launch succeed with threads that
                // never ran. Checking `stop` suffices, with no need to stamp the
                // payload with its block: once `stop` is set the launch fails anyway.
                CoroutineResult::Return(FiberEnd::Aborted) => {
                    if state.stop.load(Ordering::Relaxed) {
                        break Err(None);
                    }
                    let t = current_dims(launch.block, block.running.get());
                    break Err(Some(Fault::Panic(std::boxed::Box::new(
                        capture::with_message(STOLEN_ABORT, t, block.idx),
                    ))));
                }
            }
        }));
        stall.busy(state, false);
        let outcome = match scheduled {
            Ok(outcome) => outcome,
            Err(payload) => {
                block.aborting.set(true);
                self.fibers.end_all();
                std::panic::resume_unwind(payload);
            }
        };
        if outcome.is_err() {
            // Unwind every thread still suspended, so no coroutine outlives the block.
            block.aborting.set(true);
            self.fibers.end_all();
        }
        outcome
    }
}

impl Drop for Fibers {
    fn drop(&mut self) {
        self.end_all();
    }
}

/// A block barrier of kind `kind`: waits until every thread of the block arrives
/// (exited threads never do), and returns the barrier's reduction of `pred`
/// (`popc`, `and` or `or`; 0 for `Sync`).
pub(crate) fn barrier(kind: BarrierKind, pred: bool) -> u32 {
    let what = BARRIER_NAMES[kind as usize];
    let ctx = current(what);
    let block = ctx.block();
    let mut barriers = block.barriers.borrow_mut();
    let b = &mut barriers[kind as usize];
    b.arrived += 1;
    b.count += pred as u32;
    if b.arrived < block.threads {
        b.waiters.push(ctx.linear);
        drop(barriers);
        ctx.suspend(Suspend::Wait);
        return block.mailbox[ctx.linear as usize].get() as u32;
    }
    let result = match kind {
        BarrierKind::Sync => 0,
        BarrierKind::Count => b.count,
        BarrierKind::And => (b.count == block.threads) as u32,
        BarrierKind::Or => (b.count > 0) as u32,
    };
    let waiters = core::mem::take(&mut b.waiters);
    *b = Barrier::default();
    drop(barriers);
    for &w in &waiters {
        block.release(w, result as u64);
    }
    // Keep the waiters' allocation for the next barrier of this kind.
    let mut waiters = waiters;
    waiters.clear();
    block.barriers.borrow_mut()[kind as usize].waiters = waiters;
    result
}

/// A warp instruction `op` over the lanes of `mask`: waits until every lane of the
/// mask has reached an instruction with the same `op` and `mask`, and returns this
/// lane's result (see [`WarpOp`]). `value` is the lane's operand (a shuffle's
/// payload, a vote's predicate as 0 / 1), `arg` its lane argument.
///
/// # Panics
///
/// When the calling lane is not in `mask` (undefined behaviour on the GPU).
#[track_caller]
pub(crate) fn warp_exchange(
    what: &'static str,
    op: WarpOp,
    mask: u32,
    value: u64,
    arg: u32,
) -> u64 {
    let ctx = current(what);
    let lane = ctx.lane();
    if mask >> lane & 1 == 0 {
        not_in_mask(what, lane, mask);
    }
    let block = ctx.block();
    let warp = ctx.linear / WARP_SIZE;
    let mut all = block.exchanges.borrow_mut();
    let pending = &mut all[warp as usize];
    let at = match pending.iter().position(|e| e.mask == mask && e.op == op) {
        Some(i) => i,
        None => {
            pending.push(Exchange {
                what,
                op,
                mask,
                arrived: 0,
                values: [0; 32],
                args: [0; 32],
            });
            pending.len() - 1
        }
    };
    let e = &mut pending[at];
    e.values[lane as usize] = value;
    e.args[lane as usize] = arg;
    e.arrived |= 1 << lane;
    if e.arrived != mask {
        drop(all);
        ctx.suspend(Suspend::Wait);
        return block.mailbox[ctx.linear as usize].get();
    }
    let e = pending.swap_remove(at);
    drop(all);
    for l in (0..WARP_SIZE).filter(|&l| l != lane && mask >> l & 1 == 1) {
        block.release(warp * WARP_SIZE + l, e.result(l));
    }
    e.result(lane)
}

/// `__activemask()` in the simulator: the lanes of the caller's warp that exist and
/// have not exited.
pub(crate) fn live_lanes(what: &'static str) -> u32 {
    let ctx = current(what);
    let block = ctx.block();
    let w = ctx.linear / WARP_SIZE;
    block.warp_lanes(w) & !block.exited_lanes[w as usize].get()
}

/// Yields the calling thread to its block's scheduler (a spin wait's back-off): the
/// other threads of the block, not started or released, run first.
pub(crate) fn spin_yield(what: &'static str) {
    current(what).suspend(Suspend::Spin(what));
}

#[cold]
#[inline(never)]
#[track_caller]
fn not_in_mask(what: &str, lane: u32, mask: u32) -> ! {
    panic!(
        "xlog_device::{what} called by lane {lane}, which is not in its mask {mask:#010x} \
         (undefined behaviour on the GPU)"
    )
}

/// A worker's part in deadlock detection (see [`super::deadlock_timeout`]).
///
/// The launch is deadlocked when a worker has only spinning threads left and,
/// for the whole timeout, no thread of the launch has ended, no block has started,
/// and no worker has been running one thread (not a spinner) for long: nothing is
/// then computing what the spinners wait for. Each worker publishes its progress
/// in its own cache line ([`super::WorkerProgress`]) with plain stores, so the
/// bookkeeping costs a resume no shared atomic.
struct Stall {
    /// This worker's slot in the launch's `progress`.
    worker: usize,
    /// The launch's total `moved` and the time this worker first saw it while
    /// only spinners were left.
    since: Option<(u64, std::time::Instant)>,
    /// This block's threads ended, as last counted in `moved`.
    exited: u32,
    /// Per worker, its `resumes` word as last seen here and since when.
    seen: Vec<(u64, std::time::Instant)>,
}

/// A resume longer than this is a thread computing, not a deadlock.
const LONG_RESUME: std::time::Duration = std::time::Duration::from_millis(50);

impl Stall {
    fn new(state: &LaunchState<'_>, worker: usize) -> Stall {
        let stall = Stall {
            worker,
            since: None,
            exited: 0,
            seen: Vec::new(),
        };
        stall.bump(state);
        stall
    }

    /// Count one step of progress (a block started, threads ended) for this worker.
    fn bump(&self, state: &LaunchState<'_>) {
        let mine = &state.progress[self.worker].moved;
        // Only this worker writes its word.
        mine.store(mine.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// A thread that is not spinning is resumed on this worker (`true`), or the
    /// resume returned: bit 0 of `resumes` says which, the rest counts resumes.
    fn busy(&self, state: &LaunchState<'_>, running: bool) {
        let word = &state.progress[self.worker].resumes;
        let v = word.load(Ordering::Relaxed);
        let next = if running { (v | 1) + 2 } else { v & !1 };
        word.store(next, Ordering::Relaxed);
    }

    /// Count this block's newly ended threads.
    fn note_exits(&mut self, state: &LaunchState<'_>, exited: u32) {
        if exited != self.exited {
            self.exited = exited;
            self.bump(state);
        }
    }

    /// Only spinners are left on this worker: how long nothing has moved, once
    /// that is past the timeout.
    fn spinning(&mut self, state: &LaunchState<'_>) -> Option<std::time::Duration> {
        let now = std::time::Instant::now();
        if self.seen.len() != state.progress.len() {
            self.seen = state.progress.iter().map(|_| (0, now)).collect();
        }
        let mut computing = false;
        for (p, seen) in state.progress.iter().zip(self.seen.iter_mut()) {
            let v = p.resumes.load(Ordering::Relaxed);
            if v != seen.0 {
                *seen = (v, now);
            } else if v & 1 == 1 && now.duration_since(seen.1) > LONG_RESUME {
                computing = true;
            }
        }
        let moved: u64 = state
            .progress
            .iter()
            .map(|p| p.moved.load(Ordering::Relaxed))
            .sum();
        match self.since {
            Some((m, t0)) if m == moved && !computing => {
                let waited = now.duration_since(t0);
                (waited >= super::deadlock_timeout()).then_some(waited)
            }
            _ => {
                self.since = Some((moved, now));
                None
            }
        }
    }
}
