//! Running external tools: environment scrubbing, quoting, and failure capture.
//!
//! # Why the environment is scrubbed
//!
//! A build script runs with the variables the outer cargo and rustup set for the
//! *host* toolchain: `RUSTC`, `RUSTUP_TOOLCHAIN`, `CARGO`, `CARGO_ENCODED_RUSTFLAGS`,
//! `CARGO_TARGET_DIR`, the `CARGO_CFG_*` / `CARGO_FEATURE_*` / `CARGO_PKG_*` of the
//! crate being built, and so on. A nested `cargo` started with those still set
//! silently uses the stable `rustc` (and the outer flags), and fails on `-Zbuild-std`.
//! [`scrub`] removes them; it keeps what locates installations and the network
//! (`CARGO_HOME`, `RUSTUP_HOME`, `PATH`, `CARGO_NET_*`, `CARGO_HTTP_*`,
//! `CARGO_REGISTRIES_*`), so offline mode and mirrors behave as in the outer build.

use std::ffi::{OsStr, OsString};
use std::process::{Command, Output};

use crate::error::{tail, Error, STDERR_TAIL_LINES};

/// Variables kept even though they match a removed prefix.
const KEEP: &[&str] = &["CARGO_HOME", "RUSTUP_HOME"];
/// Prefixes of variables kept even though they match a removed prefix.
const KEEP_PREFIXES: &[&str] = &["CARGO_NET_", "CARGO_HTTP_", "CARGO_REGISTRIES_"];
/// Prefixes of variables removed from a nested build's environment.
const REMOVE_PREFIXES: &[&str] = &["CARGO", "RUSTC", "__CARGO"];
/// Exact names removed from a nested build's environment: rustup's toolchain choice,
/// outer flags, the jobserver, and the per-build-script variables cargo sets.
const REMOVE: &[&str] = &[
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTDOC",
    "MAKEFLAGS",
    "MFLAGS",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "NUM_JOBS",
    "OPT_LEVEL",
    "DEBUG",
    "PROFILE",
];

/// Whether `name` must be removed from the environment of a nested device build.
pub fn is_scrubbed(name: &str) -> bool {
    if KEEP.contains(&name) || KEEP_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    REMOVE.contains(&name) || REMOVE_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Removes every variable of `vars` that [`is_scrubbed`] from `cmd`'s environment.
pub(crate) fn scrub<I>(cmd: &mut Command, vars: I)
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    for (name, _) in vars {
        if name.to_str().is_some_and(is_scrubbed) {
            cmd.env_remove(&name);
        }
    }
}

/// Renders a command line that can be pasted into a POSIX shell, including the
/// variables explicitly set on it.
pub fn render(cmd: &Command) -> String {
    let mut parts = Vec::new();
    for (name, value) in cmd.get_envs() {
        if let Some(value) = value {
            parts.push(format!(
                "{}={}",
                name.to_string_lossy(),
                quote(value.to_string_lossy().as_ref())
            ));
        }
    }
    parts.push(quote(&cmd.get_program().to_string_lossy()));
    parts.extend(cmd.get_args().map(|a| quote(&a.to_string_lossy())));
    parts.join(" ")
}

/// Quotes one shell word when it needs it.
pub(crate) fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else if word.chars().any(char::is_control) {
        // ANSI-C quoting keeps separators such as CARGO_ENCODED_RUSTFLAGS' 0x1f visible.
        let mut out = String::from("$'");
        for c in word.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Runs `cmd` to completion, capturing its output; a non-zero exit becomes
/// [`Error::CommandFailed`] described by `what`.
pub(crate) fn run(cmd: &mut Command, what: &str) -> Result<Output, Error> {
    let output = cmd.output().map_err(|source| Error::Spawn {
        command: render(cmd),
        source,
    })?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(failed(cmd, what, &output))
    }
}

/// Builds the error for a command that ran and failed.
pub(crate) fn failed(cmd: &Command, what: &str, output: &Output) -> Error {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Some tools (ptxas) report on stdout; keep whichever says something.
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    Error::CommandFailed {
        what: what.to_string(),
        command: render(cmd),
        status: output.status.to_string(),
        stderr_tail: tail(&text, STDERR_TAIL_LINES),
    }
}

/// `true` when `path` names an existing file.
pub(crate) fn is_file(path: impl AsRef<OsStr>) -> bool {
    std::path::Path::new(path.as_ref()).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_what_the_outer_build_sets() {
        for name in [
            "CARGO",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_TARGET_DIR",
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_CFG_TARGET_ARCH",
            "CARGO_FEATURE_GPU",
            "CARGO_MAKEFLAGS",
            "CARGO_BUILD_TARGET",
            "RUSTC",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "RUSTC_BOOTSTRAP",
            "RUSTUP_TOOLCHAIN",
            "RUSTFLAGS",
            "__CARGO_FIX_PLZ",
            "OUT_DIR",
            "TARGET",
            "MAKEFLAGS",
        ] {
            assert!(is_scrubbed(name), "{name} must be removed");
        }
    }

    #[test]
    fn keeps_installation_and_network_settings() {
        for name in [
            "CARGO_HOME",
            "RUSTUP_HOME",
            "PATH",
            "HOME",
            "CARGO_NET_OFFLINE",
            "CARGO_HTTP_PROXY",
            "CARGO_REGISTRIES_CRATES_IO_PROTOCOL",
            "XLOG_DEVICE_ARCH",
        ] {
            assert!(!is_scrubbed(name), "{name} must be kept");
        }
    }

    #[test]
    fn scrub_removes_only_matching_names() {
        let mut cmd = Command::new("true");
        let vars = [
            ("RUSTC".into(), "/stable/rustc".into()),
            ("PATH".into(), "/bin".into()),
        ];
        scrub(&mut cmd, vars);
        let envs: Vec<_> = cmd.get_envs().collect();
        assert_eq!(envs, vec![(OsStr::new("RUSTC"), None)]);
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("plain-word_1.rs"), "plain-word_1.rs");
        assert_eq!(
            quote("-Zcrate-attr=feature(abi_gpu_kernel)"),
            "'-Zcrate-attr=feature(abi_gpu_kernel)'"
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("-Ca\u{1f}-Cb"), r"$'-Ca\x1f-Cb'");
    }

    #[test]
    fn render_shows_set_variables_and_arguments() {
        let mut cmd = Command::new("cargo");
        cmd.arg("rustc").arg("--target").arg("nvptx64-nvidia-cuda");
        cmd.env("XLOG_DEVICE_BUILD", "1");
        cmd.env_remove("RUSTC");
        assert_eq!(
            render(&cmd),
            "XLOG_DEVICE_BUILD=1 cargo rustc --target nvptx64-nvidia-cuda"
        );
    }

    #[test]
    fn failing_command_reports_status_and_stderr() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo first >&2; echo boom >&2; exit 3"]);
        let err = run(&mut cmd, "the test command").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("the test command failed (exit status: 3)"),
            "{text}"
        );
        assert!(text.contains("boom"), "{text}");
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let mut cmd = Command::new("/nonexistent/xlog-tool");
        let err = run(&mut cmd, "x").unwrap_err();
        assert!(matches!(err, Error::Spawn { .. }));
        assert!(err.to_string().contains("/nonexistent/xlog-tool"));
    }
}
