//! The platform seam: every call the runtime makes to a device goes through one
//! [`Platform`], chosen once per process, and this module is the only door to it.
//!
//! Two platforms implement the trait, each in its own module:
//!
//! - `cuda`: the GPU, through the CUDA driver (cudarc's `result` and `sys`
//!   layers, loaded at run time); `graph` holds its CUDA-graph calls, which only
//!   a platform with graphs reaches. These are the only modules that call CUDA.
//! - [`crate::sim`]'s `Simulator`: kernels, streams and memory on the host, with
//!   the hazard detector checking every access.
//!
//! The platform is chosen the first time anything asks for it: by
//! [`RuntimeBuilder::simulator`](crate::RuntimeBuilder::simulator) or the fallback
//! of [`Runtime::get_or_simulator`](crate::Runtime::get_or_simulator)
//! ([`select_simulator`]), else from `XLOG_BACKEND` (`sim`: the simulator;
//! anything else: the GPU) by the first driver call. It never changes afterwards,
//! so one process runs on either the GPU or the simulator, never both.
//!
//! Each function below is a thin call through the chosen platform with the
//! contract written once, here: its `# Safety` obligations are the ones every
//! platform's call of the same name relies on. Where the platforms differ in
//! meaning rather than in mechanism (the simulator has no CUDA graphs, shares no
//! memory with other CUDA libraries, runs no NCCL, runs kernels' host builds),
//! callers ask the platform ([`Platform::has_graphs`], [`Platform::interop`],
//! [`Platform::nccl`], [`Platform::runs_host_builds`]). The recorder hands each
//! piece of work's recorded accesses to the platform
//! ([`Platform::record_accesses`]), which the simulator's hazard detector checks
//! and the GPU ignores.
//!
//! See the [CUDA driver API](https://docs.nvidia.com/cuda/cuda-driver-api/index.html).

mod cuda;
mod graph;

use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::driver::sys;

use crate::error::{Error, Result};
use crate::launch::BufferUse;
use crate::sim::{SimEntry, Simulator, Touch, BACKEND_ENV};

pub use crate::handle::DeviceInfo;
pub(crate) use crate::handle::{
    MemsetWord, RawContext, RawEvent, RawFunction, RawModule, RawStream,
};
pub(crate) use cuda::probe_gpu;
pub(crate) use graph::{
    capture_graph, graph_add, graph_create, graph_destroy, graph_exec_destroy,
    graph_exec_set_kernel, graph_exec_update, graph_instantiate, graph_launch, GraphWork, RawGraph,
    RawGraphExec, RawGraphNode,
};

