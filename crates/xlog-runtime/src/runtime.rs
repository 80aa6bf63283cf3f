//! [`Runtime`]: one device, one resource stack, one stream pool, one module cache.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use xlog_device::{DeviceCopy, ModuleImage};

use crate::buffer::{BufferCore, DeviceBuffer};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::launch::{Function, KernelHandle, Module};
use crate::panics::PanicBoard;
use crate::resource::{
    AllocStats, AllocTag, Allocator, AsyncResource, BudgetAdaptor, BudgetHandle,
    DeviceMemoryResource, DirectResource, LoggingAdaptor, PoolAdaptor, PoolHandle, PoolStats,
    StatsHandle,
};
use crate::stream::{Stream, StreamId, StreamPool};
use crate::sync::Unpoisoned;

/// Environment variable read by [`Runtime::get`]: the budget in bytes.
pub const BUDGET_ENV: &str = "XLOG_BUDGET_BYTES";

/// The budget of a runtime built without one: the memory the device had free when
/// it was opened, less a reserve for what the driver takes later (thread stacks at
/// the first launch, modules, panic records): 1/64 of the device's memory, at least
/// 1 GiB. Allocations past it fail as `BudgetExceeded` before the driver runs out.
pub fn default_budget(info: &crate::DeviceInfo) -> usize {
    let reserve = (info.total_memory / 64).max(1 << 30);
    info.free_memory.saturating_sub(reserve)
}
/// Environment variable read by [`Runtime::get`] and by a [`RuntimeBuilder`] not
/// told [`caching`](RuntimeBuilder::caching): `0` leaves the caching pool
/// ([`PoolAdaptor`]) out of the stack, `1` puts it on top (default:
/// [`DEFAULT_CACHING`], except over [`Backend::Direct`]: off).
pub const POOL_ENV: &str = "XLOG_POOL";

/// Whether the stack over `backend` gets the caching pool: `XLOG_POOL` if set,
/// else [`caching_switch`]'s default.
fn caching_from_env(backend: Backend) -> Result<bool> {
    caching_switch(std::env::var(POOL_ENV).ok().as_deref(), backend)
}

/// Whether the stack over `backend` gets the caching pool, for `XLOG_POOL`'s value
/// (`None`: unset): when unset, [`DEFAULT_CACHING`], except over the direct
/// backend, whose every block is a driver allocation of its own so that
/// compute-sanitizer sees each use past a block or after its free (a pool would
/// round the block up and hand it out again).
fn caching_switch(value: Option<&str>, backend: Backend) -> Result<bool> {
    match value {
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        None => Ok(DEFAULT_CACHING && backend != Backend::Direct),
        Some(other) => Err(Error::InvalidArgument {
            what: POOL_ENV.into(),
            reason: format!("`{other}` is not a switch; use `1` (pool on) or `0` (off)"),
        }),
    }
}
/// Whether [`Runtime::get`] and [`RuntimeBuilder`] put the caching pool on top of
/// the stack unless told otherwise (over the async backend; over the direct one,
/// for compute-sanitizer, it stays off).
pub const DEFAULT_CACHING: bool = true;
pub use crate::sim::BACKEND_ENV;

/// Which backend allocates device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `cuMemAllocAsync` / `cuMemFreeAsync` (the default).
    Async,
    /// `cuMemAlloc` / `cuMemFree`: for compute-sanitizer runs.
    Direct,
}

struct RuntimeInner {
    id: u64,
    device: Device,
    allocator: Arc<Allocator>,
    /// Stripes of `allocator` that allocations take by thread (see `Allocator`).
    stripes: Box<[Arc<Allocator>]>,
    stats: Option<StatsHandle>,
    budget: Option<BudgetHandle>,
    cache: Option<PoolHandle>,
    pool: StreamPool,
    modules: Mutex<HashMap<usize, Arc<Module>>>,
    panics: Arc<PanicBoard>,
}

