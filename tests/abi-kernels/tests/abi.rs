//! CPU checks (no GPU): every launcher's ABI descriptor against the one the device
//! build exported, and the PTX through ptxas.

use xlog::device::abi::HeaderAbi;
use xlog_abi_kernels::{
    divergent, generic, inner, names, r#loop, scale, scale_u32, settings, Elem, MODULE,
};

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
    assert_eq!(MODULE.kernels().len(), 7 + GENERIC_ENTRIES.len());
}

/// The entry points of the generic kernels: one per instantiation, named after the
/// kernel, its suffix and its types.
const GENERIC_ENTRIES: &[&str] = &[
    "copy__u8",
    "copy__u16",
    "copy__u32",
    "copy__u64",
    "copy__i32",
    "copy__i64",
    "copy__f32",
    "copy__f64",
    "copy__Rgb",
    "affine__i32",
    "affine__u32",
    "affine__f32",
    "affine__f64",
    "pick__u8__u16",
    "pick__u8__u32",
    "pick__u8__u64",
    "pick__f64__u16",
    "pick__f64__u32",
    "pick__f64__u64",
    "pick__i64__u16",
    "pick__i64__u32",
    "pick__i64__u64",
    "count__u32",
    "count__u64",
    "count__f32",
    "block_sums_blocks__u32",
    "block_sums_blocks__u64",
    "block_sums_blocks__f64",
];

#[test]
fn every_instantiation_of_a_generic_kernel_agrees_with_the_device_build() {
    for entry in GENERIC_ENTRIES {
        assert!(MODULE.has_kernel(entry), "{entry}");
    }
    generic::copy::check_abi_all().unwrap();
    generic::affine::check_abi_all().unwrap();
    generic::pick::check_abi_all().unwrap();
    generic::count::check_abi_all().unwrap();
    generic::block_sums::check_abi_all().unwrap();
    // One instantiation at a time, named by its types.
    generic::copy::check_abi::<u16>().unwrap();
    generic::pick::check_abi::<f64, u16>().unwrap();
}

#[test]
fn each_instantiation_has_its_own_descriptor() {
    // `x`'s element size (parameter 1) differs per instantiation of `copy`.
    for (entry, size) in [
        ("copy__u8", 1),
        ("copy__u16", 2),
        ("copy__f64", 8),
        ("copy__Rgb", 3),
    ] {
        let device = MODULE.kernel_abi(entry).unwrap();
        assert_eq!(device[1] & 0xff_ffff_ffff, size, "{entry}");
    }
    // The launch settings are every instantiation's.
    for entry in ["block_sums_blocks__u32", "block_sums_blocks__f64"] {
        let header = HeaderAbi::decode(MODULE.kernel_abi(entry).unwrap()[0]);
        assert_eq!((header.block, header.params), (128, 3), "{entry}");
    }
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
