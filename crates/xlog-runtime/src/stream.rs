//! Streams, their epochs, and the pool a runtime hands them out from.
//!
//! A [`Stream`] is a non-blocking CUDA stream plus the bookkeeping that turns
//! `UsePoint`s (stream, epoch) into event waits lazily. Each stream keeps one
//! event and the epoch it last captured; waiting on a point re-records the event
//! only when it has not yet captured that point. No lock is shared by all streams:
//! a waiter locks only the stream it waits on.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::driver::{self, Context, RawContext, RawEvent, RawStream};
use crate::error::{Error, Result};
use crate::panics::PanicBoard;
use crate::sync::Unpoisoned;
use crate::track::UsePoint;

/// Identifier of a stream, unique within its runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u32);

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stream#{}", self.0)
    }
}

struct Fence {
    event: Option<RawEvent>,
    captured: u64,
}

/// What every launch on a stream reads or writes, together on one cache line: a
/// launch stays a short walk through memory (see the launch path in
/// ARCHITECTURE.md).
#[repr(C, align(64))]
struct Hot {
    raw: RawStream,
    /// The context's handle (null for host placeholders and on the simulator).
    /// Invariant: null, or the handle of `StreamShared::ctx`, which retains the
    /// context; set only in `StreamShared::new`.
    ctx: RawContext,
    runtime_id: u64,
    published: AtomicU64,
    /// Address of the name in `last_kernel`, read without the lock: launches of the
    /// same kernel in a row (the common case) skip it.
    last_kernel_at: AtomicUsize,
    /// The device's ordinal (`u32::MAX` for host placeholders).
    ordinal: u32,
}

pub(crate) struct StreamShared {
    hot: Hot,
    /// Whether xlog created `raw` (and destroys it); a borrowed stream of another
    /// library is only ever waited on through the event it captured.
    owned: bool,
    id: StreamId,
    /// Keeps the context retained while the stream lives.
    ctx: Option<Arc<Context>>,
    /// The runtime, opaque to this layer (see `Stream::runtime`).
    owner: Weak<dyn Any + Send + Sync>,
    /// Panic records of the modules the owner loaded.
    panics: Option<Arc<PanicBoard>>,
    fence: Mutex<Fence>,
    last_kernel: Mutex<Option<Arc<str>>>,
}

// SAFETY: the raw stream, event and context handles are plain driver handles usable
// from any thread with the context bound (the context is kept alive by `ctx`);
// mutation of `fence` is behind its mutex.
unsafe impl Send for StreamShared {}
// SAFETY: as above; all interior mutability is atomics or mutexes.
unsafe impl Sync for StreamShared {}

impl Drop for StreamShared {
    fn drop(&mut self) {
        let Some(ctx) = &self.ctx else { return };
        if ctx.bind().is_err() {
            return;
        }
        let fence = self.fence.get_mut_unpoisoned();
        if let Some(ev) = fence.event.take() {
            // SAFETY: the event belongs to this stream and nobody else holds it.
            if let Err(e) = unsafe { driver::event_destroy(ev) } {
                tracing::error!(target: "xlog::stream", "destroying event of {}: {e}", self.id);
            }
        }
        if !self.owned {
            return;
        }
        // SAFETY: the last reference to this stream is going away.
        if let Err(e) = unsafe { driver::stream_destroy(self.hot.raw) } {
            tracing::error!(target: "xlog::stream", "destroying {}: {e}", self.id);
        }
    }
}

/// A CUDA stream of one runtime. Cheap to clone; clones are the same stream.
///
/// Work on one stream runs in order. xlog fences work on different streams
/// automatically whenever they touch the same buffer.
#[derive(Clone)]
pub struct Stream {
    pub(crate) shared: Arc<StreamShared>,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("id", &self.shared.id)
            .field("runtime", &self.shared.hot.runtime_id)
            .finish()
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Eq for Stream {}

impl StreamShared {
    /// A stream's shared state with nothing published, no event and no kernel yet.
    fn new(
        raw: RawStream,
        owned: bool,
        id: StreamId,
        runtime_id: u64,
        ctx: Option<Arc<Context>>,
        owner: Weak<dyn Any + Send + Sync>,
        panics: Option<Arc<PanicBoard>>,
    ) -> StreamShared {
        StreamShared {
            hot: Hot {
                raw,
                ctx: ctx.as_ref().map_or(std::ptr::null_mut(), |c| c.raw()),
                runtime_id,
                published: AtomicU64::new(0),
                last_kernel_at: AtomicUsize::new(0),
                ordinal: ctx.as_ref().map_or(u32::MAX, |c| c.info.ordinal),
            },
            owned,
            id,
            ctx,
            owner,
            panics,
            fence: Mutex::new(Fence {
                event: None,
                captured: 0,
            }),
            last_kernel: Mutex::new(None),
        }
    }
}

impl Stream {
    fn with(shared: StreamShared) -> Stream {
        Stream {
            shared: Arc::new(shared),
        }
    }

