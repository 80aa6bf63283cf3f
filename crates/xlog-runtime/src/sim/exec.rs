//! The simulated driver: what the simulator platform (`platform.rs`) calls where
//! the GPU's calls CUDA.
//!
//! - **Streams** are worker threads draining a queue, so work on two streams
//!   really runs concurrently and a missing fence really lets it reorder.
//! - **Events** remember the stream and position of their last record; a wait
//!   queues a marker that blocks the waiting stream's worker until then.
//! - **Memory** is host memory (256-byte aligned, zeroed), so a device address is
//!   a host address and kernels dereference it directly.
//! - **Kernels** are the host build of the kernel body (generated next to the
//!   device entry point by `#[xlog_kernel]`), run by `xlog_device::sim` over every
//!   thread of the grid.
//! - **Faults** are sticky as on the GPU: after a kernel panics, every later call
//!   fails with `CUDA_ERROR_LAUNCH_FAILED` (what the driver reports after a `trap`),
//!   and the panic is written into the module's panic record exactly as the
//!   device's panic handler writes it.
//!
//! Every enqueue also goes through the hazard [`Detector`].
//!
//! Handles are pointers to the simulator's own objects, cast to the CUDA handle
//! types the rest of the runtime passes around; only this module dereferences them.

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;

use xlog_device::panic::{PanicRecord, PANIC_SINK_SYMBOL};
use xlog_device::sim::{Fault, Launch};
use xlog_device::Dim3;

use super::hazard::{Detector, Touch};
use super::SimEntry;
use crate::error::{Error, Result};
use crate::handle::{DeviceInfo, MemsetWord, RawEvent, RawFunction, RawModule, RawStream};
use crate::sync::{wait_unpoisoned, Unpoisoned};

/// The process's hazard detector.
pub(crate) static DETECTOR: LazyLock<Detector> = LazyLock::new(Detector::default);

/// The first kernel fault: once set, the simulated context is unusable.
static FAULT: OnceLock<String> = OnceLock::new();

const CUDA_ERROR_INVALID_VALUE: u32 = 1;
const CUDA_ERROR_OUT_OF_MEMORY: u32 = 2;
const CUDA_ERROR_LAUNCH_FAILED: u32 = 719;

fn driver_error(call: &'static str, code: u32, message: String) -> Error {
    Error::Driver {
        call,
        message,
        code,
        context: None,
    }
}

/// A simulated thread's stack (a coroutine's, fixed).
pub(crate) const STACK_BYTES: usize = xlog_device::sim::STACK_BYTES;

/// `cuCtxSetLimit(CU_LIMIT_STACK_SIZE)`: a stack within the simulator's fixed one
/// is already there; a larger one cannot be given.
pub(crate) fn set_stack_size(bytes: usize) -> Result<()> {
    if bytes <= STACK_BYTES {
        return Ok(());
    }
    Err(Error::Unsupported {
        what: format!("a stack of {bytes} bytes per thread on the simulator"),
        reason: format!("its threads have fixed stacks of {STACK_BYTES} bytes"),
    })
}

/// `Ok` unless an earlier kernel faulted (a sticky error, as on the GPU).
pub(crate) fn alive(call: &'static str) -> Result<()> {
    match FAULT.get() {
        None => Ok(()),
        Some(fault) => Err(driver_error(
            call,
            CUDA_ERROR_LAUNCH_FAILED,
            format!("CUDA_ERROR_LAUNCH_FAILED (simulated): a kernel faulted earlier: {fault}"),
        )),
    }
}

/// A simulated device: the limits of a recent data-centre GPU and a nominal 8 GiB
/// of memory (host memory, allocated on demand). Every simulated device is alike.
pub(crate) fn device_info(ordinal: u32) -> DeviceInfo {
    DeviceInfo {
        ordinal,
        name: "xlog simulator (host CPU)".to_owned(),
        compute_capability: (9, 0),
        multiprocessors: 4,
        max_threads_per_block: 1024,
        max_block_dim: [1024, 1024, 64],
        max_grid_dim: [i32::MAX as u32, 65535, 65535],
        max_shared_per_block_optin: 232_448,
        max_shared_per_block: 49_152,
        memory_pools: true,
        total_memory: 8 << 30,
        free_memory: 8 << 30,
    }
}