/// How many stripes of its allocator a runtime hands out (see `Allocator`).
const ALLOCATOR_STRIPES: usize = 16;

impl RuntimeInner {
    /// This thread's stripe of the allocator.
    #[inline]
    fn stripe(&self) -> &Arc<Allocator> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        thread_local! {
            static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed);
        }
        &self.stripes[STRIPE.with(|s| *s) % self.stripes.len()]
    }

    fn module(&self, image: &'static ModuleImage) -> Result<Arc<Module>> {
        let key = image as *const ModuleImage as usize;
        let mut cache = self.modules.lock_unpoisoned();
        if let Some(m) = cache.get(&key) {
            return Ok(m.clone());
        }
        let m = Arc::new(Module::load_image(&self.device, image, &self.panics)?);
        cache.insert(key, m.clone());
        Ok(m)
    }
}

/// The runtime of one device: allocator stack, streams, modules.
///
/// [`Runtime::get`] returns the shared runtime of an ordinal (created once, even
/// under concurrent first use); [`Runtime::builder`] and
/// [`Runtime::with_resource`] make owned runtimes with a chosen stack.
///
/// ```no_run
/// # fn main() -> xlog_runtime::Result<()> {
/// let rt = xlog_runtime::Runtime::get(0)?;
/// let s = rt.stream()?;
/// let mut buf = rt.alloc_zeroed::<u32>(1 << 20)?;
/// buf.fill(&s, 7)?;
/// assert!(buf.download(&s)?.iter().all(|&v| v == 7));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("id", &self.inner.id)
            .field("device", &self.inner.device.ordinal())
            .field("resource", &self.inner.allocator.resource().describe())
            .finish()
    }
}

fn next_runtime_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Builds an owned [`Runtime`] with a chosen backend and adaptors.
pub struct RuntimeBuilder {
    ordinal: u32,
    backend: Backend,
    budget: Option<usize>,
    stats: bool,
    csv: Option<Box<dyn Write + Send>>,
    pool_size: usize,
    simulator: bool,
    /// `None`: `XLOG_POOL`, else [`DEFAULT_CACHING`] (off over the direct backend).
    caching: Option<bool>,
}

impl RuntimeBuilder {
    /// The backend (default [`Backend::Async`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Run on the simulator instead of the GPU (see [`crate::sim`]): kernels,
    /// streams and memory on the host, with the hazard detector. It applies to the
    /// whole process; [`build`](Self::build) refuses it with
    /// [`Error::Unsupported`] once the process uses the GPU.
    pub fn simulator(mut self) -> Self {
        self.simulator = true;
        self
    }

    /// A byte budget (default: [`default_budget`], the device memory free when the
    /// device was opened less a reserve).
    pub fn budget(mut self, bytes: usize) -> Self {
        self.budget = Some(bytes);
        self
    }

    /// Whether [`Runtime::stats`] reports allocation statistics (default on). The
    /// backend keeps them either way, under the lock it takes for every
    /// allocation and free anyway: they cost no atomic operation of their own.
    pub fn stats(mut self, on: bool) -> Self {
        self.stats = on;
        self
    }

    /// Log every allocation and free as CSV to `sink`.
    pub fn log_csv(mut self, sink: impl Write + Send + 'static) -> Self {
        self.csv = Some(Box::new(sink));
        self
    }

    /// Whether to put the caching pool ([`PoolAdaptor`]) on top of the stack:
    /// `pool(budget(backend))`, the budget then counting what the pool holds from
    /// the device, cache included (default: `XLOG_POOL` if set, else
    /// [`DEFAULT_CACHING`], except over [`Backend::Direct`]: off). Off, the
    /// stack is `budget(backend)` and every free goes to the driver.
    pub fn caching(mut self, on: bool) -> Self {
        self.caching = Some(on);
        self
    }

    /// How many streams [`Runtime::stream`] hands out round-robin (default 16).
    pub fn pool_size(mut self, n: usize) -> Self {
        self.pool_size = n;
        self
    }

