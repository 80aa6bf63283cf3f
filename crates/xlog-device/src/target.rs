//! How each hardware function is built for the two targets.
//!
//! A function that reads hardware state has two bodies, chosen by
//! [`device_or_sim!`]: on `nvptx64` the device body (inline PTX, `core::arch::nvptx`),
//! on the host the simulator body, which reads the simulated launch of
//! [`crate::sim`]. Only the selected body is expanded, so the device body may use
//! nvptx-only assembly and the simulator body `std`.

/// `device_or_sim!(device: { .. }, sim: { .. })`: the device block on nvptx, the
/// simulator block on the host.
#[cfg(target_arch = "nvptx64")]
macro_rules! device_or_sim {
    (device: $device:block, sim: $sim:block $(,)?) => {
        $device
    };
}

/// `device_or_sim!(device: { .. }, sim: { .. })`: the device block on nvptx, the
/// simulator block on the host.
#[cfg(not(target_arch = "nvptx64"))]
macro_rules! device_or_sim {
    (device: $device:block, sim: $sim:block $(,)?) => {
        $sim
    };
}

/// `warp_asm!(mask; "prefix", "suffix"; operands..)`: inline PTX for a warp
/// instruction whose member mask sits between `prefix` and `suffix`. When `mask` is
/// the whole warp the mask is the immediate `0xffffffff`; otherwise it is the
/// register operand `m`. ptxas compiles a register mask it cannot prove uniform
/// into a `WARPSYNC.COLLECTIVE` loop around the instruction (about six
/// instructions for one), and an immediate full mask into the plain instruction,
/// so full warps, every warp of the usual block shapes, take the short form.
#[cfg(target_arch = "nvptx64")]
macro_rules! warp_asm {
    ($mask:expr; $prefix:expr, $suffix:expr; $($operands:tt)*) => {{
        let mask: u32 = $mask;
        if mask == u32::MAX {
            core::arch::asm!(concat!($prefix, "0xffffffff", $suffix), $($operands)*)
        } else {
            core::arch::asm!(concat!($prefix, "{m}", $suffix), m = in(reg32) mask, $($operands)*)
        }
    }};
}
