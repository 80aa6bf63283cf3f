//! The driver's handle types and a device's limits: what both platforms, the CUDA
//! driver (`driver/cuda.rs`) and the simulator (`sim/`), hand out.

use cudarc::driver::sys;

/// A context (`CUcontext`; null on the simulator, which has none).
pub(crate) type RawContext = sys::CUcontext;
/// A stream: a `CUstream`, or on the simulator a pointer to its own stream object.
pub(crate) type RawStream = sys::CUstream;
/// An event (`CUevent`, or the simulator's).
pub(crate) type RawEvent = sys::CUevent;
/// A kernel entry point (`CUfunction`, or the simulator's).
pub(crate) type RawFunction = sys::CUfunction;
/// A loaded module (`CUmodule`, or the simulator's).
pub(crate) type RawModule = sys::CUmodule;

/// The value of a memset wider than a byte, repeated over `count` words.
#[derive(Clone, Copy, Debug)]
pub(crate) enum MemsetWord {
    /// `cuMemsetD16Async`.
    W16(u16),
    /// `cuMemsetD32Async`.
    W32(u32),
}

impl MemsetWord {
    /// Bytes in one word (also the alignment the memset needs).
    pub(crate) fn bytes(self) -> usize {
        match self {
            MemsetWord::W16(_) => 2,
            MemsetWord::W32(_) => 4,
        }
    }

    /// The driver call that fills words of this width.
    pub(crate) fn call(self) -> &'static str {
        match self {
            MemsetWord::W16(_) => "cuMemsetD16Async",
            MemsetWord::W32(_) => "cuMemsetD32Async",
        }
    }
}

/// Limits and identity of one device, read once when its context opens.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: u32,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors (SMs).
    pub multiprocessors: u32,
    /// Maximum threads in one block.
    pub max_threads_per_block: u32,
    /// Maximum block dimensions.
    pub max_block_dim: [u32; 3],
    /// Maximum grid dimensions.
    pub max_grid_dim: [u32; 3],
    /// Maximum shared memory per block a kernel may opt into, in bytes.
    pub max_shared_per_block_optin: u32,
    /// Shared memory per block without opt-in, in bytes.
    pub max_shared_per_block: u32,
    /// Whether `cuMemAllocAsync` is supported.
    pub memory_pools: bool,
    /// Total device memory in bytes.
    pub total_memory: usize,
    /// Device memory free when the device was opened, in bytes (other contexts and
    /// processes hold the rest): the default budget.
    pub free_memory: usize,
}