    /// Open the device and compose the stack: `budget(logging(backend))`, leaving
    /// out the logging unless asked for, under `pool(..)` when caching; the
    /// statistics are the backend's own (with the pool: what it holds).
    pub fn build(self) -> Result<Runtime> {
        let caching = match self.caching {
            Some(on) => on,
            None => caching_from_env(self.backend)?,
        };
        if self.simulator {
            crate::driver::select_simulator()?;
        }
        let device = Device::open(self.ordinal)?;
        let limit = self.budget.unwrap_or_else(|| default_budget(device.info()));
        let stack = Stack {
            csv: self.csv,
            limit,
            caching,
        };
        // Each backend's stack is one concrete type (no dynamic call between its
        // layers): the usual one, pool(budget(async)), is what every default
        // allocation goes through.
        let (resource, stats, budget, cache) = match self.backend {
            Backend::Async => {
                let base = AsyncResource::new(&device)?;
                stack.compose(base.stats(), base)
            }
            Backend::Direct => {
                let base = DirectResource::new(&device);
                stack.compose(base.stats(), base)
            }
        };
        Ok(Runtime::assemble(
            device,
            resource,
            self.stats.then_some(stats),
            Some(budget),
            cache,
            self.pool_size,
        ))
    }
}

/// The adaptors a [`RuntimeBuilder`] puts over its backend.
struct Stack {
    csv: Option<Box<dyn Write + Send>>,
    limit: usize,
    caching: bool,
}

impl Stack {
    /// `budget(logging(base))`, leaving out the logging unless asked for, under
    /// `pool(..)` when caching; passes `stats`, the base's statistics, through.
    fn compose<R: DeviceMemoryResource + 'static>(
        self,
        stats: StatsHandle,
        base: R,
    ) -> (
        Box<dyn DeviceMemoryResource>,
        StatsHandle,
        BudgetHandle,
        Option<PoolHandle>,
    ) {
        let (top, budget) = match self.csv {
            Some(sink) => Self::limit(LoggingAdaptor::new(base, sink), self.limit),
            None => Self::limit(base, self.limit),
        };
        if !self.caching {
            return (top, stats, budget, None);
        }
        let pool = PoolAdaptor::new(top);
        let handle = pool.handle();
        (Box::new(pool), stats, budget, Some(handle))
    }

    fn limit<R: DeviceMemoryResource + 'static>(
        logged: R,
        limit: usize,
    ) -> (Box<dyn DeviceMemoryResource>, BudgetHandle) {
        let b = BudgetAdaptor::new(logged, limit);
        let handle = b.handle();
        (Box::new(b), handle)
    }
}

impl Runtime {
    /// The shared runtime of device `ordinal`, created on first use with the
    /// default stack: async backend, statistics, the caching pool on top
    /// (`XLOG_POOL=0` leaves it out), and a budget of
    /// `XLOG_BUDGET_BYTES` (default: [`default_budget`], the device memory free
    /// when the device was opened less a reserve). `XLOG_BACKEND=direct`
    /// selects the direct backend (for compute-sanitizer), without the pool unless
    /// `XLOG_POOL=1`.
    pub fn get(ordinal: u32) -> Result<Runtime> {
        static SHARED: OnceLock<Mutex<HashMap<u32, Runtime>>> = OnceLock::new();
        let map = SHARED.get_or_init(Default::default);
        let mut map = map.lock_unpoisoned();
        if let Some(rt) = map.get(&ordinal) {
            return Ok(rt.clone());
        }
        let mut b = Runtime::builder(ordinal);
        if let Ok(v) = std::env::var(BUDGET_ENV) {
            let bytes = v
                .trim()
                .parse::<usize>()
                .map_err(|_| Error::InvalidArgument {
                    what: BUDGET_ENV.into(),
                    reason: format!(
                        "`{v}` is not a byte count; set it to an integer such as 8589934592"
                    ),
                })?;
            b = b.budget(bytes);
        }
        match std::env::var(BACKEND_ENV).as_deref() {
            Ok("direct") => b = b.backend(Backend::Direct),
            Ok("async" | "gpu" | "sim") | Err(_) => {}
            Ok(other) => {
                return Err(Error::InvalidArgument {
                    what: BACKEND_ENV.into(),
                    reason: format!(
                        "`{other}` is not a backend; use `gpu` (or `async`), `direct` or `sim` \
                         (the simulator)"
                    ),
                })
            }
        }
        let rt = b.build()?;
        map.insert(ordinal, rt.clone());
        Ok(rt)
    }

