//! The pinned device toolchain: finding it, installing it, and locating its LLVM tools.
//!
//! Device code is compiled by one pinned nightly ([`PINNED_TOOLCHAIN`]) with the
//! components `rust-src` (for `-Zbuild-std=core`) and `llvm-tools` (`llvm-link`, `opt`,
//! `llc` of the same LLVM as that rustc). Host crates keep building on stable: only
//! the nested device build runs the nightly, through `rustup run`.
//!
//! When the toolchain or a component is missing it is installed with
//! [`install_command`], unless `XLOG_NO_AUTO_INSTALL` is set or rustup fails, in which
//! case the error prints that exact command.
//!
//! # Telling the user before the download
//!
//! Cargo captures a build script's stdout and stderr and shows them only when the
//! script ends (`cargo:warning` lines) or fails, so a line printed the usual way
//! before a minute-long download would appear after it. The announcement is
//! therefore written, before rustup starts:
//!
//! - to the controlling terminal (`/dev/tty`), which cargo does not capture;
//! - without one (CI, IDEs, `cargo build 2>&1 | tee log` from a script), on Linux, to
//!   cargo's own stderr (`/proc/<parent>/fd/2`, opened for appending, only when the
//!   parent process is cargo and that stderr is a pipe or a terminal), where cargo
//!   writes its `Compiling` lines: the CI log or the IDE's build output (a plain
//!   file, `2>log`, is left alone: cargo writes it at its own offset);
//! - to the script's stderr, which cargo streams live with `-vv`.
//!
//! Elsewhere (no terminal, not Linux) nothing can show before the script ends: the
//! build looks stalled at `Compiling <crate> (build script)` while rustup downloads.
//! A `cargo:warning` then records the installation and its duration. rustup's own
//! progress is captured too (only its stderr's last lines come back, in the error
//! when the installation fails).

use std::env;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::command::{self, is_file};
use crate::error::Error;

/// The nightly toolchain every device build uses.
pub const PINNED_TOOLCHAIN: &str = "nightly-2026-05-20";

/// Components the device build needs on [`PINNED_TOOLCHAIN`].
pub const COMPONENTS: &[&str] = &["rust-src", "llvm-tools"];

/// The command that installs `toolchain` with everything the device build needs.
pub fn install_command(toolchain: &str) -> String {
    format!(
        "rustup toolchain install {toolchain} --profile minimal --component {}",
        COMPONENTS.join(",")
    )
}

/// A resolved, complete device toolchain.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// Its rustup name.
    pub name: String,
    /// The `rustup` executable used to run it.
    pub rustup: PathBuf,
    /// `rustc --print sysroot`.
    pub sysroot: PathBuf,
    /// The host triple of that rustc (`x86_64-unknown-linux-gnu`).
    pub host: String,
}

impl Toolchain {
    /// Finds `name`, installing it or its components when allowed, and checks that the
    /// pieces the pipeline uses are present.
    pub fn resolve(name: &str, auto_install: bool) -> Result<Toolchain, Error> {
        let rustup = find_rustup().ok_or_else(|| Error::RustupNotFound {
            install_command: install_command(name),
        })?;
        let mut installed_now = false;
        let probe = Self::probe(&rustup, name);
        let toolchain = match probe {
            Ok(tc) => tc,
            Err(reason) => {
                install(
                    &rustup,
                    name,
                    auto_install,
                    &format!("the toolchain itself ({reason})"),
                    tell_terminal,
                )?;
                installed_now = true;
                Self::probe(&rustup, name).map_err(|reason| Error::ToolchainMissing {
                    toolchain: name.to_string(),
                    missing: "a working rustc".to_string(),
                    install_command: install_command(name),
                    reason,
                    rustup_stderr: String::new(),
                })?
            }
        };
        if let Some(missing) = toolchain.missing_component() {
            if installed_now {
                return Err(Error::ToolchainMissing {
                    toolchain: name.to_string(),
                    missing,
                    install_command: install_command(name),
                    reason: "still missing right after installation".to_string(),
                    rustup_stderr: String::new(),
                });
            }
            install(&rustup, name, auto_install, &missing, tell_terminal)?;
            if let Some(missing) = toolchain.missing_component() {
                return Err(Error::ToolchainMissing {
                    toolchain: name.to_string(),
                    missing,
                    install_command: install_command(name),
                    reason: "still missing right after installation".to_string(),
                    rustup_stderr: String::new(),
                });
            }
        }
        Ok(toolchain)
    }