// ---------------------------------------------------------------------------
// Streams and events

enum Work {
    Run(Box<dyn FnOnce() + Send>),
    /// Block until the stream has completed this many operations.
    Wait(Arc<SimStream>, u64),
}

#[derive(Default)]
struct Queue {
    work: VecDeque<Work>,
    submitted: u64,
    completed: u64,
    closed: bool,
}

pub(crate) struct SimStream {
    /// Index into the detector's clocks.
    id: usize,
    queue: Mutex<Queue>,
    changed: Condvar,
    worker: Mutex<Option<JoinHandle<()>>>,
}

static STREAMS: Mutex<Vec<Weak<SimStream>>> = Mutex::new(Vec::new());

impl SimStream {
    /// Run `account` (the detector's view of the stream) then queue `work`, both
    /// under the queue's lock: when several host threads use one stream, the
    /// detector sees its operations in the order the worker runs them.
    fn push_after(&self, account: impl FnOnce(), work: Work) {
        let mut q = self.queue.lock_unpoisoned();
        account();
        q.work.push_back(work);
        q.submitted += 1;
        self.changed.notify_all();
    }

    /// `f` under the queue's lock, with the number of operations queued so far.
    fn with_position<R>(&self, f: impl FnOnce(u64) -> R) -> R {
        let q = self.queue.lock_unpoisoned();
        f(q.submitted)
    }

    fn submitted(&self) -> u64 {
        self.queue.lock_unpoisoned().submitted
    }

    fn completed(&self) -> u64 {
        self.queue.lock_unpoisoned().completed
    }

    fn wait_until(&self, n: u64) {
        let mut q = self.queue.lock_unpoisoned();
        while q.completed < n {
            q = wait_unpoisoned(&self.changed, q);
        }
    }

    fn drain(self: &Arc<Self>) {
        loop {
            let work = {
                let mut q = self.queue.lock_unpoisoned();
                loop {
                    if let Some(w) = q.work.pop_front() {
                        break w;
                    }
                    if q.closed {
                        return;
                    }
                    q = wait_unpoisoned(&self.changed, q);
                }
            };
            match work {
                Work::Run(f) if FAULT.get().is_none() => {
                    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
                        let what = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        let _ = FAULT.set(format!("the simulator failed: {what}"));
                    }
                }
                Work::Run(_) => {}
                Work::Wait(other, n) => other.wait_until(n),
            }
            let mut q = self.queue.lock_unpoisoned();
            q.completed += 1;
            self.changed.notify_all();
        }
    }
}

/// # Safety
/// `raw` came from [`stream_create`] and is not destroyed yet.
unsafe fn stream<'a>(raw: RawStream) -> &'a SimStream {
    // SAFETY: the caller's obligation: `raw` is a live `Arc<SimStream>` pointer.
    unsafe { &*(raw as *const SimStream) }
}

/// # Safety
/// As for [`stream`].
unsafe fn stream_arc(raw: RawStream) -> Arc<SimStream> {
    let p = raw as *const SimStream;
    // SAFETY: the caller's obligation; the count taken here is given back by the
    // returned `Arc`.
    unsafe {
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    }
}

pub(crate) fn stream_create() -> Result<RawStream> {
    alive("cuStreamCreate")?;
    let s = Arc::new(SimStream {
        id: DETECTOR.new_stream(),
        queue: Mutex::default(),
        changed: Condvar::new(),
        worker: Mutex::new(None),
    });
    let worker = s.clone();
    let handle = std::thread::Builder::new()
        .name(format!("xlog-sim-stream-{}", s.id))
        .spawn(move || worker.drain())
        .map_err(|e| {
            driver_error(
                "cuStreamCreate",
                CUDA_ERROR_OUT_OF_MEMORY,
                format!("the simulator could not start a stream worker: {e}"),
            )
        })?;
    *s.worker.lock_unpoisoned() = Some(handle);
    STREAMS.lock_unpoisoned().push(Arc::downgrade(&s));
    Ok(Arc::into_raw(s) as RawStream)
}

