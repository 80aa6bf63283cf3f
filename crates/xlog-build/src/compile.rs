//! The nested `cargo rustc` that compiles the kernel crate for [`DEVICE_TARGET`]:
//! its arguments and flags, running it, and tracking the sources it read.
//!
//! It runs with the device toolchain, `-Zbuild-std=core`, the flags of [`rustflags`]
//! for every crate and [`KERNEL_CRATE_GUARDS`] for the kernel crate itself, and
//! [`GUARD_VAR`] set so the kernel crate's own build script does nothing there. Its
//! linker is the recorder of the `link` module, which leaves the bitcode for
//! xlog-build to link.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::builder::GUARD_VAR;
use crate::command;
use crate::diagnostics;
use crate::error::{tail, Error, STDERR_TAIL_LINES};
use crate::settings::Settings;
use crate::toolchain::Toolchain;

/// The device target triple.
pub const DEVICE_TARGET: &str = "nvptx64-nvidia-cuda";

/// `rustc` flags applied to every crate of the device build (core included).
/// `-Zmir-enable-passes=-JumpThreading` guards against rust-lang/rust#137086: MIR
/// jump threading can duplicate code around aligned barriers into divergent
/// branches, which miscompiles block-level reductions.
pub const BARRIER_GUARD_FLAG: &str = "-Zmir-enable-passes=-JumpThreading";

/// `rustc` flags for the kernel crate itself (not its dependencies) in the device
/// build. Safe code must not be able to define entry points or ABI descriptors of
/// its own next to the ones `#[xlog_kernel]` generates (a launcher would trust
/// them): `global_asm!` needs an unstable feature on nvptx, so only
/// `abi_gpu_kernel` is allowed; and `#[no_mangle]` / `#[export_name]` must be
/// written `#[unsafe(..)]`, as edition 2024 requires, in every edition.
pub const KERNEL_CRATE_GUARDS: &[&str] = &[
    "-Zallow-features=abi_gpu_kernel",
    "-Funsafe_attr_outside_unsafe",
];

/// Compiles the kernel crate at `manifest` (lib crate `lib_name`) for the device
/// into `target_dir`, linking with `recorder`, and returns the directory of its
/// artifacts. Prints the device warnings as `cargo:warning` lines and a
/// `rerun-if-changed` line for each source file the build read; errors fail it with
/// [`Error::DeviceCompile`].
pub(crate) fn compile_crate(
    toolchain: &Toolchain,
    settings: &Settings,
    manifest: &Path,
    lib_name: &str,
    target_dir: &Path,
    recorder: &Path,
) -> Result<PathBuf, Error> {
    let mut cmd = toolchain.command("cargo");
    cmd.args(cargo_args(settings, manifest, target_dir, recorder))
        .env("CARGO_ENCODED_RUSTFLAGS", encoded_rustflags(settings))
        .env(GUARD_VAR, "1")
        .env("CARGO_TERM_COLOR", "never");
    run_cargo(&mut cmd, &description(settings, lib_name))?;

    let artifacts = target_dir
        .join(DEVICE_TARGET)
        .join(profile_dir(&settings.profile));
    track_dep_info(&artifacts.join(format!("{lib_name}.d")), &toolchain.sysroot);
    Ok(artifacts)
}

/// What the nested build does, for its error message: the crate, target, arch and
/// features.
fn description(settings: &Settings, lib_name: &str) -> String {
    let mut what = format!(
        "device compilation of `{lib_name}` ({DEVICE_TARGET}, {}",
        settings.arch
    );
    if !settings.features.is_empty() {
        what.push_str(&format!(", features {}", settings.features.join(",")));
    }
    what.push(')');
    what
}

/// `cargo rustc` arguments of the nested device build.
pub(crate) fn cargo_args(
    s: &Settings,
    manifest: &Path,
    target_dir: &Path,
    recorder: &Path,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "rustc".into(),
        "--manifest-path".into(),
        manifest.into(),
        "--lib".into(),
        "--crate-type".into(),
        "cdylib".into(),
        "--target".into(),
        DEVICE_TARGET.into(),
        "-Zbuild-std=core".into(),
        "--profile".into(),
        s.profile.clone().into(),
        "--target-dir".into(),
        target_dir.into(),
        "--color".into(),
        "never".into(),
    ];
    if let Some(lockfile) = packaged_lockfile(manifest, target_dir) {
        // A packaged crate (from a registry) resolves afresh, its lockfile under the
        // target directory: the source stays unwritten, and the lockfile `cargo
        // package` shipped (resolved against the packager's registry) is not used.
        args.push("--config".into());
        args.push(format!("resolver.lockfile-path={}", toml_string(&lockfile)).into());
    }
    if s.no_default_features {
        args.push("--no-default-features".into());
    }
    if !s.features.is_empty() {
        args.push("--features".into());
        args.push(s.features.join(",").into());
    }
    args.push("--".into());
    args.extend(KERNEL_CRATE_GUARDS.iter().map(OsString::from));
    if s.inject_abi_feature {
        args.push("-Zcrate-attr=feature(abi_gpu_kernel)".into());
    }
    if s.inject_no_std {
        args.push("-Zcrate-attr=no_std".into());
    }
    let mut linker = OsString::from("-Clinker=");
    linker.push(recorder);
    args.push(linker);
    args
}

