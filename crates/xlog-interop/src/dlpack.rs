//! DLPack: export buffers as `DLManagedTensorVersioned` (or the legacy
//! `DLManagedTensor`), import tensors as buffers.
//!
//! # Export
//!
//! Every safe export gives the consumer a **writable** tensor and records its use
//! as a write: [`export`] moves a buffer out of xlog, [`lend`] lends it until the
//! deleter runs and then hands it back. Consumers may write whatever they are
//! given (PyTorch ignores DLPack's read-only flag; the legacy ABI has none), so
//! xlog keeps no way to use the buffer meanwhile: ownership is the exclusion.
//! [`export_read`] shares an `Arc<DeviceBuffer>` flagged read-only, and is
//! `unsafe`: the consumer's honouring of the flag is the caller's promise.
//!
//! 1. The consumer's stream ([`Consumer`]) is made to wait for the buffer's
//!    pending work that its access conflicts with (the writes; for a writable
//!    export the reads too), the producer half of `__dlpack__(stream=…)`. A
//!    consumer with no stream ([`Consumer::no_stream`], Python's `-1`) gets the
//!    same ordering on the host: the export waits for that work first.
//! 2. The buffer stays alive, and counted by the runtime's budget and statistics,
//!    until the deleter runs, and its memory is registered as exported: importing
//!    it back into xlog meanwhile is refused (one memory, one xlog buffer). The
//!    deleter may run on any thread; it runs at most once because it frees the
//!    tensor it is called with.
//! 3. When it runs, xlog records the consumer's stream as having used the buffer
//!    up to that moment (for the per-thread default stream, the legacy default
//!    stream, which covers every thread's), then drops or gives back its handle:
//!    the free (stream-ordered, as for any buffer) and later xlog work wait for
//!    what the consumer queued before releasing. A consumer with no stream is
//!    awaited by synchronising the device.
//!
//! # Import
//!
//! [`import`] is `unsafe` and names what orders the producer's writes
//! ([`ReadyAfter`]); the tensor's owning handle becomes the buffer's owner, so
//! dropping the buffer runs the producer's deleter once, after xlog's uses.

use std::ffi::c_void;
use std::ops::RangeBounds;
use std::sync::Arc;

