//! CI check (no GPU): the embedded module defines every kernel, and `ptxas`
//! validates it for sm_80 and sm_90 without register spills.
//!
//! Needs `ptxas`: `pip install nvidia-cuda-nvcc` (or set XLOG_PTXAS). Without it the
//! test fails with that instruction; it never passes silently.

use xlog_device_kernels::{KERNELS, MODULE, PANICKING_KERNELS};

#[test]
fn module_defines_exactly_the_listed_kernels() {
    let mut expected: Vec<&str> = KERNELS.to_vec();
    expected.sort_unstable();
    let mut found: Vec<&str> = MODULE.kernels().iter().map(|(k, _)| *k).collect();
    found.sort_unstable();
    assert_eq!(found, expected);
    assert_eq!(MODULE.name(), "xlog-device-kernels");
}

#[test]
fn ptx_has_the_expected_shape() {
    let ptx = MODULE.ptx();
    assert!(ptx.contains(".target sm_80"), "default arch is sm_80");
    assert!(ptx.contains(".address_size 64"));
    // The panic record pointer stays visible for cuModuleGetGlobal.
    assert!(
        ptx.contains(".visible .global .align 8 .b8 __xlog_panic_sink[8]"),
        "panic sink missing"
    );
    // Dynamic and static shared memory declarations.
    assert!(ptx.contains(".extern .shared .align 16 .b8 __xlog_dynamic_shared[];"));
    assert!(ptx.contains("__xlog_shared_xlog_device_kernels_TILE_"));
    // Barriers use the non-aligned form (robust to duplication into branches).
    assert!(ptx.contains("barrier.sync 0;"));
    // Each barrier kind has its own hardware barrier: PTX leaves mixing
    // `barrier.sync` and `barrier.red` (or two reductions) on one barrier
    // unpredictable, while separate barriers only wait.
    for (op, id) in [
        ("barrier.red.popc.u32", 1),
        ("barrier.red.and.pred", 2),
        ("barrier.red.or.pred", 3),
    ] {
        let uses: Vec<&str> = ptx.lines().filter(|l| l.contains(op)).collect();
        assert!(!uses.is_empty(), "{op} missing");
        for line in uses {
            assert!(
                line.contains(&format!(", {id}, %p;")),
                "{op} not on barrier {id}: {line}"
            );
        }
    }
    // Internalization: only kernels are visible functions.
    assert!(
        !ptx.contains(".visible .func"),
        "a device function escaped internalization"
    );
}

#[test]
fn ptxas_accepts_the_module_for_sm80_and_sm90_without_spills() {
    // `bodies::recurse`, the `recursion` kernel's device function, saves its
    // registers across the recursive call: spills are what recursion costs.
    let allowed: Vec<&str> = PANICKING_KERNELS
        .iter()
        .copied()
        .chain(["6bodies7recurse"])
        .collect();
    let reports =
        xlog_build::ptxas::check_module(MODULE.name(), MODULE.ptx(), &["sm_80", "sm_90"], &allowed)
            .unwrap_or_else(|e| panic!("{e}"));
    for report in &reports {
        for kernel in KERNELS {
            let f = report
                .functions
                .iter()
                .find(|f| f.name == *kernel)
                .unwrap_or_else(|| {
                    panic!(
                        "ptxas -arch={} did not report kernel `{kernel}`",
                        report.arch
                    )
                });
            assert!(f.is_entry, "`{kernel}` is not an entry point");
        }
    }
}

/// The body of kernel `name` in `ptx`: from its `.entry` line to the next entry.
fn kernel_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no kernel `{name}` in the PTX"));
    let rest = &ptx[start + 1..];
    let end = rest.find(".entry ").unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn barriers_are_not_duplicated_into_branches() {
    // rust-lang/rust#137086: jump threading can copy the code around a barrier into
    // both arms of a branch. With the guard, each kernel keeps one barrier per
    // source barrier.
    for (kernel, barriers) in [
        ("barrier_between_branches", 1),
        ("static_shared_reverse", 1),
        ("block_reduce_warp", 1),
    ] {
        let body = kernel_body(MODULE.ptx(), kernel);
        let found = body.matches("barrier.sync").count() + body.matches("bar.sync").count();
        assert_eq!(
            found, barriers,
            "`{kernel}` has {found} barrier instructions"
        );
    }
}
