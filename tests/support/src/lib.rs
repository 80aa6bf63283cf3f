//! Support code shared by xlog's test suites and benches.
//!
//! - [`Rng`]: a seeded xorshift64 generator for deterministic test data, with the
//!   two seeding rules the suites' recorded seeds rely on.
//! - `gpu_runtime` (feature `gpu`): device 0's runtime, or a failing test that
//!   says why.
//! - [`within_test_cap`]: whether a GPU case of `n` elements runs under
//!   `XLOG_TEST_MAX_LEN`.
//! - [`child`]: one test of the running test binary, run again alone in a child
//!   process (device panics, process-wide switches).
//! - [`bench`](mod@bench): the benches' timer (warm-up, interleaved rounds, medians), the
//!   rows of their results table, the results file the report is made from and the
//!   targets; with `gpu`, the table's heading.
//! - [`shared_ptx`]: the shared-memory accesses of a PTX module, for the checks that
//!   safe kernels touch shared memory only as relaxed 32-bit words.
//!
//! Without the `gpu` feature this crate has no xlog dependency.
//!
//! ```
//! use xlog_test_support::Rng;
//!
//! let mut rng = Rng::new(42);
//! let data = rng.u32s(1000);
//! assert_eq!(data, Rng::new(42).u32s(1000));
//! ```

#![warn(missing_docs)]

pub mod bench;
pub mod child;
#[cfg(feature = "gpu")]
mod gpu;
pub mod nested;
mod rng;
pub mod shared_ptx;

#[cfg(feature = "gpu")]
pub use gpu::gpu_runtime;
pub use rng::Rng;

/// Whether a GPU test case of `n` elements runs: all do, unless the environment
/// variable `XLOG_TEST_MAX_LEN` caps them (the compute-sanitizer passes, where
/// 2^24 elements take too long). A value that is not a number caps nothing.
pub fn within_test_cap(n: usize) -> bool {
    std::env::var("XLOG_TEST_MAX_LEN")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .is_none_or(|max| n <= max)
}