/// Where the nested build of a packaged kernel crate keeps its lockfile, or `None`
/// for a crate of a checkout (which uses its workspace's). A packaged crate is one
/// whose directory holds the `Cargo.toml.orig` that `cargo package` writes: a
/// crate from a registry (read-only, as cargo's own), a vendored or unpacked one.
pub(crate) fn packaged_lockfile(manifest: &Path, target_dir: &Path) -> Option<PathBuf> {
    let dir = manifest.parent()?;
    if !dir.join("Cargo.toml.orig").is_file() {
        return None;
    }
    let name = dir.file_name()?;
    Some(target_dir.join("lockfiles").join(name).join("Cargo.lock"))
}

/// `path` as a TOML basic string.
fn toml_string(path: &Path) -> String {
    let mut out = String::from("\"");
    for c in path.to_string_lossy().chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The flags every device crate gets, in order.
pub(crate) fn rustflags(s: &Settings) -> Vec<String> {
    let mut flags = vec![
        format!("-Ctarget-cpu={}", s.arch),
        BARRIER_GUARD_FLAG.to_string(),
        // Device debug info would put DWARF sections into the PTX; keep PTX lean.
        "-Cdebuginfo=0".to_string(),
    ];
    flags.extend(s.rustflags.iter().cloned());
    flags
}

/// [`rustflags`] in `CARGO_ENCODED_RUSTFLAGS` form (separated by 0x1f).
pub(crate) fn encoded_rustflags(s: &Settings) -> String {
    rustflags(s).join("\u{1f}")
}

/// The directory cargo uses for a profile's artifacts.
pub(crate) fn profile_dir(profile: &str) -> &str {
    match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    }
}

/// Runs the nested cargo, re-emitting device warnings as `cargo:warning` lines;
/// `what` describes it in the error when it fails.
fn run_cargo(cmd: &mut Command, what: &str) -> Result<(), Error> {
    let output = cmd.output().map_err(|source| Error::Spawn {
        command: command::render(cmd),
        source,
    })?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let diags = diagnostics::parse(&stderr);
    for line in diagnostics::warning_lines(&diags) {
        println!("{line}");
    }
    if output.status.success() {
        return Ok(());
    }
    if let Some(report) = diagnostics::error_report(&diags) {
        return Err(Error::DeviceCompile {
            what: what.to_string(),
            command: command::render(cmd),
            attribute_errors_only: diagnostics::attribute_errors_only(&diags),
            summary: diagnostics::error_summary(&diags),
            report,
        });
    }
    Err(Error::CommandFailed {
        what: what.to_string(),
        command: command::render(cmd),
        status: output.status.to_string(),
        stderr_tail: tail(&compact_stderr(&stderr), STDERR_TAIL_LINES),
    })
}

