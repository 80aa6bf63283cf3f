//! CPU check (no GPU): kernel crates with the mistakes of a first kernel
//! (`tests/mistakes`) fail to build with rustc's whole diagnostic and a hint that
//! says what to do, or with one error of the build script naming the missing line
//! or the shared array declared twice.

use xlog_test_support::nested::cargo;

#[test]
fn first_kernel_mistakes_say_what_to_do() {
    let out = cargo(
        env!("CARGO_MANIFEST_DIR"),
        "../../tests/mistakes",
        env!("CARGO_TARGET_TMPDIR"),
        "mistakes",
        &["check", "--workspace", "--keep-going"],
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the mistakes built:\n{log}");
    for needle in [
        // The whole rustc diagnostic, with its span, is the build's error.
        "the kernel crate does not compile for the GPU",
        "cannot find type `Vec` in this scope",
        "let v: Vec<u32> = Vec::new();",
        "hint: kernels are `no_std`: use `core::…` instead of `std::…`",
        "functions with the \"gpu-kernel\" ABI cannot be called",
        "hint: a kernel cannot call another kernel: move the shared code into a plain `fn`",
    ] {
        assert!(log.contains(needle), "no `{needle}` in:\n{log}");
    }

    // Kernels without `xlog::kernel_module!()`: one error naming the line to add,
    // from the build script, before rustc reports each launcher's missing `MODULE`.
    let missing = "but never calls `xlog::kernel_module!()`";
    assert_eq!(log.matches(missing).count(), 1, "{log}");
    for needle in [
        "`mistake-no-module` declares kernels (`#[xlog_kernel]` in src/lib.rs)",
        "add this line at the crate root (src/lib.rs)",
        "\n      xlog::kernel_module!();\n",
    ] {
        assert!(log.contains(needle), "no `{needle}` in:\n{log}");
    }
    assert!(!log.contains("cannot find value `MODULE`"), "{log}");

    // Two `static_shared!` arrays of one name from one macro call: the GPU would
    // refuse the module only when loading it, so the build refuses it first.
    for needle in [
        "two static shared arrays of the module are named `__xlog_shared_mistake_shared_twice_S_",
        "give them different names",
    ] {
        assert!(log.contains(needle), "no `{needle}` in:\n{log}");
    }
}