/// # Safety
/// `s` came from [`stream_create`] and is not used after this call.
pub(crate) unsafe fn stream_destroy(s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligation; this takes back `stream_create`'s count.
    let s = unsafe { Arc::from_raw(s as *const SimStream) };
    s.queue.lock_unpoisoned().closed = true;
    s.changed.notify_all();
    if let Some(h) = s.worker.lock_unpoisoned().take() {
        let _ = h.join();
    }
    STREAMS
        .lock_unpoisoned()
        .retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), Arc::as_ptr(&s)));
    Ok(())
}

/// # Safety
/// `s` is a live simulated stream.
pub(crate) unsafe fn stream_synchronize(s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligation.
    let s = unsafe { stream(s) };
    let (position, clock) = s.with_position(|n| (n, DETECTOR.record(s.id)));
    s.wait_until(position);
    DETECTOR.host_waits(&clock);
    alive("cuStreamSynchronize")
}

/// Whether `s` has run everything queued on it (`cuStreamQuery`).
///
/// # Safety
/// `s` is a live simulated stream.
pub(crate) unsafe fn stream_query(s: RawStream) -> bool {
    // SAFETY: the caller's obligation.
    let s = unsafe { stream(s) };
    let (position, clock) = s.with_position(|n| (n, DETECTOR.record(s.id)));
    if s.completed() < position {
        return false;
    }
    // Seeing the stream done orders the host after its work, as a synchronisation.
    DETECTOR.host_waits(&clock);
    true
}

pub(crate) fn ctx_synchronize() -> Result<()> {
    let live: Vec<Arc<SimStream>> = STREAMS
        .lock_unpoisoned()
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for s in &live {
        s.wait_until(s.submitted());
    }
    DETECTOR.host_waits_all();
    alive("cuCtxSynchronize")
}

/// The last record of an event: where it completes, and the clock it captured.
struct Recorded {
    stream: Arc<SimStream>,
    position: u64,
    clock: Vec<u64>,
}

#[derive(Default)]
struct SimEvent {
    last: Mutex<Option<Recorded>>,
}

/// # Safety
/// `ev` came from [`event_create`] and is not destroyed yet.
unsafe fn event<'a>(ev: RawEvent) -> &'a SimEvent {
    // SAFETY: the caller's obligation.
    unsafe { &*(ev as *const SimEvent) }
}

pub(crate) fn event_create() -> Result<RawEvent> {
    alive("cuEventCreate")?;
    Ok(Box::into_raw(Box::<SimEvent>::default()) as RawEvent)
}

/// # Safety
/// `ev` came from [`event_create`] and is not used after this call.
pub(crate) unsafe fn event_destroy(ev: RawEvent) -> Result<()> {
    // SAFETY: the caller's obligation.
    drop(unsafe { Box::from_raw(ev as *mut SimEvent) });
    Ok(())
}

/// # Safety
/// `ev` and `s` are live simulated handles.
pub(crate) unsafe fn event_record(ev: RawEvent, s: RawStream) -> Result<()> {
    alive("cuEventRecord")?;
    // SAFETY: the caller's obligations.
    let (ev, s) = unsafe { (event(ev), stream_arc(s)) };
    let (position, clock) = s.with_position(|n| (n, DETECTOR.record(s.id)));
    *ev.last.lock_unpoisoned() = Some(Recorded {
        stream: s,
        position,
        clock,
    });
    Ok(())
}

/// # Safety
/// `s` and `ev` are live simulated handles.
pub(crate) unsafe fn stream_wait_event(s: RawStream, ev: RawEvent) -> Result<()> {
    alive("cuStreamWaitEvent")?;
    // SAFETY: the caller's obligations.
    let (s, ev) = unsafe { (stream(s), event(ev)) };
    if let Some(r) = &*ev.last.lock_unpoisoned() {
        if r.stream.id == s.id {
            DETECTOR.wait(s.id, &r.clock);
        } else {
            let wait = Work::Wait(r.stream.clone(), r.position);
            s.push_after(|| DETECTOR.wait(s.id, &r.clock), wait);
        }
    }
    Ok(())
}