/// What the runtime needs from a device: one implementation per platform (the
/// GPU's CUDA driver, the simulator), chosen once per process ([`platform`]).
///
/// Each method is the [`driver`](self) function of the same name, which documents
/// it; an `unsafe` method has that function's `# Safety` obligations, and every
/// implementation may rely on them. The handles a platform returns are its own:
/// they are passed back only to the same platform, the only one a process has.
pub(crate) trait Platform: Send + Sync {
    /// Whether this is the simulator (what [`crate::sim::is_active`] reports).
    fn is_simulator(&self) -> bool;
    /// Whether work can be recorded into CUDA graphs and replayed with
    /// [`graph_launch`]; without them (the simulator), `crate::graph` replays a
    /// recording on the platform's streams and events.
    fn has_graphs(&self) -> bool;
    /// Whether device memory, streams and events can be shared with other CUDA
    /// libraries (DLPack, Arrow, foreign streams and work captured from them);
    /// the simulator's memory is host memory no CUDA library may touch.
    fn interop(&self) -> bool;
    /// Whether communicators and collectives go to NCCL; without it (the
    /// simulator), a process's devices form simulated cliques
    /// ([`Communicator::init_all`](crate::nccl::Communicator::init_all) only).
    fn nccl(&self) -> bool;
    /// Whether kernels run their host builds (the simulator): modules are then
    /// loaded from their PTX, whose entry points the platform reads, and every
    /// lookup that brings a host build is checked against the kernel's first.
    fn runs_host_builds(&self) -> bool;
    /// The recorder's hook, called once per piece of recorded work with its uses
    /// as listed (before uses of one buffer merge): the simulator adds each
    /// recorded range to `touches`, which travel with the work to its enqueue
    /// ([`launch_kernel`], a simulated collective) for the hazard detector; the
    /// GPU does nothing.
    fn record_accesses(&self, uses: &[BufferUse<'_>], touches: &mut Vec<Touch>);

    /// [`init`].
    fn init(&self) -> Result<()>;
    /// [`device_count`], once [`init`] succeeded.
    fn device_count(&self) -> Result<u32>;
    /// [`Context::open`], once `ordinal` was checked against [`device_count`].
    fn open_context(&self, ordinal: u32) -> Result<Context>;
    /// [`bind_context`].
    ///
    /// # Safety
    /// As [`bind_context`].
    unsafe fn bind_context(&self, ctx: RawContext) -> Result<()>;
    /// Release what [`open_context`](Self::open_context) retained (a failure is
    /// logged): `ctx`'s drop, called once.
    fn release_context(&self, ctx: &Context);
    /// [`Context::retain_pool_memory`].
    fn retain_pool_memory(&self, ctx: &Context) -> Result<()>;
    /// [`Context::trim_pool_memory`].
    fn trim_pool_memory(&self, ctx: &Context) -> Result<()>;
    /// [`stack_size`].
    fn stack_size(&self) -> Result<usize>;
    /// [`set_stack_size`].
    fn set_stack_size(&self, bytes: usize) -> Result<()>;
    /// [`ctx_synchronize`].
    fn ctx_synchronize(&self) -> Result<()>;
    /// [`stream_create`].
    fn stream_create(&self) -> Result<RawStream>;
    /// [`stream_destroy`].
    ///
    /// # Safety
    /// As [`stream_destroy`].
    unsafe fn stream_destroy(&self, s: RawStream) -> Result<()>;
    /// [`stream_synchronize`].
    ///
    /// # Safety
    /// As [`stream_synchronize`].
    unsafe fn stream_synchronize(&self, s: RawStream) -> Result<()>;
    /// [`stream_query`].
    ///
    /// # Safety
    /// As [`stream_query`].
    unsafe fn stream_query(&self, s: RawStream) -> Result<bool>;
    /// [`stream_settle`].
    ///
    /// # Safety
    /// As [`stream_settle`].
    unsafe fn stream_settle(&self, s: RawStream) -> Result<()>;
    /// [`stream_is_capturing`].
    ///
    /// # Safety
    /// As [`stream_is_capturing`].
    unsafe fn stream_is_capturing(&self, s: RawStream) -> bool;
    /// [`stream_wait_event`].
    ///
    /// # Safety
    /// As [`stream_wait_event`].
    unsafe fn stream_wait_event(&self, s: RawStream, ev: RawEvent) -> Result<()>;
    /// [`enable_peer_access`].
    ///
    /// # Safety
    /// As [`enable_peer_access`].
    unsafe fn enable_peer_access(&self, this: &Context, peer: &Context) -> Result<bool>;
    /// [`event_create_untimed`].
    fn event_create_untimed(&self) -> Result<RawEvent>;
    /// [`event_record`].
    ///
    /// # Safety
    /// As [`event_record`].
    unsafe fn event_record(&self, ev: RawEvent, s: RawStream) -> Result<()>;
    /// [`event_query`].
    ///
    /// # Safety
    /// As [`event_query`].
    unsafe fn event_query(&self, ev: RawEvent) -> bool;
    /// [`event_is_outside_capture`].
    ///
    /// # Safety
    /// As [`event_is_outside_capture`].
    unsafe fn event_is_outside_capture(&self, ev: RawEvent) -> bool;
    /// [`event_synchronize`].
    ///
    /// # Safety
    /// As [`event_synchronize`].
    unsafe fn event_synchronize(&self, ev: RawEvent) -> Result<()>;
    /// [`event_destroy`].
    ///
    /// # Safety
    /// As [`event_destroy`].
    unsafe fn event_destroy(&self, ev: RawEvent) -> Result<()>;
    /// [`mem_alloc_async`].
    ///
    /// # Safety
    /// As [`mem_alloc_async`].
    unsafe fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<u64>;
    /// [`mem_free_async`].
    ///
    /// # Safety
    /// As [`mem_free_async`].
    unsafe fn mem_free_async(&self, ptr: u64, s: RawStream) -> Result<()>;
    /// [`mem_alloc`].
    fn mem_alloc(&self, bytes: usize) -> Result<u64>;
    /// [`mem_free`].
    ///
    /// # Safety
    /// As [`mem_free`].
    unsafe fn mem_free(&self, ptr: u64) -> Result<()>;
    /// [`memcpy_htod_async`].
    ///
    /// # Safety
    /// As [`memcpy_htod_async`].
    unsafe fn memcpy_htod_async(
        &self,
        dst: u64,
        src: *const u8,
        len: usize,
        s: RawStream,
    ) -> Result<()>;
    /// [`memcpy_dtoh_async`].
    ///
    /// # Safety
    /// As [`memcpy_dtoh_async`].
    unsafe fn memcpy_dtoh_async(
        &self,
        dst: *mut u8,
        src: u64,
        len: usize,
        s: RawStream,
    ) -> Result<()>;
    /// [`memcpy_dtod_async`].
    ///
    /// # Safety
    /// As [`memcpy_dtod_async`].
    unsafe fn memcpy_dtod_async(&self, dst: u64, src: u64, len: usize, s: RawStream) -> Result<()>;
    /// [`memcpy_peer_async`].
    ///
    /// # Safety
    /// As [`memcpy_peer_async`].
    unsafe fn memcpy_peer_async(
        &self,
        dst: u64,
        dst_ctx: &Context,
        src: u64,
        src_ctx: &Context,
        len: usize,
        s: RawStream,
    ) -> Result<()>;
    /// [`memset_d8_async`].
    ///
    /// # Safety
    /// As [`memset_d8_async`].
    unsafe fn memset_d8_async(&self, dst: u64, value: u8, len: usize, s: RawStream) -> Result<()>;
    /// [`memset_words_async`].
    ///
    /// # Safety
    /// As [`memset_words_async`].
    unsafe fn memset_words_async(
        &self,
        dst: u64,
        value: MemsetWord,
        count: usize,
        s: RawStream,
    ) -> Result<()>;
    /// [`module_load`].
    fn module_load(&self, image: &[u8]) -> Result<RawModule>;
    /// [`module_function`].
    ///
    /// # Safety
    /// As [`module_function`].
    unsafe fn module_function(
        &self,
        m: RawModule,
        name: &str,
        entry: Option<SimEntry>,
    ) -> Result<Option<RawFunction>>;
    /// [`module_global`].
    ///
    /// # Safety
    /// As [`module_global`].
    unsafe fn module_global(&self, m: RawModule, name: &str) -> Result<Option<(u64, usize)>>;
    /// [`module_unload`].
    ///
    /// # Safety
    /// As [`module_unload`].
    unsafe fn module_unload(&self, m: RawModule) -> Result<()>;
    /// [`host_alloc_mapped`].
    fn host_alloc_mapped(&self, bytes: usize) -> Result<(*mut u8, u64)>;
    /// [`host_page_mapped`].
    fn host_page_mapped(&self) -> Result<HostPage>;
    /// [`host_page_free`].
    ///
    /// # Safety
    /// As [`host_page_free`].
    unsafe fn host_page_free(&self, page: HostPage) -> Result<()>;
    /// [`host_free`].
    ///
    /// # Safety
    /// As [`host_free`].
    unsafe fn host_free(&self, host: *mut u8) -> Result<()>;
    /// [`memcpy_htod_sync`].
    ///
    /// # Safety
    /// As [`memcpy_htod_sync`].
    unsafe fn memcpy_htod_sync(&self, dst: u64, src: &[u8]) -> Result<()>;
    /// [`function_set_max_dynamic_shared`].
    ///
    /// # Safety
    /// As [`function_set_max_dynamic_shared`].
    unsafe fn function_set_max_dynamic_shared(&self, f: RawFunction, bytes: u32) -> Result<()>;
    /// [`launch_kernel`].
    ///
    /// # Safety
    /// As [`launch_kernel`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_kernel(
        &self,
        f: RawFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        s: RawStream,
        params: &mut [*mut c_void],
        touches: &[Touch],
    ) -> Result<()>;
}

/// The process's platform, once chosen.
static PLATFORM: OnceLock<&'static dyn Platform> = OnceLock::new();

/// The process's platform (choosing it from `XLOG_BACKEND` if nothing chose it yet).
#[inline]
pub(crate) fn platform() -> &'static dyn Platform {
    match PLATFORM.get() {
        Some(p) => *p,
        None => choose_from_env(),
    }
}

