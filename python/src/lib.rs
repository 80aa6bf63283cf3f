//! `xlog` for Python: import CUDA tensors through DLPack (zero-copy), run xlog
//! kernels on an xlog stream, and export buffers back through `__dlpack__`.
//!
//! Every hand-off follows the DLPack Python protocol's stream handshake: an import
//! passes the xlog stream to the producer's `__dlpack__(stream=…)`, so the
//! producer makes it wait for pending work; an export lends the buffer (the
//! consumer may write it), makes the consumer's stream wait for xlog's pending
//! work, and records the consumer's stream as a writer when it releases the
//! tensor, so xlog's later work and free wait for the consumer. User code needs no
//! synchronisation.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use dlpark::Managed;
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};
use xlog_interop::dlpack::{self, Consumer};
use xlog_runtime::{DeviceBuffer, ReadyAfter, Runtime};

const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";

fn err(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
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

    /// Block until the stream's work has finished (not needed for hand-offs).
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.synchronize()).map_err(err)
    }
}

/// Where a buffer's memory is: here (xlog may use it), or lent to a DLPack
/// consumer until it releases the tensor.
enum Slot {
    Here(Arc<DeviceBuffer<f32>>),
    Lent,
}

type Shared = Arc<Mutex<Slot>>;

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// A float32 device buffer: xlog-allocated or imported from another library.
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
/// that its holder needs. Identity (`len`, `device_ptr`) is cached: it needs no
/// lock and works while the buffer is lent.
#[pyclass(frozen)]
struct Buffer {
    slot: Shared,
    stream: xlog_runtime::Stream,
    ptr: u64,
    len: usize,
    device: u32,
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

impl Buffer {
    fn new(buf: DeviceBuffer<f32>, stream: &xlog_runtime::Stream) -> Buffer {
        let imported = buf.core().is_imported();
        Buffer {
            _held: (!imported).then(|| buf.core().mark_held()),
            ptr: buf.device_ptr(),
            len: buf.len(),
            device: buf.block_id().device,
            imported,
            slot: Arc::new(Mutex::new(Slot::Here(Arc::new(buf)))),
            stream: stream.clone(),
        }
    }

    /// The buffer, to read, unless lent. Call with the GIL released.
    fn get(&self) -> PyResult<Arc<DeviceBuffer<f32>>> {
        match &*lock(&self.slot) {
            Slot::Here(b) => Ok(b.clone()),
            Slot::Lent => Err(lent_error()),
        }
    }

