//! Block-level barriers and memory fences.
//!
//! All barriers use PTX's non-`.aligned` `barrier.sync` form
//! ([PTX `barrier`](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-bar-barrier)):
//! threads are counted per barrier id, not per instruction, so the barrier stays
//! correct even if the compiler duplicates the instruction into branches (the
//! pattern behind rust-lang/rust#137086; xlog-build also disables MIR jump threading
//! for device builds). Every non-exited thread of the block must reach a barrier with
//! the same id, otherwise the block waits forever: never call one on a path only some
//! threads take.
//!
//! Each kind of barrier has its own hardware barrier: [`sync_threads`] uses barrier 0,
//! [`sync_threads_count`] 1, [`sync_threads_and`] 2 and [`sync_threads_or`] 3. PTX
//! leaves mixing `barrier.sync` and `barrier.red`, or two reductions, on one barrier
//! unpredictable; on separate barriers a block whose threads reach different kinds
//! simply waits (a hang, which is not undefined behaviour).
//!
//! Barriers and fences are ordinary (safe) functions: misuse hangs a kernel or
//! synchronises the wrong threads, but no safe API relies on a barrier for memory
//! safety (shared-memory access is `unsafe`), so it cannot corrupt memory.

/// `__syncthreads()`: waits until every thread of the block reaches this barrier;
/// shared- and global-memory writes made before it are visible to the block after it.
#[inline(always)]
pub fn sync_threads() {
    device_or_sim!(
        device: {
            // SAFETY: `barrier.sync` has no memory-safety preconditions; the missing
            // `nomem` option makes it a compiler memory barrier too.
            unsafe { core::arch::asm!("barrier.sync 0;", options(nostack)) }
        },
        sim: { crate::sim::barrier(crate::sim::BarrierKind::Sync, true); }
    )
}

/// `__syncthreads_count(pred)`: a barrier that returns how many threads of the block
/// passed `true`.
#[inline(always)]
pub fn sync_threads_count(pred: bool) -> u32 {
    device_or_sim!(
        device: {
            let r: u32;
            // SAFETY: as `sync_threads`; the predicate register is local to the block.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred %p; setp.ne.u32 %p, {v}, 0; barrier.red.popc.u32 {r}, 1, %p; }}",
                    v = in(reg32) pred as u32, r = out(reg32) r, options(nostack)
                )
            };
            r
        },
        sim: { crate::sim::barrier(crate::sim::BarrierKind::Count, pred) }
    )
}

/// `__syncthreads_and(pred)`: a barrier that returns whether every thread passed `true`.
#[inline(always)]
pub fn sync_threads_and(pred: bool) -> bool {
    device_or_sim!(
        device: {
            let r: u32;
            // SAFETY: as `sync_threads`; the predicate registers are local to the block.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred %p, %q; setp.ne.u32 %p, {v}, 0; barrier.red.and.pred %q, 2, %p; selp.u32 {r}, 1, 0, %q; }}",
                    v = in(reg32) pred as u32, r = out(reg32) r, options(nostack)
                )
            };
            r != 0
        },
        sim: { crate::sim::barrier(crate::sim::BarrierKind::And, pred) != 0 }
    )
}

/// `__syncthreads_or(pred)`: a barrier that returns whether any thread passed `true`.
#[inline(always)]
pub fn sync_threads_or(pred: bool) -> bool {
    device_or_sim!(
        device: {
            let r: u32;
            // SAFETY: as `sync_threads`; the predicate registers are local to the block.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred %p, %q; setp.ne.u32 %p, {v}, 0; barrier.red.or.pred %q, 3, %p; selp.u32 {r}, 1, 0, %q; }}",
                    v = in(reg32) pred as u32, r = out(reg32) r, options(nostack)
                )
            };
            r != 0
        },
        sim: { crate::sim::barrier(crate::sim::BarrierKind::Or, pred) != 0 }
    )
}

/// `__threadfence_block()`: orders this thread's memory accesses as seen by its block.
#[inline(always)]
pub fn fence_block() {
    device_or_sim!(
        device: {
            // SAFETY: a fence has no preconditions.
            unsafe { core::arch::asm!("membar.cta;", options(nostack)) }
        },
        sim: { std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst) }
    )
}

/// `__threadfence()`: orders this thread's memory accesses as seen by the whole GPU.
#[inline(always)]
pub fn fence_device() {
    device_or_sim!(
        device: {
            // SAFETY: a fence has no preconditions.
            unsafe { core::arch::asm!("membar.gl;", options(nostack)) }
        },
        sim: { std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst) }
    )
}

/// `__threadfence_system()`: orders this thread's memory accesses as seen by the host
/// and peer devices too.
#[inline(always)]
pub fn fence_system() {
    device_or_sim!(
        device: {
            // SAFETY: a fence has no preconditions.
            unsafe { core::arch::asm!("membar.sys;", options(nostack)) }
        },
        sim: { std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst) }
    )
}
