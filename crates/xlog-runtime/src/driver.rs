//! The only module that touches cudarc's `result` and `sys` layers.
//!
//! Each function is a thin, documented wrapper over one CUDA driver entry point
//! that converts the status code into [`Error::Driver`]. Everything above this
//! module speaks in xlog types; everything that can misuse the driver is here,
//! where its safety obligations are written down once.
//!
//! When the process runs on the simulator ([`crate::sim`]), each function hands its
//! call to the simulated driver instead, with the same contract.
//!
//! See the [CUDA driver API](https://docs.nvidia.com/cuda/cuda-driver-api/index.html).

use std::ffi::{c_void, CString};
use std::sync::OnceLock;

use cudarc::driver::{result, sys};

use crate::error::{Error, Result};
use crate::sim::{self, SimEntry, Touch};

pub use crate::handle::DeviceInfo;
pub(crate) use crate::handle::{
    MemsetWord, RawContext, RawEvent, RawFunction, RawModule, RawStream,
};

/// Load `libcuda` and call `cuInit` once per process.
pub(crate) fn init() -> Result<()> {
    if sim::is_active() {
        return Ok(());
    }
    cuda_init()
}

/// Whether the CUDA driver sees device `ordinal`, asked without deciding this
/// process's backend (the simulator can still be selected afterwards).
pub(crate) fn probe_gpu(ordinal: u32) -> Result<()> {
    cuda_init()?;
    let count = result::device::get_count().map_err(|e| Error::driver("cuDeviceGetCount", e))?;
    if ordinal >= count as u32 {
        return Err(Error::DeviceOutOfRange {
            ordinal,
            count: count as u32,
        });
    }
    Ok(())
}

/// `init` on CUDA: load `libcuda` and call `cuInit`, once per process.
fn cuda_init() -> Result<()> {
    static INIT: OnceLock<std::result::Result<(), (bool, Option<u32>)>> = OnceLock::new();
    let outcome = INIT.get_or_init(|| {
        // SAFETY: probing the shared library has no preconditions; it only dlopens.
        if !unsafe { sys::is_culib_present() } {
            return Err((false, None));
        }
        result::init().map_err(|e| (true, Some(e.0 as u32)))
    });
    const NO_DEVICE: u32 = sys::CUresult::CUDA_ERROR_NO_DEVICE as u32;
    match outcome {
        Ok(()) => Ok(()),
        Err((false, _)) => Err(Error::NoDriver),
        Err((true, Some(NO_DEVICE))) => Err(Error::NoDevice),
        Err((true, code)) => Err(Error::Driver {
            call: "cuInit",
            message: format!(
                "the driver refused to initialise (CUresult {}); check that a GPU is visible \
                 (nvidia-smi) and CUDA_VISIBLE_DEVICES",
                code.unwrap_or(0)
            ),
            code: code.unwrap_or(0),
            context: None,
        }),
    }
}

/// Number of CUDA devices.
pub(crate) fn device_count() -> Result<u32> {
    init()?;
    if sim::is_active() {
        return sim::device_count();
    }
    result::device::get_count()
        .map(|c| c as u32)
        .map_err(|e| Error::driver("cuDeviceGetCount", e))
}

/// A retained primary context of one device.
pub(crate) struct Context {
    device: sys::CUdevice,
    /// Null on the simulator, which has no contexts to bind.
    ctx: sys::CUcontext,
    pub(crate) info: DeviceInfo,
}

// SAFETY: a CUDA context handle may be used from any thread once made current there;
// `bind` makes it current before every use.
unsafe impl Send for Context {}
// SAFETY: as for Send; the driver synchronises concurrent use of one context.
unsafe impl Sync for Context {}