    /// [`Runtime::get`], except that on a machine with no usable GPU
    /// ([`Error::is_no_gpu`]) the process runs on the simulator ([`crate::sim`])
    /// instead, unless `XLOG_BACKEND` ([`BACKEND_ENV`]) is set: for a program that
    /// should run anywhere. `XLOG_BACKEND=gpu` demands the GPU, `XLOG_BACKEND=sim`
    /// the simulator. Returns the runtime and, when it fell back, why: the error
    /// the GPU gave, for the program to say so.
    ///
    /// The fallback is decided once per process, by whatever first asks which
    /// backend it runs: a process that already opened a runtime, called
    /// `sim::is_active`, or tried `Runtime::get` (even unsuccessfully) gets
    /// [`Runtime::get`]'s answer, and a later caller after a fallback gets the
    /// simulator's runtime with `None`.
    ///
    /// ```no_run
    /// # use xlog_runtime::Runtime;
    /// let (rt, fell_back) = Runtime::get_or_simulator(0)?;
    /// if let Some(why) = fell_back {
    ///     eprintln!("note: {why}; running on the CPU simulator");
    /// }
    /// # let _ = rt;
    /// # Ok::<(), xlog_runtime::Error>(())
    /// ```
    pub fn get_or_simulator(ordinal: u32) -> Result<(Runtime, Option<Error>)> {
        if std::env::var_os(BACKEND_ENV).is_none() && !crate::driver::is_decided() {
            if let Err(e) = crate::driver::probe_gpu(ordinal) {
                if e.is_no_gpu() {
                    crate::driver::select_simulator()?;
                    return Ok((Runtime::get(ordinal)?, Some(e)));
                }
            }
        }
        Ok((Runtime::get(ordinal)?, None))
    }

    /// A builder for an owned runtime on `ordinal`.
    pub fn builder(ordinal: u32) -> RuntimeBuilder {
        RuntimeBuilder {
            ordinal,
            backend: Backend::Async,
            budget: None,
            stats: true,
            csv: None,
            pool_size: 16,
            simulator: false,
            caching: None,
        }
    }

    /// An owned runtime over a resource stack composed by the caller.
    ///
    /// Launches refuse the stack if it cannot track streams
    /// ([`DeviceMemoryResource::tracks_streams`]).
    pub fn with_resource(
        device: &Device,
        resource: impl DeviceMemoryResource + 'static,
    ) -> Result<Runtime> {
        if resource.device_ordinal() != device.ordinal() {
            return Err(Error::InvalidArgument {
                what: "Runtime::with_resource".into(),
                reason: format!(
                    "the resource allocates on device {} but the runtime is for device {}",
                    resource.device_ordinal(),
                    device.ordinal()
                ),
            });
        }
        Ok(Runtime::assemble(
            device.clone(),
            Box::new(resource),
            None,
            None,
            None,
            16,
        ))
    }

