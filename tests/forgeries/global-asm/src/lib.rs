//! Defines an entry point and a matching ABI descriptor in `global_asm!` (no
//! `unsafe` keyword), next to a safe launcher of that name: the descriptor is the
//! one `#[xlog_kernel] fn poke(addr: u64)` would export.
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]
use xlog::prelude::*;

xlog::kernel_module!();

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(
    ".visible .global .align 8 .u64 __xlog_abi_poke[3] = {{144115188075855873, 8796093022216, 5612487827837443617}};",
    ".visible .entry poke(.param .u64 p) {{ .reg .b64 %rd<2>; ld.param.u64 %rd1, [p]; st.global.u32 [%rd1], 1; ret; }}"
);

#[cfg(not(target_arch = "nvptx64"))]
#[xlog_kernel]
pub fn poke(addr: u64) {}
