//! Coroutine stacks, pooled for the process: a launch's workers take stacks from the
//! pool and give them back when they end, so a barrier-heavy kernel maps its stacks
//! once, not once per block or per launch.

use std::sync::Mutex;
use std::vec::Vec;

use corosensei::stack::DefaultStack;

/// Bytes of one coroutine stack (a simulated thread's stack). Memory is committed
/// as pages are touched; a guard page below catches overflows.
pub(super) const STACK_BYTES: usize = 512 * 1024;

/// Stacks kept in the process-wide pool at most; more are unmapped.
const POOL_MAX: usize = 4096;

/// A stack in the pool: an `mmap`ed region owned by no coroutine.
struct Pooled(DefaultStack);

// SAFETY: a `DefaultStack` is an owned memory mapping (its base address and length),
// used by no coroutine while it is in the pool; nothing in it is tied to the thread
// that mapped it.
unsafe impl Send for Pooled {}

static POOL: Mutex<Vec<Pooled>> = Mutex::new(Vec::new());

/// One worker's stacks: taken from the pool when it needs more, returned to it when
/// the worker ends.
pub(super) struct StackCache {
    free: Vec<DefaultStack>,
}

impl StackCache {
    pub(super) fn new() -> Self {
        StackCache { free: Vec::new() }
    }

    /// A stack for a new coroutine.
    pub(super) fn take(&mut self) -> DefaultStack {
        if let Some(s) = self.free.pop() {
            return s;
        }
        let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match pooled {
            Some(Pooled(s)) => s,
            None => DefaultStack::new(STACK_BYTES).unwrap_or_else(|e| {
                panic!("xlog simulator: cannot map a {STACK_BYTES}-byte coroutine stack: {e}")
            }),
        }
    }

    /// Returns the stack of a coroutine that has ended.
    pub(super) fn give(&mut self, stack: DefaultStack) {
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
