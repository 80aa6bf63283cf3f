//! Device 0 for the GPU suites.

use xlog_runtime::Runtime;

/// Device 0's shared runtime. Panics (fails the test) when it cannot be opened: a
/// GPU suite that was requested never passes by skipping.
pub fn gpu_runtime() -> Runtime {
    Runtime::get(0)
        .unwrap_or_else(|e| panic!("the GPU suite was requested but device 0 cannot be used: {e}"))
}
