//! CPU checks (no GPU): every launcher's ABI descriptor against the one the device
//! build exported, and the PTX through ptxas.

use xlog::device::abi::HeaderAbi;
use xlog_abi_kernels::{divergent, inner, names, r#loop, scale, scale_u32, settings, Elem, MODULE};

#[test]
fn launchers_agree_with_the_device_build() {
    scale::check_abi().unwrap();
    names::check_abi().unwrap();
    inner::fill_super::check_abi().unwrap();
    scale_u32::check_abi().unwrap();
    settings::check_abi().unwrap();
    // A raw identifier names the entry point without its `r#`.
    r#loop::check_abi().unwrap();
    assert!(MODULE.has_kernel("loop"));
    // Every kernel in the module is checked here or below.
    assert_eq!(MODULE.kernels().len(), 7);
}

#[test]
fn the_feature_reaches_the_device_build() {
    let expected = if cfg!(feature = "wide") { 8 } else { 4 };
    assert_eq!(std::mem::size_of::<Elem>(), expected);
    // The device descriptor's element size for `x` (parameter 2).
    let device = MODULE.kernel_abi("scale").unwrap();
    assert_eq!(device[3] & 0xff_ffff_ffff, expected as u64);
}

#[test]
fn a_divergent_build_is_refused_naming_the_parameter() {
    let result = divergent::check_abi();
    if cfg!(debug_assertions) {
        let msg = result.unwrap_err().to_string();
        assert!(msg.contains("parameter `out` (#1)"), "{msg}");
        assert!(msg.contains("elements of 8 bytes"), "{msg}");
        assert!(msg.contains("elements of 4 bytes"), "{msg}");
    } else {
        result.unwrap();
    }
}

#[test]
fn the_shadowing_type_is_not_the_element_type() {
    assert_eq!(inner::SHADOW_SIZE, 1);
    let device = MODULE.kernel_abi("fill_super").unwrap();
    assert_eq!(device[1] & 0xff_ffff_ffff, 64);
}

#[test]
fn ptxas_accepts_every_kernel() {
    xlog_build::ptxas::check_image(&MODULE).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn launch_settings_are_part_of_the_device_descriptor() {
    let header = HeaderAbi::decode(MODULE.kernel_abi("settings").unwrap()[0]);
    assert_eq!((header.block, header.shared), (128, 512));
    let plain = HeaderAbi::decode(MODULE.kernel_abi("names").unwrap()[0]);
    assert_eq!((plain.block, plain.shared, plain.params), (0, 0, 8));
}
