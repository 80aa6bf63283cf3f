//! Hand-written kernels that exercise every `xlog-device` intrinsic.
//!
//! This crate is a test fixture: its `build.rs` compiles it to PTX with
//! `xlog-build`, [`MODULE`] embeds the result, `tests/ptx.rs` validates it with
//! `ptxas` (CI, no GPU), and `tests/gpu_intrinsics.rs` (feature `gpu`) runs every
//! kernel on a GPU, or on the simulator (`XLOG_BACKEND=sim`), against a CPU reference.
//!
//! Entry points are written by hand, the way `#[xlog_kernel]` lowers them: `extern
//! "gpu-kernel"`, `#[no_mangle]`, slices as `(pointer, length)` scalar pairs. One
//! macro defines each of them for both builds: with feature `gpu`, the host build
//! gets the simulator's entry point of every kernel (`host_entry`, with feature `gpu`). Kernel bodies
//! that need no raw pointers live in [`bodies`].
//!
//! Launch contracts (block and grid shapes, shared memory) are given per kernel in
//! [`KERNELS`]' docs and the GPU tests.

xlog_device::kernel_module!();

pub mod bodies;

/// The entry points this module must define, checked against the PTX by the tests.
pub const KERNELS: &[&str] = &[
    "saxpy",
    "thread_indices",
    "warp_shuffles_u32",
    "warp_shuffle_xor_f64",
    "warp_votes",
    "warp_match_labels",
    "warp_reduce_u32",
    "atomic_histogram",
    "atomic_min_max_i64",
    "atomic_min_max_u32",
    "atomic_cas_counter",
    "atomic_exchange",
    "atomic_bitwise_u32",
    "atomic_add_f32",
    "atomic_add_f64",
    "block_reduce_sum",
    "block_reduce_warp",
    "block_scan_inclusive",
    "block_barrier_reductions",
    "barrier_between_branches",
    "static_shared_reverse",
    "math_f32",
    "math_f64",
    "deliberate_panic",
    "out_of_bounds_write",
    "recursion",
];

/// The kernels that fault on purpose (panic, or recurse past the stack); exempt
/// from the spill check because their paths are not performance-relevant.
pub const PANICKING_KERNELS: &[&str] = &["deliberate_panic", "out_of_bounds_write", "recursion"];

/// Number of outputs `math_f32` writes per input (layout: `out[k * n + i]`).
pub const MATH_F32_OUTPUTS: usize = 11;
/// Number of outputs `math_f64` writes per input (layout: `out[k * n + i]`).
pub const MATH_F64_OUTPUTS: usize = 9;

// On the host the entry points exist only as the simulator's, which need xlog-runtime
// (feature `gpu`).
#[cfg(any(target_arch = "nvptx64", feature = "gpu"))]
mod entries;
#[cfg(all(not(target_arch = "nvptx64"), feature = "gpu"))]
pub use entries::{host_entry, HOST_ENTRIES};
