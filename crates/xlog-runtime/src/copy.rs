//! Tracked copies: upload, download, memset and device-to-device, into buffers or
//! views. Each goes through the same recorder as a kernel launch.

use xlog_device::DeviceCopy;

use crate::buffer::{DeviceBuffer, ReadBuffer, WriteBuffer};
use crate::driver::{self, MemsetWord};
use crate::error::{Error, Result};
use crate::launch::{Preflighted, WorkRecorder};
use crate::stream::Stream;
use crate::track::Access;

fn byte_len<T>(len: usize) -> usize {
    len * std::mem::size_of::<T>()
}

pub(crate) fn check_len(what: &str, dst: usize, src: usize) -> Result<()> {
    if dst == src {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what: what.to_owned(),
            reason: format!("destination has {dst} elements but source has {src}; copy into a view of matching length"),
        })
    }
}

/// Copy `src` from the host into `dst`, ordered on `stream`, and wait for the copy
/// (and the work queued on `stream` before it) to finish.
///
/// The wait is what lets `src` be borrowed only for the call: the driver may read
/// host memory when the stream reaches the copy, after an asynchronous call has
/// returned (page-locked or managed memory, or pageable memory on a device that
/// reads it directly).
pub fn copy_from_host<T: DeviceCopy>(
    stream: &Stream,
    dst: &mut (impl WriteBuffer<T> + ?Sized),
    src: &[T],
) -> Result<()> {
    let arg = dst.arg_mut();
    check_len("copy_from_host", arg.len, src.len())?;
    // Bytes, not elements: a zero-sized element type has no bytes to copy.
    if arg.bytes == 0 {
        return Ok(());
    }
    let (ptr, bytes) = (arg.ptr, byte_len::<T>(src.len()));
    let pre = WorkRecorder::new(stream)
        .__record(arg, Access::Write)
        .preflight()?;
    // SAFETY: `pre` recorded `dst`'s range as written; `src` is borrowed for the call.
    unsafe { upload_bytes(stream, pre, ptr, src.as_ptr().cast(), bytes) }
}

/// Queues the recorded upload of `bytes` bytes at `src` to `dst`, then waits until
/// the stream has run it (or can run nothing more), also when queueing failed
/// (part of the copy may be queued): the driver may read `src` until then.
///
/// # Safety
/// 1. `pre` recorded `dst..dst+bytes` as written, on `stream`.
/// 2. `src` is readable for `bytes` bytes until this call returns.
unsafe fn upload_bytes(
    stream: &Stream,
    pre: WorkRecorder<'_, Preflighted>,
    dst: u64,
    src: *const u8,
    bytes: usize,
) -> Result<()> {
    // SAFETY: the closure writes only `dst..dst+bytes`, recorded as a write, on the
    // given stream; `src` stays readable until the stream has run the copy
    // (obligation 2 and the wait below).
    let queued = unsafe { pre.enqueue(|s| driver::memcpy_htod_async(dst, src, bytes, s)) };
    let settled = stream.settle();
    let _ = queued?;
    settled
}

/// Copy `src` to the host into `dst`, then wait for the copy to finish.
pub fn copy_to_host<T: DeviceCopy>(
    stream: &Stream,
    src: &(impl ReadBuffer<T> + ?Sized),
    dst: &mut [T],
) -> Result<()> {
    check_len("copy_to_host", dst.len(), src.arg().len)?;
    // SAFETY: `dst` is writable for its whole length.
    unsafe {
        copy_to_host_raw(
            stream,
            src.arg(),
            dst.as_mut_ptr().cast(),
            byte_len::<T>(dst.len()),
        )
    }
}

/// # Safety
/// 1. `out` is writable for `bytes` bytes until this call returns.
unsafe fn copy_to_host_raw(
    stream: &Stream,
    arg: crate::buffer::ArgRef<'_>,
    out: *mut u8,
    bytes: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let ptr = arg.ptr;
    #[cfg(feature = "test-switches")]
    if arg.core.runtime_id() == crate::host::HOST_RUNTIME_ID {
        // SAFETY: a buffer of the host runtime is made only by `host::buffer` or
        // `host::import`, whose callers vouch that its address is host memory valid
        // for its length (`arg` lies inside it); obligation 1 covers `out`.
        unsafe { std::ptr::copy_nonoverlapping(ptr as *const u8, out, bytes) };
        return Ok(());
    }
    let pre = WorkRecorder::new(stream)
        .__record(arg, Access::Read)
        .preflight()?;
    // SAFETY: the closure reads only the recorded range; obligation 1 covers `out`
    // until the wait below, which runs also when queueing failed (part of the copy
    // may be queued).
    let queued = unsafe { pre.enqueue(|s| driver::memcpy_dtoh_async(out, ptr, bytes, s)) };
    let settled = stream.settle();
    let _ = queued?;
    settled
}

