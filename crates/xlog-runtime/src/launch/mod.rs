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
pub(crate) use recorder::{check_launch, plan_waits};
pub use recorder::{launch_typed, BufferUse, Committed, Preflighted, Recording, WorkRecorder};

/// The most blocks a one-dimensional grid holds on every device xlog runs on
/// (`maxGridDimX`, 2^31 - 1 since compute capability 3.0): host code that sizes its
/// own grid clamps or refuses against it before it allocates anything.
pub const MAX_GRID_BLOCKS: u32 = i32::MAX as u32;