/// Whether the last record of `ev` has completed. Not a synchronisation for the
/// hazard detector: xlog uses queries only to retire frees from its accounting and
/// to forget a page-locked buffer's finished copies (host memory, which the
/// detector does not track), so its count stays the one a model of the program's
/// fences predicts.
///
/// # Safety
/// `ev` is a live simulated event.
pub(crate) unsafe fn event_query(ev: RawEvent) -> bool {
    // SAFETY: the caller's obligation.
    let ev = unsafe { event(ev) };
    let last = ev.last.lock_unpoisoned();
    match &*last {
        None => true,
        Some(r) => r.stream.completed() >= r.position,
    }
}

/// # Safety
/// `ev` is a live simulated event.
pub(crate) unsafe fn event_synchronize(ev: RawEvent) -> Result<()> {
    // SAFETY: the caller's obligation.
    let ev = unsafe { event(ev) };
    let last = ev
        .last
        .lock_unpoisoned()
        .as_ref()
        .map(|r| (r.stream.clone(), r.position, r.clock.clone()));
    if let Some((s, position, clock)) = last {
        s.wait_until(position);
        DETECTOR.host_waits(&clock);
    }
    alive("cuEventSynchronize")
}

// ---------------------------------------------------------------------------
// Memory

/// Every live allocation: base address → layout.
static MEMORY: Mutex<BTreeMap<u64, Layout>> = Mutex::new(BTreeMap::new());

const ALIGN: usize = 256;

fn allocate(call: &'static str, bytes: usize, align: usize) -> Result<u64> {
    alive(call)?;
    release_quarantined();
    let layout = Layout::from_size_align(bytes, align)
        .ok()
        .filter(|_| bytes > 0)
        .ok_or_else(|| {
            driver_error(
                call,
                CUDA_ERROR_INVALID_VALUE,
                format!("CUDA_ERROR_INVALID_VALUE (simulated): cannot allocate {bytes} bytes"),
            )
        })?;
    // SAFETY: `layout` has a non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        return Err(driver_error(
            call,
            CUDA_ERROR_OUT_OF_MEMORY,
            format!("CUDA_ERROR_OUT_OF_MEMORY (simulated): the host refused {bytes} bytes"),
        ));
    }
    // Fresh device memory holds whatever was there before; here it holds
    // `UNWRITTEN` bytes, so a result no kernel wrote reads as 0xcdcd…, never as
    // the zeros a test could mistake for a right answer.
    // SAFETY: `p` is a fresh allocation of `bytes` bytes.
    unsafe { std::ptr::write_bytes(p, UNWRITTEN, bytes) };
    MEMORY.lock_unpoisoned().insert(p as u64, layout);
    Ok(p as u64)
}

/// Writes `rec` into the module's panic record as the device's handler does: the
/// first panic claims the record (its state, empty → writing), writes the rest,
/// then publishes it (state complete, with release ordering). A later panic, of
/// this launch or of one on another stream, finds the record claimed and writes
/// nothing, so readers, which look at the rest only once the state is complete
/// (`RecordSlot::read`), never race a writer.
///
/// # Safety
/// 1. `record` is the address of a live, 4-byte-aligned `PanicRecord` whose state
///    is only ever accessed atomically (here and by `RecordSlot::read`).
unsafe fn publish_panic(record: *mut PanicRecord, rec: &PanicRecord) {
    use xlog_device::panic::{STATE_COMPLETE, STATE_EMPTY, STATE_WRITING};
    // SAFETY: the state is the record's first field, aligned and alive (obligation 1).
    let state = unsafe { std::sync::atomic::AtomicU32::from_ptr(&raw mut (*record).state) };
    if state
        .compare_exchange(
            STATE_EMPTY,
            STATE_WRITING,
            Ordering::Acquire,
            Ordering::Relaxed,
        )
        .is_err()
    {
        return;
    }
    let skip = std::mem::size_of::<u32>();
    // SAFETY: the claim above makes this the record's only writer, and readers
    // leave every byte after the state alone until it is complete; both ranges
    // are the record's bytes after its state field.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (rec as *const PanicRecord).cast::<u8>().add(skip),
            record.cast::<u8>().add(skip),
            std::mem::size_of::<PanicRecord>() - skip,
        )
    };
    state.store(STATE_COMPLETE, Ordering::Release);
}

