//! [`DeviceBuffer`], its views, and the argument traits launchers take.
//!
//! Only a runtime's allocator makes a `DeviceBuffer`, so every buffer has a
//! runtime identity and a use state. Views (`slice`, `slice_mut`) borrow their
//! parent and carry its identity: a launch that touches two views of one buffer
//! is fenced as one use of the buffer with the merged access.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, Mutex};

use xlog_device::DeviceCopy;

use crate::resource::{Allocator, BlockId, DeviceBlock};
use crate::stream::Stream;
use crate::sync::Unpoisoned;
use crate::track::{UsePoint, UseState};

/// The untyped part of a buffer: its block, its owner and its use state.
pub struct BufferCore {
    block: Option<DeviceBlock>,
    id: BlockId,
    bytes: usize,
    pub(crate) allocator: Arc<Allocator>,
    alloc_stream: Stream,
    pub(crate) track: Mutex<UseState<Stream>>,
    /// For imported memory: what keeps it alive; dropped (running the foreign
    /// deleter) instead of freeing the block through `allocator`.
    foreign: Option<ForeignOwner>,
}

/// The owner of imported memory (a DLPack tensor, an Arrow array, ...) and the
/// registration of its range: held only to be dropped, the owner first (fields
/// drop in order), so the range stays registered until the producer has it back.
struct ForeignOwner {
    _owner: Box<dyn Send>,
    _range: Box<dyn Send + Sync>,
}

// SAFETY: the owner is never reached through a shared reference: it is only moved
// out and dropped in `release`, which has `&mut self`.
unsafe impl Sync for ForeignOwner {}

impl fmt::Debug for BufferCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferCore")
            .field("id", &self.id)
            .field("bytes", &self.bytes)
            .field("runtime", &self.allocator.runtime_id())
            .finish()
    }
}

impl BufferCore {
    pub(crate) fn new(
        block: DeviceBlock,
        allocator: Arc<Allocator>,
        alloc_stream: Stream,
        ready: UsePoint<Stream>,
    ) -> Self {
        BufferCore {
            id: block.id(),
            bytes: block.bytes(),
            block: Some(block),
            allocator,
            alloc_stream,
            track: Mutex::new(UseState::ready_at(ready)),
            foreign: None,
        }
    }

    /// A core over imported memory: `owner` keeps it alive and is dropped, after
    /// every recorded use has finished, when the buffer is.
    pub(crate) fn new_foreign(
        block: DeviceBlock,
        allocator: Arc<Allocator>,
        stream: Stream,
        ready: UsePoint<Stream>,
        owner: Box<dyn Send>,
        range: Box<dyn Send + Sync>,
    ) -> Self {
        BufferCore {
            foreign: Some(ForeignOwner {
                _owner: owner,
                _range: range,
            }),
            ..BufferCore::new(block, allocator, stream, ready)
        }
    }

    /// The stream the buffer was allocated (or imported) on.
    pub(crate) fn alloc_stream(&self) -> &Stream {
        &self.alloc_stream
    }

    /// Whether the memory is another library's (imported), not the allocator's.
    pub fn is_imported(&self) -> bool {
        self.foreign.is_some()
    }

    /// Full identity of the underlying block.
    pub fn id(&self) -> BlockId {
        self.id
    }

    /// Size of the underlying block in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Id of the runtime that owns the buffer.
    pub fn runtime_id(&self) -> u64 {
        self.allocator.runtime_id()
    }