impl Context {
    /// Retain the primary context of `ordinal` and read its limits.
    pub(crate) fn open(ordinal: u32) -> Result<Context> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::DeviceOutOfRange { ordinal, count });
        }
        if sim::is_active() {
            return Ok(Context {
                device: 0,
                ctx: std::ptr::null_mut(),
                info: sim::device_info(ordinal),
            });
        }
        let device =
            result::device::get(ordinal as i32).map_err(|e| Error::driver("cuDeviceGet", e))?;
        // SAFETY: `device` was returned by cuDeviceGet above.
        let ctx = unsafe { result::primary_ctx::retain(device) }
            .map_err(|e| Error::driver("cuDevicePrimaryCtxRetain", e))?;
        let mut this = Context {
            device,
            ctx,
            info: DeviceInfo {
                ordinal,
                name: String::new(),
                compute_capability: (0, 0),
                multiprocessors: 0,
                max_threads_per_block: 0,
                max_block_dim: [0; 3],
                max_grid_dim: [0; 3],
                max_shared_per_block_optin: 0,
                max_shared_per_block: 0,
                memory_pools: false,
                total_memory: 0,
                free_memory: 0,
            },
        };
        this.bind()?;
        this.info = this.read_info(ordinal)?;
        Ok(this)
    }

    fn read_info(&self, ordinal: u32) -> Result<DeviceInfo> {
        use sys::CUdevice_attribute as A;
        let attr = |a: A| -> Result<u32> {
            // SAFETY: `self.device` is a valid device handle.
            unsafe { result::device::get_attribute(self.device, a) }
                .map(|v| v as u32)
                .map_err(|e| Error::driver("cuDeviceGetAttribute", e))
        };
        Ok(DeviceInfo {
            ordinal,
            name: result::device::get_name(self.device)
                .map_err(|e| Error::driver("cuDeviceGetName", e))?,
            compute_capability: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_per_block_optin: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            max_shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            memory_pools: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0,
            // SAFETY: `self.device` is a valid device handle.
            total_memory: unsafe { result::device::total_mem(self.device) }
                .map_err(|e| Error::driver("cuDeviceTotalMem", e))?,
            // The context is current (`open` binds it before reading the info).
            free_memory: result::mem_get_info()
                .map_err(|e| Error::driver("cuMemGetInfo", e))?
                .0,
        })
    }

    /// Make this context current on the calling thread (a cheap check when it already is).
    #[inline]
    pub(crate) fn bind(&self) -> Result<()> {
        // SAFETY: `self.ctx` is null or the primary context `self` retains.
        unsafe { bind_context(self.ctx) }
    }

    /// The context's handle: null on the simulator.
    pub(crate) fn raw(&self) -> RawContext {
        self.ctx
    }

    /// Keep freed memory in the device's default pool instead of returning it to
    /// the OS at every synchronisation, so stream-ordered reuse stays cheap.
    pub(crate) fn retain_pool_memory(&self) -> Result<()> {
        if self.ctx.is_null() {
            return Ok(());
        }
        // SAFETY: `self.device` is valid; the pool returned is the device's default pool.
        unsafe {
            let pool = result::device::get_default_mem_pool(self.device)
                .map_err(|e| Error::driver("cuDeviceGetDefaultMemPool", e))?;
            let mut threshold: u64 = u64::MAX;
            result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
            .map_err(|e| Error::driver("cuMemPoolSetAttribute", e))
        }
    }

    /// Give the device's default memory pool's unused memory back to the device
    /// (`cuMemPoolTrimTo(pool, 0)`): memory of freed blocks whose frees have run.
    pub(crate) fn trim_pool_memory(&self) -> Result<()> {
        if self.ctx.is_null() {
            return Ok(());
        }
        // SAFETY: `self.device` is valid; trimming releases only memory no
        // allocation holds.
        unsafe {
            let pool = result::device::get_default_mem_pool(self.device)
                .map_err(|e| Error::driver("cuDeviceGetDefaultMemPool", e))?;
            result::mem_pool::trim_to(pool, 0).map_err(|e| Error::driver("cuMemPoolTrimTo", e))
        }
    }
}

/// Make `ctx` current on the calling thread (a cheap check when it already is); a
/// null context (the simulator, host placeholders) needs nothing.
///
/// # Safety
/// 1. `ctx` is null or the handle of a context a live [`Context`] retains (streams
///    hold their `Context` beside its handle).
#[inline]
pub(crate) unsafe fn bind_context(ctx: RawContext) -> Result<()> {
    if ctx.is_null() {
        return Ok(());
    }
    let current = result::ctx::get_current().map_err(|e| Error::driver("cuCtxGetCurrent", e))?;
    if current != Some(ctx) {
        // SAFETY: obligation 1.
        return unsafe { make_current(ctx) };
    }
    Ok(())
}

/// Make `ctx` current: what [`bind_context`] does when another context is.
///
/// # Safety
/// As [`bind_context`], with `ctx` not null.
#[cold]
#[inline(never)]
unsafe fn make_current(ctx: RawContext) -> Result<()> {
    // SAFETY: `ctx` is retained by a live `Context` (the caller's obligation).
    unsafe { result::ctx::set_current(ctx) }.map_err(|e| Error::driver("cuCtxSetCurrent", e))
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.ctx.is_null() {
            return;
        }
        // SAFETY: the context was retained in `open` and is released exactly once.
        if let Err(e) = unsafe { result::primary_ctx::release(self.device) } {
            tracing::error!(target: "xlog::driver", "cuDevicePrimaryCtxRelease failed: {e}");
        }
    }
}

/// The current context's stack per thread (`CU_LIMIT_STACK_SIZE`).
pub(crate) fn stack_size() -> Result<usize> {
    if sim::is_active() {
        return Ok(sim::STACK_BYTES);
    }
    result::ctx::get_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE)
        .map_err(|e| Error::driver("cuCtxGetLimit", e))
}

/// Set the current context's stack per thread (`CU_LIMIT_STACK_SIZE`).
pub(crate) fn set_stack_size(bytes: usize) -> Result<()> {
    if sim::is_active() {
        return sim::set_stack_size(bytes);
    }
    result::ctx::set_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE, bytes)
        .map_err(|e| Error::driver("cuCtxSetLimit", e))
}

/// Wait for all work in the current context.
pub(crate) fn ctx_synchronize() -> Result<()> {
    if sim::is_active() {
        return sim::ctx_synchronize();
    }
    result::ctx::synchronize().map_err(|e| Error::driver("cuCtxSynchronize", e))
}

/// Create a non-blocking stream in the current context.
pub(crate) fn stream_create() -> Result<RawStream> {
    if sim::is_active() {
        return sim::stream_create();
    }
    result::stream::create(result::stream::StreamKind::NonBlocking)
        .map_err(|e| Error::driver("cuStreamCreate", e))
}

