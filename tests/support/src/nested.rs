//! Cargo run on a separate workspace of fixtures (the template project, kernel crates
//! that must fail to build), from a test of this workspace.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `cargo <args>` on the workspace at `manifest_dir` (relative paths are taken
/// from the calling test's `CARGO_MANIFEST_DIR`, passed as `from`), in its own
/// target directory `<tmp>/<name>`, sharing the device `core` build with this
/// workspace's kernel crates (`<tmp>/../xlog-device`, `tmp` being the calling test's
/// `CARGO_TARGET_TMPDIR`). The outer build's rustc flags are not passed on, nor
/// `XLOG_BUILD_VERBOSE`: the fixtures' errors are checked as a build shows them by
/// default.
pub fn cargo(from: &str, manifest_dir: &str, tmp: &str, name: &str, args: &[&str]) -> Output {
    let root = Path::new(from).join(manifest_dir);
    let tmp = Path::new(tmp);
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .args(["--color", "never"])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(tmp.join(name))
        .env("XLOG_DEVICE_TARGET_DIR", tmp.join("../xlog-device"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("XLOG_BUILD_VERBOSE")
        .output()
        .expect("cargo runs")
}
