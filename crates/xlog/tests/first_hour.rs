//! CPU check (no GPU): kernel crates with the mistakes of a first kernel
//! (`tests/mistakes`) fail to build with errors that say what to do: each error once
//! (`error: <crate>@<version>: device error…`, rustc's diagnostic without the
//! suggestions a hint replaces), the hints, then what failed, without the command
//! line (`XLOG_BUILD_VERBOSE` shows it); or one error of the build script naming the
//! missing line or the shared array declared twice; or, for host code that calls a
//! kernel like a function, rustc's error naming `launch`.

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

    // Every device build error once, and no command line unless asked.
    assert!(!log.contains("command: "), "{log}");
    assert!(!log.contains("CARGO_ENCODED_RUSTFLAGS"), "{log}");
    assert!(
        log.contains("(XLOG_BUILD_VERBOSE=1 shows the command)"),
        "{log}"
    );

    // `std` and `Vec`: each error once, as rustc printed it with its span, then the
    // no_std hint once, not rustc's `cargo add std`; what failed comes last.
    let uses_std = errors_of(&log, "mistake-uses-std");
    assert_eq!(
        uses_std[0], "device error[E0425]: cannot find type `Vec` in this scope",
        "{log}"
    );
    assert_eq!(uses_std[1], " --> uses-std/src/lib.rs:8:12", "{log}");
    let whole = uses_std.join("\n");
    assert_eq!(
        whole
            .matches("error[E0425]: cannot find type `Vec` in this scope")
            .count(),
        1,
        "{log}"
    );
    assert_eq!(whole.matches("kernels are `no_std`").count(), 1, "{log}");
    assert!(!whole.contains("cargo add"), "{log}");
    assert_contains_all(
        &whole,
        &[
            "8 |     let v: Vec<u32> = Vec::new();",
            "device error[E0433]: cannot find module or crate `std` in this scope",
            "hint: kernels are `no_std`: use `core::…` instead of `std::…`",
        ],
        &log,
    );
    assert!(
        uses_std.last().unwrap().starts_with(
            "xlog device build: device compilation of `mistake_uses_std` (nvptx64-nvidia-cuda, \
             sm_80) failed: the kernel crate does not compile for the GPU"
        ),
        "{log}"
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
    let float = errors_of(&log, "mistake-float-method").join("\n");
    assert_contains_all(
        &float,
        &[
            "device error[E0599]: no method named `sqrt` found for type `f32`",
            "--> float-method/src/lib.rs:10:23",
            "hint: kernels are `no_std`, so the `f32` / `f64` math methods of `std`",
            "`xlog::device::math`",
            "`math::sqrt(x)`",
        ],
        &log,
    );
    assert!(!float.contains("__sqrt"), "{log}");

    // `x[i + 1]` with a `ThreadIndex`: compute with `i.get()`.
    let arithmetic = errors_of(&log, "mistake-index-arithmetic").join("\n");
    assert_contains_all(
        &arithmetic,
        &[
            "cannot add `{integer}` to `ThreadIndex`",
            "a `ThreadIndex` is a witness, not a number",
            "`x[i.get() + 1]`",
        ],
        &log,
    );

    // `out[i.get()]` on a write view: xlog's notes say what to do.
    let writes = errors_of(&log, "mistake-writes-by-usize").join("\n");
    assert!(
        writes
            .starts_with("device error[E0277]: a `PerThread` write view is not indexed by `usize`"),
        "{log}"
    );
    assert_contains_all(
        &writes,
        &[
            "writes go only to elements this thread owns",
            "for writes elsewhere declare `atomic(p)`",
        ],
        &log,
    );

    // An atomic operation on a `read(..)` parameter: declare it `atomic(..)`.
    let atomic = errors_of(&log, "mistake-atomic-on-read").join("\n");
    assert_contains_all(
        &atomic,
        &[
            "device error[E0599]: no method named `fetch_add` found for reference `&[u32]`",
            "--> atomic-on-read/src/lib.rs:9:14",
            "hint: atomic operations are methods of an atomic view, which a parameter gets only \
             by declaring it `atomic(name)`",
        ],
        &log,
    );

    // A write through a `read(..)` parameter: the write modes, not rustc's `&mut`
    // (or `IndexMut`) suggestion.
    let read_write = errors_of(&log, "mistake-writes-read-slice").join("\n");
    assert_contains_all(
        &read_write,
        &[
            "device error[E0594]: cannot assign to data in an index of `[f32]`",
            "10 |         x[i] = 0.0;",
            "hint: a `read(..)` parameter is a shared slice: the kernel only reads it",
            "`write(name)`",
            "`read_write(name)`",
        ],
        &log,
    );
    assert!(!read_write.contains("IndexMut"), "{log}");

    // Host code calling a kernel like a function: rustc's error says to use
    // `launch`, and no argument-count error follows.
    assert_contains_all(
        &log,
        &[
            "error[E0277]: `double` is a kernel, not a function: launch it with \
             `double::launch(&stream, config, ..)`",
            "--> calls-launcher/src/lib.rs:17:12",
            "`#[xlog_kernel]` turns `fn double` into a launcher type",
        ],
        &log,
    );
    assert!(!log.contains("expected function, found struct"), "{log}");
    assert!(!log.contains("E0061"), "{log}");

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