/// # Safety
/// 1. `s` was created by [`stream_create`] and is not used after this call.
pub(crate) unsafe fn stream_destroy(s: RawStream) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::stream_destroy(s) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::stream::destroy(s) }.map_err(|e| Error::driver("cuStreamDestroy", e))
}

/// # Safety
/// 1. `s` is a live stream of the current context.
pub(crate) unsafe fn stream_synchronize(s: RawStream) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::stream_synchronize(s) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::stream::synchronize(s) }.map_err(|e| Error::driver("cuStreamSynchronize", e))
}

/// Whether `s` has run everything queued on it (`cuStreamQuery`); `Err` when the
/// stream failed (a sticky error).
///
/// # Safety
/// 1. `s` is a live stream of the current context.
pub(crate) unsafe fn stream_query(s: RawStream) -> Result<bool> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        let done = unsafe { sim::stream_query(s) };
        return sim::alive("cuStreamQuery").map(|()| done);
    }
    // SAFETY: obligation 1; a query only reads the stream's state.
    match unsafe { sys::cuStreamQuery(s) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        r => Err(Error::driver(
            "cuStreamQuery",
            r.result().expect_err("not a success"),
        )),
    }
}

/// Let the bound context reach `peer`'s memory directly (`cuCtxEnablePeerAccess`,
/// and `cuMemPoolSetAccess` on the peer's default memory pool, which stream-ordered
/// allocations come from), when the topology allows it (`cuDeviceCanAccessPeer`). `Ok(false)` when it
/// does not: copies between the two devices then go through host memory, which
/// the driver does by itself. Enabling it twice is not an error. Always true on
/// the simulator, whose devices share one memory.
///
/// # Safety
/// 1. `peer` is the handle of a context a live [`Context`] retains, and `this` is
///    the [`Context`] bound on the calling thread.
pub(crate) unsafe fn enable_peer_access(this: &Context, peer: &Context) -> Result<bool> {
    if sim::is_active() {
        return Ok(true);
    }
    let mut can: std::ffi::c_int = 0;
    // SAFETY: both devices are valid handles; writes one int.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, this.device, peer.device) }
        .result()
        .map_err(|e| Error::driver("cuDeviceCanAccessPeer", e))?;
    if can == 0 {
        return Ok(false);
    }
    // SAFETY: obligation 1.
    match unsafe { sys::cuCtxEnablePeerAccess(peer.ctx, 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        r => {
            return Err(Error::driver(
                "cuCtxEnablePeerAccess",
                r.result().expect_err("not a success"),
            ))
        }
    }
    // Stream-ordered allocations come from the peer's default memory pool, whose
    // own access list governs them (`cuMemPoolSetAccess`), not the context's.
    if peer.info.memory_pools {
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: this.device,
            },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the peer's device is valid; the pool returned is its default
        // pool; `access` lives for the call.
        unsafe {
            let pool = result::device::get_default_mem_pool(peer.device)
                .map_err(|e| Error::driver("cuDeviceGetDefaultMemPool", e))?;
            sys::cuMemPoolSetAccess(pool, &access, 1)
                .result()
                .map_err(|e| Error::driver("cuMemPoolSetAccess", e))?;
        }
    }
    Ok(true)
}

/// Whether `s` is capturing a CUDA graph (an error counts as capturing: the
/// caller refuses either way). False on the simulator, which has no graphs.
///
/// # Safety
/// 1. `s` is a live stream (or a default-stream handle) of the bound context.
pub(crate) unsafe fn stream_is_capturing(s: RawStream) -> bool {
    if sim::is_active() {
        return false;
    }
    // SAFETY: obligation 1.
    let status = unsafe { result::stream::is_capturing(s) };
    status != Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// Whether the most recent record of `ev` has completed (false when the query
/// fails).
///
/// # Safety
/// 1. `ev` is a live event of the bound context.
pub(crate) unsafe fn event_query(ev: RawEvent) -> bool {
    if sim::is_active() {
        // SAFETY: obligation 1.
        return unsafe { sim::event_query(ev) };
    }
    // SAFETY: obligation 1; a query only reads the event's state.
    relaxed_capture(|| unsafe { result::event::query(ev) }).is_ok()
}

/// Whether `ev` was last recorded outside a graph capture: the driver answers a
/// query of such an event (done or not), and refuses one recorded in a capture.
/// True on the simulator.
///
/// # Safety
/// 1. `ev` is a live event of the bound context.
pub(crate) unsafe fn event_is_outside_capture(ev: RawEvent) -> bool {
    if sim::is_active() {
        return true;
    }
    // SAFETY: obligation 1; a query only reads the event's state.
    match unsafe { result::event::query(ev) } {
        Ok(()) => true,
        Err(e) => e.0 == sys::CUresult::CUDA_ERROR_NOT_READY,
    }
}

/// Block until everything queued on `s` has finished or can never run: the wait
/// of a copy from or into host memory borrowed only for the call. The thread is in
/// relaxed stream-capture mode meanwhile (another thread's graph capture in global
/// mode would refuse a plain synchronisation); when the synchronisation fails
/// anyway, the stream is polled until it no longer reports work pending (a stream
/// with a sticky error runs nothing more). Returns the synchronisation's result.
///
/// # Safety
/// 1. `s` is a live stream.
pub(crate) unsafe fn stream_settle(s: RawStream) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's; it
        // returns only when the stream's worker has run everything queued.
        return unsafe { sim::stream_synchronize(s) };
    }
    let synced = relaxed_capture(|| {
        // SAFETY: obligation 1.
        let synced = unsafe { result::stream::synchronize(s) };
        if synced.is_err() {
            let mut pause = std::time::Duration::from_micros(10);
            // SAFETY: as above; a query only reads the stream's state.
            while unsafe { sys::cuStreamQuery(s) } == sys::CUresult::CUDA_ERROR_NOT_READY {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(1));
            }
        }
        synced
    });
    synced.map_err(|e| Error::driver("cuStreamSynchronize", e))
}