use dlpark::ffi::{DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use dlpark::{DlpackFlags, Managed, ManagedTensorBase};
use xlog_runtime::{Access, DeviceBuffer, ForeignStream, ReadyAfter, Stream};

use crate::element::{describe, Element};
use crate::error::{InteropError, Result};
use crate::held::{resolve, Held, Lent};

/// An owning versioned DLPack tensor (drop runs its deleter).
pub type Versioned = dlpark::versioned::Dlpack;
/// An owning legacy DLPack tensor (drop runs its deleter).
pub type Legacy = dlpark::legacy::Dlpack;

/// Stream handles below this are refused by [`Consumer::from_python`]: a handle is
/// the address of a driver object, never in the first 64 KiB (Linux's default
/// `vm.mmap_min_addr`). Larger bogus integers cannot be told from handles.
pub const MIN_STREAM_HANDLE: isize = 0x1_0000;

/// The consumer's stream, as passed to `__dlpack__(stream=…)`.
#[derive(Clone, Copy, Debug)]
pub struct Consumer(Option<ForeignStream>);

impl Consumer {
    /// The consumer works on `stream`: it waits for the buffer's pending work, and
    /// the buffer's free waits for what it queued before releasing the tensor.
    ///
    /// The stream must still exist when the consumer releases the tensor (the
    /// deleter records an event on it); see `docs/SOUNDNESS.md`'s assumptions.
    pub fn stream(stream: ForeignStream) -> Consumer {
        Consumer(Some(stream))
    }

    /// The value of `__dlpack__`'s `stream` argument: `None` is the legacy default
    /// stream, `1` and `2` the two default streams, `-1` no stream
    /// ([`Consumer::no_stream`]), anything else a `CUstream`. Refused: `0`
    /// (ambiguous), other negative values, and handles below
    /// [`MIN_STREAM_HANDLE`] (no stream lives there).
    ///
    /// # Safety
    /// 1. A handle other than `None`, `1`, `2` and `-1` is a live stream of the
    ///    device's primary context, alive until the tensor's deleter has run.
    pub unsafe fn from_python(stream: Option<isize>) -> Result<Consumer> {
        match stream {
            None | Some(1) => Ok(Consumer(Some(ForeignStream::legacy_default()))),
            Some(2) => Ok(Consumer(Some(ForeignStream::per_thread_default()))),
            Some(-1) => Ok(Consumer::no_stream()),
            Some(s) if s >= MIN_STREAM_HANDLE => {
                // SAFETY: obligation 1 is the caller's.
                Ok(Consumer(Some(unsafe {
                    ForeignStream::from_raw(s as *mut c_void)
                })))
            }
            Some(s) if s > 2 => Err(InteropError::Unsupported {
                what: "__dlpack__ stream",
                reason: format!(
                    "{s} is not a CUDA stream handle (handles are addresses of at least {MIN_STREAM_HANDLE:#x})"
                ),
            }),
            Some(s) => Err(InteropError::Unsupported {
                what: "__dlpack__ stream",
                reason: format!("{s} is not a CUDA stream (0 is ambiguous; use 1 or 2)"),
            }),
        }
    }

    /// No stream (`__dlpack__(stream=-1)`): the consumer could use the tensor on
    /// any stream, so xlog orders it on the host. The export blocks until the
    /// buffer's conflicting pending work has finished; the deleter synchronises
    /// the device before the buffer is freed or used again.
    pub fn no_stream() -> Consumer {
        Consumer(None)
    }
}

/// Export `range` of `buf` as a writable versioned tensor for `consumer`; the
/// buffer is freed after the consumer releases it.
pub fn export<T: Element>(
    buf: DeviceBuffer<T>,
    range: impl RangeBounds<usize>,
    consumer: Consumer,
) -> Result<Versioned> {
    export_as(Held::Owned(buf), range, consumer)
}

/// [`export`] as a legacy `DLManagedTensor` (no flags: writable).
pub fn export_legacy<T: Element>(
    buf: DeviceBuffer<T>,
    range: impl RangeBounds<usize>,
    consumer: Consumer,
) -> Result<Legacy> {
    export_as(Held::Owned(buf), range, consumer)
}

/// Lend `range` of `buf` to `consumer` as a writable versioned tensor. When the
/// consumer releases it (or the export is refused), `back` receives the buffer,
/// its use state holding the consumer's use as a write. `back` may run on any
/// thread, inside the consumer's release call: it must not block on anything the
/// releasing thread may hold (a Python caller: it must not take the GIL while a
/// lock the GIL's holder waits for is held).
pub fn lend<T: Element>(
    buf: DeviceBuffer<T>,
    range: impl RangeBounds<usize>,
    consumer: Consumer,
    back: impl FnOnce(DeviceBuffer<T>) + Send + 'static,
) -> Result<Versioned> {
    export_as(Held::Lent(Lent::new(buf, Box::new(back))), range, consumer)
}

/// [`lend`] as a legacy `DLManagedTensor`.
pub fn lend_legacy<T: Element>(
    buf: DeviceBuffer<T>,
    range: impl RangeBounds<usize>,
    consumer: Consumer,
    back: impl FnOnce(DeviceBuffer<T>) + Send + 'static,
) -> Result<Legacy> {
    export_as(Held::Lent(Lent::new(buf, Box::new(back))), range, consumer)
}

/// Export `range` of a shared buffer as a versioned tensor flagged
/// `READ_ONLY`, while xlog keeps reading it through other `Arc`s.
///
/// ```compile_fail,E0133
/// # use std::sync::Arc;
/// # fn f(buf: Arc<xlog_runtime::DeviceBuffer<f32>>) {
/// // Whether the consumer honours the flag is a promise only the caller can make.
/// let _ = xlog_interop::dlpack::export_read(buf, .., xlog_interop::dlpack::Consumer::no_stream());
/// # }
/// ```
///
/// # Safety
/// 1. The consumer honours `DLPACK_FLAG_BITMASK_READ_ONLY`: nothing writes the
///    memory through the tensor or anything made from it. (PyTorch 2.x does not:
///    it imports the tensor as writable. Use [`lend`] for consumers that may
///    write, which is every Python consumer.)
pub unsafe fn export_read<T: Element>(
    buf: Arc<DeviceBuffer<T>>,
    range: impl RangeBounds<usize>,
    consumer: Consumer,
) -> Result<Versioned> {
    export_as(Held::Shared(buf), range, consumer)
}

/// The manager context: the header the consumer sees, the shape and strides it
/// points into, and what keeps the memory alive.
struct Exported<M, T: Element> {
    header: M,
    shape: [i64; 1],
    strides: [i64; 1],
    held: Held<T>,
    consumer: Option<ForeignStream>,
    /// The buffer's range, registered as exported until the deleter has run.
    mark: Box<dyn Send + Sync>,
}

fn export_as<M: ManagedTensorBase, T: Element>(
    held: Held<T>,
    range: impl RangeBounds<usize>,
    consumer: Consumer,
) -> Result<Managed<M>> {
    let buf = held.buffer();
    let (start, len) = resolve(range, buf.len())?;
    let access = held.access();
    match consumer.0 {
        Some(stream) => buf.core().order_foreign(stream, access)?,
        None => buf.core().wait_host(access)?,
    }
    let mark = buf.core().mark_exported();
    let data = if len == 0 {
        0
    } else {
        buf.device_ptr() + (start * std::mem::size_of::<T>()) as u64
    };
    let device = DLDevice {
        device_type: DLDeviceType::CUDA,
        device_id: buf.block_id().device as i32,
    };
    let tensor = DLTensor {
        data: data as *mut c_void,
        device,
        ndim: 1,
        dtype: T::DTYPE,
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let ctx = Box::into_raw(Box::new(Exported {
        header: M::from_parts(tensor, std::ptr::null_mut(), Some(delete::<M, T>)),
        shape: [len as i64],
        strides: [1],
        held,
        consumer: consumer.0,
        mark,
    }));
    // SAFETY: `ctx` was just made from a box and nothing else refers to it; the
    // shape and strides live in the same allocation as the header, until the
    // deleter frees it.
    let header = unsafe {
        let e = &mut *ctx;
        let t = e.header.tensor_mut();
        t.shape = e.shape.as_mut_ptr();
        t.strides = e.strides.as_mut_ptr();
        let header = &mut e.header as *mut M;
        // The deleter finds the context through `manager_ctx`.
        *header = M::from_parts(*e.header.tensor(), ctx.cast(), Some(delete::<M, T>));
        if access == Access::Read {
            // SAFETY (flags): READ_ONLY is not IS_COPIED.
            e.header.set_flags_unchecked(DlpackFlags::READ_ONLY);
        }
        header
    };
    // SAFETY: the header is initialised; its deleter frees it once; its metadata
    // is never changed again.
    unsafe { Managed::from_raw(header) }.map_err(|e| InteropError::Unsupported {
        what: "DLPack export",
        reason: e.to_string(),
    })
}

/// How the deleter of exported tensors runs its part that may block the host
/// (synchronising for a consumer with no stream, dropping a buffer nobody takes
/// back): given the work, it runs it once on the calling thread.
pub type BlockingSection = fn(&mut dyn FnMut());

static BLOCKING: std::sync::OnceLock<BlockingSection> = std::sync::OnceLock::new();

/// Set how deleters run their blocking part (once per process; `false` if it was
/// already set). A binding to an interpreter with a global lock sets one that
/// releases the lock when the calling thread holds it: a consumer may call the
/// deleter holding it while work the wait needs (a host callback) takes it.
pub fn set_blocking_section(run: BlockingSection) -> bool {
    BLOCKING.set(run).is_ok()
}

fn blocking(f: impl FnOnce()) {
    let mut f = Some(f);
    let mut once = || {
        if let Some(f) = f.take() {
            f()
        }
    };
    match BLOCKING.get() {
        Some(run) => run(&mut once),
        None => once(),
    }
    // A section that did not run the work: run it here rather than skip it.
    once();
}

/// The deleter of exported tensors.
///
/// # Safety
/// `tensor` was returned by `export_as::<M, T>` and is not used after this call.
unsafe extern "C" fn delete<M: ManagedTensorBase, T: Element>(tensor: *mut M) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: `manager_ctx` is the box `export_as` leaked; the consumer hands it
    // back exactly once.
    let ctx = unsafe { Box::from_raw((*tensor).manager_ctx().cast::<Exported<M, T>>()) };
    let Exported {
        held,
        consumer,
        mark,
        ..
    } = *ctx;
    // Recording on the consumer's stream does not block: done before returning,
    // while the stream is certainly alive.
    let ordered = match consumer {
        Some(stream) => held
            .buffer()
            .core()
            .record_foreign_use(stream, held.access()),
        None => Ok(()),
    };
    blocking(move || {
        let ordered = ordered.and_then(|()| match consumer {
            Some(_) => Ok(()),
            None => held.buffer().core().finish_unordered_use(),
        });
        if let Err(e) = ordered {
            // The free cannot be ordered after the consumer's work: keep the memory
            // (and its registration: it may still be in use).
            tracing::error!(target: "xlog::interop", "ordering a released DLPack export failed; the buffer is leaked: {e}");
            std::mem::forget(held);
            std::mem::forget(mark);
            return;
        }
        drop(held);
        drop(mark);
    });
}

/// Import a DLPack tensor as a buffer on `on`'s device.
///
/// The tensor must be CUDA memory of that device, with `T`'s dtype, contiguous,
/// with an aligned byte offset, and not marked read-only. On refusal the tensor
/// is dropped (its deleter runs once) before this returns.
///
/// # Safety
/// 1. `ready` orders every write the producer made before work xlog queues on
///    `on` after this call (for a tensor obtained with `__dlpack__(stream=s)`,
///    [`ReadyAfter::ImportStream`] when `s` is `on`'s raw handle).
/// 2. Until the buffer is dropped nothing outside xlog writes the memory, or
///    reads it while xlog may write it, except through the orderings of
///    [`xlog_runtime::BufferCore::order_foreign`] and
///    [`xlog_runtime::BufferCore::record_foreign_use`].
/// 3. No part of the tensor is memory of a live xlog buffer (e.g. a tensor a
///    foreign library made over a buffer's `device_ptr`): one memory would get
///    two xlog buffers whose uses are never fenced against each other.
///
/// Checked, not assumed: a tensor with no deleter is refused (nothing would keep
/// its memory alive), and a tensor overlapping a live import, an xlog export or
/// a buffer marked held (importing one tensor twice, or xlog's own export) is
/// refused, as [`DeviceBuffer::import_raw`] says.
pub unsafe fn import<T: Element, M: ManagedTensorBase + 'static>(
    tensor: Managed<M>,
    on: &Stream,
    ready: ReadyAfter,
) -> Result<DeviceBuffer<T>> {
    let (ptr, len) = check::<T, M>(&tensor, on.device_ordinal())?;
    // SAFETY: `check` established the address, length and device; the deleter
    // keeps the memory alive while the handle lives; obligations 1 and 2 are the
    // caller's.
    Ok(unsafe { DeviceBuffer::import_raw(on, ptr, len, ready, tensor) }?)
}

