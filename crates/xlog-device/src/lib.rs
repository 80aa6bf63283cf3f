//! The device library of xlog kernels: what `cuda_std` is to Rust-CUDA.
//!
//! `xlog-device` is `no_std` and builds for two targets:
//!
//! - **`nvptx64-nvidia-cuda`** (pinned nightly, driven by `xlog-build`): the real
//!   implementation, on `core::arch::nvptx` and inline PTX.
//! - **the host** (stable, with `std`): the same functions run kernel bodies in the
//!   CPU simulator, [`sim`]. Indices come from the simulated launch, block barriers
//!   and warp collectives switch between the block's threads (stackful coroutines),
//!   shared memory is a per-block host allocation, atomics are host atomics, and a
//!   panic stops the launch with the GPU's [`panic::PanicRecord`]. Called outside a
//!   simulated launch, a function that reads hardware state panics with "... runs
//!   only inside a kernel launch (GPU or the xlog simulator)"; pure functions
//!   ([`math`]'s software routines, [`ThreadIndex`] arithmetic, [`DeviceCopy`]) work
//!   anywhere.
//!
//! A kernel crate calls [`kernel_module!`] once at its root. On the host this defines
//! `pub static MODULE: ModuleImage` (the PTX that the crate's `build.rs` produced with
//! `xlog-build`); on the device it links this crate, whose `#[panic_handler]`
//! reports panics to the host (see [`panic`](mod@panic)).
//!
//! ```
//! use xlog_device::{thread, view::Out};
//!
//! /// The body of `#[xlog_kernel(write(out))] fn iota(out: &mut [u32])` after the
//! /// macro: each thread writes only the element its `ThreadIndex` names.
//! pub fn iota(out: &mut Out<'_, u32>) {
//!     let i = thread::index_1d();
//!     if i < out.len() {
//!         out[i] = i.get() as u32;
//!     }
//! }
//! ```
//!
//! Modules, one per hardware concept:
//!
//! | module | what |
//! | --- | --- |
//! | [`thread`] | thread / block / grid indices; the witnesses [`ThreadIndex`], [`thread::BlockIndex`], [`thread::WarpIndex`], [`thread::LocalIndex`]; grid- and block-stride loops |
//! | [`barrier`] | block barriers, barrier reductions, memory fences |
//! | [`shared`] | static ([`shared::SharedArray`], [`static_shared!`]) and dynamic shared memory; safe phased [`shared::Tile`]s |
//! | [`warp`] | shuffles, votes, warp barrier |
//! | [`atomic`] | atomics on 32/64-bit integers and `f32`/`f64` |
//! | [`collective`] | safe warp and block reduce, scan, broadcast and ballot ranks |
//! | [`exchange`] | block exchanges at data-dependent positions: [`exchange::SharedWords`] (any index, atomic words), warp label matching |
//! | [`lookback`] | inter-block communication: tiles by block index (or tickets in start order) and decoupled look-back, with [`lookback::TileChunk`] witnesses |
//! | [`transpose`] | tiled transposes: [`transpose::TransposedIndex`], the witness of a permuted output position |
//! | [`vector`] | 64- and 128-bit vector loads and stores of small arrays |
//! | [`math`] | `f32`/`f64` functions with documented accuracy (no libdevice) |
//! | [`view`] | device-side views of kernel parameters ([`view::Out`], [`view::InOut`], [`view::AtomicView`]) and their [`view::Ownership`] |
//! | [`copy`] | [`DeviceCopy`], the plain-device-data trait |
//! | [`panic`](mod@panic) | the panic record the host reads after a device panic |
//! | [`module`] | [`ModuleImage`], the compiled module a kernel crate exports |
//! | [`abi`] | kernel ABI descriptors, compared between host and device builds |
//! | [`sim`] | (host only) the CPU simulator: [`sim::run`] runs a kernel body once per simulated thread |
//! | [`callgraph`] | (host only) the kernels of a PTX module that recurse, for `xlog-build`'s warning and the runtime's stack-overflow report |

#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(asm_experimental_arch, stdarch_nvptx, allow_internal_unstable)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

#[macro_use]
mod target;

pub mod abi;
pub mod atomic;
pub mod barrier;
#[cfg(not(target_arch = "nvptx64"))]
pub mod callgraph;
pub mod collective;
pub mod copy;
pub mod exchange;
pub mod lookback;
pub mod math;
pub mod module;
pub mod panic;
pub mod shared;
#[cfg(not(target_arch = "nvptx64"))]
pub mod sim;
pub mod thread;
pub mod transpose;
pub mod vector;
pub mod view;
pub mod warp;
mod window;

pub use copy::DeviceCopy;

/// `core`, for this crate's exported macros: `$crate::__core::..` cannot be taken
/// over by a crate that names one of its own modules `core`
/// (`extern crate self as core;`), as `::core::..` could.
#[doc(hidden)]
pub use ::core as __core;
pub use module::ModuleImage;
pub use thread::{Dim3, ThreadIndex};

/// The names kernels usually need: `use xlog_device::prelude::*;`.
pub mod prelude {
    pub use crate::copy::DeviceCopy;
    pub use crate::thread::{self, ThreadIndex};
    pub use crate::view::{AtomicView, InOut, Out};
    pub use crate::{
        atomic, barrier, collective, exchange, lookback, math, shared, transpose, view, warp,
    };
}