#[cold]
#[inline(never)]
fn choose_from_env() -> &'static dyn Platform {
    *PLATFORM.get_or_init(|| match std::env::var(BACKEND_ENV).as_deref() {
        Ok("sim") => &Simulator,
        _ => &cuda::Cuda,
    })
}

/// Whether this process's platform is chosen (by `XLOG_BACKEND` at its first
/// driver call, or by [`select_simulator`]).
pub(crate) fn is_decided() -> bool {
    PLATFORM.get().is_some()
}

/// Put this process on the simulator; refused once it uses the GPU.
pub(crate) fn select_simulator() -> Result<()> {
    if PLATFORM.get_or_init(|| &Simulator).is_simulator() {
        return Ok(());
    }
    Err(Error::Unsupported {
        what: "the simulator".into(),
        reason: "this process already uses the GPU; one process runs on either the GPU \
                 or the simulator (choose with XLOG_BACKEND=sim before the first runtime)"
            .into(),
    })
}

/// Load the platform's driver once per process (`cuInit` on the GPU).
#[inline]
pub(crate) fn init() -> Result<()> {
    platform().init()
}

/// Number of devices.
pub(crate) fn device_count() -> Result<u32> {
    init()?;
    platform().device_count()
}

/// A retained primary context of one device.
pub(crate) struct Context {
    device: sys::CUdevice,
    /// Null on the simulator, which has no contexts to bind.
    ctx: RawContext,
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
        platform().open_context(ordinal)
    }

    /// A device with no context to bind (the simulator's): only its limits.
    pub(crate) fn without_context(info: DeviceInfo) -> Context {
        Context {
            device: 0,
            ctx: std::ptr::null_mut(),
            info,
        }
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
        platform().retain_pool_memory(self)
    }

    /// Give the device's default memory pool's unused memory back to the device
    /// (`cuMemPoolTrimTo(pool, 0)`): memory of freed blocks whose frees have run.
    pub(crate) fn trim_pool_memory(&self) -> Result<()> {
        platform().trim_pool_memory(self)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        platform().release_context(self);
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
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().bind_context(ctx) }
}

