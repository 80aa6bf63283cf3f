//! Memory shared with other CUDA libraries: the format-free half of interop.
//!
//! DLPack and the Arrow C Device Data Interface (crate `xlog-interop`) reduce to
//! three operations on a buffer, defined here on top of the stack because an
//! import needs the runtime of the stream it names:
//!
//! - **import**: [`DeviceBuffer::import_raw`] wraps another library's memory in an
//!   ordinary tracked buffer. The `unsafe` call names what orders the producer's
//!   writes ([`ReadyAfter`]: an xlog stream, a foreign stream or an event) and takes
//!   an owner that keeps the memory alive. Launchers accept the buffer and fence it
//!   like any other; dropping it waits for every recorded use on the device, then
//!   drops the owner (the foreign deleter), never xlog's allocator.
//! - **order a consumer**: [`BufferCore::order_foreign`] makes another library's
//!   stream wait for the buffer's pending work that an access conflicts with (the
//!   producer side of `__dlpack__(stream=…)`).
//! - **record a consumer**: [`BufferCore::record_foreign_use`] folds "everything
//!   that stream queued so far" into the buffer's use state, as a use with an
//!   access: later xlog work and the buffer's free wait for it. The foreign stream
//!   is touched once, then only the event recorded on it.
//!
//! [`BufferCore::ready_event`] records an event after the buffer's pending writes
//! (an Arrow array's `sync_event`).
//!
//! **One identity per memory.** A process-wide registry holds the address ranges
//! of live imports and exports (per device), and of buffers a binding registers
//! as held ([`BufferCore::mark_held`]). An import that overlaps any of them is
//! refused: two imports of one tensor, or an import of memory xlog has exported,
//! would otherwise give two tracked buffers (two use states, never fenced against
//! each other) over the same bytes, and safe code could pass them to one launch as
//! `&[T]` and `&mut [T]`. An export ([`BufferCore::mark_exported`]) does not check:
//! the buffer it exports is xlog's one identity of the memory.
//!
//! The registry does not hold every xlog allocation (a registration per
//! allocation would cost every launch path a global lock): an xlog buffer that
//! was never exported or marked held can reach an import only through a raw
//! address, which is why "the range is not memory of a live xlog buffer" is an
//! obligation of the `unsafe` imports. A safe binding that hands raw addresses to
//! its users (the Python module) marks each buffer it exposes as held.
//!
//! **Default streams.** A foreign stream given as the per-thread default stream
//! (`2`) is ordered through the legacy default stream (`1`): "the per-thread
//! default stream" names a different stream on each thread, and the thread that
//! releases a tensor need not be the one that used it; every thread's per-thread
//! default stream synchronises with the legacy stream, so an event recorded on (or
//! a wait queued on) the legacy stream covers all of them.

use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use xlog_device::DeviceCopy;

use crate::buffer::{BufferCore, DeviceBuffer};
use crate::driver::{self, RawEvent, RawStream};
use crate::error::{Error, Result};
use crate::resource::{AllocTag, DeviceBlock};
use crate::stream::Stream;
use crate::sync::Unpoisoned;
use crate::track::{Access, UsePoint};

/// Interop hands device memory to other CUDA libraries, or takes theirs: the
/// simulator's memory is host memory no CUDA library may touch, so every interop
/// path refuses it.
fn refuse_on_simulator(what: &str) -> Result<()> {
    if !driver::platform().interop() {
        return Err(Error::Unsupported {
            what: format!("{what} on the simulator"),
            reason: "interop (DLPack, Arrow, foreign streams) shares device memory with \
                     other CUDA libraries, and the simulator's memory is host memory; \
                     run on a GPU"
                .into(),
        });
    }
    Ok(())
}

/// A CUDA stream of another library (a `CUstream` / `cudaStream_t`), borrowed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ForeignStream(RawStream);

// SAFETY: a stream handle is a plain driver handle, usable from any thread.
unsafe impl Send for ForeignStream {}
// SAFETY: as above; xlog never mutates through it.
unsafe impl Sync for ForeignStream {}

