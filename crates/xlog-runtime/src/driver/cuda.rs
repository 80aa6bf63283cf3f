//! The GPU platform: each [`Platform`] call is one CUDA driver entry point (or a
//! short, documented sequence of them), its status code turned into
//! [`Error::Driver`]. The obligations of each `unsafe` call are the ones the
//! [`driver`](super) function of the same name states.
//!
//! See the [CUDA driver API](https://docs.nvidia.com/cuda/cuda-driver-api/index.html).

use std::ffi::{c_void, CString};
use std::sync::OnceLock;

use cudarc::driver::{result, sys};

use super::{
    Context, DeviceInfo, HostPage, MemsetWord, Platform, RawContext, RawEvent, RawFunction,
    RawModule, RawStream,
};
use crate::error::{Error, Result};
use crate::launch::BufferUse;
use crate::sim::{SimEntry, Touch};

/// The CUDA driver, loaded at run time through cudarc.
pub(crate) struct Cuda;

/// Whether the CUDA driver sees device `ordinal`, asked without choosing this
/// process's platform.
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

/// Load `libcuda` and call `cuInit`, once per process.
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

/// The limits of `ctx`'s device, read with its context bound.
fn read_info(ctx: &Context, ordinal: u32) -> Result<DeviceInfo> {
    use sys::CUdevice_attribute as A;
    let attr = |a: A| -> Result<u32> {
        // SAFETY: `ctx.device` is a valid device handle.
        unsafe { result::device::get_attribute(ctx.device, a) }
            .map(|v| v as u32)
            .map_err(|e| Error::driver("cuDeviceGetAttribute", e))
    };
    Ok(DeviceInfo {
        ordinal,
        name: result::device::get_name(ctx.device)
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
        max_shared_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        max_shared_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        memory_pools: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0,
        // SAFETY: `ctx.device` is a valid device handle.
        total_memory: unsafe { result::device::total_mem(ctx.device) }
            .map_err(|e| Error::driver("cuDeviceTotalMem", e))?,
        // The context is current (`open_context` binds it before reading the info).
        free_memory: result::mem_get_info()
            .map_err(|e| Error::driver("cuMemGetInfo", e))?
            .0,
    })
}

