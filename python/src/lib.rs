//! `xlog` for Python: import CUDA tensors through DLPack (zero-copy), run the
//! xlog kernel library on an xlog stream, and export buffers back through
//! `__dlpack__`.
//!
//! Every hand-off follows the DLPack Python protocol's stream handshake: an import
//! passes the xlog stream to the producer's `__dlpack__(stream=…)`, so the
//! producer makes it wait for pending work; an export lends the buffer (the
//! consumer may write it), makes the consumer's stream wait for xlog's pending
//! work, and records the consumer's stream as a writer when it releases the
//! tensor, so xlog's later work and free wait for the consumer. User code needs no
//! synchronisation.
//!
//! A [`Buffer`] holds one of eight element types ([`typed::Typed`]); the algorithm
//! functions ([`ops`]) dispatch over the types each Rust function is compiled
//! for and raise `TypeError` naming them otherwise.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

#[macro_use]
mod typed;
mod ops;

use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use dlpark::{Managed, ManagedTensorBase};
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList, PyTuple};
use xlog_interop::dlpack::{self, Consumer};
use xlog_interop::InteropError;
use xlog_runtime::{DeviceBuffer, ReadyAfter, Runtime};

use typed::{describe, dtype_of, Elem, HostVec, Typed, DTYPES};

const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";
/// DLPack's device type of CUDA device memory.
const CUDA: i32 = 2;

fn err(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A runtime error as a Python exception: `ValueError` for a refused argument,
/// `MemoryError` for a budget refusal, `RuntimeError` otherwise.
fn rt_err(e: xlog_runtime::Error) -> PyErr {
    match e {
        xlog_runtime::Error::InvalidArgument { .. } => PyValueError::new_err(e.to_string()),
        xlog_runtime::Error::BudgetExceeded { .. } => PyMemoryError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A refused import as a Python exception: `TypeError` for the element type,
/// `ValueError` for the tensor's layout, device or flags, as [`rt_err`] for the
/// runtime's refusals (memory already imported).
fn interop_err(e: InteropError) -> PyErr {
    match e {
        InteropError::Runtime(e) => rt_err(e),
        e @ InteropError::Dtype { .. } => PyTypeError::new_err(e.to_string()),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// An xlog stream on a device (a new, non-blocking CUDA stream).
#[pyclass(frozen)]
struct Stream {
    inner: xlog_runtime::Stream,
}

#[pymethods]
impl Stream {
    #[new]
    #[pyo3(signature = (device = 0))]
    fn new(device: u32) -> PyResult<Stream> {
        let rt = Runtime::get(device).map_err(err)?;
        Ok(Stream {
            inner: rt.new_stream().map_err(err)?,
        })
    }

    /// The raw `CUstream` handle (what `__dlpack__(stream=…)` takes).
    #[getter]
    fn handle(&self) -> usize {
        self.inner.raw() as usize
    }

    /// The device ordinal.
    #[getter]
    fn device(&self) -> u32 {
        self.inner.device_ordinal()
    }

    /// The device's name (`"xlog simulator (host CPU)"` under `XLOG_BACKEND=sim`).
    #[getter]
    fn device_name(&self) -> PyResult<String> {
        let rt = self.inner.runtime().map_err(rt_err)?;
        Ok(rt.device().info().name.clone())
    }

    /// Block until the stream's work has finished (not needed for hand-offs).
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.synchronize()).map_err(err)
    }
}

/// Where a buffer's memory is: here (xlog may use it), or lent to a DLPack
/// consumer until it releases the tensor.
enum Slot {
    Here(Arc<Typed>),
    Lent,
}

type Shared = Arc<Mutex<Slot>>;

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// A device buffer of `uint8`, `uint16`, `int32`, `uint32`, `int64`, `uint64`,
/// `float32` or `float64`: xlog-allocated or imported from another library.
///
/// `__dlpack__` lends it to the consumer, which may write it: until the consumer
/// releases the tensor, xlog methods that touch the data raise `BufferError`, and
/// afterwards they see the consumer's writes (ordered on the device). Dropping the
/// last reference to an imported buffer waits for xlog's work on it, then runs the
/// producer's deleter.
///
/// Locks: the slot's mutex is only taken with the GIL released (inside
/// `py.detach`) or for a few instructions, and nothing calls Python or drops a
/// buffer while holding it, so no thread ever waits for it while holding the GIL
/// that its holder needs. Identity (`len`, `dtype`, `device_ptr`) is cached: it
/// needs no lock and works while the buffer is lent.
#[pyclass(frozen)]
struct Buffer {
    slot: Shared,
    stream: xlog_runtime::Stream,
    ptr: u64,
    len: usize,
    device: u32,
    dtype: &'static str,
    imported: bool,
    /// For memory xlog allocated: its range, registered as held so that an import
    /// of it (e.g. `cupy.cuda.UnownedMemory(b.device_ptr, …)` through
    /// `from_dlpack`) is refused instead of giving the memory a second xlog buffer.
    /// Declared after `slot`: dropped after the buffer. (Imports are registered
    /// by the import itself.)
    _held: Option<Box<dyn Send + Sync>>,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // Dropping the buffer may block (an imported buffer waits for xlog's work
        // before running the producer's deleter): never with the GIL held.
        let inner = std::mem::replace(&mut *lock(&self.slot), Slot::Lent);
        without_gil(move || drop(inner));
    }
}

/// Run `f` on this thread with the GIL released if this thread holds it.
///
/// Used for every wait that may run with the GIL held (a `Buffer`'s drop, an
/// export's deleter): a cupy or torch host function queued before the awaited
/// work may need the GIL, and would wait for it forever.
fn without_gil<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    // SAFETY: `PyThreadState_GetDict` returns null, with no exception set, when
    // the calling thread has no current thread state (does not hold the GIL).
    let attached = !unsafe { pyo3::ffi::PyThreadState_GetDict() }.is_null();
    if attached {
        // Attaching a thread that is attached only bumps a count; `detach` then
        // releases the GIL around `f` and takes it back.
        Python::attach(|py| py.detach(f))
    } else {
        f()
    }
}

/// The deleters' blocking section (see `dlpack::set_blocking_section`).
fn blocking_section(work: &mut dyn FnMut()) {
    /// `detach` runs its closure on the calling thread: the reference is never
    /// used elsewhere.
    struct OnThisThread<'a>(&'a mut dyn FnMut());
    // SAFETY: as above; the closure runs and returns before `detach` does.
    unsafe impl Send for OnThisThread<'_> {}
    let w = OnThisThread(work);
    without_gil(move || {
        let w = w;
        (w.0)()
    });
}

