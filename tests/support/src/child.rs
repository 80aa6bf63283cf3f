//! One test of the running test binary, run again in a child process.
//!
//! Some GPU tests cannot run beside others in one process: a device panic (`trap`)
//! leaves the CUDA context unusable for the rest of the process, and process-wide
//! switches (fencing off) would change every other test's outcome. Such a test
//! starts this executable again with a filter that selects only the test it needs,
//! and checks the child's output. [`run_test`] is the one way the suites do it.

use std::process::{Command, ExitStatus};
use std::sync::Mutex;

/// Held while a child runs: one child process at a time per test binary. With
/// three trapping processes at once on an H100, one of them now and then never
/// returned from its synchronisation.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What a child test process did.
#[derive(Debug)]
pub struct Outcome {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Outcome {
    /// Standard output, then standard error: what a failed assertion shows.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Whether the child exited successfully having run exactly one test, which
    /// passed (a filter that matched nothing also exits successfully).
    pub fn passed_one(&self) -> bool {
        self.status.success() && self.stdout.contains("1 passed")
    }

    /// Whether the child's one test failed.
    pub fn failed_one(&self) -> bool {
        self.stdout.contains("1 failed")
    }
}

/// Runs test `name` (its full path in the test binary, `module::test`) of the
/// current test binary alone in a child process, with the variables `env` set, and
/// returns what it did. The test runs even if it is `#[ignore]`d (a child-side test
/// is ignored so that the suite never runs it on its own), with output not
/// captured (what it prints is part of what the caller checks) and on one thread.
/// Children run one at a time. Panics if the child cannot be started.
///
/// ```no_run
/// use xlog_test_support::child;
///
/// let out = child::run_test("panics::child_side", &[("MY_CHILD_MODE", "trap")]);
/// assert!(out.status.success(), "child process failed:\n{}", out.text());
/// ```
pub fn run_test(name: &str, env: &[(&str, &str)]) -> Outcome {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let exe = std::env::current_exe().expect("the test binary's own path");
    let out = Command::new(&exe)
        .args([
            "--exact",
            name,
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {} for `{name}`: {e}", exe.display()));
    Outcome {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODE_ENV: &str = "XLOG_TEST_SUPPORT_CHILD_MODE";

    /// The child side: passes or fails as the parent asks; never run on its own.
    #[test]
    #[ignore = "run by `a_child_runs_one_ignored_test_with_its_variables` in a child process"]
    fn child_side() {
        let mode = std::env::var(MODE_ENV).unwrap_or_default();
        println!("child mode {mode}");
        assert_eq!(mode, "pass", "asked to fail");
    }

    #[test]
    fn a_child_runs_one_ignored_test_with_its_variables() {
        let out = run_test("child::tests::child_side", &[(MODE_ENV, "pass")]);
        assert!(out.passed_one(), "{}", out.text());
        assert!(out.stdout.contains("child mode pass"), "{}", out.text());

        let out = run_test("child::tests::child_side", &[(MODE_ENV, "fail")]);
        assert!(!out.status.success() && out.failed_one(), "{}", out.text());
        assert!(out.text().contains("asked to fail"), "{}", out.text());

        let out = run_test("child::tests::no_such_test", &[]);
        assert!(out.status.success() && !out.passed_one(), "{}", out.text());
    }
}
