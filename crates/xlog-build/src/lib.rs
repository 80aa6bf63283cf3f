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
//!    nothing there, forwarding the cargo features the host build enabled for the
//!    crate (see [`Builder`]);
//! 3. link the recorded bitcode, internalizing everything but the kernels and their
//!    ABI descriptors;
//! 4. read each kernel's ABI descriptor from the PTX and check it against the
//!    entry's parameters ([`kernel_abis`]), failing the build on a mismatch;
//! 5. write `$OUT_DIR/xlog-module.ptx` (plus optional cubins from `ptxas`, one per
//!    kernel: [`pieces`]) and
//!    `$OUT_DIR/xlog-module.rs`, the one file `xlog_device::kernel_module!` includes:
//!    the module's owner, its PTX, the cubins, and the kernels with their
//!    descriptors, as literals.
//!
//! Modules:
//! - [`Builder`] and its [`Output`] (the `builder` module, whose `build` runs the
//!   steps below in order), with its settings and their `XLOG_*` overrides (the
//!   `settings` module) and the feature forwarding of the `features` module;
//! - the check, before step 1, that a crate with kernels calls `xlog::kernel_module!()`
//!   (the `module_call` module);
//! - the nested `cargo rustc` of step 2 (the `compile` module);
//! - the files of step 5 (the `output` module);
//! - [`kernel_abis`] and [`KernelAbi`]: the kernel table and its ABI check (the `abi`
//!   module, whose docs give the descriptor format);
//! - [`toolchain`]: the pinned nightly and its LLVM tools;
//! - [`ptxas`]: finding ptxas, cubins, and the spill check CI runs;
//! - [`diagnostics`]: device compiler output as a failed build shows it (each error
//!   once, with hints for first-kernel mistakes) and as `cargo:warning` lines;
//! - [`Error`]: what can fail, with its stderr tail and the failing command
//!   ([`VERBOSE_ENV`] for a device compilation that fails on the crate's code).

#![deny(unsafe_code)]
// The examples are build scripts, whose `fn main` is the point.
#![allow(clippy::needless_doctest_main)]
#![warn(missing_docs)]

mod abi;
mod builder;
mod command;
mod compile;
pub mod diagnostics;
mod error;
mod features;
mod link;
mod module_call;
mod output;
pub mod pieces;
pub mod ptxas;
mod settings;
pub mod toolchain;

pub use abi::{kernel_abis, KernelAbi, ABI_SYMBOL_PREFIX, ABI_VERSION};
pub use builder::{module_owner, recursion_warnings, Builder, Output, GUARD_VAR};
pub use command::{is_scrubbed, render as render_command};
pub use compile::{BARRIER_GUARD_FLAG, DEVICE_TARGET, KERNEL_CRATE_GUARDS};
pub use error::{Error, VERBOSE_ENV};
pub use link::{ptx_entries, LinkInputs, PANIC_SINK_SYMBOL, RECORDER_SCRIPT};
pub use output::MODULE_STEM;
pub use settings::{DEFAULT_ARCH, ENV_KNOBS};
pub use toolchain::{install_command, PINNED_TOOLCHAIN};
