//! The xlog host runtime: budgeted, stream-ordered device memory with per-buffer
//! cross-stream tracking, on the CUDA driver through cudarc.
//!
//! Every operation that touches device memory — a kernel launch, a copy, a memset,
//! a free — records the buffers it uses and how, queues the event waits that use
//! needs on other streams (*preflight*), enqueues, and records the new use
//! (*commit*). A forgotten fence cannot happen on the typed path: only the
//! runtime's allocator makes a [`DeviceBuffer`], and every safe operation on one
//! goes through [`WorkRecorder`].
//!
//! ```no_run
//! use xlog_runtime::{Runtime, Result};
//!
//! fn main() -> Result<()> {
//!     let rt = Runtime::get(0)?;
//!     let (a, b) = (rt.new_stream()?, rt.new_stream()?);
//!     let mut col = rt.upload_on(&a, &[1u32, 2, 3, 4])?; // written on stream a
//!     let copy = {
//!         let mut out = rt.alloc_zeroed_on::<u32>(&b, 4)?;
//!         out.copy_from(&b, &col)?;                       // b waits for a's upload
//!         out
//!     };
//!     col.fill(&a, 0)?;                                   // a waits for b's read
//!     assert_eq!(copy.download(&b)?, vec![1, 2, 3, 4]);
//!     Ok(())
//! }
//! ```
//!
//! # Modules
//! - `resource`: the [`DeviceMemoryResource`] trait, backends and adaptors.
//! - `track`: access modes and the fencing rules (the protocol is documented there).
//! - `launch`: [`LaunchConfig`], modules, [`WorkRecorder`].
//! - `buffer` / `copy`: [`DeviceBuffer`], views, tracked copies.
//! - `pinned`: [`PinnedBuffer`] (page-locked host memory) and asynchronous copies
//!   to and from it, whose handles keep the host from the bytes a copy uses.
//! - `stream`: [`Stream`], its lazily re-recorded event fence, and the stream pool.
//! - [`graph`]: typed launches, copies and fills recorded into a CUDA graph, with
//!   edges from the access modes, replayed as one fenced operation.
//! - `runtime`: [`Runtime`] and its builder.
//! - [`nccl`]: several GPUs: communicators, collectives and transfers as fenced
//!   operations (NCCL, loaded at run time; simulated cliques on the simulator).
//! - `peer`: [`copy_peer`], copies between devices fenced on both devices' streams.
//! - `foreign`: memory shared with other CUDA libraries (imports with a foreign
//!   owner, ordering a consumer's stream, export events); the formats are in
//!   `xlog-interop`.
//! - `driver`: the platform seam: one `Platform` chosen per process, the CUDA
//!   driver (the only code that calls it) or the simulator, behind thin calls.
//! - [`sim`]: the simulator platform, chosen with `XLOG_BACKEND=sim`, and its
//!   hazard detector.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod buffer;
mod copy;
mod device;
mod driver;
mod error;
mod foreign;
pub mod graph;
mod handle;
mod launch;
pub mod nccl;
mod panics;
mod peer;
mod pinned;
pub mod resource;
mod runtime;
pub mod sim;
mod stream;
mod sync;
#[cfg(feature = "test-switches")]
pub mod testing;
#[cfg(not(feature = "test-switches"))]
mod testing;
mod track;

pub use buffer::{
    ArgRef, BufferCore, BufferView, BufferViewMut, DeviceBuffer, ForeignBuffer, ReadBuffer,
    WriteBuffer,
};
pub use copy::{copy_device, copy_from_host, copy_to_host, fill, memset_bytes};
pub use device::{Device, DeviceInfo};
pub use error::{Error, Result};
#[cfg(feature = "test-switches")]
pub use foreign::host;
pub use foreign::{ForeignEvent, ForeignStream, OwnedEvent, ReadyAfter};
pub use graph::{Graph, GraphArena, GraphRecorder, NodeId};
pub use launch::{
    Committed, Function, KernelHandle, LaunchConfig, Module, Preflighted, Recording, WorkRecorder,
    MAX_GRID_BLOCKS,
};
pub use peer::copy_peer;
pub use pinned::{
    copy_from_pinned, copy_to_pinned, PendingDownload, PendingUpload, PinnedBuffer, PinnedChunk,
    PinnedMemory,
};
pub use resource::{AllocStats, AllocTag, BlockId, DeviceBlock, DeviceMemoryResource, Generation};
pub use runtime::{
    default_budget, Backend, Runtime, RuntimeBuilder, BACKEND_ENV, BUDGET_ENV, DEFAULT_CACHING,
    POOL_ENV,
};
pub use stream::{Stream, StreamId};
pub use track::Access;
pub use xlog_device::{DeviceCopy, ModuleImage};

/// Items generated code refers to. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::launch::{launch_typed, BufferUse};
    pub use crate::track::Access;
}
