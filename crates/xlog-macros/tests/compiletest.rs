//! The compile-fail suite (fixtures in the workspace's `tests/ui/`).
//!
//! The `.stderr` snapshots are rustc's exact output, which changes between
//! compiler releases, so the suite is pinned to the toolchain that produced them,
//! rustc 1.95. It is `#[ignore]`d in a plain `cargo test` (which may run on any
//! stable) and run by `scripts/test.sh` as
//! `cargo +1.95.0 test -p xlog-macros --test compiletest -- --ignored`. Run on
//! another compiler it fails with instructions instead of comparing against foreign
//! snapshots: regenerate with `TRYBUILD=overwrite` on the new toolchain and review
//! every diff.

const SNAPSHOT_RUSTC: &str = "rustc 1.95.";

#[test]
#[ignore = "pinned to rustc 1.95: run by scripts/test.sh with cargo +1.95.0 -- --ignored"]
fn ui() {
    let version =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
    assert!(
        version.starts_with(SNAPSHOT_RUSTC),
        "the ui snapshots were produced by {SNAPSHOT_RUSTC}x but this is `{}`; regenerate them with \
         TRYBUILD=overwrite and review every diff",
        version.trim()
    );
    let t = trybuild::TestCases::new();
    t.compile_fail("../../tests/ui/kernel/*.rs");
    t.compile_fail("../../tests/ui/launch/*.rs");
    t.compile_fail("../../tests/ui/recorder/*.rs");
    t.compile_fail("../../tests/ui/derive/*.rs");
    t.compile_fail("../../tests/ui/soundness/*.rs");
    t.compile_fail("../../tests/ui/shared/*.rs");
    t.compile_fail("../../tests/ui/single_pass/*.rs");
    t.compile_fail("../../tests/ui/generic/*.rs");
    t.pass("../../tests/ui/pass/*.rs");
}