/// Runs `f` with this thread in relaxed stream-capture mode, so a call in it that
/// waits for the device (a stream synchronisation, a module unload) neither fails
/// nor invalidates another thread's global-mode graph capture (a context-wide
/// synchronisation still does, in any mode). `f` must not panic (the mode would
/// stay relaxed).
fn relaxed_capture<R>(f: impl FnOnce() -> R) -> R {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: swaps this thread's capture mode with `mode`; swapped back below.
    let relaxed =
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) } == sys::CUresult::CUDA_SUCCESS;
    let r = f();
    if relaxed {
        // SAFETY: restores the mode the first exchange returned.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
    }
    r
}

/// Make `s` wait for the most recent record of `ev`.
///
/// # Safety
/// 1. `s` and `ev` are live handles of the current context.
pub(crate) unsafe fn stream_wait_event(s: RawStream, ev: RawEvent) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::stream_wait_event(s, ev) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::stream::wait_event(s, ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
        .map_err(|e| Error::driver("cuStreamWaitEvent", e))
}

/// Create an event without timing (the cheapest kind to record and wait on).
pub(crate) fn event_create_untimed() -> Result<RawEvent> {
    if sim::is_active() {
        return sim::event_create();
    }
    result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
        .map_err(|e| Error::driver("cuEventCreate", e))
}

/// # Safety
/// 1. `ev` and `s` are live handles of the current context.
pub(crate) unsafe fn event_record(ev: RawEvent, s: RawStream) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::event_record(ev, s) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::event::record(ev, s) }.map_err(|e| Error::driver("cuEventRecord", e))
}

/// Block the host until the most recent record of `ev` has completed or can never
/// complete, as [`stream_settle`] does for a stream: the thread is in relaxed
/// stream-capture mode meanwhile (another thread's global-mode graph capture would
/// refuse a plain synchronisation, and be broken by it), and when the
/// synchronisation fails anyway, the event is polled until it no longer reports
/// work pending. Returns the synchronisation's result.
///
/// # Safety
/// 1. `ev` is a live event of the current context.
pub(crate) unsafe fn event_synchronize(ev: RawEvent) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::event_synchronize(ev) };
    }
    let synced = relaxed_capture(|| {
        // SAFETY: obligation 1 is the caller's.
        let synced = unsafe { result::event::synchronize(ev) };
        if synced.is_err() {
            let mut pause = std::time::Duration::from_micros(10);
            // SAFETY: as above; a query only reads the event's state.
            while unsafe { sys::cuEventQuery(ev) } == sys::CUresult::CUDA_ERROR_NOT_READY {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(1));
            }
        }
        synced
    });
    synced.map_err(|e| Error::driver("cuEventSynchronize", e))
}

/// # Safety
/// 1. `ev` is live and not used after this call.
pub(crate) unsafe fn event_destroy(ev: RawEvent) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::event_destroy(ev) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::event::destroy(ev) }.map_err(|e| Error::driver("cuEventDestroy", e))
}

/// Stream-ordered allocation from the device's current pool.
///
/// # Safety
/// 1. `s` is a live stream of the current context.
pub(crate) unsafe fn mem_alloc_async(bytes: usize, s: RawStream) -> Result<u64> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::mem_alloc_async(bytes, s) };
    }
    // SAFETY: obligation 1 is the caller's; the memory is returned uninitialised as bytes.
    unsafe { result::malloc_async(s, bytes) }.map_err(|e| Error::driver("cuMemAllocAsync", e))
}

/// # Safety
/// 1. `ptr` came from [`mem_alloc_async`] on this context and is not freed twice.
/// 2. All work touching `ptr` is ordered before the current tail of `s`.
pub(crate) unsafe fn mem_free_async(ptr: u64, s: RawStream) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::mem_free_async(ptr, s) };
    }
    // SAFETY: obligations 1 and 2 are the caller's.
    unsafe { result::free_async(ptr, s) }.map_err(|e| Error::driver("cuMemFreeAsync", e))
}

/// Synchronous allocation (`cuMemAlloc`), the backend compute-sanitizer sees best.
pub(crate) fn mem_alloc(bytes: usize) -> Result<u64> {
    if sim::is_active() {
        return sim::mem_alloc(bytes);
    }
    // SAFETY: returns fresh memory; no aliasing obligations at allocation.
    unsafe { result::malloc_sync(bytes) }.map_err(|e| Error::driver("cuMemAlloc", e))
}

/// # Safety
/// 1. `ptr` came from [`mem_alloc`] and no queued work touches it any more.
pub(crate) unsafe fn mem_free(ptr: u64) -> Result<()> {
    if sim::is_active() {
        return sim::mem_free(ptr);
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::free_sync(ptr) }.map_err(|e| Error::driver("cuMemFree", e))
}