/// The byte every fresh simulated allocation holds until something writes it.
pub(crate) const UNWRITTEN: u8 = 0xcd;

fn release(call: &'static str, ptr: u64) -> Result<Layout> {
    MEMORY.lock_unpoisoned().remove(&ptr).ok_or_else(|| {
        driver_error(
            call,
            CUDA_ERROR_INVALID_VALUE,
            format!("CUDA_ERROR_INVALID_VALUE (simulated): {ptr:#x} is not a live allocation"),
        )
    })
}

fn deallocate(ptr: u64, layout: Layout) {
    // SAFETY: `ptr` was allocated with `layout` by `allocate` and removed from
    // MEMORY exactly once by `release`.
    unsafe { std::alloc::dealloc(ptr as *mut u8, layout) }
}

/// A freed block, returned to the host allocator only once every stream has
/// finished the work it had been given when the block was freed.
struct Quarantined {
    ptr: u64,
    layout: Layout,
    after: Vec<(Weak<SimStream>, u64)>,
}

/// Freed blocks still waiting for earlier work. The GPU tolerates a kernel that
/// touches freed device memory (a program bug the detector reports); host memory
/// handed back to the allocator would be corrupted instead, so frees wait here.
static QUARANTINE: Mutex<Vec<Quarantined>> = Mutex::new(Vec::new());

/// Free `ptr` once the work enqueued so far on every stream has run.
fn quarantine(ptr: u64, layout: Layout) {
    let after = STREAMS
        .lock_unpoisoned()
        .iter()
        .filter_map(|w| w.upgrade().map(|s| (w.clone(), s.submitted())))
        .collect();
    QUARANTINE
        .lock_unpoisoned()
        .push(Quarantined { ptr, layout, after });
    release_quarantined();
}

/// Return the quarantined blocks whose earlier work has all run.
fn release_quarantined() {
    let ready: Vec<Quarantined> = {
        let mut q = QUARANTINE.lock_unpoisoned();
        let (ready, waiting) = std::mem::take(&mut *q).into_iter().partition(|b| {
            b.after
                .iter()
                .all(|(s, n)| s.upgrade().is_none_or(|s| s.completed() >= *n))
        });
        *q = waiting;
        ready
    };
    for b in ready {
        deallocate(b.ptr, b.layout);
    }
}

/// # Safety
/// `s` is a live simulated stream.
pub(crate) unsafe fn mem_alloc_async(bytes: usize, s: RawStream) -> Result<u64> {
    let ptr = allocate("cuMemAllocAsync", bytes, ALIGN)?;
    // SAFETY: the caller's obligation.
    let s = unsafe { stream(s) };
    s.with_position(|_| DETECTOR.allocate(ptr, bytes, Some(s.id)));
    Ok(ptr)
}

/// # Safety
/// `ptr` is a live allocation and `s` a live simulated stream.
pub(crate) unsafe fn mem_free_async(ptr: u64, s: RawStream) -> Result<()> {
    alive("cuMemFreeAsync")?;
    // SAFETY: the caller's obligation.
    let s = unsafe { stream(s) };
    let layout = release("cuMemFreeAsync", ptr)?;
    s.with_position(|_| DETECTOR.free(ptr, Some(s.id)));
    quarantine(ptr, layout);
    Ok(())
}

pub(crate) fn mem_alloc(bytes: usize) -> Result<u64> {
    let ptr = allocate("cuMemAlloc", bytes, ALIGN)?;
    DETECTOR.allocate(ptr, bytes, None);
    Ok(ptr)
}

pub(crate) fn mem_free(ptr: u64) -> Result<()> {
    alive("cuMemFree")?;
    let layout = release("cuMemFree", ptr)?;
    DETECTOR.free(ptr, None);
    quarantine(ptr, layout);
    Ok(())
}

