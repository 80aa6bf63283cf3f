//! `xlog` for Python: import CUDA tensors through DLPack (zero-copy), run xlog
//! kernels on an xlog stream, and export buffers back through `__dlpack__`.
//!
//! Every hand-off follows the DLPack Python protocol's stream handshake: an import
//! passes the xlog stream to the producer's `__dlpack__(stream=…)`, so the
//! producer makes it wait for pending work; an export makes the consumer's stream
//! wait for xlog's pending writes, and records the consumer's stream when it
//! releases the tensor, so xlog's free (and later writes) wait for the consumer.
//! User code needs no synchronisation.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use dlpark::Managed;
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
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

/// A float32 device buffer: xlog-allocated or imported from another library.
///
/// `__dlpack__` exports it read-only (versioned consumers see the read-only
/// flag); while a consumer holds it, xlog can read it but in-place methods
/// (`axpy`) refuse. Dropping the last reference to an imported buffer waits for
/// xlog's work on it, then runs the producer's deleter.
#[pyclass(frozen)]
struct Buffer {
    inner: std::sync::Mutex<Arc<DeviceBuffer<f32>>>,
    stream: xlog_runtime::Stream,
}

impl Buffer {
    fn new(buf: DeviceBuffer<f32>, stream: &xlog_runtime::Stream) -> Buffer {
        Buffer {
            inner: std::sync::Mutex::new(Arc::new(buf)),
            stream: stream.clone(),
        }
    }

    fn shared(&self) -> Arc<DeviceBuffer<f32>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[pymethods]
impl Buffer {
    /// Device address of the first element.
    #[getter]
    fn device_ptr(&self) -> u64 {
        self.shared().device_ptr()
    }

    /// Whether the memory belongs to another library (imported).
    #[getter]
    fn imported(&self) -> bool {
        self.shared().core().is_imported()
    }

    fn __len__(&self) -> usize {
        self.shared().len()
    }

    /// `self = a * x + self`, in place, on this buffer's stream.
    fn axpy(&self, py: Python<'_>, a: f32, x: &Buffer) -> PyResult<()> {
        let xs = x.shared();
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(y) = Arc::get_mut(&mut guard) else {
            return Err(PyBufferError::new_err(
                "the buffer is shared (exported through DLPack or aliased): release the consumer's tensor before writing it",
            ));
        };
        py.detach(|| xlog_kernels::axpy(&self.stream, a, &*xs, y))
            .map_err(err)
    }

    /// `a * self` into a new xlog buffer, on this buffer's stream.
    fn scale(&self, py: Python<'_>, a: f32) -> PyResult<Buffer> {
        let x = self.shared();
        let out = py
            .detach(|| xlog_kernels::scale(&self.stream, &*x, a))
            .map_err(err)?;
        Ok(Buffer::new(out, &self.stream))
    }

    /// Copy to a Python list (synchronises the buffer's stream).
    fn tolist(&self, py: Python<'_>) -> PyResult<Vec<f32>> {
        let x = self.shared();
        py.detach(|| x.download(&self.stream)).map_err(err)
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (2, self.shared().block_id().device as i32)
    }

    /// Export read-only for a consumer working on `stream` (DLPack protocol).
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
        // this device, kept alive while it uses the tensor.
        let consumer = unsafe { Consumer::from_python(stream) }.map_err(err)?;
        let buf = self.shared();
        if max_version.is_some_and(|(major, _)| major >= 1) {
            let tensor = dlpack::export_read(buf, .., consumer).map_err(err)?;
            capsule(py, tensor.into_raw().cast(), VERSIONED, drop_versioned)
        } else {
            let tensor = dlpack::export_read_legacy(buf, .., consumer).map_err(err)?;
            capsule(py, tensor.into_raw().cast(), LEGACY, drop_legacy)
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
    // SAFETY: `raw` is a live object for this call; the name checks make the
    // pointer a tensor of that ABI, whose ownership moves to us when we rename it.
    let buf = unsafe {
        if pyo3::ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr());
            pyo3::ffi::PyCapsule_SetName(raw, USED_VERSIONED.as_ptr());
            let t = Managed::from_raw(p.cast::<DLManagedTensorVersioned>()).map_err(err)?;
            // The producer ordered its writes before `on` (we passed its handle).
            py.detach(|| dlpack::import_versioned::<f32>(t, on, ReadyAfter::ImportStream))
        } else if pyo3::ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr());
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
    m.add_class::<Stream>()?;
    m.add_class::<Buffer>()?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(upload, m)?)?;
    Ok(())
}