/// # Safety
/// 1. `dst..dst+len` is device memory owned by the caller, ordered on `s`.
/// 2. `src` points to `len` readable bytes that stay valid until the copy has run
///    (the driver may read them after this call returns).
pub(crate) unsafe fn memcpy_htod_async(
    dst: u64,
    src: *const u8,
    len: usize,
    s: RawStream,
) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::memcpy_htod_async(dst, src, len, s) };
    }
    // SAFETY: obligations 1 and 2 are the caller's; they make `src..src+len` a
    // readable byte slice for the call.
    unsafe { result::memcpy_htod_async(dst, std::slice::from_raw_parts(src, len), s) }
        .map_err(|e| Error::driver("cuMemcpyHtoDAsync", e))
}

/// # Safety
/// 1. `src..src+len` is device memory ordered on `s`.
/// 2. `dst` points to `len` writable bytes that stay valid until `s` is synchronised.
pub(crate) unsafe fn memcpy_dtoh_async(
    dst: *mut u8,
    src: u64,
    len: usize,
    s: RawStream,
) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::memcpy_dtoh_async(dst, src, len, s) };
    }
    // SAFETY: obligations 1 and 2 are the caller's; they make `dst..dst+len` a
    // writable byte slice nothing else touches until the copy lands.
    unsafe { result::memcpy_dtoh_async(std::slice::from_raw_parts_mut(dst, len), src, s) }
        .map_err(|e| Error::driver("cuMemcpyDtoHAsync", e))
}

/// # Safety
/// 1. Both ranges are device memory ordered on `s`; they do not overlap.
pub(crate) unsafe fn memcpy_dtod_async(dst: u64, src: u64, len: usize, s: RawStream) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::memcpy_dtod_async(dst, src, len, s) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::memcpy_dtod_async(dst, src, len, s) }
        .map_err(|e| Error::driver("cuMemcpyDtoDAsync", e))
}

/// Copy `len` bytes from `src` on `src_ctx`'s device to `dst` on `dst_ctx`'s
/// device, ordered on `s` (`cuMemcpyPeerAsync`): directly over the link when peer
/// access is enabled, staged through host memory by the driver when it is not.
///
/// # Safety
/// 1. `src..src+len` is memory of `src_ctx`'s device and `dst..dst+len` of
///    `dst_ctx`'s, both live contexts; both ranges are fenced on `s`, a live stream
///    of the bound context (one of the two), and stay allocated until `s` has run
///    the copy.
pub(crate) unsafe fn memcpy_peer_async(
    dst: u64,
    dst_ctx: &Context,
    src: u64,
    src_ctx: &Context,
    len: usize,
    s: RawStream,
) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated devices share one memory; the obligations carry over.
        return unsafe { sim::memcpy_dtod_async(dst, src, len, s) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { sys::cuMemcpyPeerAsync(dst, dst_ctx.ctx, src, src_ctx.ctx, len, s) }
        .result()
        .map_err(|e| Error::driver("cuMemcpyPeerAsync", e))
}

/// # Safety
/// 1. `dst..dst+len` is device memory ordered on `s`.
pub(crate) unsafe fn memset_d8_async(dst: u64, value: u8, len: usize, s: RawStream) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::memset_d8_async(dst, value, len, s) };
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe { result::memset_d8_async(dst, value, len, s) }
        .map_err(|e| Error::driver("cuMemsetD8Async", e))
}

/// Fill `count` words of `value` at `dst`.
///
/// # Safety
/// 1. `dst..dst+count*value.bytes()` is device memory aligned to `value.bytes()`,
///    ordered on `s`.
pub(crate) unsafe fn memset_words_async(
    dst: u64,
    value: MemsetWord,
    count: usize,
    s: RawStream,
) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::memset_words_async(dst, value, count, s) };
    }
    // SAFETY: obligation 1 is the caller's. cudarc's result layer wraps only the
    // 8-bit memset.
    let r = unsafe {
        match value {
            MemsetWord::W16(v) => sys::cuMemsetD16Async(dst, v, count, s),
            MemsetWord::W32(v) => sys::cuMemsetD32Async(dst, v, count, s),
        }
    };
    r.result().map_err(|e| Error::driver(value.call(), e))
}

/// Load a module image (NUL-terminated PTX text or a cubin) into the current context.
pub(crate) fn module_load(image: &[u8]) -> Result<RawModule> {
    if sim::is_active() {
        return sim::module_load(image);
    }
    // SAFETY: `image` is a complete PTX (NUL-terminated by the caller) or cubin image
    // that outlives the call; the driver copies what it keeps.
    unsafe { result::module::load_data(image.as_ptr().cast()) }
        .map_err(|e| Error::driver("cuModuleLoadData", e))
}

/// # Safety
/// 1. `m` is a loaded module of the current context.
pub(crate) unsafe fn module_function(
    m: RawModule,
    name: &str,
    entry: Option<SimEntry>,
) -> Result<Option<RawFunction>> {
    if sim::is_active() {
        // SAFETY: obligation 1 is the caller's.
        return unsafe { sim::module_function(m, name, entry) };
    }
    let Ok(cname) = CString::new(name) else {
        return Ok(None);
    };
    // SAFETY: obligation 1 is the caller's.
    match unsafe { result::module::get_function(m, cname) } {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
        Err(e) => Err(Error::driver("cuModuleGetFunction", e)),
    }
}

