//! The one error type of the builder, rendered for a human reading cargo's output.
//!
//! A build error always names what failed and the last lines of the failing
//! command's stderr; the command itself (so it can be re-run by hand) too, except for
//! a device compilation that fails on the crate's code, whose command line only
//! [`VERBOSE_ENV`] shows. The full output is never dumped: a failing device
//! compilation keeps rustc's errors, each once (see [`crate::diagnostics`]), and
//! other commands a short tail.
//!
//! [`Builder::run`](crate::Builder::run) shows an error as `cargo::error=` lines
//! ([`Error::cargo_error_lines`]): for a device compilation, its errors first, then
//! what failed.

use std::fmt;
use std::path::PathBuf;

/// Set (to anything) to show the command line of a device compilation that failed
/// on the crate's code: `XLOG_BUILD_VERBOSE=1 cargo build`.
pub const VERBOSE_ENV: &str = "XLOG_BUILD_VERBOSE";

/// Whether [`VERBOSE_ENV`] is set.
fn verbose() -> bool {
    std::env::var_os(VERBOSE_ENV).is_some()
}

/// How many trailing stderr lines an error keeps.
pub(crate) const STDERR_TAIL_LINES: usize = 25;

/// Everything that can stop a device build.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `rustup` could not be found, so the pinned toolchain cannot be resolved.
    RustupNotFound {
        /// The command that installs the toolchain once rustup exists.
        install_command: String,
    },
    /// The pinned toolchain (or one of its components) is missing and could not be
    /// installed automatically.
    ToolchainMissing {
        /// The toolchain that was required, e.g. `nightly-2026-05-20`.
        toolchain: String,
        /// What is missing: the toolchain itself or a named component.
        missing: String,
        /// The exact command that installs it.
        install_command: String,
        /// Why automatic installation did not happen or failed.
        reason: String,
        /// The last lines of rustup's stderr when the installation failed, else empty.
        rustup_stderr: String,
    },
    /// A tool the pipeline needs (`llvm-link`, `opt`, `llc`, `ptxas`) was not found.
    ToolNotFound {
        /// The tool's name.
        tool: String,
        /// Where it was looked for and how to provide it.
        hint: String,
    },
    /// A command ran and failed.
    CommandFailed {
        /// What the command was for ("device compilation of `foo`", "llc").
        what: String,
        /// The command line, shell-quoted so it can be pasted.
        command: String,
        /// Exit status as text (`exit status: 101`, `signal 9`).
        status: String,
        /// The last lines of stderr (25 at most).
        stderr_tail: String,
    },
    /// The kernel crate does not compile for the device: rustc's errors, whole.
    DeviceCompile {
        /// What was compiled ("device compilation of `foo` (nvptx64-nvidia-cuda, sm_80)").
        what: String,
        /// The command line, shell-quoted so it can be pasted (shown with
        /// [`VERBOSE_ENV`]).
        command: String,
        /// Whether every error is `#[xlog_kernel]` refusing its attribute or signature
        /// (which the host build would refuse the same), none the device compiler's.
        attribute_errors_only: bool,
        /// Each error on one line, with xlog's notes and the hint it calls for (not
        /// printed: the report has every error).
        summary: Vec<String>,
        /// Each error once as rustc printed it (spans, notes), then hints for common
        /// mistakes.
        report: String,
    },
    /// A command could not even be started.
    Spawn {
        /// The command line.
        command: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Reading or writing a file failed.
    Io {
        /// The path involved.
        path: PathBuf,
        /// What was being done ("write the PTX", "read the link manifest").
        action: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A setting (builder call or `XLOG_*` variable) has an invalid value.
    InvalidSetting {
        /// The setting's name.
        name: String,
        /// The rejected value.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// The crate declares kernels but never calls `xlog::kernel_module!()`, so its
    /// launchers have no `crate::MODULE` to load.
    KernelModuleMissing {
        /// The crate's package name.
        package: String,
        /// The first source file that mentions `xlog_kernel`, relative to the crate.
        kernels_in: PathBuf,
        /// Where the call belongs, relative to the crate (`src/lib.rs`).
        crate_root: PathBuf,
    },
    /// A kernel's PTX entry point does not declare the parameters its ABI descriptor
    /// says the host launcher passes, so a launch would copy the wrong bytes.
    AbiMismatch {
        /// The entry point.
        kernel: String,
        /// Zero-based index of the Rust parameter where the lists diverge (the
        /// parameter count when the PTX declares more parameters than described).
        parameter: usize,
        /// What the launcher passes there, per the descriptor.
        expected: String,
        /// What the PTX declares there.
        found: String,
    },
    /// A kernel's ABI descriptor global (`__xlog_abi_<entry>`) could not be read.
    InvalidAbiDescriptor {
        /// The entry point the descriptor names.
        kernel: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The module's static shared memory does not fit the 32-bit sizes ptxas and the
    /// driver keep: one `.shared` declaration, or the declarations summed with their
    /// alignment, reach `limit` bytes, so the size would wrap and leave bounds checks
    /// unsound.
    SharedMemoryTooLarge {
        /// The shared array that reaches the limit (alone, or as the last of the sum).
        symbol: String,
        /// Its size in bytes, or the running total when `summed`.
        bytes: u128,
        /// The bound, in bytes (2^32).
        limit: u64,
        /// Whether `bytes` is the sum of the module's declarations up to `symbol`
        /// rather than `symbol`'s own size.
        summed: bool,
    },
    /// Two static shared arrays of the module have one name: ptxas and the driver
    /// would refuse the module when a GPU loads it, and the simulator would run it.
    SharedMemoryNamedTwice {
        /// The name declared twice.
        symbol: String,
    },
    /// Something the pipeline relies on did not hold (a missing environment variable
    /// that cargo always sets, a link manifest without an output, ...).
    Unexpected {
        /// What was expected and what was seen instead.
        message: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::RustupNotFound { install_command } => write!(
                f,
                "rustup was not found (looked at $XLOG_RUSTUP, PATH, $CARGO_HOME/bin and ~/.cargo/bin); \
                 xlog device builds need the pinned nightly toolchain: install rustup \
                 (https://rustup.rs), then run `{install_command}`"
            ),
            Error::ToolchainMissing {
                toolchain,
                missing,
                install_command,
                reason,
                rustup_stderr,
            } => {
                write!(
                    f,
                    "the device toolchain `{toolchain}` lacks {missing} ({reason}); \
                     install it with `{install_command}`"
                )?;
                if !rustup_stderr.trim().is_empty() {
                    write!(f, "\n  rustup's stderr:")?;
                    for line in rustup_stderr.lines() {
                        write!(f, "\n    {line}")?;
                    }
                }
                Ok(())
            }
            Error::ToolNotFound { tool, hint } => write!(f, "`{tool}` was not found: {hint}"),
            Error::CommandFailed {
                what,
                command,
                status,
                stderr_tail,
            } => {
                write!(f, "{what} failed ({status})\n  command: {command}")?;
                if !stderr_tail.trim().is_empty() {
                    write!(f, "\n  stderr (last lines):")?;
                    for line in stderr_tail.lines() {
                        write!(f, "\n    {line}")?;
                    }
                }
                Ok(())
            }
            Error::DeviceCompile {
                what,
                command,
                attribute_errors_only,
                summary: _,
                report,
            } => {
                let cause = device_compile_cause(*attribute_errors_only);
                write!(f, "{what} failed: {cause}\n\n{report}")?;
                if verbose() {
                    write!(f, "\n\n  command: {command}")?;
                }
                Ok(())
            }
            Error::Spawn { command, source } => {
                write!(f, "could not start `{command}`: {source}")
            }
            Error::Io {
                path,
                action,
                source,
            } => write!(f, "could not {action} at {}: {source}", path.display()),
            Error::InvalidSetting {
                name,
                value,
                expected,
            } => write!(f, "invalid value {value:?} for {name}: expected {expected}"),
            Error::KernelModuleMissing {
                package,
                kernels_in,
                crate_root,
            } => write!(
                f,
                "`{package}` declares kernels (`#[xlog_kernel]` in {}) but never calls \
                 `xlog::kernel_module!()`, the macro that defines the module their launchers \
                 load; add this line at the crate root ({}), after the `use` lines:\n\n    \
                 xlog::kernel_module!();\n\n(xlog-build looks for the word `kernel_module` in \
                 src/**/*.rs; a crate that defines its module another way names it in a comment)",
                kernels_in.display(),
                crate_root.display()
            ),
            Error::AbiMismatch {
                kernel,
                parameter,
                expected,
                found,
            } => write!(
                f,
                "kernel `{kernel}`, parameter {parameter}: the launcher passes {expected}, but \
                 the PTX entry declares {found}; the device build lowered this parameter \
                 differently from what `#[xlog_kernel]` described, so no launch can be sound: \
                 use a plain `#[repr(C)]` type of non-zero size for by-value parameters, and \
                 report it if it still happens"
            ),
            Error::InvalidAbiDescriptor { kernel, reason } => write!(
                f,
                "the ABI descriptor of kernel `{kernel}` in the PTX is unreadable: {reason}"
            ),
            Error::SharedMemoryTooLarge {
                symbol,
                bytes,
                limit,
                summed,
            } => {
                if *summed {
                    write!(
                        f,
                        "the module's static shared arrays sum to {bytes} bytes or more (with \
                         alignment) by `{symbol}`"
                    )?;
                } else {
                    write!(f, "the shared array `{symbol}` in the PTX is {bytes} bytes")?;
                }
                write!(
                    f,
                    ", but ptxas and the driver keep shared memory sizes in 32 bits (sizes of \
                     {limit} bytes or more would wrap and leave bounds checks unsound); static \
                     shared memory is limited to 48 KiB per kernel: keep `static_shared!` arrays \
                     small (and few), and move larger scratch space to `DynamicShared` with the \
                     kernel's `shared = <bytes>` setting"
                )
            }
            Error::SharedMemoryNamedTwice { symbol } => write!(
                f,
                "two static shared arrays of the module are named `{symbol}`: `static_shared!` \
                 names its array after its name, line and column, which every `static_shared!` \
                 made by one outer macro call shares (as do calls at the same line and column of \
                 two files); give them different names"
            ),
            Error::Unexpected { message } => write!(f, "{message}"),
        }
    }
}

impl Error {
    /// The lines [`Builder::run`](crate::Builder::run) logs with `cargo::error=`, in
    /// order: for a device compilation, its report (each error once, so the first
    /// line cargo shows says what is wrong, then where; then the hints), then what
    /// failed (and the command, with [`VERBOSE_ENV`]); for any other error the
    /// message, which starts with what to do.
    pub fn cargo_error_lines(&self) -> Vec<String> {
        let message = match self {
            Error::DeviceCompile {
                what,
                command,
                attribute_errors_only,
                report,
                ..
            } => {
                let mut text = format!(
                    "{report}\n\nxlog device build: {what} failed: {}",
                    device_compile_cause(*attribute_errors_only)
                );
                if verbose() {
                    text.push_str(&format!("\n  command: {command}"));
                } else {
                    text.push_str(&format!(" ({VERBOSE_ENV}=1 shows the command)"));
                }
                text
            }
            _ => format!("xlog device build: {self}"),
        };
        message.lines().map(str::to_string).collect()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn { source, .. } | Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a device compilation failed, from [`Error::DeviceCompile`]'s
/// `attribute_errors_only`.
fn device_compile_cause(attribute_errors_only: bool) -> &'static str {
    if attribute_errors_only {
        "`#[xlog_kernel]` refused a kernel's attribute or signature (the device build \
         compiles the crate before the host build, which would refuse it the same)"
    } else {
        "the kernel crate does not compile for the GPU"
    }
}

/// Keeps the last `n` lines of `text`, prefixed with a marker when lines were dropped.
pub(crate) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        return lines.join("\n");
    }
    let dropped = lines.len() - n;
    let mut out = format!("[... {dropped} earlier lines omitted ...]");
    for line in &lines[dropped..] {
        out.push('\n');
        out.push_str(line);
    }
    out
}

pub(crate) fn io_error(path: impl Into<PathBuf>, action: &str, source: std::io::Error) -> Error {
    Error::Io {
        path: path.into(),
        action: action.to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_short_text_whole() {
        assert_eq!(tail("a\nb", 5), "a\nb");
    }

    #[test]
    fn tail_marks_dropped_lines() {
        let text = (0..10)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(tail(&text, 3), "[... 7 earlier lines omitted ...]\n7\n8\n9");
    }

    #[test]
    fn command_failure_names_command_status_and_tail() {
        let err = Error::CommandFailed {
            what: "device compilation of `k`".into(),
            command: "cargo rustc --target nvptx64-nvidia-cuda".into(),
            status: "exit status: 101".into(),
            stderr_tail: "error: aborting".into(),
        };
        let text = err.to_string();
        assert!(text.starts_with("device compilation of `k` failed (exit status: 101)"));
        assert!(text.contains("command: cargo rustc --target nvptx64-nvidia-cuda"));
        assert!(text.contains("    error: aborting"));
    }

    #[test]
    fn a_device_compile_error_shows_each_error_once_then_what_failed() {
        let err = Error::DeviceCompile {
            what: "device compilation of `k` (nvptx64-nvidia-cuda, sm_80)".into(),
            command: "cargo rustc --target nvptx64-nvidia-cuda".into(),
            attribute_errors_only: false,
            summary: vec!["device error[E0425]: cannot find type `Vec` at src/lib.rs:4:12".into()],
            report: "device error[E0425]: cannot find type `Vec`\n --> src/lib.rs:4:12".into(),
        };
        let lines = err.cargo_error_lines();
        assert_eq!(lines[0], "device error[E0425]: cannot find type `Vec`");
        assert_eq!(lines[1], " --> src/lib.rs:4:12");
        assert_eq!(lines[2], "");
        assert!(lines[3].starts_with(
            "xlog device build: device compilation of `k` (nvptx64-nvidia-cuda, sm_80) failed: \
             the kernel crate does not compile for the GPU"
        ));
        // The command only with XLOG_BUILD_VERBOSE (which this process may have).
        let shows_command = lines.iter().any(|l| l.contains("cargo rustc"));
        assert_eq!(shows_command, verbose(), "{lines:#?}");
        assert_eq!(
            lines
                .last()
                .unwrap()
                .ends_with("(XLOG_BUILD_VERBOSE=1 shows the command)"),
            !verbose()
        );
    }

    #[test]
    fn missing_toolchain_message_carries_the_install_command() {
        let err = Error::ToolchainMissing {
            toolchain: "nightly-2026-05-20".into(),
            missing: "the component `rust-src`".into(),
            install_command: "rustup toolchain install nightly-2026-05-20 --profile minimal --component rust-src,llvm-tools".into(),
            reason: "XLOG_NO_AUTO_INSTALL is set".into(),
            rustup_stderr: String::new(),
        };
        assert_eq!(
            err.to_string(),
            "the device toolchain `nightly-2026-05-20` lacks the component `rust-src` \
             (XLOG_NO_AUTO_INSTALL is set); install it with `rustup toolchain install \
             nightly-2026-05-20 --profile minimal --component rust-src,llvm-tools`"
        );
    }
}