/// Page-locked, mapped host memory: plain host memory whose device address is its
/// host address.
pub(crate) fn host_alloc_mapped(bytes: usize) -> Result<(*mut u8, u64)> {
    // Page-aligned, as the driver's page-locked memory is.
    let p = allocate("cuMemHostAlloc", bytes, crate::pinned::PAGE)?;
    // SAFETY: a fresh allocation of `bytes` bytes, zeroed (as on the GPU) before
    // anyone can see it.
    unsafe { std::ptr::write_bytes(p as *mut u8, 0, bytes) };
    Ok((p as *mut u8, p))
}

pub(crate) fn host_free(host: *mut u8) -> Result<()> {
    let layout = release("cuMemFreeHost", host as u64)?;
    // Quarantined as device memory is: a kernel queued before the free may still
    // write into it (a module's panic record), as the driver's wait in
    // `cuModuleUnload` allows on a GPU.
    quarantine(host as u64, layout);
    Ok(())
}

/// Queue `f` on `s` after checking `touches` for hazards.
///
/// # Safety
/// `s` is a live simulated stream.
pub(crate) unsafe fn enqueue(
    call: &'static str,
    s: RawStream,
    op: &str,
    touches: &[Touch],
    f: impl FnOnce() + Send + 'static,
) -> Result<()> {
    alive(call)?;
    // SAFETY: the caller's obligation.
    let s = unsafe { stream(s) };
    s.push_after(
        || DETECTOR.enqueue(s.id, op, touches),
        Work::Run(Box::new(f)),
    );
    Ok(())
}

fn touch(ptr: u64, bytes: usize, write: bool) -> Touch {
    Touch { ptr, bytes, write }
}

/// Refuses a null device address, which no allocation has (an empty buffer's
/// null block included): the copy or memset would hand it to `core::ptr`, for
/// which null is never valid, even for zero bytes.
fn require_address(call: &'static str, ptrs: &[u64]) -> Result<()> {
    if ptrs.contains(&0) {
        return Err(driver_error(
            call,
            CUDA_ERROR_INVALID_VALUE,
            "CUDA_ERROR_INVALID_VALUE (simulated): a null device address".to_owned(),
        ));
    }
    Ok(())
}

/// # Safety
/// As `driver::memcpy_htod_async`; `s` is a live simulated stream.
pub(crate) unsafe fn memcpy_htod_async(
    dst: u64,
    src: *const u8,
    len: usize,
    s: RawStream,
) -> Result<()> {
    require_address("cuMemcpyHtoDAsync", &[dst])?;
    // Staged now, as the driver stages pageable memory before returning.
    // SAFETY: `src` is readable for `len` bytes (the caller's obligation).
    let staged = unsafe { std::slice::from_raw_parts(src, len) }.to_vec();
    let copy = move || {
        // SAFETY: `dst..dst+len` is simulated device memory the caller ordered on
        // `s`, and this runs in that order.
        unsafe { std::ptr::copy_nonoverlapping(staged.as_ptr(), dst as *mut u8, staged.len()) }
    };
    // SAFETY: the caller's obligation.
    unsafe {
        enqueue(
            "cuMemcpyHtoDAsync",
            s,
            "upload",
            &[touch(dst, len, true)],
            copy,
        )
    }
}

/// # Safety
/// As `driver::memcpy_dtoh_async`; `s` is a live simulated stream.
pub(crate) unsafe fn memcpy_dtoh_async(
    dst: *mut u8,
    src: u64,
    len: usize,
    s: RawStream,
) -> Result<()> {
    require_address("cuMemcpyDtoHAsync", &[src])?;
    let dst = dst as usize;
    let copy = move || {
        // SAFETY: `src..src+len` is simulated device memory ordered on `s`; `dst`
        // stays writable until `s` is synchronised (the caller's obligations).
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, len) }
    };
    // SAFETY: the caller's obligation.
    unsafe {
        enqueue(
            "cuMemcpyDtoHAsync",
            s,
            "download",
            &[touch(src, len, false)],
            copy,
        )
    }
}