/// Address and size of a module global, if the module defines it.
///
/// # Safety
/// 1. `m` is a loaded module of the current context.
pub(crate) unsafe fn module_global(m: RawModule, name: &str) -> Result<Option<(u64, usize)>> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return Ok(unsafe { sim::module_global(m, name) });
    }
    let Ok(cname) = CString::new(name) else {
        return Ok(None);
    };
    // SAFETY: obligation 1 is the caller's.
    match unsafe { result::module::get_global(m, cname) } {
        Ok(g) => Ok(Some(g)),
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
        Err(e) => Err(Error::driver("cuModuleGetGlobal", e)),
    }
}

/// # Safety
/// 1. `m` is loaded and none of its functions is used after this call.
pub(crate) unsafe fn module_unload(m: RawModule) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::module_unload(m) };
    }
    // Relaxed: the driver waits for the module's running kernels, which in the
    // default mode invalidates another thread's global-mode graph capture.
    // SAFETY: obligation 1 is the caller's.
    relaxed_capture(|| unsafe { result::module::unload(m) })
        .map_err(|e| Error::driver("cuModuleUnload", e))
}

/// Zeroed, page-locked host memory mapped into the device's address space; returns
/// the host pointer and the device address of the same bytes.
pub(crate) fn host_alloc_mapped(bytes: usize) -> Result<(*mut u8, u64)> {
    if sim::is_active() {
        return sim::host_alloc_mapped(bytes);
    }
    // SAFETY: a fresh allocation of `bytes` bytes, zeroed before anyone can see it;
    // the device alias is queried for exactly that allocation.
    unsafe {
        let host = result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP)
            .map_err(|e| Error::driver("cuMemHostAlloc", e))?
            .cast::<u8>();
        std::ptr::write_bytes(host, 0, bytes);
        let mut dev: sys::CUdeviceptr = 0;
        // cudarc's result layer has no wrapper for this one.
        if let Err(e) = sys::cuMemHostGetDevicePointer_v2(&mut dev, host.cast(), 0).result() {
            let _ = result::free_host(host.cast());
            return Err(Error::driver("cuMemHostGetDevicePointer", e));
        }
        Ok((host, dev))
    }
}

/// # Safety
/// 1. `host` came from [`host_alloc_mapped`] and nothing uses it any more.
pub(crate) unsafe fn host_free(host: *mut u8) -> Result<()> {
    if sim::is_active() {
        return sim::host_free(host);
    }
    // Relaxed, as `module_unload`: freeing page-locked memory may wait for the device.
    // SAFETY: obligation 1 is the caller's.
    relaxed_capture(|| unsafe { result::free_host(host.cast()) })
        .map_err(|e| Error::driver("cuMemFreeHost", e))
}

/// Synchronous host-to-device copy (module globals at load time).
///
/// # Safety
/// 1. `dst..dst+src.len()` is device memory nothing else is using.
pub(crate) unsafe fn memcpy_htod_sync(dst: u64, src: &[u8]) -> Result<()> {
    if sim::is_active() {
        // SAFETY: the simulated call has the same obligations, the caller's.
        return unsafe { sim::memcpy_htod_sync(dst, src) };
    }
    // SAFETY: obligation 1 is the caller's; `src` is a live slice.
    unsafe { result::memcpy_htod_sync(dst, src) }.map_err(|e| Error::driver("cuMemcpyHtoD", e))
}

/// Raise a function's dynamic shared memory limit.
///
/// # Safety
/// 1. `f` is a live function of the current context.
pub(crate) unsafe fn function_set_max_dynamic_shared(f: RawFunction, bytes: u32) -> Result<()> {
    if sim::is_active() {
        return Ok(());
    }
    // SAFETY: obligation 1 is the caller's.
    unsafe {
        result::function::set_function_attribute(
            f,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
    }
    .map_err(|e| Error::driver("cuFuncSetAttribute", e))
}

/// Enqueue a kernel. `touches` (the recorded buffers) are what the simulator's
/// hazard detector checks; the GPU ignores them.
///
/// # Safety
/// 1. `f` is a live function of the current context and `params` holds one pointer
///    per kernel parameter, each to a value of exactly that parameter's type.
/// 2. Every device address passed is valid for what the kernel does with it, and
///    its cross-stream hazards have been fenced on `s`.
pub(crate) unsafe fn launch_kernel(
    f: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    s: RawStream,
    params: &mut [*mut c_void],
    touches: &[Touch],
) -> Result<()> {
    if sim::is_active() {
        // SAFETY: obligations 1 and 2 are the caller's.
        return unsafe { sim::launch_kernel(f, grid, block, shared_bytes, s, params, touches) };
    }
    // SAFETY: obligations 1 and 2 are the caller's.
    unsafe {
        result::launch_kernel(
            f,
            (grid[0], grid[1], grid[2]),
            (block[0], block[1], block[2]),
            shared_bytes,
            s,
            params,
        )
    }
    .map_err(|e| Error::driver("cuLaunchKernel", e))
}

// CUDA graphs (`crate::graph`). The simulator has no graph objects: the graph
// module runs a simulated replay on streams and events instead, so these are
// called only with a GPU.

/// A graph under construction (`CUgraph`).
pub(crate) type RawGraph = sys::CUgraph;
/// An instantiated graph (`CUgraphExec`).
pub(crate) type RawGraphExec = sys::CUgraphExec;
/// One node of a [`RawGraph`].
pub(crate) type RawGraphNode = sys::CUgraphNode;

/// The node's work, as the graph APIs take it.
pub(crate) enum GraphWork<'a> {
    /// A kernel: function, grid, block, dynamic shared bytes, one pointer per parameter.
    Kernel {
        func: RawFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        params: &'a mut [*mut c_void],
    },
    /// `count` elements of `elem_bytes` (1, 2 or 4) set to `value` at `dst`.
    Memset {
        dst: u64,
        value: u32,
        elem_bytes: u32,
        count: usize,
    },
    /// `bytes` copied from `src` to `dst` (device memory, not overlapping).
    Copy { dst: u64, src: u64, bytes: usize },
    /// A captured graph, added as a child (cloned by the driver).
    Child(RawGraph),
    /// Nothing (a copy or fill of zero bytes): a node that only orders.
    Empty,
}

