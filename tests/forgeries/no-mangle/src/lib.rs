//! Defines an entry point with a plain `#[no_mangle]` (edition 2021 needs no
//! `unsafe` for it) that writes through its parameter, next to a safe launcher of
//! that name taking a number.
use xlog::prelude::*;

xlog::kernel_module!();

#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub extern "gpu-kernel" fn poke(p: &mut u32) {
    *p = 1;
}

/// The descriptor `#[xlog_kernel] fn poke(addr: u64)` would export.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
#[used]
pub static __xlog_abi_poke: [u64; 3] = {
    use xlog::device::{abi, DeviceCopy};
    [
        abi::header(false, 1, 0, 0),
        abi::shape::<u64>(abi::ParamKind::Scalar),
        <u64 as DeviceCopy>::__LAYOUT,
    ]
};

#[cfg(not(target_arch = "nvptx64"))]
#[xlog_kernel]
pub fn poke(addr: u64) {}
