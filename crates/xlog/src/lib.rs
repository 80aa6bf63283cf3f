//! xlog: CUDA kernels written in Rust, launched through typed wrappers that fence
//! every cross-stream hazard for you.
//!
//! A kernel crate (compiled for the host by cargo, and for the device by its
//! `build.rs` through `xlog-build`):
//!
//! ```ignore
//! use xlog::prelude::*;
//! xlog::kernel_module!();
//!
//! #[xlog_kernel(read(x), read_write(y))]
//! pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
//!     let i = thread::index_1d();
//!     if i < y.len() {
//!         y[i] = a * x[i.get()] + y[i];
//!     }
//! }
//! ```
//!
//! An application:
//!
//! ```ignore
//! let rt = xlog::Runtime::get(0)?;
//! let x = rt.upload(&host_x)?;
//! let mut y = rt.upload(&host_y)?;
//! let s = rt.stream()?;
//! kernels::saxpy::launch(&s, LaunchConfig::for_len(n), 2.0, &x, &mut y)?;
//! let out: Vec<f32> = y.download(&rt.stream()?)?; // waits on the launch's write
//! ```
//!
//! | crate | what |
//! | --- | --- |
//! | [`device`] (`xlog-device`) | the `no_std` device library: indices, barriers, shared memory, warps, atomics, math |
//! | `xlog-runtime` (host only, re-exported here) | allocator stack, streams, tracking, copies, recorder |
//! | `xlog-macros` | `#[xlog_kernel]` and `#[derive(DeviceCopy)]` |
//! | `xlog-build` | used from `build.rs` to compile a kernel crate to PTX |
#![no_std]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub use xlog_device as device;
pub use xlog_device::{kernel_module, DeviceCopy, ModuleImage, ThreadIndex};
pub use xlog_macros::{xlog_kernel, DeviceCopy};

#[cfg(not(target_arch = "nvptx64"))]
pub use xlog_runtime::*;

/// `use xlog::prelude::*;` in kernel crates and applications.
pub mod prelude {
    pub use crate::{xlog_kernel, DeviceCopy};
    pub use xlog_device::prelude::*;
    #[cfg(not(target_arch = "nvptx64"))]
    pub use xlog_runtime::{DeviceBuffer, LaunchConfig, Runtime, Stream};
}

/// What generated code refers to. Not a public API.
#[doc(hidden)]
pub mod __private {
    /// `core`, for generated code that must not name `::core` (see `xlog-macros`).
    pub use ::core;
    #[cfg(not(target_arch = "nvptx64"))]
    pub use xlog_runtime as rt;

    /// The bound of the function `#[xlog_kernel]` puts beside each launcher type,
    /// under the kernel's name, so that calling a kernel like a function says how
    /// to launch it. Implemented only for `Infallible`: the function can never run.
    #[cfg(not(target_arch = "nvptx64"))]
    #[diagnostic::on_unimplemented(
        message = "`{K}` is a kernel, not a function: launch it with `{K}::launch(&stream, config, ..)`",
        label = "a kernel's arguments go to `{K}::launch`, after the stream and the launch configuration",
        note = "`#[xlog_kernel]` turns `fn {K}` into a launcher type: `{K}::launch(&stream, \
                LaunchConfig::for_len(n), ..)` queues the kernel on a stream; to share code \
                between kernels, move it into a plain `fn`"
    )]
    pub trait KernelIsNotAFunction<K> {
        /// Never called: no value of the only implementing type exists.
        fn never(self) -> !;
    }

    #[cfg(not(target_arch = "nvptx64"))]
    impl<K> KernelIsNotAFunction<K> for core::convert::Infallible {
        fn never(self) -> ! {
            match self {}
        }
    }

    /// The largest element alignment a kernel parameter may have: device
    /// allocations (and views at element offsets into them) are aligned to 256 bytes.
    pub const MAX_ELEMENT_ALIGN: usize = 256;

    /// Device-side support for generated entry points.
    pub mod device {
        pub use xlog_device::module::__owned_by;
        pub use xlog_device::view::{InOut, Out};
        pub use xlog_device::{abi, view, DeviceCopy};

        /// A pointer usable for a slice of `len` elements: `ptr`, or a dangling,
        /// aligned pointer when `len` is 0 (the runtime's empty buffers are null).
        #[inline(always)]
        pub fn non_null_or_dangling<T>(ptr: *mut T, len: usize) -> *mut T {
            if len == 0 {
                core::ptr::NonNull::dangling().as_ptr()
            } else {
                ptr
            }
        }

        /// `core::slice::from_raw_parts`, tolerating a null pointer for empty slices.
        ///
        /// # Safety
        /// 1. When `len > 0`, `ptr` addresses `len` initialised elements, not written
        ///    by anyone while the returned slice lives.
        #[inline(always)]
        pub unsafe fn slice_from_raw_parts<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
            let ptr = non_null_or_dangling(ptr as *mut T, len);
            // SAFETY: obligation 1, and a dangling aligned pointer is valid for len 0.
            unsafe { core::slice::from_raw_parts(ptr, len) }
        }
    }
}