/// The current context's stack per thread (`CU_LIMIT_STACK_SIZE`).
#[inline]
pub(crate) fn stack_size() -> Result<usize> {
    platform().stack_size()
}

/// Set the current context's stack per thread (`CU_LIMIT_STACK_SIZE`).
#[inline]
pub(crate) fn set_stack_size(bytes: usize) -> Result<()> {
    platform().set_stack_size(bytes)
}

/// Wait for all work in the current context.
#[inline]
pub(crate) fn ctx_synchronize() -> Result<()> {
    platform().ctx_synchronize()
}

/// Create a non-blocking stream in the current context.
#[inline]
pub(crate) fn stream_create() -> Result<RawStream> {
    platform().stream_create()
}

/// # Safety
/// 1. `s` was created by [`stream_create`] and is not used after this call.
#[inline]
pub(crate) unsafe fn stream_destroy(s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().stream_destroy(s) }
}

/// # Safety
/// 1. `s` is a live stream of the current context.
#[inline]
pub(crate) unsafe fn stream_synchronize(s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().stream_synchronize(s) }
}

/// Whether `s` has run everything queued on it (`cuStreamQuery`); `Err` when the
/// stream failed (a sticky error).
///
/// # Safety
/// 1. `s` is a live stream of the current context.
#[inline]
pub(crate) unsafe fn stream_query(s: RawStream) -> Result<bool> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().stream_query(s) }
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
#[inline]
pub(crate) unsafe fn enable_peer_access(this: &Context, peer: &Context) -> Result<bool> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().enable_peer_access(this, peer) }
}

/// Whether `s` is capturing a CUDA graph (an error counts as capturing: the
/// caller refuses either way). False on the simulator, which has no graphs.
///
/// # Safety
/// 1. `s` is a live stream (or a default-stream handle) of the bound context.
#[inline]
pub(crate) unsafe fn stream_is_capturing(s: RawStream) -> bool {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().stream_is_capturing(s) }
}

/// Whether the most recent record of `ev` has completed (false when the query
/// fails).
///
/// # Safety
/// 1. `ev` is a live event of the bound context.
#[inline]
pub(crate) unsafe fn event_query(ev: RawEvent) -> bool {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().event_query(ev) }
}