fn kernel_node_params(
    func: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func,
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: shared_bytes,
        kernelParams: params.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// Create an empty graph ([`cuGraphCreate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)).
pub(crate) fn graph_create() -> Result<RawGraph> {
    let mut g = std::ptr::null_mut();
    // SAFETY: writes one handle into `g`.
    unsafe { sys::cuGraphCreate(&mut g, 0) }
        .result()
        .map_err(|e| Error::driver("cuGraphCreate", e))?;
    Ok(g)
}

/// Add a node doing `work` to `graph`, after `deps`.
///
/// # Safety
/// 1. `graph` is live, every handle in `deps` is a node of it, and the bound
///    context is the one `work`'s function and memory belong to.
/// 2. A kernel's `params` hold one pointer per parameter, each to a value of
///    exactly that parameter's type (the driver copies them in this call); every
///    device range the work touches stays valid while an instantiation of the
///    graph can run.
pub(crate) unsafe fn graph_add(
    graph: RawGraph,
    deps: &[RawGraphNode],
    work: GraphWork<'_>,
) -> Result<RawGraphNode> {
    let mut node = std::ptr::null_mut();
    let (d, n) = (deps.as_ptr(), deps.len());
    // SAFETY: obligations 1 and 2; each parameter struct lives for its call.
    let (r, call) = unsafe {
        match work {
            GraphWork::Kernel {
                func,
                grid,
                block,
                shared_bytes,
                params,
            } => {
                let p = kernel_node_params(func, grid, block, shared_bytes, params);
                (
                    sys::cuGraphAddKernelNode_v2(&mut node, graph, d, n, &p),
                    "cuGraphAddKernelNode",
                )
            }
            GraphWork::Memset {
                dst,
                value,
                elem_bytes,
                count,
            } => {
                let p = sys::CUDA_MEMSET_NODE_PARAMS {
                    dst,
                    pitch: 0,
                    value,
                    elementSize: elem_bytes,
                    width: count,
                    height: 1,
                };
                let mut ctx = std::ptr::null_mut();
                sys::cuCtxGetCurrent(&mut ctx);
                (
                    sys::cuGraphAddMemsetNode(&mut node, graph, d, n, &p, ctx),
                    "cuGraphAddMemsetNode",
                )
            }
            GraphWork::Copy { dst, src, bytes } => {
                // Every field spelled out: the memory-type enums have no zero value.
                let device = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
                let p = sys::CUDA_MEMCPY3D {
                    srcXInBytes: 0,
                    srcY: 0,
                    srcZ: 0,
                    srcLOD: 0,
                    srcMemoryType: device,
                    srcHost: std::ptr::null(),
                    srcDevice: src,
                    srcArray: std::ptr::null_mut(),
                    reserved0: std::ptr::null_mut(),
                    srcPitch: bytes,
                    srcHeight: 1,
                    dstXInBytes: 0,
                    dstY: 0,
                    dstZ: 0,
                    dstLOD: 0,
                    dstMemoryType: device,
                    dstHost: std::ptr::null_mut(),
                    dstDevice: dst,
                    dstArray: std::ptr::null_mut(),
                    reserved1: std::ptr::null_mut(),
                    dstPitch: bytes,
                    dstHeight: 1,
                    WidthInBytes: bytes,
                    Height: 1,
                    Depth: 1,
                };
                let mut ctx = std::ptr::null_mut();
                sys::cuCtxGetCurrent(&mut ctx);
                (
                    sys::cuGraphAddMemcpyNode(&mut node, graph, d, n, &p, ctx),
                    "cuGraphAddMemcpyNode",
                )
            }
            GraphWork::Child(child) => (
                sys::cuGraphAddChildGraphNode(&mut node, graph, d, n, child),
                "cuGraphAddChildGraphNode",
            ),
            GraphWork::Empty => (
                sys::cuGraphAddEmptyNode(&mut node, graph, d, n),
                "cuGraphAddEmptyNode",
            ),
        }
    };
    r.result().map_err(|e| Error::driver(call, e))?;
    Ok(node)
}

/// Instantiate `graph` (`cuGraphInstantiateWithFlags`, no flags).
///
/// # Safety
/// 1. `graph` is live, of the bound context.
pub(crate) unsafe fn graph_instantiate(graph: RawGraph) -> Result<RawGraphExec> {
    let mut exec = std::ptr::null_mut();
    // SAFETY: obligation 1; writes one handle into `exec`.
    unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }
        .result()
        .map_err(|e| Error::driver("cuGraphInstantiateWithFlags", e))?;
    Ok(exec)
}

