//! Compile xlog kernel crates to PTX from a `build.rs`, with rustc's own NVPTX backend.
//!
//! xlog-build plays the role `cuda_builder` plays for Rust-CUDA, without LLVM 7 or a
//! CUDA toolkit: a kernel crate is compiled a second time, for
//! `nvptx64-nvidia-cuda`, by a pinned nightly with `-Zbuild-std=core`, and its
//! bitcode is linked into PTX with the `llvm-link` / `opt` / `llc` of that same
//! toolchain. The host crates never leave stable.
//!
//! ```no_run
//! // build.rs of a kernel crate (whose lib.rs calls `xlog_device::kernel_module!()`)
//! fn main() {
//!     xlog_build::Builder::new().run();
//! }
//! ```
//!
//! The pipeline, step by step (details in `docs/toolchain.md`):
//!
//! 1. resolve the pinned toolchain ([`PINNED_TOOLCHAIN`], components `rust-src` and
//!    `llvm-tools`), installing it with rustup when missing;
//! 2. run `cargo rustc --crate-type cdylib --target nvptx64-nvidia-cuda
//!    -Zbuild-std=core` on the kernel crate in a scrubbed environment, with
//!    [`BARRIER_GUARD_FLAG`] and `-Ctarget-cpu`, in a separate target directory shared
//!    by all profiles, with [`GUARD_VAR`] set so the crate's own build script does
//!    nothing there;
//! 3. link the recorded bitcode, internalizing everything but the kernels;
//! 4. write `$OUT_DIR/xlog-module.ptx` (plus optional cubins from `ptxas`) and the two
//!    small tables `xlog_device::kernel_module!` includes.
//!
//! Modules:
//! - [`Builder`] and its [`Output`] (the `builder` module);
//! - [`toolchain`]: the pinned nightly and its LLVM tools;
//! - [`ptxas`]: finding ptxas, cubins, and the spill check CI runs;
//! - [`diagnostics`]: condensing device compiler output into `cargo:warning` lines;
//! - [`Error`]: what can fail, with the failing command and its stderr tail.

#![deny(unsafe_code)]
// The examples are build scripts, whose `fn main` is the point.
#![allow(clippy::needless_doctest_main)]
#![warn(missing_docs)]

mod builder;
mod command;
pub mod diagnostics;
mod error;
mod link;
pub mod ptxas;
pub mod toolchain;

pub use builder::{
    Builder, Output, BARRIER_GUARD_FLAG, DEFAULT_ARCH, DEVICE_TARGET, ENV_KNOBS, GUARD_VAR,
    MODULE_STEM,
};
pub use command::{is_scrubbed, render as render_command};
pub use error::Error;
pub use link::{ptx_entries, LinkInputs, PANIC_SINK_SYMBOL, RECORDER_SCRIPT};
pub use toolchain::{install_command, PINNED_TOOLCHAIN};