fn lent_error() -> PyErr {
    PyBufferError::new_err(
        "the buffer is lent to a DLPack consumer (e.g. a torch or cupy array made from it): release that array first",
    )
}

fn busy_error() -> PyErr {
    PyBufferError::new_err("the buffer is in use by another call")
}

impl Buffer {
    fn new(buf: Typed, stream: &xlog_runtime::Stream) -> Buffer {
        let imported = buf.core().is_imported();
        Buffer {
            _held: (!imported).then(|| buf.core().mark_held()),
            ptr: buf.device_ptr(),
            len: buf.len(),
            device: buf.device(),
            dtype: buf.dtype(),
            imported,
            slot: Arc::new(Mutex::new(Slot::Here(Arc::new(buf)))),
            stream: stream.clone(),
        }
    }

    /// The buffer, to read, unless lent. Call with the GIL released.
    fn get(&self) -> PyResult<Arc<Typed>> {
        match &*lock(&self.slot) {
            Slot::Here(b) => Ok(b.clone()),
            Slot::Lent => Err(lent_error()),
        }
    }

    /// Take the buffer out to lend it (unique: no call is using it meanwhile).
    fn take(&self) -> PyResult<Typed> {
        let mut slot = lock(&self.slot);
        match std::mem::replace(&mut *slot, Slot::Lent) {
            Slot::Here(b) => Arc::try_unwrap(b).map_err(|b| {
                *slot = Slot::Here(b);
                busy_error()
            }),
            Slot::Lent => Err(lent_error()),
        }
    }

