//! CPU check (no GPU): kernel crates that try to make a safe launcher run code it
//! was not generated for (`tests/forgeries`) fail to build, each with the message
//! of the guard that stops it:
//!
//! - an entry point and ABI descriptor written in `global_asm!` (the kernel crate's
//!   device build allows no unstable feature but `abi_gpu_kernel`);
//! - an entry point and descriptor exported with a plain `#[no_mangle]` in edition
//!   2021 (unsafe attributes must be written `#[unsafe(..)]`);
//! - a crate whose build script compiles another crate's kernels into its module;
//! - an example and a binary of a kernel crate (the binary has the lib's crate
//!   name) that claim the crate's module for a launcher without the kernel's
//!   `block = 256`;
//! - a kernel crate that names itself `xlog` and `core` (`extern crate self as ..`)
//!   so that generated paths would reach its own look-alike `DeviceCopy` and
//!   `assert!`.
//!
//! Without the guards, each of them builds and its launcher's `check_abi` passes.

use xlog_test_support::nested::cargo;

#[test]
fn forged_entry_points_and_borrowed_modules_do_not_build() {
    let out = cargo(
        env!("CARGO_MANIFEST_DIR"),
        "../forgeries",
        env!("CARGO_TARGET_TMPDIR"),
        "forgeries",
        &["check", "--workspace", "--all-targets", "--keep-going"],
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the forgeries built:\n{log}");
    for (what, needle) in [
        ("global_asm! entry point", "asm_experimental_arch"),
        (
            "#[no_mangle] entry point",
            "unsafe attribute used without unsafe",
        ),
        (
            "another crate's kernels",
            "the launcher of `saxpy` cannot trust",
        ),
        (
            "an example's launcher",
            "the launcher of `tile_rev` cannot trust",
        ),
    ] {
        assert!(log.contains(needle), "{what}: no `{needle}` in:\n{log}");
    }
}