    fn assemble(
        device: Device,
        resource: Box<dyn DeviceMemoryResource>,
        stats: Option<StatsHandle>,
        budget: Option<BudgetHandle>,
        cache: Option<PoolHandle>,
        pool_size: usize,
    ) -> Runtime {
        let id = next_runtime_id();
        let allocator = Allocator::new(id, resource);
        Runtime {
            inner: Arc::new(RuntimeInner {
                id,
                device,
                stripes: (0..ALLOCATOR_STRIPES)
                    .map(|_| Arc::new(allocator.stripe()))
                    .collect(),
                allocator: Arc::new(allocator),
                stats,
                budget,
                cache,
                pool: StreamPool::new(pool_size),
                modules: Mutex::new(HashMap::new()),
                panics: Arc::default(),
            }),
        }
    }

    /// The top of the resource stack (imports share it for the runtime's identity).
    pub(crate) fn allocator(&self) -> &Arc<Allocator> {
        &self.inner.allocator
    }

    /// This runtime's process-unique id.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// A stream from the pool (round-robin; streams are shared between callers).
    pub fn stream(&self) -> Result<Stream> {
        self.inner.pool.pooled(|id| self.make_stream(id))
    }

    /// A new stream used by nobody else.
    pub fn new_stream(&self) -> Result<Stream> {
        self.make_stream(self.inner.pool.next_id())
    }

    fn make_stream(&self, id: StreamId) -> Result<Stream> {
        let owner: Arc<dyn Any + Send + Sync> = self.inner.clone();
        Stream::create(
            &self.inner.device.ctx,
            id,
            self.inner.id,
            Arc::downgrade(&owner),
            self.inner.panics.clone(),
        )
    }

    fn check_stream(&self, stream: &Stream) -> Result<()> {
        if stream.runtime_id() == self.inner.id {
            Ok(())
        } else {
            Err(Error::WrongRuntime {
                what: "stream",
                found: stream.runtime_id(),
                found_device: stream.device_ordinal(),
                expected: self.inner.id,
                expected_device: self.inner.device.ordinal(),
            })
        }
    }