    /// Run `f` on the buffer, to write it (unique: no call is reading it
    /// meanwhile), holding the slot's lock. Call with the GIL released.
    fn with_mut<R>(&self, f: impl FnOnce(&mut Typed) -> PyResult<R>) -> PyResult<R> {
        let mut slot = lock(&self.slot);
        match &mut *slot {
            Slot::Here(b) => match Arc::get_mut(b) {
                Some(b) => f(b),
                None => Err(busy_error()),
            },
            Slot::Lent => Err(lent_error()),
        }
    }
}

/// `y = a * x + y` on `s`.
fn axpy_t<T: Elem + xlog_kernels::Element>(
    s: &xlog_runtime::Stream,
    a: &HostVec,
    x: &Typed,
    y: &mut DeviceBuffer<T>,
) -> PyResult<()> {
    let x = typed::same::<T>("Buffer.axpy", "x", "the buffer", x)?;
    xlog_kernels::axpy(s, scalar::<T>(a)?, x, y).map_err(rt_err)
}

/// `a * x` into a new buffer on `s`.
fn scale_t<T: Elem + xlog_kernels::Element>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
    a: &HostVec,
) -> PyResult<Typed> {
    Ok(T::wrap(
        xlog_kernels::scale(s, x, scalar::<T>(a)?).map_err(rt_err)?,
    ))
}

/// The one value inside `a` (extracted as the buffer's type).
fn scalar<T: Elem>(a: &HostVec) -> PyResult<T> {
    T::host(a)
        .and_then(|v| v.first().copied())
        .ok_or_else(|| PyTypeError::new_err(format!("the scalar is not a {}", T::NAME)))
}

/// A Python number as one host value of `dtype`.
fn scalar_of(py: Python<'_>, a: &Bound<'_, PyAny>, dtype: &str) -> PyResult<HostVec> {
    HostVec::extract(PyList::new(py, [a])?.as_any(), dtype)
}

/// Lend `buf` to `consumer` as a DLPack tensor (a raw versioned or legacy
/// managed tensor); its release puts the buffer back into `slot`, if the
/// Python buffer still exists.
fn lend_t<T: Elem>(
    buf: DeviceBuffer<T>,
    slot: Weak<Mutex<Slot>>,
    consumer: Consumer,
    versioned: bool,
) -> PyResult<usize> {
    // Runs in the consumer's release (any thread, maybe holding the GIL): takes
    // the slot's lock for one store, and drops the buffer only without it.
    let back = move |b: DeviceBuffer<T>| {
        if let Some(slot) = slot.upgrade() {
            *lock(&slot) = Slot::Here(Arc::new(T::wrap(b)));
        }
    };
    Ok(if versioned {
        dlpack::lend(buf, .., consumer, back)
            .map_err(err)?
            .into_raw() as usize
    } else {
        dlpack::lend_legacy(buf, .., consumer, back)
            .map_err(err)?
            .into_raw() as usize
    })
}