    pub(crate) fn create(
        ctx: &Arc<Context>,
        id: StreamId,
        runtime_id: u64,
        owner: Weak<dyn Any + Send + Sync>,
        panics: Arc<PanicBoard>,
    ) -> Result<Stream> {
        ctx.bind()?;
        let raw = driver::stream_create()?;
        Ok(Stream::with(StreamShared::new(
            raw,
            true,
            id,
            runtime_id,
            Some(ctx.clone()),
            owner,
            Some(panics),
        )))
    }

    /// A stream that has no CUDA stream behind it, for exercising resources on the
    /// host. Never passed to the driver: resources that need one refuse it.
    pub fn host_placeholder(id: u32) -> Stream {
        let none = Weak::<()>::new();
        Stream::with(StreamShared::new(
            std::ptr::null_mut(),
            true,
            StreamId(id),
            0,
            None,
            none,
            None,
        ))
    }

    /// A stream of another library on the context of `like`, borrowed, to stand in
    /// a buffer's use state for work that library queued (see `capture`).
    ///
    /// The handle is used only by [`capture`](Self::capture); waiters use the event
    /// it records, so the foreign stream may be destroyed after that call.
    pub(crate) fn borrowed(like: &Stream, raw: RawStream) -> Stream {
        let none = Weak::<()>::new();
        Stream::with(StreamShared::new(
            raw,
            false,
            StreamId(u32::MAX),
            like.shared.hot.runtime_id,
            like.shared.ctx.clone(),
            none,
            None,
        ))
    }

    /// Publish a point covering everything queued on this stream so far and record
    /// the stream's event at it now, so that no later wait on the point touches the
    /// stream itself.
    ///
    /// A borrowed stream that is capturing a CUDA graph is refused: an xlog stream
    /// waiting on an event recorded in a capture would join it, and its later work
    /// (copies of borrowed host memory included) would be recorded into the graph
    /// instead of run.
    pub(crate) fn capture(&self) -> Result<UsePoint<Stream>> {
        if self.has_device() && !self.shared.owned {
            self.bind()?;
            // SAFETY: a borrowed stream is live for the call that borrowed it.
            if unsafe { driver::stream_is_capturing(self.raw()) } {
                return Err(joins_a_capture("stream"));
            }
        }
        let point = self.publish();
        if self.has_device() {
            self.bind()?;
            let mut fence = self.shared.fence.lock_unpoisoned();
            self.record_fence(&mut fence, point.epoch)?;
        }
        Ok(point)
    }

    /// The owner this stream was created for, while it is alive.
    pub(crate) fn owner(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.shared.owner.upgrade()
    }

    /// This stream's id within its runtime.
    pub fn id(&self) -> StreamId {
        self.shared.id
    }

    /// Id of the runtime that owns this stream (0 for host placeholders).
    pub fn runtime_id(&self) -> u64 {
        self.shared.hot.runtime_id
    }

    /// Ordinal of the device the stream runs on (`u32::MAX` for host placeholders).
    pub fn device_ordinal(&self) -> u32 {
        self.shared.hot.ordinal
    }

    /// The raw `CUstream`, for calling other CUDA libraries inside
    /// [`crate::WorkRecorder::enqueue`]. Null for host placeholders. On the
    /// simulator ([`crate::sim`]) it is the simulator's own handle, which no CUDA
    /// library accepts.
    pub fn raw(&self) -> RawStream {
        self.shared.hot.raw
    }

    pub(crate) fn context(&self) -> Option<&Arc<Context>> {
        self.shared.ctx.as_ref()
    }

    pub(crate) fn has_device(&self) -> bool {
        self.shared.ctx.is_some()
    }

    pub(crate) fn bind(&self) -> Result<()> {
        // SAFETY: `hot.ctx` is null or the handle of `self.shared.ctx`, which retains
        // the context while the stream lives.
        unsafe { driver::bind_context(self.shared.hot.ctx) }
    }

    /// Block the host until all work queued on this stream has finished.
    ///
    /// Wraps [`cuStreamSynchronize`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html).
    /// A kernel failure surfaces here; the error names the last kernel launched on
    /// this stream.
    pub fn synchronize(&self) -> Result<()> {
        if !self.has_device() {
            return Ok(());
        }
        self.bind()?;
        if !self.shared.owned {
            // A borrowed stream may be gone: wait for what it captured instead.
            let fence = self.shared.fence.lock_unpoisoned();
            return match fence.event {
                // SAFETY: the event is this stream's and alive while `fence` is held.
                Some(ev) => unsafe { driver::event_synchronize(ev) }.map_err(|e| self.explain(e)),
                None => Ok(()),
            };
        }
        // SAFETY: the stream is alive while `self` holds it.
        unsafe { driver::stream_synchronize(self.raw()) }.map_err(|e| self.explain(e))
    }

