//! Page-locked host buffers and asynchronous copies between them and device
//! buffers, recorded and fenced like launches.
//!
//! A copy from or into pageable memory (`copy_from_host`, `download`) returns only
//! once its stream has run it. A [`PinnedBuffer`] is page-locked
//! (`cuMemHostAlloc`), so the driver copies it without staging, and a copy
//! returns as soon as it is queued: chunk `k + 1` can go in while chunk `k`
//! computes and chunk `k - 1` comes out.
//!
//! # Rules
//!
//! 1. The device side of each copy is recorded on the device buffer like a
//!    kernel's access (a write for an upload, a read for a download): other
//!    streams wait for it, and it waits for them, through the usual fences.
//! 2. The host side is recorded on the pinned buffer: each copy records an event
//!    of the buffer's own after it, and remembers whether the device writes the
//!    host bytes (a download) or only reads them (an upload).
//! 3. The types refuse what they can: an upload returns a [`PendingUpload`] that
//!    borrows the buffer shared, so it cannot be written while the handle lives; a
//!    download borrows it exclusively and returns a [`PendingDownload`] whose
//!    [`wait`](PendingDownload::wait) yields the bytes, so they cannot be read
//!    before.
//! 4. A handle dropped or forgotten early ends the borrow but not the copy; the
//!    records of rule 2 cover that: [`PinnedBuffer::as_slice`] waits for every
//!    pending download into the buffer, [`PinnedBuffer::as_mut_slice`] for every
//!    pending copy, an upload's stream waits (on the device) for pending downloads
//!    into its source, a download's stream for every pending copy of its
//!    destination, and dropping the buffer waits for all of them before the memory
//!    is freed.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Mutex;

use smallvec::SmallVec;
use xlog_device::DeviceCopy;

use crate::buffer::{ReadBuffer, WriteBuffer};
use crate::device::Device;
use crate::driver::{self, RawEvent};
use crate::error::{Error, Result};
use crate::launch::WorkRecorder;
use crate::stream::Stream;
use crate::sync::Unpoisoned;
use crate::track::Access;

/// A page, 4 KiB: the alignment the simulator gives page-locked memory, and the
/// size and alignment of the registered page a module's panic record takes
/// (`driver::host_page_mapped`).
pub(crate) const PAGE: usize = 4096;

/// The most a [`PinnedBuffer`]'s element type may be aligned to: 256 bytes, what
/// CUDA allocations are aligned to at least. `cuMemHostAlloc` does not give whole
/// pages: small allocations come 512-byte aligned on an H200 (driver 580).
pub(crate) const MAX_ALIGN: usize = 256;

/// One copy still possibly running: the event recorded after it and whether it
/// writes the host bytes.
#[derive(Clone, Copy)]
struct InFlight {
    event: RawEvent,
    writes_host: bool,
    /// The elements it touches.
    range: (usize, usize),
}

impl InFlight {
    /// Whether work on `range` that writes the bytes (`writes`) or only reads them
    /// must wait for this copy.
    fn conflicts(&self, range: (usize, usize), writes: bool) -> bool {
        (writes || self.writes_host) && self.range.0 < range.1 && range.0 < self.range.1
    }
}

#[derive(Default)]
struct Copies {
    pending: SmallVec<[InFlight; 4]>,
    /// Events of finished copies, to record again.
    spare: Vec<RawEvent>,
}

impl Copies {
    /// Move the copies that have finished to the spares.
    fn prune(&mut self) {
        let spare = &mut self.spare;
        self.pending.retain(|c| {
            // SAFETY: the buffer's events are alive until it drops.
            let done = unsafe { driver::event_query(c.event) };
            if done {
                spare.push(c.event);
            }
            !done
        });
    }

    /// Block the host until every pending copy `which` selects has finished.
    fn host_wait(&mut self, which: impl Fn(&InFlight) -> bool) -> Result<()> {
        if !crate::testing::fencing_enabled() {
            return Ok(());
        }
        let mut failure = None;
        let spare = &mut self.spare;
        self.pending.retain(|c| {
            if failure.is_some() || !which(c) {
                return true;
            }
            // SAFETY: the buffer's events are alive until it drops.
            match unsafe { driver::event_synchronize(c.event) } {
                Ok(()) => {
                    spare.push(c.event);
                    false
                }
                Err(e) => {
                    failure = Some(e);
                    true
                }
            }
        });
        failure.map_or(Ok(()), Err)
    }
}