/// # Safety
/// As `driver::memcpy_dtod_async`; `s` is a live simulated stream.
pub(crate) unsafe fn memcpy_dtod_async(dst: u64, src: u64, len: usize, s: RawStream) -> Result<()> {
    require_address("cuMemcpyDtoDAsync", &[dst, src])?;
    let copy = move || {
        // SAFETY: both ranges are simulated device memory ordered on `s`.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) }
    };
    let touches = [touch(src, len, false), touch(dst, len, true)];
    // SAFETY: the caller's obligation.
    unsafe { enqueue("cuMemcpyDtoDAsync", s, "copy", &touches, copy) }
}

/// # Safety
/// As `driver::memset_d8_async`; `s` is a live simulated stream.
pub(crate) unsafe fn memset_d8_async(dst: u64, value: u8, len: usize, s: RawStream) -> Result<()> {
    require_address("cuMemsetD8Async", &[dst])?;
    let fill = move || {
        // SAFETY: the range is simulated device memory ordered on `s`.
        unsafe { std::ptr::write_bytes(dst as *mut u8, value, len) }
    };
    // SAFETY: the caller's obligation.
    unsafe { enqueue("cuMemsetD8Async", s, "fill", &[touch(dst, len, true)], fill) }
}

/// # Safety
/// As `driver::memset_words_async`; `s` is a live simulated stream.
pub(crate) unsafe fn memset_words_async(
    dst: u64,
    value: MemsetWord,
    count: usize,
    s: RawStream,
) -> Result<()> {
    require_address(value.call(), &[dst])?;
    let fill = move || match value {
        MemsetWord::W16(v) => {
            // SAFETY: the range is 2-byte aligned simulated device memory ordered on `s`.
            unsafe { std::slice::from_raw_parts_mut(dst as *mut u16, count) }.fill(v)
        }
        MemsetWord::W32(v) => {
            // SAFETY: the range is 4-byte aligned simulated device memory ordered on `s`.
            unsafe { std::slice::from_raw_parts_mut(dst as *mut u32, count) }.fill(v)
        }
    };
    let touches = [touch(dst, count * value.bytes(), true)];
    // SAFETY: the caller's obligation.
    unsafe { enqueue(value.call(), s, "fill", &touches, fill) }
}

/// # Safety
/// `dst..dst+src.len()` is writable host memory nothing else uses (a panic sink).
pub(crate) unsafe fn memcpy_htod_sync(dst: u64, src: &[u8]) -> Result<()> {
    alive("cuMemcpyHtoD")?;
    // SAFETY: the caller's obligation.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) };
    Ok(())
}

// ---------------------------------------------------------------------------
// Modules and kernels

/// A loaded module: its panic sink (where the host stores the address of its
/// panic record) and the functions handed out.
struct SimModule {
    sink: AtomicU64,
    /// The `.entry` names of the module's PTX.
    entries: Vec<String>,
    functions: Mutex<HashMap<String, Box<SimFunction>>>,
}

struct SimFunction {
    name: Arc<str>,
    /// The host build, set by the first lookup that brings one (a typed launcher).
    entry: OnceLock<SimEntry>,
    module: *const SimModule,
}

/// Load a module from its PTX text: the simulator keeps only its entry points'
/// names (the kernels themselves are their host builds).
pub(crate) fn module_load(image: &[u8]) -> Result<RawModule> {
    alive("cuModuleLoadData")?;
    let text = String::from_utf8_lossy(image);
    let entries = text
        .split(".entry")
        .skip(1)
        .filter_map(|rest| {
            let name = rest.trim_start();
            let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))?;
            Some(name[..end].to_owned())
        })
        .collect();
    let m = Box::new(SimModule {
        sink: AtomicU64::new(0),
        entries,
        functions: Mutex::default(),
    });
    Ok(Box::into_raw(m) as RawModule)
}

