//! Coroutine stacks, pooled for the process: a launch's workers take stacks from the
//! pool and give them back when they end, so a barrier-heavy kernel maps its stacks
//! once, not once per block or per launch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::vec::Vec;

use corosensei::stack::{DefaultStack, Stack, StackPointer};

/// Bytes of one coroutine stack (a simulated thread's stack). Memory is committed
/// as pages are touched; a guard page below catches overflows.
pub const STACK_BYTES: usize = 512 * 1024;

/// Stacks kept in the process-wide pool at most; more are unmapped.
const POOL_MAX: usize = 4096;

/// Stacks start this many different offsets below the top of their mapping.
const COLOURS: usize = 64;

/// Bytes between two offsets: a cache line, so stacks that start `k` colours apart
/// put their hot frames into different cache sets.
const COLOUR_BYTES: usize = 64;

/// Stacks mapped so far, which picks a new stack's colour.
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// A coroutine stack: a mapping whose usable top is lowered by the stack's colour.
///
/// Mappings are page-aligned and equally long, so without the offset every
/// coroutine's top frames would sit at the same offset within a page and compete for
/// the same few cache sets; a block barrier that holds hundreds of suspended threads
/// would evict them from each other at every switch.
pub(super) struct SimStack {
    mapping: DefaultStack,
    base: StackPointer,
}

impl SimStack {
    fn map() -> Self {
        let mapping = DefaultStack::new(STACK_BYTES).unwrap_or_else(|e| {
            panic!("xlog simulator: cannot map a {STACK_BYTES}-byte coroutine stack: {e}")
        });
        let colour = MAPPED.fetch_add(1, Ordering::Relaxed) % COLOURS;
        let base = StackPointer::new(mapping.base().get() - colour * COLOUR_BYTES)
            .expect("a stack's top is far above address 0");
        SimStack { mapping, base }
    }
}

// SAFETY: `base` lies below the mapping's top by less than a page, at a multiple of
// 64 bytes (so aligned to `STACK_ALIGNMENT`), and above its limit by almost all of
// `STACK_BYTES`; the region between limit and base is the mapping's, writable
// (guard page excepted, as for `DefaultStack`) and used by one coroutine at a time.
unsafe impl Stack for SimStack {
    #[inline]
    fn base(&self) -> StackPointer {
        self.base
    }

    #[inline]
    fn limit(&self) -> StackPointer {
        self.mapping.limit()
    }
}

/// A stack in the pool: an `mmap`ed region owned by no coroutine.
struct Pooled(SimStack);

// SAFETY: a `SimStack` is an owned memory mapping (its base address and length),
// used by no coroutine while it is in the pool; nothing in it is tied to the thread
// that mapped it.
unsafe impl Send for Pooled {}

static POOL: Mutex<Vec<Pooled>> = Mutex::new(Vec::new());

/// One worker's stacks: taken from the pool when it needs more, returned to it when
/// the worker ends.
pub(super) struct StackCache {
    free: Vec<SimStack>,
}

impl StackCache {
    pub(super) fn new() -> Self {
        StackCache { free: Vec::new() }
    }

    /// A stack for a new coroutine.
    pub(super) fn take(&mut self) -> SimStack {
        if let Some(s) = self.free.pop() {
            return s;
        }
        let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match pooled {
            Some(Pooled(s)) => s,
            None => SimStack::map(),
        }
    }

    /// Returns the stack of a coroutine that has ended.
    pub(super) fn give(&mut self, stack: SimStack) {
        self.free.push(stack);
    }
}

impl Drop for StackCache {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let room = POOL_MAX.saturating_sub(pool.len());
        pool.extend(self.free.drain(..).take(room).map(Pooled));
    }
}