    fn probe(rustup: &Path, name: &str) -> Result<Toolchain, String> {
        let mut cmd = Command::new(rustup);
        cmd.args([
            "run",
            name,
            "rustc",
            "--print",
            "sysroot",
            "--print",
            "host-tuple",
        ]);
        command::scrub(&mut cmd, env::vars_os());
        let out = cmd.output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(stderr.lines().next().unwrap_or("rustc failed").to_string());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let (Some(sysroot), Some(host)) = (lines.next(), lines.next()) else {
            return Err(format!(
                "unexpected `rustc --print sysroot --print host-tuple` output: {text:?}"
            ));
        };
        let (sysroot, host) = (PathBuf::from(sysroot), host.to_string());
        Ok(Toolchain {
            name: name.to_string(),
            rustup: rustup.to_path_buf(),
            sysroot,
            host,
        })
    }

    /// The first required component that is absent, described for an error message.
    fn missing_component(&self) -> Option<String> {
        let core = self
            .sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml");
        if !core.is_file() {
            return Some("the component `rust-src` (needed by -Zbuild-std=core)".to_string());
        }
        if !is_file(self.llvm_tool("llvm-link")) || !is_file(self.llvm_tool("llc")) {
            return Some("the component `llvm-tools` (llvm-link, opt, llc)".to_string());
        }
        None
    }

    /// Path of an LLVM tool shipped by the `llvm-tools` component.
    pub fn llvm_tool(&self, tool: &str) -> PathBuf {
        self.sysroot
            .join("lib/rustlib")
            .join(&self.host)
            .join("bin")
            .join(tool)
    }

    /// A `rustup run <toolchain> <program>` command with a scrubbed environment.
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(&self.rustup);
        cmd.args(["run", &self.name, program]);
        command::scrub(&mut cmd, env::vars_os());
        cmd
    }
}