/// Whether `ev` was last recorded outside a graph capture: the driver answers a
/// query of such an event (done or not), and refuses one recorded in a capture.
/// True on the simulator.
///
/// # Safety
/// 1. `ev` is a live event of the bound context.
#[inline]
pub(crate) unsafe fn event_is_outside_capture(ev: RawEvent) -> bool {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().event_is_outside_capture(ev) }
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
#[inline]
pub(crate) unsafe fn stream_settle(s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().stream_settle(s) }
}

/// Make `s` wait for the most recent record of `ev`.
///
/// # Safety
/// 1. `s` and `ev` are live handles of the current context.
#[inline]
pub(crate) unsafe fn stream_wait_event(s: RawStream, ev: RawEvent) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().stream_wait_event(s, ev) }
}

/// Create an event without timing (the cheapest kind to record and wait on).
#[inline]
pub(crate) fn event_create_untimed() -> Result<RawEvent> {
    platform().event_create_untimed()
}

/// # Safety
/// 1. `ev` and `s` are live handles of the current context.
#[inline]
pub(crate) unsafe fn event_record(ev: RawEvent, s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().event_record(ev, s) }
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
#[inline]
pub(crate) unsafe fn event_synchronize(ev: RawEvent) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().event_synchronize(ev) }
}

/// # Safety
/// 1. `ev` is live and not used after this call.
#[inline]
pub(crate) unsafe fn event_destroy(ev: RawEvent) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().event_destroy(ev) }
}

/// Stream-ordered allocation from the device's current pool.
///
/// # Safety
/// 1. `s` is a live stream of the current context.
#[inline]
pub(crate) unsafe fn mem_alloc_async(bytes: usize, s: RawStream) -> Result<u64> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().mem_alloc_async(bytes, s) }
}

/// # Safety
/// 1. `ptr` came from [`mem_alloc_async`] on this context and is not freed twice.
/// 2. All work touching `ptr` is ordered before the current tail of `s`.
#[inline]
pub(crate) unsafe fn mem_free_async(ptr: u64, s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().mem_free_async(ptr, s) }
}

/// Synchronous allocation (`cuMemAlloc`), the backend compute-sanitizer sees best.
#[inline]
pub(crate) fn mem_alloc(bytes: usize) -> Result<u64> {
    platform().mem_alloc(bytes)
}

/// # Safety
/// 1. `ptr` came from [`mem_alloc`] and no queued work touches it any more.
#[inline]
pub(crate) unsafe fn mem_free(ptr: u64) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().mem_free(ptr) }
}

/// # Safety
/// 1. `dst..dst+len` is device memory owned by the caller, ordered on `s`.
/// 2. `src` points to `len` readable bytes that stay valid until the copy has run
///    (the driver may read them after this call returns).
#[inline]
pub(crate) unsafe fn memcpy_htod_async(
    dst: u64,
    src: *const u8,
    len: usize,
    s: RawStream,
) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().memcpy_htod_async(dst, src, len, s) }
}

/// # Safety
/// 1. `src..src+len` is device memory ordered on `s`.
/// 2. `dst` points to `len` writable bytes that stay valid until `s` is synchronised.
#[inline]
pub(crate) unsafe fn memcpy_dtoh_async(
    dst: *mut u8,
    src: u64,
    len: usize,
    s: RawStream,
) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().memcpy_dtoh_async(dst, src, len, s) }
}

/// # Safety
/// 1. Both ranges are device memory ordered on `s`; they do not overlap.
#[inline]
pub(crate) unsafe fn memcpy_dtod_async(dst: u64, src: u64, len: usize, s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().memcpy_dtod_async(dst, src, len, s) }
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
#[inline]
pub(crate) unsafe fn memcpy_peer_async(
    dst: u64,
    dst_ctx: &Context,
    src: u64,
    src_ctx: &Context,
    len: usize,
    s: RawStream,
) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().memcpy_peer_async(dst, dst_ctx, src, src_ctx, len, s) }
}

/// # Safety
/// 1. `dst..dst+len` is device memory ordered on `s`.
#[inline]
pub(crate) unsafe fn memset_d8_async(dst: u64, value: u8, len: usize, s: RawStream) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().memset_d8_async(dst, value, len, s) }
}

/// Fill `count` words of `value` at `dst`.
///
/// # Safety
/// 1. `dst..dst+count*value.bytes()` is device memory aligned to `value.bytes()`,
///    ordered on `s`.
#[inline]
pub(crate) unsafe fn memset_words_async(
    dst: u64,
    value: MemsetWord,
    count: usize,
    s: RawStream,
) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().memset_words_async(dst, value, count, s) }
}