/// Drops cargo's progress lines (`Compiling`, `Blocking`, ...) from stderr.
pub(crate) fn compact_stderr(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("Compiling ")
                || t.starts_with("Blocking ")
                || t.starts_with("Downloaded ")
                || t.starts_with("Downloading ")
                || t.starts_with("Updating ")
                || t.starts_with("Locking "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Emits `rerun-if-changed` for every source file in a cargo dep-info file, skipping
/// the toolchain's own sources.
fn track_dep_info(dep_info: &Path, sysroot: &Path) {
    let Ok(text) = fs::read_to_string(dep_info) else {
        return;
    };
    for path in dep_info_paths(&text) {
        if !Path::new(&path).starts_with(sysroot) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// The prerequisites listed in a Makefile-style dep-info file.
pub(crate) fn dep_info_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for line in text.lines() {
        // `target: dep dep ...`; spaces inside paths are escaped as `\ `.
        let Some((_, deps)) = line.split_once(": ") else {
            continue;
        };
        let mut current = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    current.push(' ');
                    chars.next();
                }
                ' ' => {
                    if !current.is_empty() {
                        paths.push(std::mem::take(&mut current));
                    }
                }
                _ => current.push(c),
            }
        }
        if !current.is_empty() {
            paths.push(current);
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::Builder;
    use crate::settings::EnvReader;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        Builder::new()
            .settings("", "", &EnvReader::from(vars))
            .unwrap()
    }

    #[test]
    fn nested_cargo_arguments() {
        let mut s = settings(&[]);
        s.features = vec!["a".into(), "b".into()];
        s.no_default_features = true;
        let args = cargo_args(
            &s,
            Path::new("/k/Cargo.toml"),
            Path::new("/t/xlog-device"),
            Path::new("/t/rec.sh"),
        );
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "rustc --manifest-path /k/Cargo.toml --lib --crate-type cdylib --target nvptx64-nvidia-cuda \
             -Zbuild-std=core --profile release --target-dir /t/xlog-device --color never \
             --no-default-features --features a,b -- -Zallow-features=abi_gpu_kernel \
             -Funsafe_attr_outside_unsafe -Zcrate-attr=feature(abi_gpu_kernel) \
             -Zcrate-attr=no_std -Clinker=/t/rec.sh"
        );
    }

    #[test]
    fn a_packaged_crate_keeps_its_lockfile_under_the_target_directory() {
        let tmp = std::env::temp_dir().join(format!("xlog-build-packaged-{}", std::process::id()));
        let pkg = tmp.join("my-kernels-0.1.0");
        std::fs::create_dir_all(&pkg).unwrap();
        let manifest = pkg.join("Cargo.toml");
        let target = Path::new("/t/xlog-device");
        // A crate of a checkout: its workspace's lockfile, no option.
        assert_eq!(packaged_lockfile(&manifest, target), None);
        let s = settings(&[]);
        let plain = cargo_args(&s, &manifest, target, Path::new("/t/rec.sh"));
        assert!(!plain.iter().any(|a| a == "--config"));
        // A packaged one (`cargo package` wrote Cargo.toml.orig beside it).
        std::fs::write(pkg.join("Cargo.toml.orig"), "").unwrap();
        let lock = target.join("lockfiles/my-kernels-0.1.0/Cargo.lock");
        assert_eq!(packaged_lockfile(&manifest, target), Some(lock));
        let args: Vec<String> = cargo_args(&s, &manifest, target, Path::new("/t/rec.sh"))
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = args.iter().position(|a| a == "--config").unwrap();
        assert_eq!(
            args[at + 1],
            "resolver.lockfile-path=\"/t/xlog-device/lockfiles/my-kernels-0.1.0/Cargo.lock\""
        );
        std::fs::remove_dir_all(&tmp).unwrap();
        assert_eq!(toml_string(Path::new("/a\"b\\c")), "\"/a\\\"b\\\\c\"");
    }

    #[test]
    fn device_rustflags_carry_the_barrier_guard() {
        let s = settings(&[("XLOG_DEVICE_RUSTFLAGS", "-Cextra")]);
        assert_eq!(
            rustflags(&s),
            [
                "-Ctarget-cpu=sm_80",
                "-Zmir-enable-passes=-JumpThreading",
                "-Cdebuginfo=0",
                "-Cextra"
            ]
        );
        assert_eq!(
            encoded_rustflags(&s),
            "-Ctarget-cpu=sm_80\u{1f}-Zmir-enable-passes=-JumpThreading\u{1f}-Cdebuginfo=0\u{1f}-Cextra"
        );
    }

    #[test]
    fn profile_dirs() {
        assert_eq!(profile_dir("release"), "release");
        assert_eq!(profile_dir("dev"), "debug");
        assert_eq!(profile_dir("gpu"), "gpu");
    }

    #[test]
    fn dep_info_parsing() {
        let text =
            "/t/k.ptx: /w/k/src/lib.rs /w/dev/src/a\\ b.rs /sys/core/lib.rs\n\n/w/k/src/lib.rs:\n";
        assert_eq!(
            dep_info_paths(text),
            ["/sys/core/lib.rs", "/w/dev/src/a b.rs", "/w/k/src/lib.rs"]
        );
    }

    #[test]
    fn progress_lines_are_dropped_from_errors() {
        let s = "   Compiling core v0.0.0\nerror: boom\n    Blocking waiting for file lock\n";
        assert_eq!(compact_stderr(s), "error: boom");
    }
}