    /// Allocate `len` uninitialised elements on `stream`.
    ///
    /// # Safety
    /// 1. Nothing reads an element (on the device or through a download) before it
    ///    is written.
    pub unsafe fn alloc_uninit<T: DeviceCopy>(
        &self,
        stream: &Stream,
        len: usize,
        tag: AllocTag,
    ) -> Result<DeviceBuffer<T>> {
        self.check_stream(stream)?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Error::SizeOverflow {
                len,
                elem_size: std::mem::size_of::<T>(),
            })?;
        let allocator = self.inner.stripe();
        let block = allocator.allocate(bytes, stream, tag)?;
        let ready = stream.publish();
        Ok(DeviceBuffer::from_core(
            BufferCore::new(block, allocator.clone(), stream.clone(), ready),
            len,
        ))
    }

    /// Allocate `len` zeroed elements (on a pooled stream).
    pub fn alloc_zeroed<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.alloc_zeroed_on(&self.stream()?, len)
    }

    /// Allocate `len` zeroed elements on `stream`.
    pub fn alloc_zeroed_on<T: DeviceCopy>(
        &self,
        stream: &Stream,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        // SAFETY: every byte is written by the memset before anything can read it
        // (the memset is recorded as a write, fencing all later uses).
        let mut buf = unsafe { self.alloc_uninit::<T>(stream, len, AllocTag("zeroed")) }?;
        // SAFETY: all-zero bytes are a valid value of every `DeviceCopy` type
        // (obligation 4 of the trait).
        unsafe { crate::copy::memset_bytes(stream, &mut buf, 0) }?;
        Ok(buf)
    }

    /// Copy `host` into a new buffer (on a pooled stream).
    pub fn upload<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        self.upload_on(&self.stream()?, host)
    }

    /// Copy `host` into a new buffer, ordered on `stream`.
    pub fn upload_on<T: DeviceCopy>(&self, stream: &Stream, host: &[T]) -> Result<DeviceBuffer<T>> {
        // SAFETY: the upload below writes every element before anything can read it.
        let mut buf = unsafe { self.alloc_uninit::<T>(stream, host.len(), AllocTag("upload")) }?;
        crate::copy::copy_from_host(stream, &mut buf, host)?;
        Ok(buf)
    }

    /// `len` zeroed elements of page-locked host memory, for asynchronous copies
    /// ([`DeviceBuffer::upload_from_pinned`], [`DeviceBuffer::download_to_pinned`]).
    ///
    /// The memory is page-aligned (4096 bytes): an element type aligned to more is
    /// refused when the call is compiled.
    pub fn alloc_pinned<T: DeviceCopy>(&self, len: usize) -> Result<crate::PinnedBuffer<T>> {
        // Named here too, so that a refusal points at the caller's line.
        let () = crate::PinnedBuffer::<T>::ALIGNMENT_FITS;
        crate::PinnedBuffer::zeroed(&self.inner.device, len)
    }

    /// Bytes held from the device: live buffers, the caching pool's cache, and
    /// frees not yet reaped.
    pub fn bytes_outstanding(&self) -> usize {
        self.inner.allocator.resource().bytes_outstanding()
    }

    /// Give the caching pool's cache back (as [`trim`](Self::trim) does) and
    /// synchronise the streams with pending frees: afterwards
    /// [`bytes_outstanding`](Self::bytes_outstanding) counts live buffers only.
    /// Returns the bytes retired. A failed trim does not stop the reap; the first
    /// failure is returned.
    pub fn reap(&self) -> Result<usize> {
        self.inner.device.bind()?;
        let trimmed = self.inner.cache.as_ref().map_or(Ok(0), PoolHandle::trim);
        let reaped = self.inner.allocator.resource().reap_pending();
        trimmed?;
        reaped
    }

    /// Allocation statistics: the backend's, for a runtime made by [`Runtime::get`]
    /// or a [`RuntimeBuilder`] (unless built with `stats(false)`); `None` for one
    /// over a stack passed to [`Runtime::with_resource`] (read the handle of that
    /// stack's [`StatsAdaptor`](crate::resource::StatsAdaptor) or backend instead).
    pub fn stats(&self) -> Option<AllocStats> {
        self.inner.stats.as_ref().map(StatsHandle::snapshot)
    }

    /// The statistics handle, to reset windows.
    pub fn stats_handle(&self) -> Option<&StatsHandle> {
        self.inner.stats.as_ref()
    }

    /// The budget, if the stack has one.
    pub fn budget(&self) -> Option<&BudgetHandle> {
        self.inner.budget.as_ref()
    }

    /// Give the caching pool's cache back to the device (see [`PoolHandle::trim`]);
    /// returns the bytes given back (0 without a pool).
    pub fn trim(&self) -> Result<usize> {
        match &self.inner.cache {
            Some(pool) => {
                self.inner.device.bind()?;
                pool.trim()
            }
            None => Ok(0),
        }
    }

    /// The caching pool's statistics, for a runtime built with one.
    pub fn pool_stats(&self) -> Option<PoolStats> {
        self.inner.cache.as_ref().map(PoolHandle::stats)
    }

    /// The resource stack's description, e.g. `pool(budget(async))`.
    pub fn describe_resource(&self) -> String {
        self.inner.allocator.resource().describe()
    }

    /// Failures that happened inside `Drop` (each was also logged with `tracing`).
    pub fn drop_errors(&self) -> u64 {
        self.inner.allocator.drop_errors()
    }

    /// Load an embedded module image (cached: loaded once per runtime).
    pub fn load_module(&self, image: &'static ModuleImage) -> Result<Arc<Module>> {
        self.inner.module(image)
    }

    /// Load PTX text (not cached).
    pub fn load_ptx(&self, name: &str, ptx: &str) -> Result<Arc<Module>> {
        let module = Module::load(&self.inner.device, name, ptx.as_bytes(), &self.inner.panics)?;
        self.inner
            .panics
            .note_ptx(std::borrow::Cow::Owned(ptx.to_owned()));
        if let Ok(bytes) = crate::driver::stack_size() {
            self.inner.panics.note_stack(bytes);
        }
        Ok(Arc::new(module))
    }

    /// The GPU stack of each thread, in bytes (`CU_LIMIT_STACK_SIZE` of the
    /// runtime's context; on the simulator, a simulated thread's whole stack).
    ///
    /// A kernel without recursion needs a stack whose size is known when it is
    /// compiled, which the driver provides at launch, raising this limit when it
    /// must. A recursive kernel's need depends on its data: a recursion deeper than
    /// this stack overflows it, which ends the context and is reported as
    /// [`Error::StackOverflow`]. `xlog-build` warns about each recursive kernel.
    pub fn stack_size(&self) -> Result<usize> {
        self.inner.device.bind()?;
        crate::driver::stack_size()
    }

    /// Set the GPU stack of each thread, in bytes, for the kernels launched from
    /// now on (`cuCtxSetLimit(CU_LIMIT_STACK_SIZE)`); waits for the device's work
    /// first, as the driver does. The device reserves this much local memory for
    /// every thread it can hold at once, so a large stack costs memory: about
    /// `bytes` × 2048 × the multiprocessors. On the simulator, a request within its
    /// fixed 512 KiB stacks is accepted and changes nothing; a larger one is refused.
    ///
    /// See [`stack_size`](Self::stack_size) and the
    /// [driver documentation](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html#group__CUDA__CTX_1g0651954dfb9788173e60a9af7201e65a).
    pub fn set_stack_size(&self, bytes: usize) -> Result<()> {
        self.inner.device.bind()?;
        crate::driver::set_stack_size(bytes)?;
        if let Ok(bytes) = crate::driver::stack_size() {
            self.inner.panics.note_stack(bytes);
        }
        Ok(())
    }

    /// Wait for all work on the device. A kernel's fault surfaces here as on a
    /// stream: [`Error::KernelPanic`] when a kernel of this runtime recorded a panic.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.device.bind()?;
        crate::driver::ctx_synchronize().map_err(|e| match self.inner.panics.first() {
            Some(message) if e.is_kernel_fault() => Error::KernelPanic {
                kernel: "<unknown>".into(),
                message,
            },
            _ => e,
        })
    }
}