#[pymethods]
impl Buffer {
    /// Device address of the first element.
    #[getter]
    fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The element type's name (`"float32"`, `"uint64"`, ...).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype
    }

    /// Whether the memory belongs to another library (imported).
    #[getter]
    fn imported(&self) -> bool {
        self.imported
    }

    /// The stream the buffer's methods run on (and the functions, by default).
    #[getter]
    fn stream(&self) -> Stream {
        Stream {
            inner: self.stream.clone(),
        }
    }

    fn __len__(&self) -> usize {
        self.len
    }

    fn __repr__(&self) -> String {
        format!(
            "xlog.Buffer(len={}, dtype={}, device={}{})",
            self.len,
            self.dtype,
            self.device,
            if self.imported { ", imported" } else { "" }
        )
    }

    /// `self = a * x + self`, in place, on this buffer's stream (`int32`,
    /// `uint32`, `uint64`, `float32`, `float64`; wrapping for integers).
    fn axpy(&self, py: Python<'_>, a: &Bound<'_, PyAny>, x: &Buffer) -> PyResult<()> {
        if std::ptr::eq(self, x) {
            return Err(PyValueError::new_err(
                "x is the buffer being written: pass a copy (e.g. `b.scale(1)`)",
            ));
        }
        let a = scalar_of(py, a, self.dtype)?;
        py.detach(|| {
            let xs = x.get()?;
            let s = &self.stream;
            let result = self.with_mut(|y| {
                dispatch!("Buffer.axpy", "the buffer", y, [I32, U32, U64, F32, F64],
                    y => axpy_t(s, &a, &xs, y))
            });
            drop(xs);
            result
        })
    }

    /// `a * self` into a new xlog buffer, on this buffer's stream (the types of
    /// `axpy`).
    fn scale(&self, py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<Buffer> {
        let a = scalar_of(py, a, self.dtype)?;
        let out = py.detach(|| {
            let x = self.get()?;
            dispatch!("Buffer.scale", "the buffer", &*x, [I32, U32, U64, F32, F64],
                x => scale_t(&self.stream, x, &a))
        })?;
        Ok(Buffer::new(out, &self.stream))
    }

    /// Copy to a Python list (synchronises the buffer's stream).
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let host = py.detach(|| {
            let x = self.get()?;
            each!(&*x, b => b.download(&self.stream).map(Elem::wrap_host)).map_err(rt_err)
        })?;
        host.into_list(py)
    }

    /// The value of a one-element buffer (a reduction's result), as a Python
    /// number (synchronises the buffer's stream).
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.len != 1 {
            return Err(PyValueError::new_err(format!(
                "item() needs a buffer of one element, not {}",
                self.len
            )));
        }
        self.tolist(py)?.get_item(0)
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (CUDA, self.device as i32)
    }

    /// Lend the buffer to a consumer working on `stream` (DLPack protocol).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<isize>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "xlog exports without copying (copy=True is not supported)",
            ));
        }
        if let Some(d) = dl_device {
            if d != self.__dlpack_device__() {
                return Err(PyBufferError::new_err(format!(
                    "the buffer is on {:?}, not {d:?}",
                    self.__dlpack_device__()
                )));
            }
        }
        // SAFETY: the DLPack protocol makes `stream` a live stream of the consumer on
        // this device, kept alive while it uses the tensor. (A bogus integer from
        // plain Python cannot be told from a handle: see docs/python.md.)
        let consumer = unsafe { Consumer::from_python(stream) }.map_err(err)?;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let weak: Weak<Mutex<Slot>> = Arc::downgrade(&self.slot);
        // The export orders the consumer (or, for -1, waits on the host): detached.
        let raw = py.detach(|| -> PyResult<usize> {
            let buf = self.take()?;
            each!(buf, b => lend_t(b, weak, consumer, versioned))
        })?;
        if versioned {
            capsule(py, raw as *mut c_void, VERSIONED, drop_versioned)
        } else {
            capsule(py, raw as *mut c_void, LEGACY, drop_legacy)
        }
    }
}

/// A capsule owning a tensor until a consumer renames it to `used_*`.
fn capsule<'py>(
    py: Python<'py>,
    ptr: *mut c_void,
    name: &'static CStr,
    destructor: unsafe extern "C" fn(*mut pyo3::ffi::PyObject),
) -> PyResult<Bound<'py, PyCapsule>> {
    // SAFETY: `ptr` is an owned tensor; the destructor deletes it unless consumed.
    let raw = unsafe { pyo3::ffi::PyCapsule_New(ptr, name.as_ptr(), Some(destructor)) };
    // SAFETY: a new reference to a capsule, or null with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, raw).map(|b| b.cast_into_unchecked()) }
}

/// Capsule destructor: delete the tensor if no consumer took it.
unsafe extern "C" fn drop_versioned(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: called by Python with the capsule; a consumed capsule was renamed.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr());
            drop(Managed::from_raw(p.cast::<DLManagedTensorVersioned>()));
        }
    }
}

/// Capsule destructor for legacy tensors.
unsafe extern "C" fn drop_legacy(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: as `drop_versioned`.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr());
            drop(Managed::from_raw(p.cast::<DLManagedTensor>()));
        }
    }
}