/// # Safety
/// `m` is a live simulated module.
pub(crate) unsafe fn module_function(
    m: RawModule,
    name: &str,
    entry: Option<SimEntry>,
) -> Result<Option<RawFunction>> {
    let module = m as *const SimModule;
    // SAFETY: the caller's obligation.
    let loaded = unsafe { &*module };
    if !loaded.entries.iter().any(|e| e == name) {
        return Ok(None);
    }
    let mut functions = loaded.functions.lock_unpoisoned();
    let f = functions.entry(name.to_owned()).or_insert_with(|| {
        Box::new(SimFunction {
            name: Arc::from(name),
            entry: OnceLock::new(),
            module,
        })
    });
    if let Some(entry) = entry {
        let kept = *f.entry.get_or_init(|| entry);
        // The first host build stays with the function; another one would have the
        // launches of this kernel read the wrong parameter list.
        if !std::ptr::fn_addr_eq(kept, entry) {
            return Err(Error::InvalidArgument {
                what: format!("the host build of kernel `{name}`"),
                reason: "the kernel already has a different host build on this module \
                         (each kernel name takes exactly one)"
                    .into(),
            });
        }
    }
    Ok(Some(&**f as *const SimFunction as RawFunction))
}

/// # Safety
/// `m` is a live simulated module.
pub(crate) unsafe fn module_global(m: RawModule, name: &str) -> Option<(u64, usize)> {
    // SAFETY: the caller's obligation.
    let m = unsafe { &*(m as *const SimModule) };
    (name == PANIC_SINK_SYMBOL).then_some((m.sink.as_ptr() as u64, 8))
}

/// # Safety
/// `m` is a live simulated module none of whose functions is used afterwards.
pub(crate) unsafe fn module_unload(m: RawModule) -> Result<()> {
    // SAFETY: the caller's obligation.
    drop(unsafe { Box::from_raw(m as *mut SimModule) });
    Ok(())
}

/// Worker threads per simulated launch: `XLOG_SIM_THREADS`, else the host's cores.
fn workers() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("XLOG_SIM_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

fn dim(d: [u32; 3]) -> Dim3 {
    Dim3 {
        x: d[0],
        y: d[1],
        z: d[2],
    }
}

/// Queue kernel `f` on `s`: its parameters are read now (as `cuLaunchKernel` copies
/// them), its body runs on the stream's worker.
///
/// # Safety
/// As `driver::launch_kernel`; `f` and `s` are live simulated handles, `touches`
/// are the recorded buffers of the launch.
pub(crate) unsafe fn launch_kernel(
    f: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    s: RawStream,
    params: &mut [*mut c_void],
    touches: &[Touch],
) -> Result<()> {
    alive("cuLaunchKernel")?;
    // SAFETY: `f` is a live simulated function, whose module outlives it.
    let (func, module) = unsafe {
        let f = &*(f as *const SimFunction);
        (f, &*f.module)
    };
    let Some(&entry) = func.entry.get() else {
        return Err(Error::Unsupported {
            what: format!("kernel `{}` on the simulator", func.name),
            reason: "it has no host build: only kernels launched through the launchers \
                     `#[xlog_kernel]` generates run on the simulator (PTX loaded at run time \
                     runs only on a GPU)"
                .into(),
        });
    };
    // SAFETY: `params` holds one pointer per parameter, each to a value of exactly
    // that parameter's type (the caller's obligation), which is what the entry reads.
    let kernel = unsafe { entry(params) };
    let launch = Launch {
        grid: dim(grid),
        block: dim(block),
        dynamic_shared_bytes: shared_bytes,
    };
    let record = module.sink.load(Ordering::Acquire);
    let name = func.name.clone();
    let op = format!("kernel `{name}`");
    let run = move || {
        if let Err(fault) = xlog_device::sim::run(&launch, kernel.body(), workers()) {
            if let (Fault::Panic(rec), true) = (&fault, record != 0) {
                // SAFETY: a non-zero sink holds the address of the module's panic
                // record (zeroed host memory the runtime keeps while the module is
                // loaded).
                unsafe { publish_panic(record as *mut PanicRecord, rec) };
            }
            let _ = FAULT.set(format!("kernel `{name}`: {fault}"));
        }
    };
    // SAFETY: `s` is live; the kernel touches only the recorded buffers.
    unsafe { enqueue("cuLaunchKernel", s, &op, touches, run) }
}