    /// Block until everything queued on this stream has finished or can never run
    /// (see `driver::stream_settle`): what a copy from or into host memory borrowed
    /// for the call waits for before it returns.
    pub(crate) fn settle(&self) -> Result<()> {
        if !self.has_device() || !self.shared.owned {
            return self.synchronize();
        }
        // Wait even if the bind fails: a synchronisation refused for want of the
        // context is followed by polling the stream.
        let bound = self.bind();
        // SAFETY: the stream is alive while `self` holds it.
        let settled = unsafe { driver::stream_settle(self.raw()) }.map_err(|e| self.explain(e));
        bound.and(settled)
    }

    /// Turn a failed call on this stream (a copy, a wait, a launch, a free) into
    /// [`Error::KernelPanic`] when its error is a kernel's sticky fault
    /// ([`Error::is_kernel_fault`]) and a kernel of a module loaded by this
    /// stream's runtime recorded a panic; other errors pass through. A sticky
    /// fault surfaces at whichever call on the context comes first, not only at a
    /// synchronisation.
    #[cold]
    #[inline(never)]
    pub(crate) fn explain_fault(&self, e: Error) -> Error {
        if e.is_kernel_fault() {
            self.explain(e)
        } else {
            e
        }
    }

    /// Turn a failed synchronisation into [`Error::KernelPanic`] when a kernel of a
    /// module loaded by this stream's runtime recorded a panic.
    #[cold]
    #[inline(never)]
    fn explain(&self, e: Error) -> Error {
        let kernel = self.shared.last_kernel.lock_unpoisoned().clone();
        let panic = self.shared.panics.as_ref().and_then(|b| b.first());
        match (panic, kernel) {
            (Some(message), kernel) => Error::KernelPanic {
                kernel: kernel
                    .map(|k| k.to_string())
                    .unwrap_or_else(|| "<unknown>".into()),
                message,
            },
            (None, Some(k)) if e.is_kernel_fault() => {
                match self.shared.panics.as_ref().and_then(|b| b.recursion(&k)) {
                    Some(r) => Error::StackOverflow {
                        kernel: k.to_string(),
                        recursion: r.cycle.join(" → "),
                        stack_bytes: self.shared.panics.as_ref().and_then(|b| b.stack()),
                        cause: e.to_string(),
                    },
                    None => e.while_(|| {
                        format!(
                            "synchronising {}; the last kernel launched on it was `{k}`",
                            self.id()
                        )
                    }),
                }
            }
            (None, Some(k)) => e.while_(|| {
                format!(
                    "synchronising {}; the last kernel launched on it was `{k}`",
                    self.id()
                )
            }),
            (None, None) => e.while_(|| format!("synchronising {}", self.id())),
        }
    }

    /// Remember `name` as the last kernel launched here (for panic reports).
    #[inline]
    pub(crate) fn note_kernel(&self, name: &Arc<str>) {
        // The stored Arc keeps its address from being reused while it is stored,
        // so an equal address means the same name.
        let at = Arc::as_ptr(name).cast::<u8>() as usize;
        if self.shared.hot.last_kernel_at.load(Ordering::Acquire) != at {
            self.store_last_kernel(name, at);
        }
    }

    #[inline(never)]
    fn store_last_kernel(&self, name: &Arc<str>, at: usize) {
        let mut last = self.shared.last_kernel.lock_unpoisoned();
        *last = Some(name.clone());
        self.shared.hot.last_kernel_at.store(at, Ordering::Release);
    }

    /// Publish a new point after tracked work was enqueued on this stream.
    #[inline]
    pub(crate) fn publish(&self) -> UsePoint<Stream> {
        UsePoint {
            stream: self.clone(),
            epoch: self.publish_epoch(),
        }
    }

