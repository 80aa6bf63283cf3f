//! CI checks (no GPU): the module defines the guide's kernels, `ptxas` accepts it,
//! every launcher agrees with the device build, and every shared-memory access is a
//! relaxed 32-bit word — static and dynamic 64-bit tiles, block collectives of
//! 32-bit values, warp collectives of 64-bit ones (which use none).

use xlog_guide_kernels::{self as k, KERNELS, MODULE};
use xlog_test_support::shared_ptx::{is_one_word, is_strong, shared_accesses};

#[test]
fn module_defines_the_guide_kernels() {
    let mut got: Vec<&str> = MODULE.kernels().iter().map(|(k, _)| *k).collect();
    let mut want = KERNELS.to_vec();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn ptxas_accepts_every_kernel() {
    let reports = xlog_build::ptxas::check_image(&MODULE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), 2);
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    for check in [
        k::histogram_u8::check_abi as fn() -> xlog::Result<()>,
        k::atomic_fold_i64::check_abi,
        k::block_sum_u64::check_abi,
        k::warp_sum_u32::check_abi,
        k::block_reverse_f32::check_abi,
        k::block_reverse_u64::check_abi,
        k::select_odd_u32::check_abi,
        k::block_collectives_u32::check_abi,
        k::warp_collectives_u64::check_abi,
    ] {
        check().unwrap();
    }
}

#[test]
fn every_shared_memory_access_is_a_relaxed_32_bit_word() {
    let accesses = shared_accesses(MODULE.ptx());
    // The analysis sees the accesses it guards.
    for kernel in [
        "block_reverse_f32",
        "block_reverse_u64",
        "block_sum_u64",
        "block_collectives_u32",
        "select_odd_u32",
    ] {
        let n = accesses.iter().filter(|(f, _)| f == kernel).count();
        assert!(n >= 2, "{kernel}: found {n} shared accesses");
    }
    let n = accesses
        .iter()
        .filter(|(f, _)| f == "warp_collectives_u64")
        .count();
    assert_eq!(n, 0, "warp collectives use no shared memory");
    let wide: Vec<_> = accesses.iter().filter(|(_, i)| !is_one_word(i)).collect();
    assert!(
        wide.is_empty(),
        "shared-memory accesses wider than one 32-bit word: {wide:#?}"
    );
    let weak: Vec<_> = accesses.iter().filter(|(_, i)| !is_strong(i)).collect();
    assert!(weak.is_empty(), "weak shared-memory accesses: {weak:#?}");
}
