//! Zero-copy interop for xlog buffers: DLPack tensors and Arrow C Device Data
//! Interface arrays, in and out, ordered on the device.
//!
//! - [`dlpack`]: export a [`DeviceBuffer`](xlog_runtime::DeviceBuffer) (moved:
//!   writable; shared through an `Arc`: read-only) as a `DLManagedTensorVersioned`,
//!   making the consumer's stream wait for pending writes; import a tensor as a
//!   tracked buffer whose drop runs the producer's deleter.
//! - [`arrow`]: the same for `ArrowDeviceArray`, with `sync_event`.
//! - [`Column`]: values plus an Arrow validity bitmap, owned or imported.
//!
//! The ordering rules are in `docs/interop.md`; the format-free primitives they
//! rest on (`import_raw`, `order_foreign`, `record_foreign_use`) are in
//! `xlog-runtime`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use xlog_interop::dlpack::{self, Consumer};
//! use xlog_runtime::{ForeignStream, ReadyAfter, Runtime};
//!
//! # fn main() -> xlog_interop::Result<()> {
//! let rt = Runtime::get(0)?;
//! let s = rt.stream()?;
//! let buf = rt.upload_on(&s, &[1.0f32, 2.0, 3.0])?;
//! // Hand it to a library working on the legacy default stream, read-only.
//! let tensor = dlpack::export_read(Arc::new(buf), .., Consumer::stream(ForeignStream::legacy_default()))?;
//! // ... and take it back as an xlog buffer: the same memory, fenced on `s`.
//! // SAFETY: our own export; the legacy stream waited for the upload and `s`
//! // orders nothing else before it, so wait for the legacy stream.
//! let err = unsafe {
//!     dlpack::import_versioned::<f32>(tensor, &s, ReadyAfter::Stream(ForeignStream::legacy_default()))
//! };
//! assert!(err.is_err()); // read-only tensors are refused
//! # Ok(()) }
//! ```
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod arrow;
mod column;
pub mod dlpack;
mod element;
mod error;
mod held;

pub use column::{Column, Origin};
pub use element::Element;
pub use error::{InteropError, Result};
