//! Launching work: configurations, modules and the typestate recorder.
//!
//! The recorder implements the protocol documented in `track`: record, preflight,
//! enqueue, commit. The generated launchers of `#[xlog_kernel]` use the same
//! recorder as hand-written launches and copies.

mod config;
mod module;
mod recorder;

pub use config::LaunchConfig;
pub(crate) use config::LaunchLimits;
pub use module::{Function, KernelHandle, Module};
pub use recorder::{launch_typed, BufferUse, Committed, Preflighted, Recording, WorkRecorder};