fn download_arg<T: DeviceCopy>(stream: &Stream, arg: crate::buffer::ArgRef<'_>) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::with_capacity(arg.len);
    // SAFETY: the spare capacity holds `arg.len` elements.
    unsafe { copy_to_host_raw(stream, arg, out.as_mut_ptr().cast(), byte_len::<T>(arg.len)) }?;
    // SAFETY: the copy above initialised all `arg.len` elements with device data of
    // type `T`, which is plain data.
    unsafe { out.set_len(arg.len) };
    Ok(out)
}

/// Copy `src` into `dst` on the device, ordered on `stream`.
pub fn copy_device<T: DeviceCopy>(
    stream: &Stream,
    dst: &mut (impl WriteBuffer<T> + ?Sized),
    src: &(impl ReadBuffer<T> + ?Sized),
) -> Result<()> {
    let (d, s_arg) = (dst.arg_mut(), src.arg());
    check_len("copy_device", d.len, s_arg.len)?;
    if d.bytes == 0 {
        return Ok(());
    }
    let (dp, sp, bytes) = (d.ptr, s_arg.ptr, byte_len::<T>(d.len));
    let pre = WorkRecorder::new(stream)
        .__record(s_arg, Access::Read)
        .__record(d, Access::Write)
        .preflight()?;
    // SAFETY: the closure touches exactly the two recorded ranges with the recorded
    // accesses; the borrow rules make them distinct buffers (a `&mut` and a `&`).
    let _ = unsafe { pre.enqueue(|s| driver::memcpy_dtod_async(dp, sp, bytes, s)) }?;
    Ok(())
}

/// Set every byte of `dst` to `value`, ordered on `stream`.
///
/// # Safety
/// 1. `value` repeated over `size_of::<T>()` bytes is a valid `T` (any byte is for
///    integers and floats; only 0 and 1 are for `bool`). Zero is always valid for
///    `DeviceCopy` types.
pub unsafe fn memset_bytes<T: DeviceCopy>(
    stream: &Stream,
    dst: &mut (impl WriteBuffer<T> + ?Sized),
    value: u8,
) -> Result<()> {
    let arg = dst.arg_mut();
    if arg.bytes == 0 {
        return Ok(());
    }
    let (ptr, bytes) = (arg.ptr, byte_len::<T>(arg.len));
    let pre = WorkRecorder::new(stream)
        .__record(arg, Access::Write)
        .preflight()?;
    // SAFETY: the closure writes exactly the recorded range.
    let _ = unsafe { pre.enqueue(|s| driver::memset_d8_async(ptr, value, bytes, s)) }?;
    Ok(())
}

/// Set every element of `dst` to `value`, ordered on `stream`.
///
/// A memset queued on the device for 1-, 2- and 4-byte numbers and `bool`, and for
/// 8-byte numbers whose two 32-bit halves are equal (zero, all ones); any other
/// value is uploaded from a host vector as long as `dst` (host memory of
/// `dst`'s size), which waits for the copy as [`copy_from_host`] does.
pub fn fill<T: DeviceCopy>(
    stream: &Stream,
    dst: &mut (impl WriteBuffer<T> + ?Sized),
    value: T,
) -> Result<()> {
    let arg = dst.arg_mut();
    if arg.bytes == 0 {
        return Ok(());
    }
    let (ptr, len) = (arg.ptr, arg.len);
    let pre = WorkRecorder::new(stream)
        .__record(arg, Access::Write)
        .preflight()?;
    match memset_pattern(&value) {
        Some(Pattern::D8(b)) => {
            // SAFETY: the closure writes exactly the recorded range.
            let _ = unsafe { pre.enqueue(|s| driver::memset_d8_async(ptr, b, len, s)) }?;
        }
        Some(Pattern::Words(word, per_element)) if ptr % word.bytes() as u64 == 0 => {
            // SAFETY: the closure writes exactly the recorded range (`per_element`
            // words an element), aligned to the word.
            let _ = unsafe {
                pre.enqueue(|s| driver::memset_words_async(ptr, word, per_element * len, s))
            }?;
        }
        _ => {
            let host = vec![value; len];
            // SAFETY: `pre` recorded the range as written; `host` lives until the
            // call returns.
            unsafe { upload_bytes(stream, pre, ptr, host.as_ptr().cast(), byte_len::<T>(len)) }?;
        }
    }
    Ok(())
}

