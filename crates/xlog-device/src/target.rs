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