/// Page-locked host memory holding `len` elements of `T`, zeroed when made
/// ([`Runtime::alloc_pinned`](crate::Runtime::alloc_pinned)), aligned to at least
/// 256 bytes (so `T` may be aligned to at most 256 bytes, checked when the
/// allocation compiles, and the address checked again when it is made).
///
/// Copies to and from device buffers are asynchronous and fenced (see the module
/// docs of `pinned`); the host reads the elements through
/// [`as_slice`](Self::as_slice) and writes them through
/// [`as_mut_slice`](Self::as_mut_slice), which wait for the copies that would race.
///
/// ```no_run
/// # fn main() -> xlog_runtime::Result<()> {
/// let rt = xlog_runtime::Runtime::get(0)?;
/// let s = rt.new_stream()?;
/// let mut host = rt.alloc_pinned::<u32>(1024)?;
/// host.as_mut_slice()?.fill(7);
/// let mut dev = rt.alloc_zeroed_on::<u32>(&s, 1024)?;
/// dev.upload_from_pinned(&s, &host)?; // queued; `host` cannot be written meanwhile
/// let out = dev.download_to_pinned(&s, &mut host)?; // queued after the upload
/// assert!(out.wait()?.iter().all(|&v| v == 7));
/// # Ok(()) }
/// ```
pub struct PinnedBuffer<T: DeviceCopy> {
    ptr: *mut T,
    len: usize,
    device: Device,
    copies: Mutex<Copies>,
}

// SAFETY: the buffer owns its memory; the host reaches it only through `&self`
// (shared slices, after the pending downloads) and `&mut self` (after every pending
// copy), and the bookkeeping is behind a mutex. `T: DeviceCopy` is plain data.
unsafe impl<T: DeviceCopy + Send> Send for PinnedBuffer<T> {}
// SAFETY: as above: `&self` gives only shared slices, taken after the copies that
// write the bytes have finished; a copy that writes them needs `&mut self`.
unsafe impl<T: DeviceCopy + Sync> Sync for PinnedBuffer<T> {}

impl<T: DeviceCopy> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceCopy> PinnedBuffer<T> {
    /// Evaluated (and so checked) where it is named, when the code is compiled
    /// for a `T`: page-locked memory is aligned to [`MAX_ALIGN`] bytes at least.
    pub(crate) const ALIGNMENT_FITS: () = assert!(
        std::mem::align_of::<T>() <= MAX_ALIGN,
        "xlog: a page-locked buffer's element type may be aligned to at most 256 bytes, \
         the alignment CUDA gives page-locked memory; lower its `#[repr(align(..))]`"
    );