/// A value a fill can queue as a device memset, with no host copy to wait for.
enum Pattern {
    D8(u8),
    /// A word repeated this many times an element: once for 16- and 32-bit values,
    /// twice for an 8-byte value whose 32-bit halves are equal (zero, all ones).
    Words(MemsetWord, usize),
}

/// The memset pattern of `value` for the primitive types that have one.
fn memset_pattern<T: DeviceCopy>(value: &T) -> Option<Pattern> {
    use std::any::Any;
    let v: &dyn Any = value;
    let w16 = |x: u16| Some(Pattern::Words(MemsetWord::W16(x), 1));
    let w32 = |x: u32| Some(Pattern::Words(MemsetWord::W32(x), 1));
    let halves = |x: u64| {
        ((x >> 32) as u32 == x as u32).then_some(Pattern::Words(MemsetWord::W32(x as u32), 2))
    };
    if let Some(&x) = v.downcast_ref::<u16>() {
        w16(x)
    } else if let Some(&x) = v.downcast_ref::<i16>() {
        w16(x as u16)
    } else if let Some(&x) = v.downcast_ref::<u64>() {
        halves(x)
    } else if let Some(&x) = v.downcast_ref::<i64>() {
        halves(x as u64)
    } else if let Some(&x) = v.downcast_ref::<f64>() {
        halves(x.to_bits())
    } else if let Some(&x) = v.downcast_ref::<u8>() {
        Some(Pattern::D8(x))
    } else if let Some(&x) = v.downcast_ref::<i8>() {
        Some(Pattern::D8(x as u8))
    } else if let Some(&x) = v.downcast_ref::<bool>() {
        Some(Pattern::D8(x as u8))
    } else if let Some(&x) = v.downcast_ref::<u32>() {
        w32(x)
    } else if let Some(&x) = v.downcast_ref::<i32>() {
        w32(x as u32)
    } else {
        v.downcast_ref::<f32>().and_then(|&x| w32(x.to_bits()))
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Copy the whole buffer to the host, waiting for every write recorded on any stream.
    pub fn download(&self, stream: &Stream) -> Result<Vec<T>> {
        download_arg(stream, self.arg())
    }

    /// Overwrite the buffer with `src` from the host.
    pub fn copy_from_host(&mut self, stream: &Stream, src: &[T]) -> Result<()> {
        copy_from_host(stream, self, src)
    }

    /// Overwrite the buffer with the device data of `src`.
    pub fn copy_from(
        &mut self,
        stream: &Stream,
        src: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<()> {
        copy_device(stream, self, src)
    }

    /// Set every element to `value`.
    pub fn fill(&mut self, stream: &Stream, value: T) -> Result<()> {
        fill(stream, self, value)
    }
}

impl<T: DeviceCopy> crate::buffer::BufferView<'_, T> {
    /// Copy the view to the host.
    pub fn download(&self, stream: &Stream) -> Result<Vec<T>> {
        download_arg(stream, self.arg())
    }
}

impl<T: DeviceCopy> crate::buffer::BufferViewMut<'_, T> {
    /// Overwrite the view with `src` from the host.
    pub fn copy_from_host(&mut self, stream: &Stream, src: &[T]) -> Result<()> {
        copy_from_host(stream, self, src)
    }

    /// Overwrite the view with the device data of `src`.
    pub fn copy_from(
        &mut self,
        stream: &Stream,
        src: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<()> {
        copy_device(stream, self, src)
    }

    /// Set every element of the view to `value`.
    pub fn fill(&mut self, stream: &Stream, value: T) -> Result<()> {
        fill(stream, self, value)
    }
}
