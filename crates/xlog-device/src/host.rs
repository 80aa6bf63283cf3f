//! What hardware-reading functions do when compiled for the host.
//!
//! Kernel bodies type-check on the host, but nothing runs them there yet: each
//! function that needs the GPU calls [`unsupported`], which panics with its name.
//! A CPU simulator will replace these calls with thread-local launch state.

/// Panics: `what` only runs on the GPU.
#[cfg(not(target_arch = "nvptx64"))]
#[cold]
#[track_caller]
pub(crate) fn unsupported(what: &str) -> ! {
    panic!("xlog_device::{what} only runs on the GPU (compiled for the host, where no simulator is available yet)")
}

/// On nvptx: the device block; on the host: [`unsupported`] naming the function (the
/// block is not even expanded there, so it may use nvptx-only inline assembly).
#[cfg(target_arch = "nvptx64")]
macro_rules! device_only {
    ($name:expr, $device:block) => {
        $device
    };
}

/// On nvptx: the device block; on the host: [`unsupported`] naming the function (the
/// block is not even expanded there, so it may use nvptx-only inline assembly).
#[cfg(not(target_arch = "nvptx64"))]
macro_rules! device_only {
    ($name:expr, $device:block) => {
        $crate::host::unsupported($name)
    };
}