/// Import `t` as a buffer of its own element type on `on`.
///
/// # Safety
///
/// [`dlpack::import`]'s obligations:
/// 1. `ready` orders every write the producer made before work xlog queues on
///    `on` after this call.
/// 2. Until the buffer is dropped nothing outside xlog writes the memory, or
///    reads it while xlog may write it, except through xlog's orderings.
/// 3. No part of the tensor is memory of a live xlog buffer (the registry
///    refuses the overlaps it can see).
unsafe fn import_any<M: ManagedTensorBase + 'static>(
    t: Managed<M>,
    on: &xlog_runtime::Stream,
    ready: ReadyAfter,
) -> PyResult<Typed> {
    /// # Safety
    ///
    /// [`import_any`]'s obligations 1–3.
    unsafe fn one<T: Elem, M: ManagedTensorBase + 'static>(
        t: Managed<M>,
        on: &xlog_runtime::Stream,
        ready: ReadyAfter,
    ) -> PyResult<Typed> {
        // SAFETY: obligations 1–3 are our caller's, forwarded unchanged.
        let b = unsafe { dlpack::import::<T, M>(t, on, ready) }.map_err(interop_err)?;
        Ok(T::wrap(b))
    }
    // SAFETY: `Managed` keeps the descriptor readable and immutable while it lives.
    let dtype = unsafe { t.tensor() }.dtype;
    type Import<M> = unsafe fn(Managed<M>, &xlog_runtime::Stream, ReadyAfter) -> PyResult<Typed>;
    let import: Import<M> = match dtype_of(dtype) {
        Some("uint8") => one::<u8, M>,
        Some("uint16") => one::<u16, M>,
        Some("int32") => one::<i32, M>,
        Some("uint32") => one::<u32, M>,
        Some("int64") => one::<i64, M>,
        Some("uint64") => one::<u64, M>,
        Some("float32") => one::<f32, M>,
        Some("float64") => one::<f64, M>,
        _ => {
            drop(t); // runs the producer's deleter
            return Err(PyTypeError::new_err(format!(
                "the DLPack tensor holds {}, which xlog does not handle; it takes {} \
                 (convert first, e.g. `t.to(torch.int32)`; a bool mask as `m.to(torch.uint8)`)",
                describe(dtype),
                DTYPES.join(", ")
            )));
        }
    };
    // SAFETY: obligations 1–3 are our caller's, forwarded unchanged.
    unsafe { import(t, on, ready) }
}

/// Refuse `obj` before asking it for a tensor when its `__dlpack_device__` is
/// not CUDA device memory of `device` (a host producer must not be handed a
/// CUDA stream).
fn check_device(obj: &Bound<'_, PyAny>, device: u32) -> PyResult<()> {
    let Ok(f) = obj.getattr("__dlpack_device__") else {
        return Ok(()); // the import checks the tensor's device itself
    };
    let (kind, id): (i32, i64) = f.call0()?.extract()?;
    if kind != CUDA {
        let name = match kind {
            1 => "the CPU".to_owned(),
            3 => "CUDA pinned host memory".to_owned(),
            13 => "CUDA managed memory".to_owned(),
            k => format!("DLPack device type {k}"),
        };
        return Err(PyValueError::new_err(format!(
            "the tensor is on {name}, but xlog imports CUDA device memory: move it to the \
             GPU first (e.g. `t.cuda()`)"
        )));
    }
    if id != device as i64 {
        return Err(PyValueError::new_err(format!(
            "the tensor is on CUDA device {id} but the stream is on device {device}: \
             import it with a stream of its device (`xlog.Stream({id})`)"
        )));
    }
    Ok(())
}