// The two lookups from a stream to its runtime live here, on top: a stream knows
// its owner only as an opaque pointer, so the layers below never name the runtime.

impl Stream {
    /// The runtime that owns this stream.
    pub fn runtime(&self) -> Result<Runtime> {
        self.owner()
            .and_then(|owner| owner.downcast::<RuntimeInner>().ok())
            .map(|inner| Runtime { inner })
            .ok_or_else(|| Error::InvalidArgument {
                what: format!("{}", self.id()),
                reason: "the stream's runtime has been dropped (or this is a host placeholder)"
                    .into(),
            })
    }
}

impl KernelHandle {
    /// The function for the runtime that owns `stream`, loading the module and
    /// checking the ABI on first use.
    #[inline]
    pub fn function(&self, stream: &Stream) -> Result<std::borrow::Cow<'_, Function>> {
        self.resolve(stream.runtime_id(), |image| {
            stream.runtime()?.inner.module(image)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over the direct backend (compute-sanitizer runs) the pool is off unless
    /// `XLOG_POOL=1` asks for it: it would round blocks up and reuse freed ones,
    /// hiding from memcheck the accesses past a block or after its free.
    #[test]
    fn the_direct_backend_gets_no_pool_unless_asked() {
        assert!(!caching_switch(None, Backend::Direct).unwrap());
        assert!(caching_switch(Some("1"), Backend::Direct).unwrap());
        assert_eq!(
            caching_switch(None, Backend::Async).unwrap(),
            DEFAULT_CACHING
        );
        assert!(!caching_switch(Some("0"), Backend::Async).unwrap());
        let e = caching_switch(Some("yes"), Backend::Async).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    }
}