    /// `len` zeroed elements of page-locked memory on `device`'s context.
    ///
    /// An element type aligned to more than [`MAX_ALIGN`] bytes is refused when the
    /// call is compiled; an allocation the driver aligned less than `T` needs is
    /// freed and refused.
    pub(crate) fn zeroed(device: &Device, len: usize) -> Result<Self> {
        let () = Self::ALIGNMENT_FITS;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Error::SizeOverflow {
                len,
                elem_size: std::mem::size_of::<T>(),
            })?;
        let ptr = if bytes == 0 {
            std::ptr::NonNull::<T>::dangling().as_ptr()
        } else {
            device.bind()?;
            // Zeroed page-locked memory; its alignment is checked here, since the
            // slices made from it must be aligned for `T`.
            let host = driver::host_alloc_mapped(bytes)?.0;
            if host as usize % std::mem::align_of::<T>() != 0 {
                // SAFETY: just allocated by `host_alloc_mapped`, used by nobody.
                unsafe { driver::host_free(host) }?;
                return Err(Error::Unsupported {
                    what: format!("page-locked memory for `{}`", std::any::type_name::<T>()),
                    reason: format!(
                        "the driver aligned it to less than the {} bytes the type needs",
                        std::mem::align_of::<T>()
                    ),
                });
            }
            host.cast::<T>()
        };
        Ok(PinnedBuffer {
            ptr,
            len,
            device: device.clone(),
            copies: Mutex::default(),
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The elements, once every pending download into the buffer has finished
    /// (waiting for them).
    pub fn as_slice(&self) -> Result<&[T]> {
        self.wait_range((0, self.len), false)?;
        // SAFETY: `ptr` holds `len` initialised elements (zeroed at allocation, then
        // written only by the host through `&mut self` or by downloads of `T`
        // values); no download into them is pending, and a new one needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }

    /// The elements, mutably, once every pending copy from or into the buffer has
    /// finished (waiting for them).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait_range((0, self.len), true)?;
        // SAFETY: as in `as_slice`; no copy reads or writes the bytes any more, and
        // none can start while the slice borrows `self` mutably.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    /// Split into disjoint chunks of `chunk` elements (the last may be shorter), each
    /// a source or destination of copies of its own.
    ///
    /// # Panics
    /// If `chunk` is 0, as `slice::chunks_mut`.
    pub fn chunks_mut(&mut self, chunk: usize) -> Vec<PinnedChunk<'_, T>> {
        assert!(chunk > 0, "chunk size must be non-zero");
        let len = self.len;
        let this: &PinnedBuffer<T> = self;
        (0..len)
            .step_by(chunk)
            .map(|start| PinnedChunk {
                buffer: this,
                range: (start, (start + chunk).min(len)),
                _mut: PhantomData,
            })
            .collect()
    }

    /// Block the host until no pending copy that overlaps `range` would race a
    /// host read (`writes` false) or write of it.
    fn wait_range(&self, range: (usize, usize), writes: bool) -> Result<()> {
        if self.bytes() == 0 {
            return Ok(());
        }
        self.device.bind()?;
        self.copies
            .lock_unpoisoned()
            .host_wait(|c| c.conflicts(range, writes))
    }

    /// Whether no copy from or into the buffer is still running (never blocks).
    pub fn is_idle(&self) -> bool {
        if self.bytes() == 0 || self.device.bind().is_err() {
            return self.bytes() == 0;
        }
        let mut copies = self.copies.lock_unpoisoned();
        copies.prune();
        copies.pending.is_empty()
    }

    /// Queue the copy `work` on `stream` behind the device waits for the pending
    /// copies it conflicts with, then record an event after it. Returns the event.
    ///
    /// # Safety
    /// 1. `work` queues on the raw stream it is given one copy that touches the
    ///    buffer's elements `range` as `writes_host` says, and the device bytes `pre`
    ///    recorded.
    unsafe fn copy(
        &self,
        stream: &Stream,
        pre: WorkRecorder<'_, crate::launch::Preflighted>,
        writes_host: bool,
        range: (usize, usize),
        work: impl FnOnce(crate::handle::RawStream) -> Result<()>,
    ) -> Result<RawEvent> {
        let mut copies = self.copies.lock_unpoisoned();
        stream.bind()?;
        copies.prune();
        let event = match copies.spare.pop() {
            Some(e) => e,
            None => driver::event_create_untimed()?,
        };
        let fence = crate::testing::fencing_enabled();
        let waits: SmallVec<[RawEvent; 4]> = copies
            .pending
            .iter()
            .filter(|c| fence && c.conflicts(range, writes_host))
            .map(|c| c.event)
            .collect();
        // The event is recorded on the same stream right after the copy, inside
        // the enqueued work, so that nothing can run between them.
        let queue = |raw| {
            for &ev in &waits {
                // SAFETY: the buffer's events are alive until it drops.
                unsafe { driver::stream_wait_event(raw, ev) }?;
            }
            work(raw)?;
            // SAFETY: both handles are alive and of the bound context.
            unsafe { driver::event_record(event, raw) }
        };
        // SAFETY: obligation 1 for `work`; the waits and the record touch no memory.
        let queued = unsafe { pre.enqueue(queue) };
        match queued {
            Ok(_) => {
                copies.pending.push(InFlight {
                    event,
                    writes_host,
                    range,
                });
                Ok(event)
            }
            Err(e) => {
                // The copy may be queued without its event: wait for the stream
                // before anyone touches the bytes again.
                let _ = stream.settle();
                copies.spare.push(event);
                Err(e)
            }
        }
    }
}

impl<T: DeviceCopy> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if self.bytes() == 0 {
            return;
        }
        let copies = self.copies.get_mut_unpoisoned();
        let waited = self.device.bind().and_then(|()| copies.host_wait(|_| true));
        if let Err(e) = waited {
            // Freeing memory a copy may still touch is not an option: leak it.
            tracing::error!(target: "xlog::runtime", "awaiting the copies of a page-locked buffer failed; it is leaked: {e}");
            return;
        }
        for ev in copies.spare.drain(..) {
            // SAFETY: the event is the buffer's and no pending copy uses it.
            let _ = unsafe { driver::event_destroy(ev) };
        }
        // SAFETY: the memory came from `host_alloc_mapped` and no copy uses it.
        if let Err(e) = unsafe { driver::host_free(self.ptr.cast()) } {
            tracing::error!(target: "xlog::runtime", "freeing a page-locked buffer failed: {e}");
        }
    }
}

/// A disjoint part of a [`PinnedBuffer`] ([`PinnedBuffer::chunks_mut`]): borrowed
/// from it exclusively, so the host and copies reach it as they would the buffer.
pub struct PinnedChunk<'a, T: DeviceCopy> {
    buffer: &'a PinnedBuffer<T>,
    range: (usize, usize),
    _mut: PhantomData<&'a mut [T]>,
}