    /// Make the allocation stream wait for every recorded use, then free.
    fn release(&mut self) {
        let Some(block) = self.block.take() else {
            return;
        };
        let stream = &self.alloc_stream;
        let state = self.track.get_mut_unpoisoned();
        // Same-stream points need no wait (and no driver call); bind only for others.
        let fence = crate::testing::fencing_enabled();
        let ordered = state
            .all_points()
            .filter(|p| fence && p.stream != *stream)
            .try_for_each(|p| {
                crate::testing::fault_point!(DeallocWait, "a wait before a free");
                stream.bind()?;
                stream.wait_for(p)
            });
        if let Err(e) = ordered {
            // The free cannot be ordered on the device; order it on the host instead.
            self.allocator.report_drop_error("fencing a free", &e);
            if let Err(e) = state.all_points().try_for_each(Stream::host_wait) {
                // Not deallocating leaks the memory: the only safe outcome when its
                // users cannot be awaited.
                self.allocator
                    .report_drop_error("synchronising before a free; the block is leaked", &e);
                // An imported buffer's owner would run the producer's deleter when
                // the field drops, with uses maybe pending: leak it too.
                if let Some(owner) = self.foreign.take() {
                    std::mem::forget(owner);
                }
                return;
            }
        }
        if let Some(owner) = self.foreign.take() {
            // The owner's deleter frees (or recycles) the memory at once, on no stream
            // of ours: every use must have finished on the device first. A leaked
            // owner keeps its range registered: the memory stays in use.
            if let Err(e) = stream.synchronize() {
                self.allocator
                    .report_drop_error("awaiting uses of imported memory; it is leaked", &e);
                std::mem::forget(owner);
                return;
            }
            drop(owner);
            return;
        }
        // SAFETY: the block came from this runtime's resource; every use recorded on
        // any stream is now ordered before the tail of the allocation stream, and the
        // buffer is being dropped so nothing else can touch it.
        if let Err(e) = unsafe { self.allocator.deallocate(block, stream) } {
            self.allocator.report_drop_error("freeing a buffer", &e);
        }
    }
}

/// A typed buffer of `len` elements of `T` in device memory.
///
/// Made by a [`crate::Runtime`] (`upload`, `alloc_zeroed`, ...). Dropping it frees
/// the memory in stream order after every use recorded on any stream.
///
/// ```no_run
/// # fn main() -> xlog_runtime::Result<()> {
/// let rt = xlog_runtime::Runtime::get(0)?;
/// let s = rt.stream()?;
/// let buf = rt.upload(&[1.0f32, 2.0, 3.0])?;
/// assert_eq!(buf.download(&s)?, vec![1.0, 2.0, 3.0]);
/// # Ok(()) }
/// ```
pub struct DeviceBuffer<T: DeviceCopy> {
    core: BufferCore,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceCopy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("ptr", &format_args!("{:#x}", self.core.id.ptr))
            .finish()
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        self.core.release();
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    pub(crate) fn from_core(core: BufferCore, len: usize) -> Self {
        DeviceBuffer {
            core,
            len,
            _t: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Device address of the first element (0 for a buffer allocated empty; a
    /// [`truncate`](Self::truncate)d one keeps its allocation's address).
    pub fn device_ptr(&self) -> u64 {
        self.core.id.ptr
    }

    /// Full identity of the underlying block.
    pub fn block_id(&self) -> BlockId {
        self.core.id
    }

    /// The untyped core (identity and use state).
    pub fn core(&self) -> &BufferCore {
        &self.core
    }

    /// A read view of `range`.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing, like slice indexing.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> BufferView<'_, T> {
        self.view().slice(range)
    }

    /// A mutable view of `range`.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing, like slice indexing.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> BufferViewMut<'_, T> {
        self.view_mut().into_slice(range)
    }

    /// Shortens the buffer to its first `len` elements (nothing changes when it
    /// has no more): what lies past them is no longer reachable through the
    /// buffer, but stays allocated (and counted against the budget) until the
    /// buffer is dropped. For outputs sized for the most a kernel could write and
    /// shortened to what it did write.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

fn resolve(range: impl RangeBounds<usize>, len: usize) -> (usize, usize) {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).expect("range start overflows usize"),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).expect("range end overflows usize"),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(
        start <= end,
        "view range starts at {start} but ends at {end}"
    );
    assert!(
        end <= len,
        "view range end {end} is out of bounds for a buffer of {len} elements"
    );
    (start, end - start)
}

/// A read-only view of part of a buffer. Carries the parent's identity.
pub struct BufferView<'a, T: DeviceCopy> {
    core: &'a BufferCore,
    ptr: u64,
    len: usize,
    _t: PhantomData<&'a [T]>,
}

impl<T: DeviceCopy> Clone for BufferView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for BufferView<'_, T> {}

/// A mutable view of part of a buffer. Carries the parent's identity.
pub struct BufferViewMut<'a, T: DeviceCopy> {
    core: &'a BufferCore,
    ptr: u64,
    len: usize,
    _t: PhantomData<&'a mut [T]>,
}

