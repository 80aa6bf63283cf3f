//! Zero-copy interop for xlog buffers: DLPack tensors and Arrow C Device Data
//! Interface arrays, in and out, ordered on the device.
//!
//! - [`dlpack`]: export a [`DeviceBuffer`](xlog_runtime::DeviceBuffer) (moved,
//!   or lent until the consumer releases it; writable either way) as a
//!   `DLManagedTensorVersioned`, making the consumer's stream wait for pending
//!   work; import a tensor as a tracked buffer whose drop runs the producer's
//!   deleter. Imports overlapping a live import, an export or a buffer marked
//!   held are refused; importing memory of any other live xlog buffer is excluded
//!   by the `unsafe` imports' obligations.
//! - [`arrow`]: the same for `ArrowDeviceArray`, with `sync_event`.
//! - [`Column`]: values plus an Arrow validity bitmap, owned or imported.
//!
//! The ordering rules are in `docs/interop.md`; the format-free primitives they
//! rest on (`import_raw`, `order_foreign`, `record_foreign_use`) are in
//! `xlog-runtime`.
//!
//! ```no_run
//! use xlog_interop::dlpack::{self, Consumer};
//! use xlog_runtime::{ForeignStream, Runtime};
//!
//! # fn main() -> xlog_interop::Result<()> {
//! let rt = Runtime::get(0)?;
//! let s = rt.stream()?;
//! let buf = rt.upload_on(&s, &[1.0f32, 2.0, 3.0])?;
//! let ptr = buf.device_ptr();
//! // Lend it to a library working on the legacy default stream: that stream waits
//! // for the upload; the buffer comes back when the library releases the tensor.
//! let (tx, rx) = std::sync::mpsc::channel();
//! let tensor = dlpack::lend(buf, .., Consumer::stream(ForeignStream::legacy_default()), move |b| {
//!     let _ = tx.send(b);
//! })?;
//! drop(tensor); // the library's release: xlog records what it queued
//! let back = rx.recv().unwrap();
//! assert_eq!(back.device_ptr(), ptr);
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
