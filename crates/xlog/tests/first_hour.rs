//! CPU check (no GPU): kernel crates with the mistakes of a first kernel
//! (`tests/mistakes`) fail to build with errors that say what to do: first one line
//! per error (`error: <crate>@<version>: …`, with xlog's notes and hint), then
//! rustc's whole diagnostic, or one error of the build script naming the missing
//! line or the shared array declared twice.

use xlog_test_support::nested::cargo;

/// The lines cargo printed for `package`'s build script errors, prefix removed.
fn errors_of<'a>(log: &'a str, package: &str) -> Vec<&'a str> {
    let prefix = format!("error: {package}@0.0.0: ");
    log.lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .collect()
}

/// The first line cargo printed for `package`'s build script errors.
fn first_error<'a>(log: &'a str, package: &str) -> &'a str {
    errors_of(log, package)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no `error: {package}@0.0.0:` line in:\n{log}"))
}

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

    // Every failure is a cargo `error:` of its crate, and cargo dumps no build
    // script output (`--- stdout`, `rerun-if` directives) around it.
    assert!(!log.contains("warning: mistake-"), "{log}");
    assert!(!log.contains("--- stdout"), "{log}");
    assert!(!log.contains("rerun-if-env-changed"), "{log}");

    // `std` and `Vec`: the whole rustc diagnostic, with its span, and the no_std
    // hint once in the summary lines and once after the diagnostics, not rustc's
    // `cargo add std`.
    let uses_std = errors_of(&log, "mistake-uses-std");
    let summary: Vec<&str> = uses_std
        .iter()
        .copied()
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(summary.len(), 3, "{log}");
    assert!(
        summary[0].starts_with(
            "device error[E0425]: cannot find type `Vec` in this scope at uses-std/src/lib.rs:8:12"
        ),
        "{log}"
    );
    let no_std = "kernels are `no_std`: use `core::…` instead of `std::…`";
    assert_eq!(
        summary.iter().filter(|l| l.contains(no_std)).count(),
        1,
        "{log}"
    );
    assert!(!summary.iter().any(|l| l.contains("cargo add")), "{log}");
    let whole = uses_std.join("\n");
    assert_contains_all(
        &whole,
        &[
            "the kernel crate does not compile for the GPU",
            " --> uses-std/src/lib.rs:8:12",
            "8 |     let v: Vec<u32> = Vec::new();",
            "hint: kernels are `no_std`: use `core::…` instead of `std::…`",
        ],
        &log,
    );

    // A kernel calling a kernel: the hint says the name is the kernel's launcher,
    // and rustc's follow-on argument count of the lowered entry point is left out.
    let calls = errors_of(&log, "mistake-calls-kernel").join("\n");
    assert_contains_all(
        &calls,
        &[
            "functions with the \"gpu-kernel\" ABI cannot be called",
            "hint: a kernel cannot call another kernel: `#[xlog_kernel]` turns `fn name` into \
         the kernel's launcher",
            "move the shared code into a plain `fn`",
            "note: left out: rustc's follow-on error",
        ],
        &log,
    );
    assert!(!log.contains("E0061"), "{log}");

    // `x.sqrt()` on an `f32`: the hint names the device math functions.
    let float = first_error(&log, "mistake-float-method");
    assert_contains_all(
        float,
        &[
            "device error[E0599]: no method named `sqrt` found for type `f32`",
            "at float-method/src/lib.rs:10:23",
            "hint: kernels are `no_std`, so the `f32` / `f64` math methods of `std`",
            "`xlog::device::math`",
            "`math::sqrt(x)`",
        ],
        &log,
    );
    assert!(!float.contains("__sqrt"), "{log}");

    // `x[i + 1]` with a `ThreadIndex`: compute with `i.get()`.
    let arithmetic = first_error(&log, "mistake-index-arithmetic");
    assert_contains_all(
        arithmetic,
        &[
            "cannot add `{integer}` to `ThreadIndex`",
            "a `ThreadIndex` is a witness, not a number",
            "`x[i.get() + 1]`",
        ],
        &log,
    );

    // `out[i.get()]` on a write view: the summary keeps xlog's notes.
    let writes = first_error(&log, "mistake-writes-by-usize");
    assert_contains_all(
        writes,
        &[
            "device error[E0277]: a `PerThread` write view is not indexed by `usize`",
            "writes go only to elements this thread owns",
            "for writes elsewhere declare `atomic(p)`",
        ],
        &log,
    );
    assert!(!writes.contains("is not implemented for `usize`"), "{log}");

    // An attribute mistake is not called a device error.
    let attribute = errors_of(&log, "mistake-undeclared-param").join("\n");
    assert!(
        attribute.starts_with("`#[xlog_kernel]` error: slice parameter `out` needs an access mode"),
        "{log}"
    );
    assert!(!attribute.contains("device error"), "{log}");
    assert!(!attribute.contains("does not compile for the GPU"), "{log}");

    // Kernels without `xlog::kernel_module!()`: one error naming the line to add,
    // from the build script and first, before rustc reports each launcher's missing
    // `MODULE`.
    let missing = "but never calls `xlog::kernel_module!()`";
    assert_eq!(log.matches(missing).count(), 1, "{log}");
    let no_module = errors_of(&log, "mistake-no-module");
    assert!(
        no_module[0].starts_with(
            "xlog device build: `mistake-no-module` declares kernels (`#[xlog_kernel]` in \
             src/lib.rs) but never calls `xlog::kernel_module!()`"
        ),
        "{log}"
    );
    assert!(
        no_module[0].contains("add this line at the crate root (src/lib.rs)"),
        "{log}"
    );
    assert!(no_module.contains(&"    xlog::kernel_module!();"), "{log}");
    assert!(!log.contains("cannot find value `MODULE`"), "{log}");

    // Two `static_shared!` arrays of one name from one macro call: the GPU would
    // refuse the module only when loading it, so the build refuses it first.
    assert_contains_all(
        first_error(&log, "mistake-shared-twice"),
        &[
            "two static shared arrays of the module are named `__xlog_shared_mistake_shared_twice_S_",
            "give them different names",
        ],
        &log,
    );
}

/// Asserts that `text` (part of the build's output `log`) contains every one of
/// `needles`, showing the whole log when one is missing.
fn assert_contains_all(text: &str, needles: &[&str], log: &str) {
    for needle in needles {
        assert!(text.contains(needle), "no `{needle}` in:\n{log}");
    }
}