/// Load a module image (NUL-terminated PTX text or a cubin) into the current context.
#[inline]
pub(crate) fn module_load(image: &[u8]) -> Result<RawModule> {
    platform().module_load(image)
}

/// # Safety
/// 1. `m` is a loaded module of the current context.
#[inline]
pub(crate) unsafe fn module_function(
    m: RawModule,
    name: &str,
    entry: Option<SimEntry>,
) -> Result<Option<RawFunction>> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().module_function(m, name, entry) }
}

/// Address and size of a module global, if the module defines it.
///
/// # Safety
/// 1. `m` is a loaded module of the current context.
#[inline]
pub(crate) unsafe fn module_global(m: RawModule, name: &str) -> Result<Option<(u64, usize)>> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().module_global(m, name) }
}

/// # Safety
/// 1. `m` is loaded and none of its functions is used after this call.
#[inline]
pub(crate) unsafe fn module_unload(m: RawModule) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().module_unload(m) }
}

/// Zeroed, page-locked host memory mapped into the device's address space; returns
/// the host pointer and the device address of the same bytes.
#[inline]
pub(crate) fn host_alloc_mapped(bytes: usize) -> Result<(*mut u8, u64)> {
    platform().host_alloc_mapped(bytes)
}

/// # Safety
/// 1. `host` came from [`host_alloc_mapped`] and nothing uses it any more.
#[inline]
pub(crate) unsafe fn host_free(host: *mut u8) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().host_free(host) }
}

/// A zeroed page of host memory, page-locked and mapped into the device's address
/// space ([`host_page_mapped`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostPage {
    /// The host pointer.
    pub(crate) host: *mut u8,
    /// The device address of the same bytes.
    pub(crate) dev: u64,
    /// Ordinary memory registered with the driver, or else the driver's own
    /// page-locked allocation: how [`host_page_free`] gives it back.
    pub(crate) registered: bool,
}

/// One zeroed page ([`PAGE`](crate::pinned::PAGE) bytes) of host memory,
/// page-locked and mapped into the device's address space, as
/// [`host_alloc_mapped`] gives, for a small record (a module's panic record): on a
/// GPU, ordinary memory registered with the driver (`cuMemHostRegister`), which
/// costs a fraction of the driver's first page-locked allocation in a process;
/// where the driver refuses to register it (or the host allocator refuses the
/// page), the driver's page-locked allocation.
#[inline]
pub(crate) fn host_page_mapped() -> Result<HostPage> {
    platform().host_page_mapped()
}

/// # Safety
/// 1. `page` came from [`host_page_mapped`], is freed once, and nothing uses it any
///    more.
#[inline]
pub(crate) unsafe fn host_page_free(page: HostPage) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().host_page_free(page) }
}

/// Synchronous host-to-device copy (module globals at load time).
///
/// # Safety
/// 1. `dst..dst+src.len()` is device memory nothing else is using.
#[inline]
pub(crate) unsafe fn memcpy_htod_sync(dst: u64, src: &[u8]) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().memcpy_htod_sync(dst, src) }
}

/// Raise a function's dynamic shared memory limit.
///
/// # Safety
/// 1. `f` is a live function of the current context.
#[inline]
pub(crate) unsafe fn function_set_max_dynamic_shared(f: RawFunction, bytes: u32) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().function_set_max_dynamic_shared(f, bytes) }
}

/// Enqueue a kernel. `touches` are the recorded ranges the platform took from the
/// recorder ([`Platform::record_accesses`]): what the simulator's hazard detector
/// checks; the GPU ignores them.
///
/// # Safety
/// 1. `f` is a live function of the current context and `params` holds one pointer
///    per kernel parameter, each to a value of exactly that parameter's type.
/// 2. Every device address passed is valid for what the kernel does with it, and
///    its cross-stream hazards have been fenced on `s`.
#[inline]
pub(crate) unsafe fn launch_kernel(
    f: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    s: RawStream,
    params: &mut [*mut c_void],
    touches: &[Touch],
) -> Result<()> {
    // SAFETY: the caller's obligations, which the platform's call shares.
    unsafe { platform().launch_kernel(f, grid, block, shared_bytes, s, params, touches) }
}