    /// [`publish`](Self::publish), returning only the new epoch.
    #[inline]
    pub(crate) fn publish_epoch(&self) -> u64 {
        self.shared.hot.published.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Queue on `self` a wait for `point` (a point of another stream).
    pub(crate) fn wait_for(&self, point: &UsePoint<Stream>) -> Result<()> {
        if point.stream == *self || !self.has_device() {
            return Ok(());
        }
        if point.stream.shared.hot.ctx != self.shared.hot.ctx {
            return self.wait_for_peer(point);
        }
        Stream::wait_raw(self.raw(), point).map_err(|e| self.explain_fault(e))
    }

    /// [`wait_for`](Self::wait_for) a point of a stream of another context (another
    /// device): its event is made and recorded with its own context bound (an event
    /// belongs to the context it was made in), the wait queued with it still bound
    /// (a stream may wait on another device's event), then this stream's context is
    /// bound again for the caller's next call.
    #[cold]
    #[inline(never)]
    fn wait_for_peer(&self, point: &UsePoint<Stream>) -> Result<()> {
        point.stream.bind()?;
        let waited = Stream::wait_raw(self.raw(), point).map_err(|e| self.explain_fault(e));
        self.bind()?;
        waited
    }

    /// Queue on the raw stream `raw` (ours or another library's, on the bound
    /// context) a wait for `point`.
    pub(crate) fn wait_raw(raw: RawStream, point: &UsePoint<Stream>) -> Result<()> {
        let source = &point.stream;
        if !source.has_device() {
            return Ok(());
        }
        let mut fence = source.shared.fence.lock_unpoisoned();
        let event = source.record_fence(&mut fence, point.epoch)?;
        // SAFETY: `raw` and the event are alive; the wait uses the latest record,
        // which captured at least `point.epoch` (a later record only captures more).
        unsafe { driver::stream_wait_event(raw, event) }
    }

    /// Record this stream's event unless it already captured `epoch`; the event.
    fn record_fence(&self, fence: &mut Fence, epoch: u64) -> Result<RawEvent> {
        if let (Some(e), true) = (fence.event, fence.captured >= epoch) {
            return Ok(e);
        }
        let event = match fence.event {
            Some(e) => e,
            None => {
                let e = driver::event_create_untimed()?;
                fence.event = Some(e);
                e
            }
        };
        // Everything published up to `now` was enqueued before this record.
        let now = self.shared.hot.published.load(Ordering::Acquire);
        // SAFETY: both handles are alive and belong to the bound context.
        unsafe { driver::event_record(event, self.raw()) }?;
        fence.captured = now;
        Ok(event)
    }

    /// The newest epoch the device is known to have run on this stream (never
    /// blocks): the one the stream's fence event captured, once that record has
    /// completed. `None` while it has not, for a borrowed stream, and while the
    /// stream captures a graph (a query would end the capture).
    pub(crate) fn completed_epoch(&self) -> Option<u64> {
        if !self.has_device() {
            return Some(self.shared.hot.published.load(Ordering::Acquire));
        }
        if !self.shared.owned || self.bind().is_err() {
            return None;
        }
        let fence = self.shared.fence.lock_unpoisoned();
        let event = fence.event?;
        // SAFETY: the stream is alive while `self` is; the event while `fence` is held.
        let done =
            unsafe { !driver::stream_is_capturing(self.raw()) && driver::event_query(event) };
        done.then_some(fence.captured)
    }

    /// Publish a point covering everything queued so far and record the fence
    /// event at it, so that a later [`completed_epoch`](Self::completed_epoch)
    /// can tell when the device has passed it. Does nothing while the stream
    /// captures a graph, or for a borrowed stream.
    pub(crate) fn mark_progress(&self) {
        if !self.has_device() || !self.shared.owned || self.bind().is_err() {
            return;
        }
        // SAFETY: the stream is alive while `self` is.
        if unsafe { driver::stream_is_capturing(self.raw()) } {
            return;
        }
        let epoch = self.publish_epoch();
        let mut fence = self.shared.fence.lock_unpoisoned();
        let _ = self.record_fence(&mut fence, epoch);
    }

    /// Block the host until `point` has completed on its stream.
    pub(crate) fn host_wait(point: &UsePoint<Stream>) -> Result<()> {
        point.stream.synchronize()
    }
}

/// The refusal of a foreign stream or event that belongs to a graph capture.
pub(crate) fn joins_a_capture(what: &str) -> Error {
    Error::InvalidArgument {
        what: format!("a foreign {what}"),
        reason: "it belongs to a CUDA graph capture in progress: an xlog stream waiting on it would join the capture, and its later work would be recorded into the graph instead of run; order it after the capture ends".to_owned(),
    }
}

/// Streams a runtime hands out round-robin from [`crate::Runtime::stream`].
pub(crate) struct StreamPool {
    slots: Box<[OnceLock<Stream>]>,
    next: AtomicUsize,
    ids: AtomicU64,
}

impl StreamPool {
    pub(crate) fn new(size: usize) -> StreamPool {
        StreamPool {
            slots: (0..size.max(1)).map(|_| OnceLock::new()).collect(),
            next: AtomicUsize::new(0),
            ids: AtomicU64::new(0),
        }
    }

    pub(crate) fn next_id(&self) -> StreamId {
        StreamId(self.ids.fetch_add(1, Ordering::Relaxed) as u32)
    }

    pub(crate) fn pooled(&self, make: impl FnOnce(StreamId) -> Result<Stream>) -> Result<Stream> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        if let Some(s) = self.slots[i].get() {
            return Ok(s.clone());
        }
        let s = make(self.next_id())?;
        // A racing caller may have filled the slot first; use whichever won.
        Ok(self.slots[i].get_or_init(|| s).clone())
    }
}