impl fmt::Debug for ForeignStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ForeignStream({:#x})", self.0 as usize)
    }
}

impl ForeignStream {
    /// The legacy default stream (`CU_STREAM_LEGACY`, DLPack's stream `1`).
    pub fn legacy_default() -> ForeignStream {
        ForeignStream(1usize as RawStream)
    }

    /// The per-thread default stream (`CU_STREAM_PER_THREAD`, DLPack's stream `2`).
    pub fn per_thread_default() -> ForeignStream {
        ForeignStream(2usize as RawStream)
    }

    /// Wrap a raw `CUstream` handle.
    ///
    /// # Safety
    /// 1. `handle` is a live stream of the primary context of the device it is
    ///    used with (or one of the two default-stream handles), and stays alive
    ///    until the call that receives it returns.
    pub unsafe fn from_raw(handle: *mut c_void) -> ForeignStream {
        ForeignStream(handle.cast())
    }

    /// The raw handle.
    pub fn as_raw(&self) -> *mut c_void {
        self.0.cast()
    }

    /// The stream xlog records events on and queues waits on for this one: the
    /// legacy default stream for the per-thread default stream (whose handle means
    /// another stream on every thread), the stream itself otherwise.
    pub fn ordering_stream(&self) -> ForeignStream {
        if *self == ForeignStream::per_thread_default() {
            ForeignStream::legacy_default()
        } else {
            *self
        }
    }
}

/// A CUDA event of another library (a `CUevent` / `cudaEvent_t`), borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForeignEvent(RawEvent);

impl ForeignEvent {
    /// Wrap a raw `CUevent` handle.
    ///
    /// # Safety
    /// 1. `handle` is a live event of the primary context of the device it is used
    ///    with, and stays alive until the call that receives it returns.
    pub unsafe fn from_raw(handle: *mut c_void) -> ForeignEvent {
        ForeignEvent(handle.cast())
    }
}

/// What orders the producer's writes of imported memory before xlog's first use.
#[derive(Clone, Copy, Debug)]
pub enum ReadyAfter {
    /// The producer already ordered them before work queued on the import stream
    /// from now on (as `__dlpack__(stream=<the import stream>)` does).
    ImportStream,
    /// Everything queued on this stream so far: xlog records an event on it now.
    /// A stream capturing a graph is refused.
    Stream(ForeignStream),
    /// The most recent record of this event (an Arrow array's `sync_event`). An
    /// event last recorded in a graph capture in progress is refused (an xlog
    /// stream waiting on it would join the capture); the driver's refusal of the
    /// query that finds out invalidates that capture.
    Event(ForeignEvent),
}

/// An event xlog created and recorded; destroyed on drop.
pub struct OwnedEvent {
    raw: RawEvent,
    stream: Stream,
}

// SAFETY: an event handle is a plain driver handle usable from any thread; it is
// destroyed once, by the single owner.
unsafe impl Send for OwnedEvent {}
// SAFETY: shared access only reads the handle.
unsafe impl Sync for OwnedEvent {}

impl fmt::Debug for OwnedEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnedEvent({:#x})", self.raw as usize)
    }
}

impl OwnedEvent {
    /// The raw `CUevent` (null when the buffer lives in host memory, in tests).
    pub fn as_raw(&self) -> *mut c_void {
        self.raw.cast()
    }
}

impl Drop for OwnedEvent {
    fn drop(&mut self) {
        if self.raw.is_null() || self.stream.bind().is_err() {
            return;
        }
        // SAFETY: the event was created by `ready_event` and this is its only owner.
        if let Err(e) = unsafe { driver::event_destroy(self.raw) } {
            tracing::error!(target: "xlog::interop", "destroying an export event: {e}");
        }
    }
}

impl BufferCore {
    /// Make `consumer` wait for the buffer's pending work that `access` conflicts
    /// with: its last writes, and for a writing access its outstanding reads too.
    pub fn order_foreign(&self, consumer: ForeignStream, access: Access) -> Result<()> {
        refuse_on_simulator("an export")?;
        let stream = self.alloc_stream();
        if !stream.has_device() {
            return Ok(());
        }
        stream.bind()?;
        let points: Vec<UsePoint<Stream>> = {
            let state = self.track.lock_unpoisoned();
            state.conflicts(access).cloned().collect()
        };
        let raw = consumer.ordering_stream().0;
        points.iter().try_for_each(|p| Stream::wait_raw(raw, p))
    }