/// Make `ctx` current: what [`Platform::bind_context`] does when another context is.
///
/// # Safety
/// 1. `ctx` is not null and is retained by a live [`Context`].
#[cold]
#[inline(never)]
unsafe fn make_current(ctx: RawContext) -> Result<()> {
    // SAFETY: obligation 1.
    unsafe { result::ctx::set_current(ctx) }.map_err(|e| Error::driver("cuCtxSetCurrent", e))
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

/// The device's default memory pool (stream-ordered allocations come from it).
///
/// # Safety
/// 1. `ctx` holds a valid device handle.
unsafe fn default_pool(ctx: &Context) -> Result<sys::CUmemoryPool> {
    // SAFETY: obligation 1.
    unsafe { result::device::get_default_mem_pool(ctx.device) }
        .map_err(|e| Error::driver("cuDeviceGetDefaultMemPool", e))
}

impl Platform for Cuda {
    fn is_simulator(&self) -> bool {
        false
    }

    fn has_graphs(&self) -> bool {
        true
    }

    fn interop(&self) -> bool {
        true
    }

    fn nccl(&self) -> bool {
        true
    }

    fn runs_host_builds(&self) -> bool {
        false
    }

    #[inline]
    fn record_accesses(&self, _uses: &[BufferUse<'_>], _touches: &mut Vec<Touch>) {}

    fn init(&self) -> Result<()> {
        cuda_init()
    }

    fn device_count(&self) -> Result<u32> {
        result::device::get_count()
            .map(|c| c as u32)
            .map_err(|e| Error::driver("cuDeviceGetCount", e))
    }

    fn open_context(&self, ordinal: u32) -> Result<Context> {
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
        this.info = read_info(&this, ordinal)?;
        Ok(this)
    }

    #[inline]
    unsafe fn bind_context(&self, ctx: RawContext) -> Result<()> {
        if ctx.is_null() {
            return Ok(());
        }
        let current =
            result::ctx::get_current().map_err(|e| Error::driver("cuCtxGetCurrent", e))?;
        if current != Some(ctx) {
            // SAFETY: obligation 1 of `bind_context`; `ctx` is not null.
            return unsafe { make_current(ctx) };
        }
        Ok(())
    }

    fn release_context(&self, ctx: &Context) {
        if ctx.ctx.is_null() {
            return;
        }
        // SAFETY: the context was retained in `open_context` and is released exactly
        // once, by its `Context`'s drop.
        if let Err(e) = unsafe { result::primary_ctx::release(ctx.device) } {
            tracing::error!(target: "xlog::driver", "cuDevicePrimaryCtxRelease failed: {e}");
        }
    }

    fn retain_pool_memory(&self, ctx: &Context) -> Result<()> {
        if ctx.ctx.is_null() {
            return Ok(());
        }
        // SAFETY: `ctx.device` is valid; the pool returned is the device's default pool.
        unsafe {
            let pool = default_pool(ctx)?;
            let mut threshold: u64 = u64::MAX;
            result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
            .map_err(|e| Error::driver("cuMemPoolSetAttribute", e))
        }
    }

    fn trim_pool_memory(&self, ctx: &Context) -> Result<()> {
        if ctx.ctx.is_null() {
            return Ok(());
        }
        // SAFETY: `ctx.device` is valid; trimming releases only memory no
        // allocation holds.
        unsafe {
            let pool = default_pool(ctx)?;
            result::mem_pool::trim_to(pool, 0).map_err(|e| Error::driver("cuMemPoolTrimTo", e))
        }
    }

    fn stack_size(&self) -> Result<usize> {
        result::ctx::get_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE)
            .map_err(|e| Error::driver("cuCtxGetLimit", e))
    }

    fn set_stack_size(&self, bytes: usize) -> Result<()> {
        result::ctx::set_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE, bytes)
            .map_err(|e| Error::driver("cuCtxSetLimit", e))
    }

    fn ctx_synchronize(&self) -> Result<()> {
        result::ctx::synchronize().map_err(|e| Error::driver("cuCtxSynchronize", e))
    }

    fn stream_create(&self) -> Result<RawStream> {
        result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| Error::driver("cuStreamCreate", e))
    }

    unsafe fn stream_destroy(&self, s: RawStream) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::stream::destroy(s) }.map_err(|e| Error::driver("cuStreamDestroy", e))
    }

    unsafe fn stream_synchronize(&self, s: RawStream) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::stream::synchronize(s) }
            .map_err(|e| Error::driver("cuStreamSynchronize", e))
    }

    unsafe fn stream_query(&self, s: RawStream) -> Result<bool> {
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

    unsafe fn stream_settle(&self, s: RawStream) -> Result<()> {
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

    unsafe fn stream_is_capturing(&self, s: RawStream) -> bool {
        // SAFETY: obligation 1.
        let status = unsafe { result::stream::is_capturing(s) };
        status != Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    unsafe fn stream_wait_event(&self, s: RawStream, ev: RawEvent) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::stream::wait_event(s, ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .map_err(|e| Error::driver("cuStreamWaitEvent", e))
    }

    unsafe fn enable_peer_access(&self, this: &Context, peer: &Context) -> Result<bool> {
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
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
            }
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
                let pool = default_pool(peer)?;
                sys::cuMemPoolSetAccess(pool, &access, 1)
                    .result()
                    .map_err(|e| Error::driver("cuMemPoolSetAccess", e))?;
            }
        }
        Ok(true)
    }

    fn event_create_untimed(&self) -> Result<RawEvent> {
        result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| Error::driver("cuEventCreate", e))
    }

    unsafe fn event_record(&self, ev: RawEvent, s: RawStream) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::event::record(ev, s) }.map_err(|e| Error::driver("cuEventRecord", e))
    }

    unsafe fn event_query(&self, ev: RawEvent) -> bool {
        // SAFETY: obligation 1; a query only reads the event's state.
        relaxed_capture(|| unsafe { result::event::query(ev) }).is_ok()
    }

    unsafe fn event_is_outside_capture(&self, ev: RawEvent) -> bool {
        // SAFETY: obligation 1; a query only reads the event's state.
        match unsafe { result::event::query(ev) } {
            Ok(()) => true,
            Err(e) => e.0 == sys::CUresult::CUDA_ERROR_NOT_READY,
        }
    }

    unsafe fn event_synchronize(&self, ev: RawEvent) -> Result<()> {
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

    unsafe fn event_destroy(&self, ev: RawEvent) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::event::destroy(ev) }.map_err(|e| Error::driver("cuEventDestroy", e))
    }

    unsafe fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<u64> {
        // SAFETY: obligation 1 is the caller's; the memory is returned uninitialised as bytes.
        unsafe { result::malloc_async(s, bytes) }.map_err(|e| Error::driver("cuMemAllocAsync", e))
    }

    unsafe fn mem_free_async(&self, ptr: u64, s: RawStream) -> Result<()> {
        // SAFETY: obligations 1 and 2 are the caller's.
        unsafe { result::free_async(ptr, s) }.map_err(|e| Error::driver("cuMemFreeAsync", e))
    }

    fn mem_alloc(&self, bytes: usize) -> Result<u64> {
        // SAFETY: returns fresh memory; no aliasing obligations at allocation.
        unsafe { result::malloc_sync(bytes) }.map_err(|e| Error::driver("cuMemAlloc", e))
    }

    unsafe fn mem_free(&self, ptr: u64) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::free_sync(ptr) }.map_err(|e| Error::driver("cuMemFree", e))
    }

    unsafe fn memcpy_htod_async(
        &self,
        dst: u64,
        src: *const u8,
        len: usize,
        s: RawStream,
    ) -> Result<()> {
        // SAFETY: obligations 1 and 2 are the caller's; they make `src..src+len` a
        // readable byte slice for the call.
        unsafe { result::memcpy_htod_async(dst, std::slice::from_raw_parts(src, len), s) }
            .map_err(|e| Error::driver("cuMemcpyHtoDAsync", e))
    }

    unsafe fn memcpy_dtoh_async(
        &self,
        dst: *mut u8,
        src: u64,
        len: usize,
        s: RawStream,
    ) -> Result<()> {
        // SAFETY: obligations 1 and 2 are the caller's; they make `dst..dst+len` a
        // writable byte slice nothing else touches until the copy lands.
        unsafe { result::memcpy_dtoh_async(std::slice::from_raw_parts_mut(dst, len), src, s) }
            .map_err(|e| Error::driver("cuMemcpyDtoHAsync", e))
    }

    unsafe fn memcpy_dtod_async(&self, dst: u64, src: u64, len: usize, s: RawStream) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::memcpy_dtod_async(dst, src, len, s) }
            .map_err(|e| Error::driver("cuMemcpyDtoDAsync", e))
    }

    unsafe fn memcpy_peer_async(
        &self,
        dst: u64,
        dst_ctx: &Context,
        src: u64,
        src_ctx: &Context,
        len: usize,
        s: RawStream,
    ) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { sys::cuMemcpyPeerAsync(dst, dst_ctx.ctx, src, src_ctx.ctx, len, s) }
            .result()
            .map_err(|e| Error::driver("cuMemcpyPeerAsync", e))
    }

    unsafe fn memset_d8_async(&self, dst: u64, value: u8, len: usize, s: RawStream) -> Result<()> {
        // SAFETY: obligation 1 is the caller's.
        unsafe { result::memset_d8_async(dst, value, len, s) }
            .map_err(|e| Error::driver("cuMemsetD8Async", e))
    }

    unsafe fn memset_words_async(
        &self,
        dst: u64,
        value: MemsetWord,
        count: usize,
        s: RawStream,
    ) -> Result<()> {
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

    fn module_load(&self, image: &[u8]) -> Result<RawModule> {
        // SAFETY: `image` is a complete PTX (NUL-terminated by the caller) or cubin image
        // that outlives the call; the driver copies what it keeps.
        unsafe { result::module::load_data(image.as_ptr().cast()) }
            .map_err(|e| Error::driver("cuModuleLoadData", e))
    }

    unsafe fn module_function(
        &self,
        m: RawModule,
        name: &str,
        _entry: Option<SimEntry>,
    ) -> Result<Option<RawFunction>> {
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

    unsafe fn module_global(&self, m: RawModule, name: &str) -> Result<Option<(u64, usize)>> {
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

    unsafe fn module_unload(&self, m: RawModule) -> Result<()> {
        // Relaxed: the driver waits for the module's running kernels, which in the
        // default mode invalidates another thread's global-mode graph capture.
        // SAFETY: obligation 1 is the caller's.
        relaxed_capture(|| unsafe { result::module::unload(m) })
            .map_err(|e| Error::driver("cuModuleUnload", e))
    }

    fn host_alloc_mapped(&self, bytes: usize) -> Result<(*mut u8, u64)> {
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

    fn host_page_mapped(&self) -> Result<HostPage> {
        if let Some(page) = registered_page() {
            return Ok(page);
        }
        let (host, dev) = self.host_alloc_mapped(crate::pinned::PAGE)?;
        Ok(HostPage {
            host,
            dev,
            registered: false,
        })
    }

    unsafe fn host_page_free(&self, page: HostPage) -> Result<()> {
        if !page.registered {
            // SAFETY: obligation 1 is the caller's: the page came from
            // `host_alloc_mapped`.
            return unsafe { self.host_free(page.host) };
        }
        // Relaxed, as `host_free`.
        // SAFETY: obligation 1 is the caller's: `page.host` is a registered page.
        relaxed_capture(|| unsafe { sys::cuMemHostUnregister(page.host.cast()) }.result())
            .map_err(|e| Error::driver("cuMemHostUnregister", e))?;
        // SAFETY: `page.host` came from `alloc_zeroed(page_layout())` in
        // `registered_page`, and the driver no longer maps it.
        unsafe { std::alloc::dealloc(page.host, page_layout()) };
        Ok(())
    }

    unsafe fn host_free(&self, host: *mut u8) -> Result<()> {
        // Relaxed, as `module_unload`: freeing page-locked memory may wait for the device.
        // SAFETY: obligation 1 is the caller's.
        relaxed_capture(|| unsafe { result::free_host(host.cast()) })
            .map_err(|e| Error::driver("cuMemFreeHost", e))
    }

    unsafe fn memcpy_htod_sync(&self, dst: u64, src: &[u8]) -> Result<()> {
        // SAFETY: obligation 1 is the caller's; `src` is a live slice.
        unsafe { result::memcpy_htod_sync(dst, src) }.map_err(|e| Error::driver("cuMemcpyHtoD", e))
    }

    unsafe fn function_set_max_dynamic_shared(&self, f: RawFunction, bytes: u32) -> Result<()> {
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

    #[inline]
    unsafe fn launch_kernel(
        &self,
        f: RawFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        s: RawStream,
        params: &mut [*mut c_void],
        _touches: &[Touch],
    ) -> Result<()> {
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
}

/// The layout of a registered page: one page, page-aligned, as
/// `cuMemHostRegister` wants.
fn page_layout() -> std::alloc::Layout {
    let page = crate::pinned::PAGE;
    std::alloc::Layout::from_size_align(page, page).expect("a page is a valid layout")
}

/// A zeroed page from the host allocator, registered with the driver and mapped
/// into the device's address space; `None` when the allocator or the driver
/// refuses (the page is then given back, and nothing else changed).
fn registered_page() -> Option<HostPage> {
    let layout = page_layout();
    // SAFETY: `layout` has a non-zero size.
    let host = unsafe { std::alloc::alloc_zeroed(layout) };
    if host.is_null() {
        return None;
    }
    // SAFETY: `host` is a fresh, page-aligned allocation of one page, which this
    // call registers whole; on failure it is unregistered (when registered) and
    // freed before anyone sees it, or leaked when the driver will not unregister it.
    unsafe {
        let flags = sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        if sys::cuMemHostRegister_v2(host.cast(), layout.size(), flags)
            .result()
            .is_err()
        {
            std::alloc::dealloc(host, layout);
            return None;
        }
        let mut dev: sys::CUdeviceptr = 0;
        if sys::cuMemHostGetDevicePointer_v2(&mut dev, host.cast(), 0)
            .result()
            .is_err()
        {
            let unregistered =
                relaxed_capture(|| sys::cuMemHostUnregister(host.cast()).result().is_ok());
            if unregistered {
                std::alloc::dealloc(host, layout);
            }
            return None;
        }
        Some(HostPage {
            host,
            dev,
            registered: true,
        })
    }
}
