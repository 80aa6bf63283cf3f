//! CPU check (no GPU): the template project users copy (`templates/app`) builds, its
//! own tests pass (the device build, the ABI check of every launcher, ptxas), and its
//! application either checks its result on a GPU or, without one, exits with status
//! 2 and says what it needs. Run with a separate target directory, sharing the device
//! `core` build with this workspace's kernel crates.

fn cargo(args: &[&str]) -> std::process::Output {
    xlog_test_support::nested::cargo(
        env!("CARGO_MANIFEST_DIR"),
        "../../templates/app",
        env!("CARGO_TARGET_TMPDIR"),
        "template",
        args,
    )
}

#[test]
fn the_template_project_builds_tests_and_runs() {
    let test = cargo(&["test", "--workspace"]);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    assert!(test.status.success(), "the template's tests failed:\n{log}");
    assert!(
        log.contains("launchers_agree_with_the_device_build ... ok"),
        "{log}"
    );
    assert!(log.contains("ptxas_accepts_the_module ... ok"), "{log}");

    let run = cargo(&["run", "-p", "app"]);
    let (out, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    match run.status.code() {
        Some(0) => assert!(out.contains("ok: the GPU result matches the CPU"), "{out}"),
        Some(2) => assert!(
            err.contains("this program needs an NVIDIA GPU"),
            "exit status 2 without the message:\n{err}"
        ),
        other => panic!("the template app exited with {other:?}:\n{out}{err}"),
    }
}