    /// Take the buffer out to lend it (unique: no call is using it meanwhile).
    fn take(&self) -> PyResult<DeviceBuffer<f32>> {
        let mut slot = lock(&self.slot);
        match std::mem::replace(&mut *slot, Slot::Lent) {
            Slot::Here(b) => Arc::try_unwrap(b).map_err(|b| {
                *slot = Slot::Here(b);
                PyBufferError::new_err("the buffer is in use by another call")
            }),
            Slot::Lent => Err(lent_error()),
        }
    }
}

#[pymethods]
impl Buffer {
    /// Device address of the first element.
    #[getter]
    fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Whether the memory belongs to another library (imported).
    #[getter]
    fn imported(&self) -> bool {
        self.imported
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// `self = a * x + self`, in place, on this buffer's stream.
    fn axpy(&self, py: Python<'_>, a: f32, x: &Buffer) -> PyResult<()> {
        if std::ptr::eq(self, x) {
            return Err(PyValueError::new_err(
                "x is the buffer being written: pass a copy (e.g. `b.scale(1.0)`)",
            ));
        }
        py.detach(|| {
            let xs = x.get()?;
            let result = {
                let mut slot = lock(&self.slot);
                match &mut *slot {
                    Slot::Here(y) => match Arc::get_mut(y) {
                        Some(y) => xlog_kernels::axpy(&self.stream, a, &*xs, y).map_err(err),
                        None => Err(PyBufferError::new_err(
                            "the buffer is in use by another call",
                        )),
                    },
                    Slot::Lent => Err(lent_error()),
                }
            };
            drop(xs);
            result
        })
    }

    /// `a * self` into a new xlog buffer, on this buffer's stream.
    fn scale(&self, py: Python<'_>, a: f32) -> PyResult<Buffer> {
        let out = py.detach(|| {
            let x = self.get()?;
            xlog_kernels::scale(&self.stream, &*x, a).map_err(err)
        })?;
        Ok(Buffer::new(out, &self.stream))
    }

    /// Copy to a Python list (synchronises the buffer's stream).
    fn tolist(&self, py: Python<'_>) -> PyResult<Vec<f32>> {
        py.detach(|| {
            let x = self.get()?;
            x.download(&self.stream).map_err(err)
        })
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (2, self.device as i32)
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
        // plain Python cannot be told from a handle: see python/README.md.)
        let consumer = unsafe { Consumer::from_python(stream) }.map_err(err)?;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let weak: Weak<Mutex<Slot>> = Arc::downgrade(&self.slot);
        // Runs in the consumer's release (any thread, maybe holding the GIL): takes
        // the slot's lock for one store, and drops the buffer only without it.
        let back = move |b: DeviceBuffer<f32>| {
            if let Some(slot) = weak.upgrade() {
                *lock(&slot) = Slot::Here(Arc::new(b));
            }
        };
        // The export orders the consumer (or, for -1, waits on the host): detached.
        let raw = py.detach(|| -> PyResult<usize> {
            let buf = self.take()?;
            Ok(if versioned {
                dlpack::lend(buf, .., consumer, back)
                    .map_err(err)?
                    .into_raw() as usize
            } else {
                dlpack::lend_legacy(buf, .., consumer, back)
                    .map_err(err)?
                    .into_raw() as usize
            })
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

/// Import a CUDA float32 tensor (anything with `__dlpack__`) zero-copy, ordered
/// on `stream`: the producer makes `stream` wait for its pending writes.
///
/// The producer must not write the tensor, or read it while xlog writes it, until
/// the returned buffer is gone (or exported back through `__dlpack__`).
#[pyfunction]
fn from_dlpack(py: Python<'_>, obj: &Bound<'_, PyAny>, stream: &Stream) -> PyResult<Buffer> {
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
    let buf = unsafe {
        if pyo3::ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr());
            // Renamed first: `from_raw` owns the tensor from here on, and deletes a
            // header it refuses itself (a later major version), so the capsule's
            // destructor must not delete it again.
            pyo3::ffi::PyCapsule_SetName(raw, USED_VERSIONED.as_ptr());
            let t = Managed::from_raw(p.cast::<DLManagedTensorVersioned>()).map_err(err)?;
            // The producer ordered its writes before `on` (we passed its handle).
            py.detach(|| dlpack::import_versioned::<f32>(t, on, ReadyAfter::ImportStream))
        } else if pyo3::ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr());
            // Renamed first, as above: `from_raw` owns the tensor from here on.
            pyo3::ffi::PyCapsule_SetName(raw, USED_LEGACY.as_ptr());
            let t = Managed::from_raw(p.cast::<DLManagedTensor>()).map_err(err)?;
            py.detach(|| dlpack::import_legacy::<f32>(t, on, ReadyAfter::ImportStream))
        } else {
            return Err(PyTypeError::new_err(
                "__dlpack__ did not return a DLPack capsule",
            ));
        }
    }
    .map_err(err)?;
    Ok(Buffer::new(buf, on))
}

/// Copy a list of floats to a new device buffer on `stream`.
#[pyfunction]
fn upload(py: Python<'_>, values: Vec<f32>, stream: &Stream) -> PyResult<Buffer> {
    let on = &stream.inner;
    let rt = on.runtime().map_err(err)?;
    let buf = py.detach(|| rt.upload_on(on, &values)).map_err(err)?;
    Ok(Buffer::new(buf, on))
}

/// The xlog Python module.
#[pymodule]
fn xlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    dlpack::set_blocking_section(blocking_section);
    m.add_class::<Stream>()?;
    m.add_class::<Buffer>()?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(upload, m)?)?;
    Ok(())
}