/// Validate a tensor for import as `T` on `device`: its first element's address
/// and its element count.
pub(crate) fn check<T: Element, M: ManagedTensorBase>(
    tensor: &Managed<M>,
    device: u32,
) -> Result<(u64, usize)> {
    const WHAT: &str = "DLPack tensor";
    if tensor.flags().contains(DlpackFlags::READ_ONLY) {
        return Err(InteropError::ReadOnly { what: WHAT });
    }
    // SAFETY: `Managed` keeps the header readable while it lives.
    if unsafe { &*tensor.as_ptr() }.deleter().is_none() {
        return Err(InteropError::Unsupported {
            what: WHAT,
            reason: "it has no deleter: nothing would keep its memory alive while xlog uses it \
                     (import a tensor with a deleter, or a copy)"
                .into(),
        });
    }
    // SAFETY: `Managed` guarantees the descriptor is readable and immutable.
    let t: &DLTensor = unsafe { tensor.tensor() };
    if t.device.device_type != DLDeviceType::CUDA || t.device.device_id as i64 != device as i64 {
        let found = if t.device.device_type == DLDeviceType::CUDA {
            format!("CUDA device {}", t.device.device_id)
        } else {
            format!("device type {}", t.device.device_type.0)
        };
        return Err(InteropError::DeviceMismatch {
            what: WHAT,
            found,
            expected: device,
        });
    }
    if t.dtype != T::DTYPE {
        return Err(InteropError::Dtype {
            what: WHAT,
            found: describe(t.dtype),
            expected: std::any::type_name::<T>(),
        });
    }
    let ndim = usize::try_from(t.ndim).map_err(|_| InteropError::Unsupported {
        what: WHAT,
        reason: format!("ndim is {}", t.ndim),
    })?;
    let shape: &[i64] = if ndim == 0 {
        &[]
    } else if t.shape.is_null() {
        return Err(InteropError::Unsupported {
            what: WHAT,
            reason: "the shape pointer is null".into(),
        });
    } else {
        // SAFETY: a non-null shape holds `ndim` entries (DLPack), immutable while owned.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let mut len: usize = 1;
    for &d in shape {
        let d = usize::try_from(d).map_err(|_| InteropError::Unsupported {
            what: WHAT,
            reason: format!("negative extent in shape {shape:?}"),
        })?;
        len = len.checked_mul(d).ok_or(InteropError::Unsupported {
            what: WHAT,
            reason: format!("shape {shape:?} overflows"),
        })?;
    }
    if ndim != 0 && !t.strides.is_null() {
        // SAFETY: non-null strides hold `ndim` entries.
        let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        // Row-major and dense; extents of 1 may carry any stride.
        let mut expected: i64 = 1;
        for (&d, &s) in shape.iter().zip(strides).rev() {
            if d != 1 && s != expected && len != 0 {
                return Err(InteropError::NonContiguous {
                    what: WHAT,
                    shape: shape.to_vec(),
                    strides: strides.to_vec(),
                });
            }
            expected = expected.saturating_mul(d);
        }
    }
    let base = t.data as u64;
    if base == 0 && len != 0 {
        return Err(InteropError::NullData { what: WHAT, len });
    }
    let ptr = base
        .checked_add(t.byte_offset)
        .ok_or(InteropError::ByteOffset {
            what: WHAT,
            offset: t.byte_offset,
            reason: "which overflows the address",
        })?;
    if ptr % std::mem::align_of::<T>() as u64 != 0 {
        return Err(InteropError::ByteOffset {
            what: WHAT,
            offset: t.byte_offset,
            reason: "which leaves the first element misaligned",
        });
    }
    let fits = (len as u64)
        .checked_mul(std::mem::size_of::<T>() as u64)
        .and_then(|bytes| ptr.checked_add(bytes));
    if fits.is_none() {
        return Err(InteropError::Unsupported {
            what: WHAT,
            reason: format!(
                "{len} elements from address {ptr:#x} run past the end of the address space"
            ),
        });
    }
    Ok((if len == 0 { 0 } else { ptr }, len))
}

// The generic parameter of `import` for the two ABIs, spelled out for callers.
/// [`import`] of a versioned tensor.
///
/// # Safety
/// As [`import`].
pub unsafe fn import_versioned<T: Element>(
    tensor: Versioned,
    on: &Stream,
    ready: ReadyAfter,
) -> Result<DeviceBuffer<T>> {
    // SAFETY: the caller's obligations are forwarded unchanged.
    unsafe { import::<T, DLManagedTensorVersioned>(tensor, on, ready) }
}

/// [`import`] of a legacy tensor.
///
/// # Safety
/// As [`import`].
pub unsafe fn import_legacy<T: Element>(
    tensor: Legacy,
    on: &Stream,
    ready: ReadyAfter,
) -> Result<DeviceBuffer<T>> {
    // SAFETY: the caller's obligations are forwarded unchanged.
    unsafe { import::<T, DLManagedTensor>(tensor, on, ready) }
}

#[cfg(test)]
mod tests {
    //! Imports on host memory (`xlog_runtime::host`): the checks, the owner and the
    //! deleter, without a GPU.
    use std::mem::{offset_of, size_of};
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn versioned_layout_matches_the_header() {
        // struct DLManagedTensorVersioned { DLPackVersion version; void* manager_ctx;
        //   void (*deleter)(...); uint64_t flags; DLTensor dl_tensor; }
        assert_eq!(offset_of!(DLManagedTensorVersioned, version), 0);
        assert_eq!(offset_of!(DLManagedTensorVersioned, manager_ctx), 8);
        assert_eq!(offset_of!(DLManagedTensorVersioned, deleter), 16);
        assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
        assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
        assert_eq!(size_of::<DLManagedTensorVersioned>(), 80);
        // struct DLTensor { void* data; DLDevice device; int32_t ndim; DLDataType dtype;
        //   int64_t* shape; int64_t* strides; uint64_t byte_offset; }
        assert_eq!(offset_of!(DLTensor, device), 8);
        assert_eq!(offset_of!(DLTensor, ndim), 16);
        assert_eq!(offset_of!(DLTensor, dtype), 20);
        assert_eq!(offset_of!(DLTensor, shape), 24);
        assert_eq!(offset_of!(DLTensor, strides), 32);
        assert_eq!(offset_of!(DLTensor, byte_offset), 40);
        assert_eq!(size_of::<DLManagedTensor>(), 64);
        assert_eq!(
            DlpackFlags::READ_ONLY.bits(),
            1,
            "DLPACK_FLAG_BITMASK_READ_ONLY"
        );
    }

    static DELETED: AtomicUsize = AtomicUsize::new(0);

    /// A foreign tensor: a header, its shape and strides, and a counting deleter.
    #[repr(C)]
    struct Foreign {
        header: DLManagedTensorVersioned,
        shape: [i64; 2],
        strides: [i64; 2],
        counter: &'static AtomicUsize,
    }

    unsafe extern "C" fn foreign_deleter(t: *mut DLManagedTensorVersioned) {
        // SAFETY: made by `foreign` below, handed back once.
        let f = unsafe { Box::from_raw((*t).manager_ctx.cast::<Foreign>()) };
        f.counter.fetch_add(1, Ordering::SeqCst);
    }

    /// `base` differs between tests: live imports of one memory are refused.
    fn foreign(
        counter: &'static AtomicUsize,
        base: usize,
        edit: impl FnOnce(&mut DLTensor, &mut [i64; 2], &mut [i64; 2], &mut DlpackFlags),
    ) -> Versioned {
        let tensor = DLTensor {
            data: base as *mut c_void,
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: 0,
            },
            ndim: 2,
            dtype: f32::DTYPE,
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        let f = Box::into_raw(Box::new(Foreign {
            header: DLManagedTensorVersioned::from_parts(tensor, std::ptr::null_mut(), None),
            shape: [3, 4],
            strides: [4, 1],
            counter,
        }));
        // SAFETY: just boxed; the header points into the same allocation.
        unsafe {
            let r = &mut *f;
            let mut flags = DlpackFlags::empty();
            edit(
                &mut r.header.dl_tensor,
                &mut r.shape,
                &mut r.strides,
                &mut flags,
            );
            r.header.dl_tensor.shape = r.shape.as_mut_ptr();
            r.header.dl_tensor.strides = r.strides.as_mut_ptr();
            r.header.manager_ctx = f.cast();
            r.header.deleter = Some(foreign_deleter);
            r.header.set_flags_unchecked(flags);
            Managed::from_raw(&mut r.header).unwrap()
        }
    }

    /// `import` with a host placeholder stream standing for device 0.
    fn import_on_host<T: Element>(tensor: Versioned) -> Result<DeviceBuffer<T>> {
        let s = Stream::host_placeholder(0);
        let (ptr, len) = check::<T, DLManagedTensorVersioned>(&tensor, 0)?;
        // SAFETY: host placeholder: nothing dereferences the address.
        Ok(unsafe { xlog_runtime::host::import(&s, 0, ptr, len, tensor) }?)
    }

    #[test]
    fn an_import_keeps_the_tensor_until_the_buffer_drops_then_deletes_it_once() {
        static N: AtomicUsize = AtomicUsize::new(0);
        let buf = import_on_host::<f32>(foreign(&N, 0x10000, |_, _, _, _| {})).unwrap();
        assert_eq!((buf.device_ptr(), buf.len()), (0x10000, 12));
        assert!(buf.core().is_imported());
        assert_eq!(N.load(Ordering::SeqCst), 0);
        // Dropped on another thread: the deleter may run anywhere.
        std::thread::spawn(move || drop(buf)).join().unwrap();
        assert_eq!(N.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_blocking_section_runs_the_work_once_even_if_the_section_skips_it() {
        static RAN: AtomicUsize = AtomicUsize::new(0);
        static SECTIONS: AtomicUsize = AtomicUsize::new(0);
        fn section(work: &mut dyn FnMut()) {
            SECTIONS.fetch_add(1, Ordering::SeqCst);
            work();
            work();
        }
        assert!(set_blocking_section(section));
        assert!(!set_blocking_section(section), "set once per process");
        blocking(|| {
            RAN.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(
            (RAN.load(Ordering::SeqCst), SECTIONS.load(Ordering::SeqCst)),
            (1, 1)
        );
    }

    #[test]
    fn a_tensor_with_no_deleter_is_refused() {
        static N: AtomicUsize = AtomicUsize::new(0);
        let t = foreign(&N, 0x18000, |_, _, _, _| {});
        let raw = t.as_ptr();
        // SAFETY: the header is alive and ours; without a deleter its box is leaked.
        unsafe { (*raw).deleter = None };
        let e = import_on_host::<f32>(t).unwrap_err().to_string();
        assert!(e.contains("no deleter"), "{e}");
        assert_eq!(N.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn byte_offsets_and_unit_extents_import() {
        static N: AtomicUsize = AtomicUsize::new(0);
        let buf = import_on_host::<f32>(foreign(&N, 0x20000, |t, shape, strides, _| {
            t.byte_offset = 64;
            *shape = [1, 5];
            *strides = [99, 1]; // any stride on an extent of 1
        }))
        .unwrap();
        assert_eq!((buf.device_ptr(), buf.len()), (0x20040, 5));
        drop(buf);
        assert_eq!(N.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn refused_imports_name_the_fault_and_delete_once() {
        type Edit = fn(&mut DLTensor, &mut [i64; 2], &mut [i64; 2], &mut DlpackFlags);
        let cases: [(&str, Edit); 8] = [
            ("is on CUDA device 1", |t, _, _, _| t.device.device_id = 1),
            ("is on device type 1", |t, _, _, _| {
                t.device.device_type = DLDeviceType::CPU
            }),
            ("holds int32", |t, _, _, _| t.dtype = i32::DTYPE),
            ("not contiguous", |_, _, s, _| *s = [1, 3]),
            ("misaligned", |t, _, _, _| t.byte_offset = 2),
            ("null data pointer but 12 elements", |t, _, _, _| {
                t.data = std::ptr::null_mut()
            }),
            ("read-only", |_, _, _, f| *f = DlpackFlags::READ_ONLY),
            ("run past the end of the address space", |t, _, _, _| {
                t.data = (u64::MAX - 15) as usize as *mut _
            }),
        ];
        for (i, (why, edit)) in cases.into_iter().enumerate() {
            let before = DELETED.load(Ordering::SeqCst);
            let e = import_on_host::<f32>(foreign(&DELETED, 0x30000, edit))
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "case {i}: {e}");
            assert_eq!(
                DELETED.load(Ordering::SeqCst),
                before + 1,
                "case {i}: {why}"
            );
        }
    }

    #[test]
    fn a_tensor_imported_twice_is_refused_and_deleted_once() {
        static FIRST: AtomicUsize = AtomicUsize::new(0);
        static SECOND: AtomicUsize = AtomicUsize::new(0);
        let a = import_on_host::<f32>(foreign(&FIRST, 0x50000, |_, _, _, _| {})).unwrap();
        // Another handle over the same memory (as `from_dlpack(t)` twice gives).
        let e = import_on_host::<f32>(foreign(&SECOND, 0x50000, |_, _, _, _| {}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("already imported"), "{e}");
        assert_eq!(
            SECOND.load(Ordering::SeqCst),
            1,
            "the refused tensor is deleted once"
        );
        assert_eq!(FIRST.load(Ordering::SeqCst), 0);
        drop(a);
        assert_eq!(FIRST.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn null_data_with_no_elements_imports() {
        static N: AtomicUsize = AtomicUsize::new(0);
        let buf = import_on_host::<f32>(foreign(&N, 0x40000, |t, shape, _, _| {
            t.data = std::ptr::null_mut();
            *shape = [0, 4];
        }))
        .unwrap();
        assert!(buf.is_empty());
        drop(buf);
        assert_eq!(N.load(Ordering::SeqCst), 1);
    }
}