    /// Block the host until the buffer's pending work that `access` conflicts with
    /// has finished: the ordering for a consumer that names no stream.
    pub fn wait_host(&self, access: Access) -> Result<()> {
        refuse_on_simulator("an export")?;
        if !self.alloc_stream().has_device() {
            return Ok(());
        }
        let points: Vec<UsePoint<Stream>> = {
            let state = self.track.lock_unpoisoned();
            state.conflicts(access).cloned().collect()
        };
        points.iter().try_for_each(Stream::host_wait)
    }

    /// Record that `consumer` used the buffer with `access` through everything it
    /// has queued so far: later xlog work and the buffer's free wait for it.
    ///
    /// The foreign stream is touched only by this call (one event record). The use
    /// is folded into the buffer's allocation stream, which waits for that event
    /// (and, for a writing use, for every other recorded use): the buffer's use
    /// state keeps one point per xlog stream however many times it is exported.
    /// A consumer stream capturing a graph is refused: the allocation stream would
    /// join the capture.
    pub fn record_foreign_use(&self, consumer: ForeignStream, access: Access) -> Result<()> {
        refuse_on_simulator("a foreign use")?;
        let stream = self.alloc_stream();
        if !stream.has_device() {
            return Ok(());
        }
        stream.bind()?;
        let borrowed = Stream::borrowed(stream, consumer.ordering_stream().0);
        let foreign = borrowed.capture()?;
        let (planned, others): (u64, Vec<UsePoint<Stream>>) = {
            let state = self.track.lock_unpoisoned();
            (state.version(), state.conflicts(access).cloned().collect())
        };
        stream.wait_for(&foreign)?;
        others.iter().try_for_each(|p| stream.wait_for(p))?;
        let point = stream.publish();
        self.track
            .lock_unpoisoned()
            .commit(access, stream, point.epoch, planned);
        Ok(())
    }

    /// Block the host until all work on the buffer's device has finished: the
    /// release of a consumer that named no stream, whose uses could be anywhere.
    pub fn finish_unordered_use(&self) -> Result<()> {
        let stream = self.alloc_stream();
        if !stream.has_device() {
            return Ok(());
        }
        stream.bind()?;
        driver::ctx_synchronize().map_err(|e| stream.explain_fault(e))
    }

    /// Record an event on `on` after the buffer's pending writes: a consumer that
    /// waits on it may read the buffer.
    ///
    /// `on` must be a stream of the buffer's runtime (a host placeholder only for a
    /// buffer in host memory): an event of no device would order nothing.
    pub fn ready_event(&self, on: &Stream) -> Result<OwnedEvent> {
        refuse_on_simulator("an export event")?;
        let mine = self.alloc_stream();
        if mine.has_device()
            && (!on.has_device()
                || on.runtime_id() != mine.runtime_id()
                || on.device_ordinal() != mine.device_ordinal())
        {
            return Err(Error::WrongRuntime {
                what: "the stream of an export event",
                found: on.runtime_id(),
                found_device: on.device_ordinal(),
                expected: mine.runtime_id(),
                expected_device: mine.device_ordinal(),
            });
        }
        if !on.has_device() {
            return Ok(OwnedEvent {
                raw: std::ptr::null_mut(),
                stream: on.clone(),
            });
        }
        on.bind()?;
        let points: Vec<UsePoint<Stream>> = {
            let state = self.track.lock_unpoisoned();
            state.waits(Access::Read, on).cloned().collect()
        };
        points.iter().try_for_each(|p| on.wait_for(p))?;
        let raw = driver::event_create_untimed()?;
        let event = OwnedEvent {
            raw,
            stream: on.clone(),
        };
        // SAFETY: both handles are alive and belong to the bound context.
        unsafe { driver::event_record(raw, on.raw()) }.map_err(|e| on.explain_fault(e))?;
        Ok(event)
    }