impl<T: DeviceCopy> fmt::Debug for PinnedChunk<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedChunk")
            .field("range", &(self.range.0..self.range.1))
            .finish()
    }
}

impl<T: DeviceCopy> PinnedChunk<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.range.1 - self.range.0
    }

    /// Whether the chunk has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, once every pending download into them has finished.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.buffer.wait_range(self.range, false)?;
        // SAFETY: the chunk's elements lie inside the buffer; no download into them
        // is pending, and a new one needs `&mut self` (chunks are disjoint).
        Ok(unsafe { std::slice::from_raw_parts(self.buffer.ptr.add(self.range.0), self.len()) })
    }

    /// The elements, mutably, once every pending copy from or into them has finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.buffer.wait_range(self.range, true)?;
        // SAFETY: as in `as_slice`; no copy touches the elements any more and none
        // can start while the slice borrows `self` mutably; no other chunk or
        // borrow of the buffer reaches them.
        Ok(
            unsafe {
                std::slice::from_raw_parts_mut(self.buffer.ptr.add(self.range.0), self.len())
            },
        )
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Page-locked memory an asynchronous copy can use: a [`PinnedBuffer`] or a
/// [`PinnedChunk`] of one. Sealed.
pub trait PinnedMemory<T: DeviceCopy>: sealed::Sealed {
    /// The buffer and the element range.
    #[doc(hidden)]
    fn region(&self) -> (&PinnedBuffer<T>, (usize, usize));
}

impl<T: DeviceCopy> sealed::Sealed for PinnedBuffer<T> {}
impl<T: DeviceCopy> sealed::Sealed for PinnedChunk<'_, T> {}

impl<T: DeviceCopy> PinnedMemory<T> for PinnedBuffer<T> {
    fn region(&self) -> (&PinnedBuffer<T>, (usize, usize)) {
        (self, (0, self.len))
    }
}

impl<T: DeviceCopy> PinnedMemory<T> for PinnedChunk<'_, T> {
    fn region(&self) -> (&PinnedBuffer<T>, (usize, usize)) {
        (self.buffer, self.range)
    }
}

/// An upload from page-locked memory that may still be running. It borrows the
/// source shared, so the host cannot write it until the handle is gone (and
/// `as_mut_slice` waits for the copy even then).
#[must_use = "dropping the handle is fine, but then `as_mut_slice` waits for the copy"]
pub struct PendingUpload<'a, T: DeviceCopy> {
    buffer: &'a PinnedBuffer<T>,
    event: Option<RawEvent>,
}

impl<T: DeviceCopy> PendingUpload<'_, T> {
    /// Block until the copy has run.
    pub fn wait(self) -> Result<()> {
        match self.event {
            Some(ev) if crate::testing::fencing_enabled() => {
                self.buffer.device.bind()?;
                // SAFETY: the buffer's events live as long as it, which outlives `self`.
                unsafe { driver::event_synchronize(ev) }
            }
            _ => Ok(()),
        }
    }

    /// Whether the copy has run (never blocks).
    pub fn is_done(&self) -> bool {
        event_done(self.buffer, self.event)
    }
}

fn event_done<T: DeviceCopy>(buffer: &PinnedBuffer<T>, event: Option<RawEvent>) -> bool {
    match event {
        // SAFETY: the buffer's events live as long as it, which outlives the handle.
        Some(ev) => buffer.device.bind().is_ok() && unsafe { driver::event_query(ev) },
        None => true,
    }
}

/// A download into page-locked memory that may still be running. It borrows the
/// destination exclusively: the bytes are reachable only through
/// [`wait`](Self::wait), which returns them once the copy has run.
#[must_use = "the downloaded bytes are read through `wait`"]
pub struct PendingDownload<'a, T: DeviceCopy> {
    buffer: &'a PinnedBuffer<T>,
    range: (usize, usize),
    event: Option<RawEvent>,
    _mut: PhantomData<&'a mut [T]>,
}

impl<'a, T: DeviceCopy> PendingDownload<'a, T> {
    /// Block until the copy has run; the downloaded elements.
    pub fn wait(self) -> Result<&'a [T]> {
        self.buffer.wait_range(self.range, false)?;
        let len = self.range.1 - self.range.0;
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: the range lies inside the buffer, borrowed exclusively for `'a`
        // by this handle's creator; no download into it is pending any more.
        Ok(unsafe { std::slice::from_raw_parts(self.buffer.ptr.add(self.range.0), len) })
    }

    /// Whether the copy has run (never blocks).
    pub fn is_done(&self) -> bool {
        event_done(self.buffer, self.event)
    }
}