impl<'a, T: DeviceCopy> BufferView<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Device address of the view's first element.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }
    /// The parent buffer's core.
    pub fn core(&self) -> &'a BufferCore {
        self.core
    }
    /// A narrower read view.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> BufferView<'a, T> {
        let (start, len) = resolve(range, self.len);
        BufferView {
            core: self.core,
            ptr: self.ptr + (start * std::mem::size_of::<T>()) as u64,
            len,
            _t: PhantomData,
        }
    }
}

impl<'a, T: DeviceCopy> BufferViewMut<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Device address of the view's first element.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }
    /// The parent buffer's core.
    pub fn core(&self) -> &BufferCore {
        self.core
    }
    /// A narrower mutable view, reborrowing this one.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> BufferViewMut<'_, T> {
        let (start, len) = resolve(range, self.len);
        BufferViewMut {
            core: self.core,
            ptr: self.ptr + (start * std::mem::size_of::<T>()) as u64,
            len,
            _t: PhantomData,
        }
    }
    /// Narrow this view to `range`, consuming it.
    ///
    /// # Panics
    /// If the range is out of bounds or decreasing.
    pub fn into_slice(self, range: impl RangeBounds<usize>) -> BufferViewMut<'a, T> {
        let (start, len) = resolve(range, self.len);
        BufferViewMut {
            core: self.core,
            ptr: self.ptr + (start * std::mem::size_of::<T>()) as u64,
            len,
            _t: PhantomData,
        }
    }

    /// Split into two disjoint mutable views at `mid`.
    ///
    /// # Panics
    /// If `mid > len`.
    pub fn split_at_mut(self, mid: usize) -> (BufferViewMut<'a, T>, BufferViewMut<'a, T>) {
        assert!(
            mid <= self.len,
            "split point {mid} is out of bounds for a view of {} elements",
            self.len
        );
        let right = BufferViewMut {
            core: self.core,
            ptr: self.ptr + (mid * std::mem::size_of::<T>()) as u64,
            len: self.len - mid,
            _t: PhantomData,
        };
        (
            BufferViewMut {
                core: self.core,
                ptr: self.ptr,
                len: mid,
                _t: PhantomData,
            },
            right,
        )
    }
}

/// Where a launch argument points: the tracked core, a device address and a length.
///
/// Only the runtime makes one, from a live buffer or view ([`ReadBuffer::arg`],
/// [`WriteBuffer::arg_mut`]): its range always lies inside its core's allocation,
/// which is what lets [`WorkRecorder`](crate::WorkRecorder) and generated launchers
/// take it from safe code. Its fields are read through methods.
#[derive(Clone, Copy, Debug)]
pub struct ArgRef<'a> {
    /// The parent buffer's core.
    pub(crate) core: &'a BufferCore,
    /// Device address of the first element.
    pub(crate) ptr: u64,
    /// Element count.
    pub(crate) len: usize,
    /// Byte length: `len` elements of the buffer's element type.
    pub(crate) bytes: usize,
}

impl<'a> ArgRef<'a> {
    /// The parent buffer's core (the buffer's identity).
    #[inline(always)]
    pub fn core(&self) -> &'a BufferCore {
        self.core
    }

    /// Device address of the first element.
    #[inline(always)]
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Element count.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the argument has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte length: `len` elements of the buffer's element type.
    #[inline(always)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Something a kernel may read: a buffer or a view of one.
///
/// Sealed: only runtime-allocated memory implements it, so no launcher accepts
/// untracked or foreign memory.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed where a kernel reads `{T}`",
    label = "expected a `DeviceBuffer<{T}>` or a view of one",
    note = "launchers take only memory allocated by an xlog runtime (`DeviceBuffer<T>`, `buf.slice(..)`, `buf.slice_mut(..)`) with the kernel's element type; foreign memory goes through `WorkRecorder::skip_untracked`"
)]
pub trait ReadBuffer<T: DeviceCopy>: sealed::Sealed {
    /// The tracked location of the argument.
    fn arg(&self) -> ArgRef<'_>;

    /// The argument as a read view.
    fn as_view(&self) -> BufferView<'_, T> {
        let a = self.arg();
        BufferView {
            core: a.core,
            ptr: a.ptr,
            len: a.len,
            _t: PhantomData,
        }
    }
}