/// Installs `name` with rustup, first passing the announcement to `announce` (in a
/// build, [`tell_terminal`]) so the user sees it before the download starts.
fn install(
    rustup: &Path,
    name: &str,
    auto_install: bool,
    missing: &str,
    announce: impl FnOnce(&str),
) -> Result<(), Error> {
    let command_text = install_command(name);
    if !auto_install {
        return Err(Error::ToolchainMissing {
            toolchain: name.to_string(),
            missing: missing.to_string(),
            install_command: command_text,
            reason: "automatic installation is off (XLOG_NO_AUTO_INSTALL)".to_string(),
            rustup_stderr: String::new(),
        });
    }
    announce(&announcement(name));
    eprintln!("{}", announcement(name));
    let started = Instant::now();
    let mut cmd = Command::new(rustup);
    cmd.args([
        "toolchain",
        "install",
        name,
        "--profile",
        "minimal",
        "--component",
    ]);
    cmd.arg(COMPONENTS.join(","));
    command::scrub(&mut cmd, env::vars_os());
    command::run(&mut cmd, "installing the device toolchain").map_err(|e| {
        let (reason, rustup_stderr) = match e {
            Error::CommandFailed {
                status,
                stderr_tail,
                ..
            } => (
                format!("`rustup toolchain install` failed ({status})"),
                bounded(&stderr_tail),
            ),
            other => (format!("rustup failed: {other}"), String::new()),
        };
        Error::ToolchainMissing {
            toolchain: name.to_string(),
            missing: missing.to_string(),
            install_command: command_text,
            reason,
            rustup_stderr,
        }
    })?;
    println!(
        "cargo:warning=xlog-build: installed the device toolchain `{name}` in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The line shown before the device toolchain is installed.
fn announcement(name: &str) -> String {
    format!(
        "xlog-build: installing the device toolchain `{name}` (once: later builds reuse it; \
         the download can take a few minutes): {}",
        install_command(name)
    )
}

/// The most characters kept of one line of rustup's stderr.
const MAX_LINE_CHARS: usize = 400;

/// rustup's stderr (already cut to its last lines) for an error message: each
/// line's last progress redraw only (rustup redraws with `\r`), at most
/// [`MAX_LINE_CHARS`] characters of it.
fn bounded(stderr: &str) -> String {
    stderr
        .lines()
        .map(|line| {
            let last = line.rsplit('\r').next().unwrap_or(line).trim_end();
            match last.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{}…", &last[..cut]),
                None => last.to_string(),
            }
        })
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Shows `line` while the build script runs: on the controlling terminal, else on
/// cargo's stderr (see the module docs).
fn tell_terminal(line: &str) {
    if !write_to_tty(line) {
        write_to_cargo_stderr(line);
    }
}

/// Writes `line` to cargo's stderr, `/proc/<parent>/fd/2`, when the parent process
/// is cargo (Linux only). Returns whether it did.
fn write_to_cargo_stderr(line: &str) -> bool {
    let Some(parent) = parent_process() else {
        return false;
    };
    if !cfg!(target_os = "linux") || env::var_os("CARGO").is_none() {
        return false;
    }
    let parent = Path::new("/proc").join(parent.to_string());
    let is_cargo = std::fs::read_link(parent.join("exe"))
        .ok()
        .and_then(|exe| {
            exe.file_name()
                .map(|n| n.to_string_lossy().starts_with("cargo"))
        })
        .unwrap_or(false);
    // Only a pipe or a terminal: a file cargo's shell opened without `O_APPEND`
    // (`2>log`) is written at cargo's own offset, which would overwrite the line.
    let stderr = parent.join("fd/2");
    is_cargo && is_stream(&stderr) && append_line(&stderr, line)
}

/// Whether `path` is a pipe or a character device (a terminal).
#[cfg(unix)]
fn is_stream(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path)
        .map(|m| m.file_type().is_fifo() || m.file_type().is_char_device())
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_stream(_: &Path) -> bool {
    false
}

#[cfg(unix)]
fn parent_process() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

#[cfg(not(unix))]
fn parent_process() -> Option<u32> {
    None
}

/// Appends `line` to the file or pipe at `path`. Appending matters when cargo's
/// stderr is a log file: opening it for writing would start at its beginning and
/// overwrite what cargo wrote.
fn append_line(path: &Path, line: &str) -> bool {
    let Ok(mut out) = OpenOptions::new().append(true).open(path) else {
        return false;
    };
    writeln!(out, "{line}").is_ok()
}

/// Writes `line` to the controlling terminal, which cargo does not capture. Returns
/// whether there was one.
fn write_to_tty(line: &str) -> bool {
    if !cfg!(unix) {
        return false;
    }
    let Ok(mut tty) = OpenOptions::new().write(true).open("/dev/tty") else {
        return false;
    };
    // Cargo's progress bar holds the current line without a newline: erase it
    // first, and cargo redraws it below on its next tick.
    let erase = if env::var("TERM").as_deref() == Ok("dumb") {
        "\n"
    } else {
        "\r\x1b[2K"
    };
    // Best effort: the announcement is a courtesy, the install goes ahead without it.
    writeln!(tty, "{erase}{line}").is_ok()
}

/// Finds `rustup`: `$XLOG_RUSTUP`, then `PATH`, then `$CARGO_HOME/bin`, then
/// `~/.cargo/bin`.
pub fn find_rustup() -> Option<PathBuf> {
    if let Some(p) = env::var_os("XLOG_RUSTUP") {
        return Some(PathBuf::from(p));
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = env::var_os("PATH") {
        candidates.extend(env::split_paths(&path).map(|d| d.join("rustup")));
    }
    if let Some(home) = env::var_os("CARGO_HOME") {
        candidates.push(PathBuf::from(home).join("bin/rustup"));
    }
    if let Some(home) = env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cargo/bin/rustup"));
    }
    candidates.into_iter().find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_command_is_the_documented_one() {
        assert_eq!(
            install_command(PINNED_TOOLCHAIN),
            "rustup toolchain install nightly-2026-05-20 --profile minimal --component rust-src,llvm-tools"
        );
    }

    #[test]
    fn refusing_to_install_names_the_command() {
        let err = install(
            Path::new("/nonexistent/rustup"),
            "nightly-x",
            false,
            "the toolchain itself",
            |line| panic!("announced a refused install: {line}"),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("rustup toolchain install nightly-x --profile minimal --component rust-src,llvm-tools"), "{text}");
        assert!(text.contains("XLOG_NO_AUTO_INSTALL"), "{text}");
    }

    #[test]
    fn failed_install_names_the_command() {
        let err = install(
            Path::new("/nonexistent/rustup"),
            "nightly-x",
            true,
            "the toolchain itself",
            |_| {},
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("install it with `rustup toolchain install nightly-x"),
            "{text}"
        );
        assert!(text.contains("rustup failed"), "{text}");
    }

    /// A stand-in `rustup` in a fresh directory of its own (`name`): a shell script
    /// running `body`. Returns the directory (the caller removes it) and the script.
    #[cfg(unix)]
    fn stand_in_rustup(name: &str, body: &str) -> (PathBuf, PathBuf) {
        use std::os::unix::fs::PermissionsExt;

        let dir = env::temp_dir().join(format!("xlog-rustup-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rustup = dir.join("rustup");
        std::fs::write(&rustup, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&rustup, std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, rustup)
    }

    /// A failed installation keeps what rustup said, every line of it (up to the
    /// tail's bound), not only the first line of the failure.
    #[cfg(unix)]
    #[test]
    fn failed_install_keeps_rustups_stderr() {
        let (dir, rustup) = stand_in_rustup(
            "fail",
            "echo 'info: syncing channel updates' >&2\n\
             printf 'downloading 10%%\\rdownloading 90%%\\n' >&2\n\
             echo 'error: could not download file: no network' >&2\nexit 1",
        );
        let result = install(&rustup, "nightly-x", true, "the toolchain itself", |_| {});
        std::fs::remove_dir_all(&dir).unwrap();

        let text = result.unwrap_err().to_string();
        assert!(
            text.contains("(`rustup toolchain install` failed (exit status: 1))"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "\n  rustup's stderr:\n    info: syncing channel updates\n    downloading 90%\n    \
                 error: could not download file: no network"
            ),
            "{text}"
        );
    }

    #[test]
    fn rustups_lines_are_bounded() {
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        let kept = bounded(&format!("a\rb\n\n{long}"));
        assert_eq!(kept, format!("b\n{}…", "x".repeat(MAX_LINE_CHARS)));
    }

    /// Without a terminal the line goes to cargo's stderr, which may be a log file:
    /// it is appended, never written over what is there.
    #[test]
    fn the_announcement_is_appended() {
        let path = env::temp_dir().join(format!("xlog-announce-{}", std::process::id()));
        std::fs::write(&path, "   Compiling k v0.1.0\n").unwrap();
        assert!(append_line(&path, "xlog-build: installing"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(text, "   Compiling k v0.1.0\nxlog-build: installing\n");
        assert!(!append_line(Path::new("/nonexistent/dir/f"), "x"));
    }

    /// Only pipes and terminals take the announcement: a regular file may be cargo's
    /// `2>log`, written at cargo's own offset.
    #[cfg(unix)]
    #[test]
    fn only_a_pipe_or_a_terminal_is_a_stream() {
        let path = env::temp_dir().join(format!("xlog-stream-{}", std::process::id()));
        std::fs::write(&path, "").unwrap();
        let file = is_stream(&path);
        std::fs::remove_file(&path).unwrap();
        assert!(!file);
        assert!(is_stream(Path::new("/dev/null")));
        assert!(!is_stream(Path::new("/nonexistent")));
    }

    /// The announcement must reach the user before rustup starts: a stand-in rustup
    /// leaves a marker, which must not exist yet when the line is announced.
    #[cfg(unix)]
    #[test]
    fn the_install_is_announced_before_rustup_runs() {
        let (dir, rustup) =
            stand_in_rustup("announce", "echo \"$@\" > \"$(dirname \"$0\")/rustup-ran\"");
        let marker = dir.join("rustup-ran");

        let mut announced = None;
        let result = install(&rustup, "nightly-x", true, "the toolchain itself", |line| {
            announced = Some((line.to_string(), marker.exists()));
        });
        let ran = std::fs::read_to_string(&marker);
        std::fs::remove_dir_all(&dir).unwrap();

        result.unwrap();
        let (line, rustup_had_run) = announced.expect("the install was not announced");
        assert!(!rustup_had_run, "announced after rustup ran: {line}");
        assert!(
            line.contains("installing the device toolchain `nightly-x`"),
            "{line}"
        );
        assert!(line.contains(&install_command("nightly-x")), "{line}");
        assert_eq!(
            ran.unwrap().trim(),
            "toolchain install nightly-x --profile minimal --component rust-src,llvm-tools"
        );
    }
}
