//! The pinned device toolchain: finding it, installing it, and locating its LLVM tools.
//!
//! Device code is compiled by one pinned nightly ([`PINNED_TOOLCHAIN`]) with the
//! components `rust-src` (for `-Zbuild-std=core`) and `llvm-tools` (`llvm-link`, `opt`,
//! `llc` of the same LLVM as that rustc). Host crates keep building on stable: only
//! the nested device build runs the nightly, through `rustup run`.
//!
//! When the toolchain or a component is missing it is installed with
//! [`install_command`] (announced with a `cargo:warning`), unless `XLOG_NO_AUTO_INSTALL`
//! is set or rustup fails, in which case the error prints that exact command.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

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
                )?;
                installed_now = true;
                Self::probe(&rustup, name).map_err(|reason| Error::ToolchainMissing {
                    toolchain: name.to_string(),
                    missing: "a working rustc".to_string(),
                    install_command: install_command(name),
                    reason,
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
                });
            }
            install(&rustup, name, auto_install, &missing)?;
            if let Some(missing) = toolchain.missing_component() {
                return Err(Error::ToolchainMissing {
                    toolchain: name.to_string(),
                    missing,
                    install_command: install_command(name),
                    reason: "still missing right after installation".to_string(),
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

fn install(rustup: &Path, name: &str, auto_install: bool, missing: &str) -> Result<(), Error> {
    let command_text = install_command(name);
    if !auto_install {
        return Err(Error::ToolchainMissing {
            toolchain: name.to_string(),
            missing: missing.to_string(),
            install_command: command_text,
            reason: "automatic installation is off (XLOG_NO_AUTO_INSTALL)".to_string(),
        });
    }
    println!("cargo:warning=xlog-build: installing the device toolchain: {command_text}");
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
        Error::ToolchainMissing {
            toolchain: name.to_string(),
            missing: missing.to_string(),
            install_command: command_text,
            reason: format!("rustup failed: {}", first_line(&e.to_string())),
        }
    })?;
    Ok(())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
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
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("install it with `rustup toolchain install nightly-x"),
            "{text}"
        );
        assert!(text.contains("rustup failed"), "{text}");
    }
}