/// Something a kernel may write: a buffer or a mutable view of one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed where a kernel writes `{T}`",
    label = "expected `&mut DeviceBuffer<{T}>` or a mutable view (`buf.slice_mut(..)`)",
    note = "written arguments must be borrowed mutably from runtime-allocated memory; a read view (`buf.slice(..)`) cannot be written"
)]
pub trait WriteBuffer<T: DeviceCopy>: ReadBuffer<T> {
    /// The tracked location of the argument, borrowed mutably.
    fn arg_mut(&mut self) -> ArgRef<'_>;

    /// The argument as a mutable view.
    fn as_view_mut(&mut self) -> BufferViewMut<'_, T> {
        let a = self.arg_mut();
        BufferViewMut {
            core: a.core,
            ptr: a.ptr,
            len: a.len,
            _t: PhantomData,
        }
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    fn view(&self) -> BufferView<'_, T> {
        BufferView {
            core: &self.core,
            ptr: self.core.id.ptr,
            len: self.len,
            _t: PhantomData,
        }
    }

    fn view_mut(&mut self) -> BufferViewMut<'_, T> {
        BufferViewMut {
            ptr: self.core.id.ptr,
            core: &self.core,
            len: self.len,
            _t: PhantomData,
        }
    }
}

impl<T: DeviceCopy> sealed::Sealed for DeviceBuffer<T> {}
impl<T: DeviceCopy> sealed::Sealed for BufferView<'_, T> {}
impl<T: DeviceCopy> sealed::Sealed for BufferViewMut<'_, T> {}

impl<T: DeviceCopy> ReadBuffer<T> for DeviceBuffer<T> {
    fn arg(&self) -> ArgRef<'_> {
        ArgRef {
            core: &self.core,
            ptr: self.core.id.ptr,
            len: self.len,
            bytes: self.len * std::mem::size_of::<T>(),
        }
    }
}
impl<T: DeviceCopy> WriteBuffer<T> for DeviceBuffer<T> {
    fn arg_mut(&mut self) -> ArgRef<'_> {
        self.arg()
    }
}
impl<T: DeviceCopy> ReadBuffer<T> for BufferView<'_, T> {
    fn arg(&self) -> ArgRef<'_> {
        ArgRef {
            core: self.core,
            ptr: self.ptr,
            len: self.len,
            bytes: self.len * std::mem::size_of::<T>(),
        }
    }
}
impl<T: DeviceCopy> ReadBuffer<T> for BufferViewMut<'_, T> {
    fn arg(&self) -> ArgRef<'_> {
        ArgRef {
            core: self.core,
            ptr: self.ptr,
            len: self.len,
            bytes: self.len * std::mem::size_of::<T>(),
        }
    }
}
impl<T: DeviceCopy> WriteBuffer<T> for BufferViewMut<'_, T> {
    fn arg_mut(&mut self) -> ArgRef<'_> {
        self.arg()
    }
}

/// Device memory xlog did not allocate (from another library, DLPack, Arrow).
///
/// No launcher accepts it. The manual recorder refuses it unless told, unsafely,
/// that the caller has ordered it ([`crate::WorkRecorder::skip_untracked`]); then
/// the work waits for the point the buffer was declared ready at.
#[derive(Debug)]
pub struct ForeignBuffer<T> {
    ptr: u64,
    len: usize,
    device: u32,
    ready: UsePoint<Stream>,
    _t: PhantomData<*mut T>,
}

impl<T: DeviceCopy> ForeignBuffer<T> {
    /// Wrap foreign device memory that is ready for work queued on `ready_on`
    /// after this call (the stream its producer used, or one that waited on the
    /// producer's event).
    ///
    /// # Safety
    /// 1. `ptr` addresses `len` elements of `T` on device `device`, valid for as
    ///    long as this value lives, which nothing but work on that device's
    ///    streams accesses while work xlog queues on it runs (kernels' atomics are
    ///    GPU-scoped: a host thread or peer device on the same memory would race).
    /// 2. Everything that produced the memory is ordered before work queued on
    ///    `ready_on` from now on.
    pub unsafe fn from_raw(ptr: u64, len: usize, device: u32, ready_on: &Stream) -> Self {
        ForeignBuffer {
            ptr,
            len,
            device,
            ready: ready_on.publish(),
            _t: PhantomData,
        }
    }
    /// Device address.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }
    /// Element count.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Device ordinal.
    pub fn device(&self) -> u32 {
        self.device
    }
    pub(crate) fn ready(&self) -> &UsePoint<Stream> {
        &self.ready
    }
}