    /// Register the buffer's memory as exported until the returned mark is
    /// dropped: imports overlapping it are refused meanwhile (see the module
    /// docs). An export context holds the mark until its deleter has run.
    pub fn mark_exported(&self) -> Box<dyn Send + Sync> {
        self.mark(Kind::Exported)
    }

    /// Register the buffer's memory as held by a live xlog buffer until the
    /// returned mark is dropped: imports overlapping it are refused meanwhile.
    ///
    /// For bindings that expose a buffer's address to code that may import it
    /// (e.g. `cupy.cuda.UnownedMemory(buf.device_ptr, …)` then `from_dlpack`):
    /// keep the mark no longer than the buffer (drop it right after the buffer).
    pub fn mark_held(&self) -> Box<dyn Send + Sync> {
        self.mark(Kind::Held)
    }

    fn mark(&self, kind: Kind) -> Box<dyn Send + Sync> {
        let domain = Domain::of(self.alloc_stream(), self.id().device);
        Box::new(RANGES.insert(domain, self.id().ptr, self.bytes(), kind))
    }
}

/// Which address space a range lives in: a device's, or host memory in tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Domain {
    host: bool,
    device: u32,
}

impl Domain {
    fn of(stream: &Stream, device: u32) -> Domain {
        Domain {
            host: !stream.has_device(),
            device,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Imported,
    Exported,
    Held,
}

struct Entry {
    id: u64,
    domain: Domain,
    start: u64,
    end: u64,
    kind: Kind,
}

/// Live imported, exported and held ranges (few at a time: scanned linearly).
struct Ranges {
    live: Mutex<Vec<Entry>>,
    next: AtomicU64,
}

static RANGES: Ranges = Ranges {
    live: Mutex::new(Vec::new()),
    next: AtomicU64::new(1),
};

/// A registered range; dropping it unregisters it.
struct RangeMark {
    id: u64,
}

impl Drop for RangeMark {
    fn drop(&mut self) {
        if self.id != 0 {
            RANGES.live.lock_unpoisoned().retain(|e| e.id != self.id);
        }
    }
}

impl Ranges {
    fn insert(&self, domain: Domain, start: u64, bytes: usize, kind: Kind) -> RangeMark {
        if bytes == 0 {
            return RangeMark { id: 0 };
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let end = start.saturating_add(bytes as u64);
        self.live.lock_unpoisoned().push(Entry {
            id,
            domain,
            start,
            end,
            kind,
        });
        RangeMark { id }
    }

    /// Register an import of `[start, start + bytes)`, refusing overlaps.
    fn import(&self, domain: Domain, start: u64, bytes: usize) -> Result<RangeMark> {
        if bytes == 0 {
            return Ok(RangeMark { id: 0 });
        }
        let end = start.saturating_add(bytes as u64);
        let mut live = self.live.lock_unpoisoned();
        // Name an import or export over a held mark: it says more.
        if let Some(e) = live
            .iter()
            .filter(|e| e.domain == domain && e.start < end && start < e.end)
            .min_by_key(|e| e.kind == Kind::Held)
        {
            return Err(Error::InvalidArgument {
                what: format!("imported memory at {start:#x} ({bytes} bytes)"),
                reason: format!(
                    "it overlaps memory {} at {:#x}..{:#x}, still alive: one memory gets one xlog buffer (drop the other, or import a copy)",
                    match e.kind {
                        Kind::Imported => "already imported",
                        Kind::Exported => "xlog exported",
                        Kind::Held => "of a live xlog buffer",
                    },
                    e.start,
                    e.end
                ),
            });
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        live.push(Entry {
            id,
            domain,
            start,
            end,
            kind: Kind::Imported,
        });
        Ok(RangeMark { id })
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Import `len` elements of another library's memory at `ptr` on `on`'s device
    /// as a tracked buffer, ordered by `ready` and kept alive by `owner`.
    ///
    /// The buffer is ordinary: launchers take it, xlog fences it. Dropping it
    /// blocks until every use xlog recorded has finished on the device, then drops
    /// `owner` (whose `Drop` runs the foreign deleter). The memory is the owner's:
    /// the runtime's budget and statistics do not count it. If the import fails,
    /// `owner` is dropped before returning.
    ///
    /// # Safety
    /// 1. `ptr` addresses `len` initialised elements of `T` on `on`'s device, valid
    ///    (and not freed or reused by anyone) for as long as `owner` lives.
    /// 2. `ready` orders every write the producer made before work xlog queues on
    ///    `on` after this call.
    /// 3. Until the buffer is dropped, nothing outside xlog writes the memory, or
    ///    reads it while xlog may write it, unless ordered through
    ///    [`BufferCore::order_foreign`] / [`BufferCore::record_foreign_use`].
    /// 4. No part of the range is memory of a live xlog buffer (one xlog
    ///    allocated, e.g. reached through its `device_ptr`): that would give one
    ///    memory two xlog buffers whose uses are never fenced against each other.
    ///
    /// What is checked on top of that: an import overlapping a live import, a live
    /// export of xlog's or a buffer marked held ([`BufferCore::mark_held`]), on the
    /// same device, is refused. The check covers every buffer the caller can only
    /// have reached through xlog's interop, not an arbitrary xlog allocation whose
    /// address the caller took by hand: obligation 4 covers those.
    pub unsafe fn import_raw(
        on: &Stream,
        ptr: u64,
        len: usize,
        ready: ReadyAfter,
        owner: impl Send + 'static,
    ) -> Result<DeviceBuffer<T>> {
        let rt = on.runtime()?;
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe {
            import_with(
                rt.allocator().clone(),
                on,
                on.device_ordinal(),
                ptr,
                len,
                ready,
                Box::new(owner),
            )
        }
    }
}

/// The checks and the wrapping behind `import_raw`, over any allocator.
///
/// # Safety
/// As [`DeviceBuffer::import_raw`].
unsafe fn import_with<T: DeviceCopy>(
    allocator: std::sync::Arc<crate::resource::Allocator>,
    on: &Stream,
    device: u32,
    ptr: u64,
    len: usize,
    ready: ReadyAfter,
    owner: Box<dyn Send>,
) -> Result<DeviceBuffer<T>> {
    let what = || format!("imported memory at {ptr:#x} ({len} elements)");
    refuse_on_simulator("an import")?;
    let elem = std::mem::size_of::<T>();
    let bytes = len.checked_mul(elem).ok_or(Error::SizeOverflow {
        len,
        elem_size: elem,
    })?;
    if ptr == 0 && bytes != 0 {
        return Err(Error::InvalidArgument {
            what: what(),
            reason: "the data pointer is null but the length is not zero".into(),
        });
    }
    if ptr % std::mem::align_of::<T>() as u64 != 0 {
        return Err(Error::InvalidArgument {
            what: what(),
            reason: format!(
                "the address is not aligned to {} bytes, the alignment of `{}`",
                std::mem::align_of::<T>(),
                std::any::type_name::<T>()
            ),
        });
    }
    let mark = RANGES.import(Domain::of(on, device), ptr, bytes)?;
    let ready = match ready {
        ReadyAfter::ImportStream => on.publish(),
        ReadyAfter::Stream(s) => {
            on.bind()?;
            let producer = Stream::borrowed(on, s.ordering_stream().0);
            let point = producer.capture()?;
            on.wait_for(&point)?;
            on.publish()
        }
        ReadyAfter::Event(ev) => {
            if on.has_device() {
                on.bind()?;
                // SAFETY: the event is live by `ForeignEvent::from_raw`.
                if !unsafe { driver::event_is_outside_capture(ev.0) } {
                    return Err(crate::stream::joins_a_capture("event"));
                }
                // SAFETY: `on` is alive; the event is live by `ForeignEvent::from_raw`.
                unsafe { driver::stream_wait_event(on.raw(), ev.0) }
                    .map_err(|e| on.explain_fault(e))?;
            }
            on.publish()
        }
    };
    let block = DeviceBlock::new(device, ptr, bytes, AllocTag("imported"));
    let core = BufferCore::new_foreign(block, allocator, on.clone(), ready, owner, Box::new(mark));
    Ok(DeviceBuffer::from_core(core, len))
}

/// Buffers in host memory for GPU-less tests of the layers above the runtime.
///
/// The recorder refuses them for launches and copies (host stacks do not track
/// streams); exports of them carry host addresses. Never use them for real work.
#[cfg(feature = "test-switches")]
pub mod host {
    use std::sync::Arc;

    use super::*;
    use crate::resource::{Allocator, DeviceMemoryResource};

    /// The id host buffers report as their runtime's.
    pub const HOST_RUNTIME_ID: u64 = u64::MAX;

    /// A buffer of `len` elements allocated from `resource` (a host stack) on
    /// `stream` (a [`Stream::host_placeholder`]). Downloads of a host buffer
    /// (of its runtime, [`HOST_RUNTIME_ID`]) read its memory on the host.
    ///
    /// # Safety
    /// 1. The buffer's address is a host address although the buffer claims a
    ///    device: it is never handed to code that dereferences it as device memory
    ///    (a real DLPack or Arrow consumer), nor written through a launch or copy.
    /// 2. `resource` hands out host memory (a [`HostResource`](crate::resource::HostResource)
    ///    stack), which downloads read.
    pub unsafe fn buffer<T: DeviceCopy>(
        resource: Arc<dyn DeviceMemoryResource>,
        stream: &Stream,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let allocator = Arc::new(Allocator::new(HOST_RUNTIME_ID, Box::new(resource)));
        let bytes = len * std::mem::size_of::<T>();
        let block = allocator.allocate(bytes, stream, AllocTag("host-test"))?;
        let ready = stream.publish();
        Ok(DeviceBuffer::from_core(
            BufferCore::new(block, allocator, stream.clone(), ready),
            len,
        ))
    }

    /// [`DeviceBuffer::import_raw`] on a host placeholder stream reporting `device`.
    ///
    /// # Safety
    /// As [`DeviceBuffer::import_raw`], with host memory.
    pub unsafe fn import<T: DeviceCopy>(
        stream: &Stream,
        device: u32,
        ptr: u64,
        len: usize,
        owner: impl Send + 'static,
    ) -> Result<DeviceBuffer<T>> {
        let allocator = Arc::new(Allocator::new(
            HOST_RUNTIME_ID,
            Box::new(crate::resource::HostResource::new(device)),
        ));
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe {
            import_with(
                allocator,
                stream,
                device,
                ptr,
                len,
                ReadyAfter::ImportStream,
                Box::new(owner),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::resource::{Allocator, HostResource};

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn import(ptr: u64, len: usize, drops: &Arc<AtomicUsize>) -> Result<DeviceBuffer<u32>> {
        let allocator = Arc::new(Allocator::new(7, Box::new(HostResource::new(0))));
        let s = Stream::host_placeholder(0);
        // SAFETY: host placeholder: nothing dereferences the address.
        unsafe {
            import_with(
                allocator,
                &s,
                0,
                ptr,
                len,
                ReadyAfter::ImportStream,
                Box::new(Counted(drops.clone())),
            )
        }
    }

    #[test]
    fn the_owner_is_dropped_once_when_the_buffer_is() {
        let drops = Arc::new(AtomicUsize::new(0));
        let buf = import(0x1000, 4, &drops).unwrap();
        assert!(buf.core().is_imported());
        assert_eq!((buf.device_ptr(), buf.len()), (0x1000, 4));
        assert_eq!(drops.load(Ordering::SeqCst), 0, "alive while the buffer is");
        drop(buf);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_refused_import_drops_the_owner_once() {
        for (ptr, len, why) in [
            (0, 3, "null but the length is not zero"),
            (0x1002, 1, "not aligned to 4 bytes"),
            (0x1000, usize::MAX, "overflows"),
        ] {
            let drops = Arc::new(AtomicUsize::new(0));
            let e = import(ptr, len, &drops).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
            assert_eq!(drops.load(Ordering::SeqCst), 1, "{why}");
        }
    }

    #[test]
    fn memory_imported_twice_is_refused_until_the_first_buffer_drops() {
        let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let a = import(0x40000, 16, &first).unwrap();
        // Overlapping, not equal: the tail of `a` and beyond.
        let e = import(0x40000 + 60, 4, &second).unwrap_err().to_string();
        assert!(e.contains("already imported"), "{e}");
        assert_eq!(
            second.load(Ordering::SeqCst),
            1,
            "the refused owner is dropped once"
        );
        // Adjacent memory is another memory.
        drop(import(0x40000 + 64, 4, &second).unwrap());
        drop(a);
        assert_eq!(first.load(Ordering::SeqCst), 1);
        drop(import(0x40000, 16, &second).unwrap());
        assert_eq!(second.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn memory_xlog_exported_is_refused_as_an_import_while_the_export_lives() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mine = import(0x50000, 8, &drops).unwrap();
        // An export of a buffer is allowed over its own import.
        let mark = mine.core().mark_exported();
        drop(mine);
        let e = import(0x50000 + 4, 1, &drops).unwrap_err().to_string();
        assert!(e.contains("xlog exported"), "{e}");
        drop(mark);
        drop(import(0x50000, 8, &drops).unwrap());
        assert_eq!(drops.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn memory_of_a_held_xlog_buffer_is_refused_as_an_import_while_marked() {
        // An xlog allocation (not an import), as a binding exposes it.
        let allocator = Arc::new(Allocator::new(7, Box::new(HostResource::new(0))));
        let s = Stream::host_placeholder(0);
        let block = allocator.allocate(64, &s, AllocTag("held-test")).unwrap();
        let own: DeviceBuffer<u32> = DeviceBuffer::from_core(
            BufferCore::new(block, allocator, s.clone(), s.publish()),
            16,
        );
        let ptr = own.device_ptr();
        let drops = Arc::new(AtomicUsize::new(0));
        // Unmarked: the registry does not know it (the unsafe import's obligation 4).
        drop(import(ptr + 4, 1, &drops).unwrap());
        let mark = own.core().mark_held();
        let e = import(ptr + 60, 4, &drops).unwrap_err().to_string();
        assert!(e.contains("of a live xlog buffer"), "{e}");
        // Adjacent memory is another memory.
        drop(import(ptr + 64, 1, &drops).unwrap());
        drop(own);
        drop(mark);
        drop(import(ptr, 16, &drops).unwrap());
        assert_eq!(drops.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn the_per_thread_default_stream_is_ordered_through_the_legacy_stream() {
        // Handle 2 is a different stream on every thread: a deleter running on
        // another thread than the consumer's would record on the wrong one.
        assert_eq!(
            ForeignStream::per_thread_default().ordering_stream(),
            ForeignStream::legacy_default()
        );
        assert_eq!(
            ForeignStream::legacy_default().ordering_stream(),
            ForeignStream::legacy_default()
        );
        // SAFETY: the handle is only compared.
        let other = unsafe { ForeignStream::from_raw(0x7f00_0000_1000 as *mut c_void) };
        assert_eq!(other.ordering_stream(), other);
    }

    #[test]
    fn null_data_with_zero_length_imports() {
        let drops = Arc::new(AtomicUsize::new(0));
        drop(import(0, 0, &drops).unwrap());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_imported_buffer_is_freed_by_its_owner_not_the_allocator() {
        // A host allocator would count a deallocation of a block it never made as
        // a stale block and report a drop error: none may happen.
        let allocator = Arc::new(Allocator::new(7, Box::new(HostResource::new(0))));
        let s = Stream::host_placeholder(0);
        let drops = Arc::new(AtomicUsize::new(0));
        // SAFETY: host placeholder: nothing dereferences the address.
        let buf: DeviceBuffer<u32> = unsafe {
            import_with(
                allocator.clone(),
                &s,
                0,
                0x2000,
                2,
                ReadyAfter::ImportStream,
                Box::new(Counted(drops.clone())),
            )
        }
        .unwrap();
        drop(buf);
        assert_eq!(allocator.drop_errors(), 0);
        assert_eq!(allocator.resource().bytes_outstanding(), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