/// Launch `exec` on `s` (`cuGraphLaunch`): ordered after the work queued on `s`
/// before it, and the work queued after it waits for every node.
///
/// # Safety
/// 1. `exec` and `s` are live, of the bound context; every cross-stream hazard of
///    the memory the graph touches has been fenced on `s`.
pub(crate) unsafe fn graph_launch(exec: RawGraphExec, s: RawStream) -> Result<()> {
    // SAFETY: obligation 1.
    unsafe { sys::cuGraphLaunch(exec, s) }
        .result()
        .map_err(|e| Error::driver("cuGraphLaunch", e))
}

/// Give kernel node `node` of `exec` new parameters and launch shape
/// (`cuGraphExecKernelNodeSetParams`; later launches use them).
///
/// # Safety
/// 1. `exec` is live; `node` is a kernel node of the graph `exec` was instantiated
///    from, running `func`; `params` as in [`graph_add`].
pub(crate) unsafe fn graph_exec_set_kernel(
    exec: RawGraphExec,
    node: RawGraphNode,
    func: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    let p = kernel_node_params(func, grid, block, shared_bytes, params);
    // SAFETY: obligation 1; the driver copies the parameters in the call.
    unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, &p) }
        .result()
        .map_err(|e| Error::driver("cuGraphExecKernelNodeSetParams", e))
}

/// Update `exec` in place to run `graph`, which must have its topology
/// (`cuGraphExecUpdate`). `Ok(false)`: the driver refused the update (a
/// different topology or node kind); `exec` is unchanged.
///
/// # Safety
/// 1. `exec` and `graph` are live, of the bound context.
pub(crate) unsafe fn graph_exec_update(exec: RawGraphExec, graph: RawGraph) -> Result<bool> {
    let mut info = sys::CUgraphExecUpdateResultInfo {
        result: sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS,
        errorNode: std::ptr::null_mut(),
        errorFromNode: std::ptr::null_mut(),
    };
    // SAFETY: obligation 1; writes the result record.
    let r = unsafe { sys::cuGraphExecUpdate_v2(exec, graph, &mut info) };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => Ok(false),
        r => Err(Error::driver(
            "cuGraphExecUpdate",
            r.result().expect_err("not a success"),
        )),
    }
}

/// # Safety
/// 1. `graph` is live and not used after this call.
pub(crate) unsafe fn graph_destroy(graph: RawGraph) -> Result<()> {
    // SAFETY: obligation 1.
    unsafe { sys::cuGraphDestroy(graph) }
        .result()
        .map_err(|e| Error::driver("cuGraphDestroy", e))
}

/// Destroy `exec`; launches in flight finish first (the driver frees it when they
/// complete, `cuGraphExecDestroy`).
///
/// # Safety
/// 1. `exec` is live and not used after this call.
pub(crate) unsafe fn graph_exec_destroy(exec: RawGraphExec) -> Result<()> {
    // SAFETY: obligation 1.
    unsafe { sys::cuGraphExecDestroy(exec) }
        .result()
        .map_err(|e| Error::driver("cuGraphExecDestroy", e))
}

/// Capture what `work` queues on a fresh private stream into a new graph
/// (`cuStreamBeginCapture` in thread-local mode, `cuStreamEndCapture`). The stream
/// is destroyed before returning; a failed or panicking `work` ends the capture
/// and discards its graph.
///
/// # Safety
/// 1. `work` only queues work on the stream it is given.
pub(crate) unsafe fn capture_graph(work: impl FnOnce(RawStream) -> Result<()>) -> Result<RawGraph> {
    let s = stream_create()?;
    struct Destroy(RawStream);
    impl Drop for Destroy {
        fn drop(&mut self) {
            // SAFETY: the stream was created above and is used by nothing after this.
            let _ = unsafe { stream_destroy(self.0) };
        }
    }
    let _destroy = Destroy(s);
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    // SAFETY: `s` is a live stream of the bound context.
    unsafe { sys::cuStreamBeginCapture_v2(s, mode) }
        .result()
        .map_err(|e| Error::driver("cuStreamBeginCapture", e))?;
    let worked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(s)));
    let mut graph = std::ptr::null_mut();
    // SAFETY: `s` is capturing; ending the capture writes the graph (or null).
    let ended = unsafe { sys::cuStreamEndCapture(s, &mut graph) };
    let discard = |g: RawGraph| {
        if !g.is_null() {
            // SAFETY: the captured graph is ours and used by nothing else.
            let _ = unsafe { graph_destroy(g) };
        }
    };
    match worked {
        Err(payload) => {
            discard(graph);
            std::panic::resume_unwind(payload)
        }
        Ok(Err(e)) => {
            discard(graph);
            Err(e)
        }
        Ok(Ok(())) => {
            if let Err(e) = ended.result() {
                discard(graph);
                return Err(Error::driver("cuStreamEndCapture", e));
            }
            Ok(graph)
        }
    }
}