/// Refuse page-locked memory of another device than `stream`'s.
fn check_device<T: DeviceCopy>(what: &str, host: &PinnedBuffer<T>, stream: &Stream) -> Result<()> {
    if stream.device_ordinal() == host.device.ordinal() {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        what: what.into(),
        reason: format!(
            "the page-locked buffer belongs to device {}, the stream to device {}",
            host.device.ordinal(),
            stream.device_ordinal()
        ),
    })
}

/// Queue a copy of `src` into `dst` on `stream` and return at once; see
/// [`PendingUpload`]. `dst` is recorded as written, like a kernel's output.
pub fn copy_from_pinned<'a, T: DeviceCopy>(
    stream: &Stream,
    dst: &mut (impl WriteBuffer<T> + ?Sized),
    src: &'a (impl PinnedMemory<T> + ?Sized),
) -> Result<PendingUpload<'a, T>> {
    let (buffer, range) = src.region();
    let arg = dst.arg_mut();
    crate::copy::check_len("copy_from_pinned", arg.len, range.1 - range.0)?;
    check_device("copy_from_pinned", buffer, stream)?;
    if arg.bytes == 0 {
        return Ok(PendingUpload {
            buffer,
            event: None,
        });
    }
    // SAFETY: the range lies inside the buffer.
    let host = unsafe { buffer.ptr.add(range.0) } as *const u8;
    let (ptr, bytes) = (arg.ptr, arg.bytes);
    let pre = WorkRecorder::new(stream)
        .__record(arg, Access::Write)
        .preflight()?;
    let work = |raw| {
        // SAFETY: `host` is page-locked and stays alive and unwritten until the
        // event after the copy completes (the module's rules 3 and 4).
        unsafe { driver::memcpy_htod_async(ptr, host, bytes, raw) }
    };
    // SAFETY: one copy that writes the recorded range and reads the pinned range.
    let event = unsafe { buffer.copy(stream, pre, false, range, work) }?;
    Ok(PendingUpload {
        buffer,
        event: Some(event),
    })
}

/// Queue a copy of `src` into `dst` on `stream` and return at once; see
/// [`PendingDownload`]. `src` is recorded as read, like a kernel's input.
pub fn copy_to_pinned<'a, T: DeviceCopy>(
    stream: &Stream,
    src: &(impl ReadBuffer<T> + ?Sized),
    dst: &'a mut (impl PinnedMemory<T> + ?Sized),
) -> Result<PendingDownload<'a, T>> {
    let (buffer, range) = dst.region();
    let arg = src.arg();
    crate::copy::check_len("copy_to_pinned", range.1 - range.0, arg.len)?;
    check_device("copy_to_pinned", buffer, stream)?;
    let mut pending = PendingDownload {
        buffer,
        range,
        event: None,
        _mut: PhantomData,
    };
    if arg.bytes == 0 {
        return Ok(pending);
    }
    // SAFETY: the range lies inside the buffer.
    let host = unsafe { buffer.ptr.add(range.0) } as *mut u8;
    let (ptr, bytes) = (arg.ptr, arg.bytes);
    let pre = WorkRecorder::new(stream)
        .__record(arg, Access::Read)
        .preflight()?;
    let work = |raw| {
        // SAFETY: `host` is page-locked, and the host cannot read or write it until
        // the event after the copy completes (the module's rules 3 and 4).
        unsafe { driver::memcpy_dtoh_async(host, ptr, bytes, raw) }
    };
    // SAFETY: one copy that reads the recorded range and writes the pinned range.
    pending.event = Some(unsafe { buffer.copy(stream, pre, true, range, work) }?);
    Ok(pending)
}

impl<T: DeviceCopy> crate::buffer::DeviceBuffer<T> {
    /// Queue an upload of `src` into the buffer; see [`copy_from_pinned`].
    pub fn upload_from_pinned<'a>(
        &mut self,
        stream: &Stream,
        src: &'a (impl PinnedMemory<T> + ?Sized),
    ) -> Result<PendingUpload<'a, T>> {
        copy_from_pinned(stream, self, src)
    }

    /// Queue a download of the buffer into `dst`; see [`copy_to_pinned`].
    pub fn download_to_pinned<'a>(
        &self,
        stream: &Stream,
        dst: &'a mut (impl PinnedMemory<T> + ?Sized),
    ) -> Result<PendingDownload<'a, T>> {
        copy_to_pinned(stream, self, dst)
    }
}