/// Import a CUDA tensor (anything with `__dlpack__`) zero-copy, ordered on
/// `stream`: the producer makes `stream` wait for its pending writes. The
/// buffer keeps the tensor's element type; a tensor of more than one dimension
/// is taken as its elements in row-major order.
///
/// Refused (nothing imported): memory that is not CUDA device memory of the
/// stream's device, non-contiguous strides, a misaligned offset or read-only
/// memory (`ValueError`); an element type xlog does not handle (`TypeError`);
/// memory overlapping a live xlog buffer or import (`ValueError`).
///
/// The producer must not write the tensor, or read it while xlog writes it, until
/// the returned buffer is gone (or exported back through `__dlpack__`).
#[pyfunction]
fn from_dlpack(py: Python<'_>, obj: &Bound<'_, PyAny>, stream: &Stream) -> PyResult<Buffer> {
    check_device(obj, stream.inner.device_ordinal())?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", stream.handle())?;
    kwargs.set_item("max_version", PyTuple::new(py, [1u32, 0])?)?;
    let cap = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let on = &stream.inner;
    let raw = cap.as_ptr();
    // A tensor with no deleter is refused by the import (nothing would keep its
    // memory alive); the capsule is consumed either way.
    // SAFETY: `raw` is a live object for this call; the name checks make the
    // pointer a tensor of that ABI, whose ownership moves to us when we rename it.
    // The import's obligations: 1, the producer ordered its writes before `on`
    // (we passed its handle); 2, the producer leaves the memory to xlog, this
    // function's documented contract; 3, the module marks every buffer it exposes
    // as held, so the registry refuses memory of a live xlog buffer reached
    // through Python.
    let buf = unsafe {
        if pyo3::ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr());
            // Renamed first: `from_raw` owns the tensor from here on, and deletes a
            // header it refuses itself (a later major version), so the capsule's
            // destructor must not delete it again.
            pyo3::ffi::PyCapsule_SetName(raw, USED_VERSIONED.as_ptr());
            let t = Managed::from_raw(p.cast::<DLManagedTensorVersioned>()).map_err(err)?;
            py.detach(|| import_any(t, on, ReadyAfter::ImportStream))
        } else if pyo3::ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr());
            // Renamed first, as above: `from_raw` owns the tensor from here on.
            pyo3::ffi::PyCapsule_SetName(raw, USED_LEGACY.as_ptr());
            let t = Managed::from_raw(p.cast::<DLManagedTensor>()).map_err(err)?;
            py.detach(|| import_any(t, on, ReadyAfter::ImportStream))
        } else {
            return Err(PyTypeError::new_err(
                "__dlpack__ did not return a DLPack capsule",
            ));
        }
    }?;
    Ok(Buffer::new(buf, on))
}

/// Copy a sequence of Python numbers to a new device buffer of `dtype` on
/// `stream`.
#[pyfunction]
#[pyo3(signature = (values, stream, dtype = "float32"))]
fn upload(
    py: Python<'_>,
    values: &Bound<'_, PyAny>,
    stream: &Stream,
    dtype: &str,
) -> PyResult<Buffer> {
    let host = HostVec::extract(values, dtype)?;
    let on = &stream.inner;
    let rt = on.runtime().map_err(rt_err)?;
    let buf = py.detach(|| {
        fn one<T: Elem>(
            rt: &Runtime,
            on: &xlog_runtime::Stream,
            v: &[T],
        ) -> xlog_runtime::Result<Typed> {
            rt.upload_on(on, v).map(T::wrap)
        }
        match &host {
            HostVec::U8(v) => one(&rt, on, v),
            HostVec::U16(v) => one(&rt, on, v),
            HostVec::I32(v) => one(&rt, on, v),
            HostVec::U32(v) => one(&rt, on, v),
            HostVec::I64(v) => one(&rt, on, v),
            HostVec::U64(v) => one(&rt, on, v),
            HostVec::F32(v) => one(&rt, on, v),
            HostVec::F64(v) => one(&rt, on, v),
        }
    });
    Ok(Buffer::new(buf.map_err(rt_err)?, on))
}

/// The xlog Python module.
#[pymodule]
fn xlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    dlpack::set_blocking_section(blocking_section);
    m.add_class::<Stream>()?;
    m.add_class::<Buffer>()?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(upload, m)?)?;
    m.add("dtypes", PyTuple::new(m.py(), DTYPES)?)?;
    ops::register(m)
}
