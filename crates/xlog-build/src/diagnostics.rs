//! Turning a nested device compilation's output into a few readable lines.
//!
//! Cargo shows a build script's output only when the script fails, and then as one
//! block after its `stdout`. So the device build's diagnostics are condensed: each
//! rustc `error` / `warning` headline is paired with its `--> file:line:col`
//! location, xlog's own notes (the `= note:` lines of xlog's trait messages) or else
//! rustc's first `help:`, and the hint it calls for from a table of first-kernel
//! mistakes.
//!
//! A failed build shows each error once, as rustc printed it under xlog's label
//! (`device error`, or `#[xlog_kernel]` error), without rustc's suggestions where a
//! hint replaces them, then the hints (each once) ([`error_report`]);
//! [`Builder::run`] logs it as `cargo::error=` lines. [`error_summary`] gives each
//! error on one line, for programs that read [`Error::DeviceCompile`]. Warnings of a
//! build that succeeds become `cargo:warning=` lines ([`warning_lines`]).
//!
//! [`Error::DeviceCompile`]: crate::Error::DeviceCompile
//!
//! [`Builder::run`]: crate::Builder::run

/// The most diagnostics re-emitted for one build; the rest are counted.
pub const MAX_DIAGNOSTICS: usize = 20;

/// One condensed rustc diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// `error` or `warning`.
    pub level: String,
    /// The headline after the level, with its code: `[E0308]: mismatched types`.
    pub message: String,
    /// `src/lib.rs:10:5`, when rustc gave one.
    pub location: Option<String>,
    /// The first `help:` note, when rustc gave one.
    pub help: Option<String>,
    /// The first line of each `= note:` without a span, in order.
    pub notes: Vec<String>,
    /// The whole diagnostic as rustc printed it: headline, spans, notes.
    pub rendered: String,
}

/// Needles of a kernel calling another kernel: rustc's error for calling an
/// `extern "gpu-kernel"` function, which the device build makes of every kernel.
const KERNEL_CALL: &[&str] = &["\"gpu-kernel\"", "gpu-kernel ABI"];

/// What to do about mistakes people make in their first kernels, in the device
/// build's words: `(what rustc's headline contains, the hint)`. The first entry
/// whose needle the headline contains applies.
const HINTS: &[(&[&str], &str)] = &[
    (
        &[
            "found for type `f32`",
            "found for type `f64`",
            "ambiguous numeric type `{float}`",
        ],
        "kernels are `no_std`, so the `f32` / `f64` math methods of `std` (`x.sqrt()`, \
         `x.exp()`, `x.powf(y)`, `x.sin()`, ...) do not exist on the device, and neither do \
         the hidden `__` methods rustc may suggest: call the functions of \
         `xlog::device::math` (`math` in `xlog::prelude`) instead: `math::sqrt(x)`, \
         `math::exp(x)`, `math::ln(x)`, `math::sin(x)`, `math::cos(x)`, `math::pow(x, y)`, \
         `math::fma(a, b, c)`, `math::abs(x)`, `math::floor(x)`, `math::ceil(x)`, \
         `math::trunc(x)`, and `math::fast::{exp, exp2, ln, log2, sin, cos, rsqrt}` for \
         faster `f32` approximations",
    ),
    (
        &[
            "to `ThreadIndex`",
            "from `ThreadIndex`",
            "`ThreadIndex` to `",
            "`ThreadIndex` by `",
            "of `ThreadIndex` divided",
        ],
        "a `ThreadIndex` is a witness, not a number: it has no arithmetic, because `i + 1` \
         names another thread's element; it indexes slices only as it is (`x[i]`, and write \
         views `out[i]`, where it proves the element is this thread's). Compute with the \
         number it holds: `x[i.get() + 1]` reads a neighbour (reads take any `usize`)",
    ),
    (
        &[
            "cannot find type `Vec`",
            "cannot find type `String`",
            "cannot find type `Box`",
            "cannot find macro `vec`",
            "cannot find macro `format`",
            "cannot find macro `println`",
            "crate `std`",
            "crate or module `std`",
            "crate for `std`",
            "`std`",
        ],
        "kernels are `no_std`: use `core::…` instead of `std::…` (`core::cmp::min`), \
         fixed-size arrays instead of `Vec`/`Box`/`String` (there is no heap on the device), \
         and `xlog::device::math` for float functions",
    ),
    (
        &[
            "no method named `fetch_",
            "no method named `compare_exchange",
            "no method named `load` found for reference `&[",
            "no method named `store` found for reference `&[",
        ],
        "atomic operations are methods of an atomic view, which a parameter gets only by \
         declaring it `atomic(name)` in `#[xlog_kernel(..)]` (with `name: &mut [T]`, `T` one \
         of `u32`, `i32`, `u64`, `i64`, `f32`, `f64`): `#[xlog_kernel(read(data), \
         atomic(bins))]` lets any thread call `bins.fetch_add(k, 1)`. A `read(..)` slice is \
         only read, and a `write(..)` view writes only this thread's element",
    ),
    (
        &[
            "data in an index of `[",
            "which is behind a `&` reference",
            "as mutable, as it is behind a `&` reference",
        ],
        "a `read(..)` parameter is a shared slice: the kernel only reads it. To write \
         through a parameter, declare it in `#[xlog_kernel(..)]` as `write(name)` (each \
         thread writes its own elements, `name[i]` with the `ThreadIndex` `i`), \
         `read_write(name)` (the same, reading them too) or `atomic(name)` (any element, \
         atomic operations), and give it the type `&mut [T]`",
    ),
    (
        KERNEL_CALL,
        "a kernel cannot call another kernel: `#[xlog_kernel]` turns `fn name` into the \
         kernel's launcher (on the host a type whose `name::launch(&stream, config, ..)` \
         queues the kernel; on the device an `extern \"gpu-kernel\"` entry point, which only \
         the GPU runtime starts), so `name(..)` is no function call; move the shared code \
         into a plain `fn` and call that from both kernels",
    ),
];

/// Prefixes of rustc's own `= note:` lines, which say how rustc got there rather than
/// what to do; the rest (xlog's `#[diagnostic::on_unimplemented]` notes) are what a
/// summary keeps.
const RUSTC_NOTES: &[&str] = &[
    "required ",
    "expected ",
    "found ",
    "`#[",
    "this error originates",
    "for more information",
    "see issue",
    "see <",
    "the following",
    "the trait",
    "consider ",
    "an implementation of",
    "the lint level",
];

impl Diagnostic {
    /// What to do about it, for the mistakes new kernel authors make most.
    pub fn hint(&self) -> Option<&'static str> {
        HINTS
            .iter()
            .find(|(needles, _)| needles.iter().any(|n| self.message.contains(n)))
            .map(|(_, hint)| *hint)
    }

    /// rustc's error code (`E0308`), when it gave one.
    pub fn code(&self) -> Option<&str> {
        let rest = self.message.strip_prefix('[')?;
        rest.split_once(']').map(|(code, _)| code)
    }

    /// Whether rustc refused a call to a kernel (see [`KERNEL_CALL`]).
    fn calls_a_kernel(&self) -> bool {
        KERNEL_CALL.iter().any(|n| self.message.contains(n))
    }

    /// Whether this is `#[xlog_kernel]` refusing its attribute or signature rather
    /// than the device compiler refusing the code: an error without a code, no
    /// lint's, whose message names the attribute or whose span is on the
    /// `#[xlog_kernel(..)]` line or a `fn` signature. The attribute runs the same in
    /// the host build, so calling it a device error would mislead.
    pub fn is_attribute_error(&self) -> bool {
        if self.level != "error" || self.code().is_some() {
            return false;
        }
        if self.message.contains("#[xlog_kernel") {
            return true;
        }
        if self.rendered.contains("lint level") || self.rendered.contains("#[deny(") {
            return false;
        }
        self.first_source_line().is_some_and(|line| {
            let line = line.trim_start();
            line.starts_with("#[xlog_kernel")
                || line.starts_with("#[xlog::xlog_kernel")
                || is_fn_signature(line)
        })
    }

    /// The first source line rustc quoted (`12 |     let v = x;` gives
    /// `    let v = x;`).
    fn first_source_line(&self) -> Option<&str> {
        self.rendered.lines().find_map(|l| {
            let (num, code) = l.trim_start().split_once(" | ")?;
            num.chars().all(|c| c.is_ascii_digit()).then_some(code)
        })
    }

    /// xlog's own notes (see [`RUSTC_NOTES`]), in order.
    fn xlog_notes(&self) -> impl Iterator<Item = &str> {
        self.notes
            .iter()
            .map(String::as_str)
            .filter(|n| !RUSTC_NOTES.iter().any(|p| n.starts_with(p)))
    }

    /// The one-line form of a warning, used for `cargo:warning=`.
    pub fn one_line(&self) -> String {
        let mut line = format!("device {}{}", self.level, self.message);
        if let Some(loc) = &self.location {
            line.push_str(" at ");
            line.push_str(loc);
        }
        if let Some(help) = &self.help {
            line.push_str(" (help: ");
            line.push_str(help);
            line.push(')');
        }
        line
    }

    /// `device error`, or `` `#[xlog_kernel]` error`` for
    /// [`is_attribute_error`](Self::is_attribute_error).
    fn label(&self) -> &'static str {
        if self.is_attribute_error() {
            "`#[xlog_kernel]` error"
        } else {
            "device error"
        }
    }

    /// Whether rustc's `help:` suggestions are left out: a hint replaces them, or
    /// they suggest `cargo add` (of `std`, for a `no_std` kernel).
    fn drops_rustc_help(&self) -> bool {
        self.hint().is_some()
            || self
                .help
                .as_deref()
                .is_some_and(|h| h.contains("cargo add"))
    }

    /// The diagnostic as rustc printed it, spans and notes included, under xlog's
    /// label (`device error[E0599]: ...`), and without rustc's `help:` suggestions
    /// when [`hint`](Self::hint) replaces them: for the mistakes with hints they
    /// mislead (`cargo add std`, the hidden `__sqrt`, `&mut` in a signature the
    /// attribute decides).
    pub fn shown(&self) -> String {
        let mut out = format!("{}{}", self.label(), self.message);
        let drop_help = self.drops_rustc_help();
        let mut in_help = false;
        for line in self.rendered.lines().skip(1) {
            let t = line.trim_start();
            if drop_help {
                if t.starts_with("help:") {
                    in_help = true;
                    continue;
                }
                if t.starts_with("= help:") {
                    continue;
                }
                // A suggestion's block runs until the next note.
                if in_help && !(t.starts_with("note:") || t.starts_with("= ")) {
                    continue;
                }
                in_help = false;
            }
            out.push('\n');
            out.push_str(line);
        }
        // Dropping a suggestion can leave the gutter line that led to it.
        while out.ends_with('|') {
            let Some(cut) = out.rfind('\n') else { break };
            if out[cut..].trim() != "|" {
                break;
            }
            out.truncate(cut);
        }
        out
    }

    /// The one-line form of an error: its label (`device error`, or `#[xlog_kernel]
    /// error` for [`is_attribute_error`](Self::is_attribute_error)), headline and
    /// location, then what to do: xlog's notes, else rustc's help unless a hint
    /// replaces it, then the hint when `with_hint`.
    pub fn summary(&self, with_hint: bool) -> String {
        let mut line = format!("{}{}", self.label(), self.message);
        if let Some(loc) = &self.location {
            line.push_str(" at ");
            line.push_str(loc);
        }
        let notes: Vec<&str> = self.xlog_notes().collect();
        if !notes.is_empty() {
            line.push_str(": ");
            line.push_str(&notes.join("; "));
        } else if let Some(help) = self.help.as_deref().filter(|h| {
            // rustc's help for these mistakes misleads (`cargo add std`, the hidden
            // `__sqrt`); the hint says what to do instead.
            self.hint().is_none() && !h.contains("cargo add")
        }) {
            line.push_str(" (help: ");
            line.push_str(help);
            line.push(')');
        }
        if with_hint {
            if let Some(hint) = self.hint() {
                line.push_str(" — hint: ");
                line.push_str(hint);
            }
        }
        line
    }
}

/// Whether `line` (trimmed) starts a `fn` item, `pub(crate) unsafe fn name(` and the
/// like.
fn is_fn_signature(line: &str) -> bool {
    let mut words = line.split_whitespace();
    for word in words.by_ref() {
        match word {
            "fn" => return true,
            "pub" | "unsafe" | "const" | "async" | "extern" => continue,
            w if w.starts_with("pub(") => continue,
            w if w.starts_with("fn ") => return true,
            _ => return false,
        }
    }
    false
}

/// Extracts rustc diagnostics from cargo's human-readable stderr, skipping cargo's own
/// summaries (`could not compile`, `generated N warnings`) and progress lines.
pub fn parse(stderr: &str) -> Vec<Diagnostic> {
    let lines: Vec<&str> = stderr.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some((level, message)) = headline(line) else {
            continue;
        };
        let mut diag = Diagnostic {
            level: level.to_string(),
            message: message.to_string(),
            location: None,
            help: None,
            notes: Vec::new(),
            rendered: line.to_string(),
        };
        // The body of a diagnostic runs until the next blank line or headline.
        for body in lines[i + 1..]
            .iter()
            .take_while(|l| !l.trim().is_empty() && headline(l).is_none())
        {
            diag.rendered.push('\n');
            diag.rendered.push_str(body);
            let t = body.trim_start();
            if diag.location.is_none() {
                if let Some(loc) = t.strip_prefix("--> ") {
                    diag.location = Some(loc.trim().to_string());
                    continue;
                }
            }
            if let Some(note) = t.strip_prefix("= note: ") {
                diag.notes.push(note.trim().to_string());
            }
            if diag.help.is_none() {
                if let Some(help) = t
                    .strip_prefix("= help: ")
                    .or_else(|| t.strip_prefix("help: "))
                {
                    diag.help = Some(help.trim().to_string());
                }
            }
        }
        out.push(diag);
    }
    out
}

/// `("error", "[E0308]: mismatched types")` for a rustc headline, `None` otherwise.
fn headline(line: &str) -> Option<(&'static str, &str)> {
    let (level, rest) = if let Some(rest) = line.strip_prefix("error") {
        ("error", rest)
    } else if let Some(rest) = line.strip_prefix("warning") {
        ("warning", rest)
    } else {
        return None;
    };
    if !(rest.starts_with(':') || rest.starts_with('[')) {
        return None;
    }
    let summary = rest.starts_with(": could not compile")
        || rest.starts_with(": aborting due to")
        || rest.starts_with(": build failed")
        || (rest.starts_with(": `") && rest.contains(" generated "))
        || rest.contains("warnings emitted")
        || rest.contains("warning emitted");
    if summary {
        None
    } else {
        Some((level, rest))
    }
}

/// The errors among `diags` worth showing, and how many follow-on errors were left
/// out: rustc's argument-count error (E0061) at a call it already refused as a call
/// to a kernel counts the entry point's lowered parameters (a pointer and a length
/// per slice), which only misleads.
fn shown_errors(diags: &[Diagnostic]) -> (Vec<&Diagnostic>, usize) {
    let kernel_calls: Vec<&Option<String>> = diags
        .iter()
        .filter(|d| d.level == "error" && d.calls_a_kernel())
        .map(|d| &d.location)
        .collect();
    let mut shown = Vec::new();
    let mut dropped = 0;
    for d in diags.iter().filter(|d| d.level == "error") {
        if d.code() == Some("E0061") && d.location.is_some() && kernel_calls.contains(&&d.location)
        {
            dropped += 1;
        } else {
            shown.push(d);
        }
    }
    (shown, dropped)
}

/// Whether every error of `diags` is `#[xlog_kernel]` refusing its attribute or
/// signature ([`Diagnostic::is_attribute_error`]), not the device compiler refusing code.
pub fn attribute_errors_only(diags: &[Diagnostic]) -> bool {
    let (errors, _) = shown_errors(diags);
    !errors.is_empty() && errors.iter().all(|d| d.is_attribute_error())
}

/// One line per error of `diags` ([`Diagnostic::summary`]), at most
/// [`MAX_DIAGNOSTICS`] then a count; each hint is added to the first error that
/// calls for it only.
pub fn error_summary(diags: &[Diagnostic]) -> Vec<String> {
    let (errors, _) = shown_errors(diags);
    let mut hinted: Vec<&str> = Vec::new();
    let mut lines: Vec<String> = errors
        .iter()
        .take(MAX_DIAGNOSTICS)
        .map(|d| {
            let new_hint = d.hint().filter(|h| !hinted.contains(h));
            hinted.extend(new_hint);
            d.summary(new_hint.is_some())
        })
        .collect();
    if errors.len() > MAX_DIAGNOSTICS {
        lines.push(format!(
            "... and {} more errors",
            errors.len() - MAX_DIAGNOSTICS
        ));
    }
    lines
}

/// The errors among `diags`, each once as [`Diagnostic::shown`] gives it, followed
/// by the hints they call for (each once): the text of a failed device build.
pub fn error_report(diags: &[Diagnostic]) -> Option<String> {
    let (errors, dropped) = shown_errors(diags);
    if errors.is_empty() {
        return None;
    }
    let mut report = String::new();
    for d in errors.iter().take(MAX_DIAGNOSTICS) {
        report.push_str(&d.shown());
        report.push_str("\n\n");
    }
    if errors.len() > MAX_DIAGNOSTICS {
        report.push_str(&format!(
            "... and {} more errors\n\n",
            errors.len() - MAX_DIAGNOSTICS
        ));
    }
    if dropped > 0 {
        report.push_str(
            "note: left out: rustc's follow-on error that the call to a kernel passes the \
             wrong number of arguments (it counts the entry point's lowered parameters, a \
             pointer and a length per slice)\n",
        );
    }
    let mut hints: Vec<&str> = Vec::new();
    for hint in errors.iter().filter_map(|d| d.hint()) {
        if !hints.contains(&hint) {
            hints.push(hint);
        }
    }
    for hint in hints {
        report.push_str(&format!("hint: {hint}\n"));
    }
    Some(report.trim_end().to_string())
}

/// The `cargo:warning=` lines for the warnings of `diags`: at most
/// [`MAX_DIAGNOSTICS`], then a count. (Errors fail the build: see [`error_summary`].)
pub fn warning_lines(diags: &[Diagnostic]) -> Vec<String> {
    let warnings: Vec<&Diagnostic> = diags.iter().filter(|d| d.level == "warning").collect();
    let mut lines: Vec<String> = warnings
        .iter()
        .take(MAX_DIAGNOSTICS)
        .map(|d| format!("cargo:warning={}", d.one_line()))
        .collect();
    if warnings.len() > MAX_DIAGNOSTICS {
        lines.push(format!(
            "cargo:warning=... and {} more device warnings",
            warnings.len() - MAX_DIAGNOSTICS
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
   Compiling core v0.0.0 (/sysroot/library/core)
   Compiling kernels v0.1.0 (/w/kernels)
warning: unused variable: `y`
 --> src/lib.rs:3:9
  |
3 |     let y = 1;
  |         ^ help: if this is intentional, prefix it with an underscore: `_y`
  |
  = note: `#[warn(unused_variables)]` on by default

error[E0308]: mismatched types
  --> src/lib.rs:10:5
   |
10 |     x
   |     ^ expected `u32`, found `f32`
   = help: try `x as u32`

error: aborting due to 1 previous error; 1 warning emitted

warning: `kernels` (lib) generated 1 warning
error: could not compile `kernels` (lib) due to 1 previous error; 1 warning emitted
";

    #[test]
    fn parses_errors_and_warnings_with_locations() {
        let diags = parse(SAMPLE);
        assert_eq!(diags.len(), 2, "{diags:?}");
        assert_eq!(diags[0].level, "warning");
        assert_eq!(diags[0].message, ": unused variable: `y`");
        assert_eq!(diags[0].location.as_deref(), Some("src/lib.rs:3:9"));
        assert_eq!(
            diags[1].one_line(),
            "device error[E0308]: mismatched types at src/lib.rs:10:5 (help: try `x as u32`)"
        );
        assert_eq!(diags[1].summary(true), diags[1].one_line());
        assert_eq!(diags[1].code(), Some("E0308"));
        assert!(!diags[1].is_attribute_error());
        // Only the warning is re-emitted as a warning; the error fails the build.
        assert_eq!(warning_lines(&diags).len(), 1);
        assert_eq!(
            error_summary(&diags),
            ["device error[E0308]: mismatched types at src/lib.rs:10:5 (help: try `x as u32`)"]
        );
    }

    #[test]
    fn skips_cargo_summaries() {
        assert!(parse("error: could not compile `k` (lib) due to 2 previous errors\n").is_empty());
        assert!(parse("warning: `k` (lib) generated 3 warnings\n").is_empty());
        assert!(parse("errors happen\n").is_empty());
    }

    #[test]
    fn linker_errors_are_kept() {
        let diags = parse("error: linking with `/t/xlog-link-recorder.sh` failed: exit status: 1\n  |\n  = note: boom\n");
        assert_eq!(diags.len(), 1);
        assert!(diags[0].message.contains("linking with"));
    }

    fn many(level: &str) -> Vec<Diagnostic> {
        (0..MAX_DIAGNOSTICS + 5)
            .map(|i| Diagnostic {
                level: level.into(),
                message: format!(": e{i}"),
                location: None,
                help: None,
                notes: Vec::new(),
                rendered: format!("{level}: e{i}"),
            })
            .collect()
    }

    #[test]
    fn caps_the_number_of_lines() {
        let lines = warning_lines(&many("warning"));
        assert_eq!(lines.len(), MAX_DIAGNOSTICS + 1);
        assert_eq!(
            lines.last().unwrap(),
            "cargo:warning=... and 5 more device warnings"
        );
        assert_eq!(lines[0], "cargo:warning=device warning: e0");
        let lines = error_summary(&many("error"));
        assert_eq!(lines.len(), MAX_DIAGNOSTICS + 1);
        assert_eq!(lines.last().unwrap(), "... and 5 more errors");
        assert!(warning_lines(&many("error")).is_empty());
    }

    #[test]
    fn first_kernel_mistakes_get_a_hint_and_failures_the_whole_diagnostic() {
        let stderr = "\
error[E0412]: cannot find type `Vec` in this scope
 --> src/lib.rs:4:12
  |
4 |     let v: Vec<u32> = Vec::new();
  |            ^^^ not found in this scope

error: could not compile `kernels` (lib) due to 1 previous error
";
        let diags = parse(stderr);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].hint().unwrap().contains("`no_std`"));
        assert!(diags[0].summary(true).contains("kernels are `no_std`"));
        let report = error_report(&diags).unwrap();
        assert!(
            report.starts_with(
                "device error[E0412]: cannot find type `Vec` in this scope\n --> src/lib.rs:4:12"
            ),
            "{report}"
        );
        assert!(report.contains("^^^ not found in this scope"), "{report}");
        assert!(
            report.ends_with(
                "there is no heap on the device), and `xlog::device::math` for float functions"
            ),
            "{report}"
        );
        assert_eq!(error_report(&parse(SAMPLE_WARNING_ONLY)), None);
    }

    /// rustc's output for `x[i].sqrt()` in a kernel: the suggestion of the hidden
    /// `__sqrt` misleads.
    const FLOAT_METHOD: &str = "\
error[E0599]: no method named `sqrt` found for type `f32` in the current scope
  --> float-method/src/lib.rs:10:23
   |
10 |         out[i] = x[i].sqrt();
   |                       ^^^^
   |
help: there is a method `__sqrt` with a similar name
   |
10 |         out[i] = x[i].__sqrt();
   |                       ++

";

    #[test]
    fn a_hint_replaces_rustc_suggestions_and_each_error_is_shown_once() {
        let diags = parse(FLOAT_METHOD);
        let report = error_report(&diags).unwrap();
        assert_eq!(
            report.matches("no method named `sqrt`").count(),
            1,
            "{report}"
        );
        assert!(!report.contains("__sqrt"), "{report}");
        assert!(!report.contains("help:"), "{report}");
        assert!(
            report.starts_with(
                "device error[E0599]: no method named `sqrt` found for type `f32` in the current \
                 scope\n  --> float-method/src/lib.rs:10:23\n   |\n10 |         out[i] = \
                 x[i].sqrt();\n   |                       ^^^^\n\nhint: kernels are `no_std`"
            ),
            "{report}"
        );
    }

    #[test]
    fn atomic_operations_on_a_read_slice_name_the_atomic_mode() {
        let diags = parse(
            "error[E0599]: no method named `fetch_add` found for reference `&[u32]` in the current scope\n  --> k/src/lib.rs:9:14\n",
        );
        let hint = diags[0].hint().unwrap();
        assert!(hint.contains("declaring it `atomic(name)`"), "{hint}");
    }

    #[test]
    fn writes_through_a_read_slice_name_the_write_modes() {
        let diags = parse(
            "error[E0594]: cannot assign to `x[_]`, which is behind a `&` reference\n  --> k/src/lib.rs:9:9\n   |\n9  |         x[i] = 0.0;\n   |         ^^^^^^^^^^ `x` is a `&` reference, so it cannot be written to\n   |\nhelp: consider changing this to be a mutable reference\n   |\n7  | pub fn zero(x: &mut [f32]) {\n   |                 +++\n",
        );
        let hint = diags[0].hint().unwrap();
        assert!(
            hint.contains("a `read(..)` parameter is a shared slice"),
            "{hint}"
        );
        assert!(hint.contains("`write(name)`"), "{hint}");
        let shown = diags[0].shown();
        assert!(!shown.contains("consider changing"), "{shown}");
        assert!(shown.ends_with("so it cannot be written to"), "{shown}");
    }

    const SAMPLE_WARNING_ONLY: &str = "\
warning: unused variable: `y`
 --> src/lib.rs:3:9
";

    /// rustc's output for `out[i.get()] = ..` on a `write(out)` view.
    const WRITE_BY_USIZE: &str = "\
error[E0277]: a `PerThread` write view is not indexed by `usize`
   --> k/src/lib.rs:10:13
    |
 10 |         out[i.get()] = x[i];
    |             ^^^^^^^ not this view's witness
    |
    = help: the trait `WriteIndex` is not implemented for `usize`
    = note: writes go only to elements this thread owns: `write(p)` views take `thread::index_1d()`
    = note: for writes elsewhere declare `atomic(p)`
help: the trait `WriteIndex` is implemented for `ThreadIndex`
   --> /x/crates/xlog-device/src/view.rs:137:1
    |
137 | impl WriteIndex<PerThread> for ThreadIndex {
    | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    = note: required for `Out<'_, f32>` to implement `Index<usize>`
";

    #[test]
    fn the_summary_keeps_xlogs_notes() {
        let diags = parse(WRITE_BY_USIZE);
        assert_eq!(
            error_summary(&diags),
            [
                "device error[E0277]: a `PerThread` write view is not indexed by `usize` at \
              k/src/lib.rs:10:13: writes go only to elements this thread owns: `write(p)` views \
              take `thread::index_1d()`; for writes elsewhere declare `atomic(p)`"
            ]
        );
    }

    /// rustc's output for `Vec` and `std::cmp::min` in a kernel.
    const USES_STD: &str = "\
error[E0425]: cannot find type `Vec` in this scope
 --> k/src/lib.rs:8:12
  |
8 |     let v: Vec<u32> = Vec::new();
  |            ^^^ not found in this scope

error[E0433]: cannot find module or crate `std` in this scope
  --> k/src/lib.rs:11:35
   |
11 |         out[i] = v.len() as u32 + std::cmp::min(1, 2);
   |                                   ^^^ use of unresolved module or unlinked crate `std`
   |
   = help: if you wanted to use a crate named `std`, use `cargo add std` to add it to your `Cargo.toml`

error[E0433]: cannot find type `Vec` in this scope
 --> k/src/lib.rs:8:23
  |
8 |     let v: Vec<u32> = Vec::new();
  |                       ^^^ use of undeclared type `Vec`
";

    #[test]
    fn a_hint_shows_once_and_rustcs_cargo_add_never() {
        let diags = parse(USES_STD);
        let summary = error_summary(&diags);
        assert_eq!(summary.len(), 3);
        assert!(summary[0].ends_with("and `xlog::device::math` for float functions"));
        assert_eq!(
            summary[1],
            "device error[E0433]: cannot find module or crate `std` in this scope at k/src/lib.rs:11:35"
        );
        assert_eq!(
            summary[2],
            "device error[E0433]: cannot find type `Vec` in this scope at k/src/lib.rs:8:23"
        );
        let report = error_report(&diags).unwrap();
        assert_eq!(report.matches("hint: ").count(), 1, "{report}");
    }

    #[test]
    fn float_methods_get_the_device_math_functions() {
        let diags = parse(
            "\
error[E0599]: no method named `sqrt` found for type `f32` in the current scope
  --> k/src/lib.rs:10:23
   |
10 |         out[i] = x[i].sqrt();
   |                       ^^^^
   |
help: there is a method `__sqrt` with a similar name
   |
10 |         out[i] = x[i].__sqrt();
   |                       ++
",
        );
        let line = &error_summary(&diags)[0];
        assert!(
            line.starts_with(
                "device error[E0599]: no method named `sqrt` found for type `f32` in the current \
                 scope at k/src/lib.rs:10:23 — hint: kernels are `no_std`"
            ),
            "{line}"
        );
        assert!(line.contains("`xlog::device::math`"), "{line}");
        assert!(line.contains("`math::sqrt(x)`"), "{line}");
        assert!(!line.contains("__sqrt"), "{line}");
    }

    #[test]
    fn witness_arithmetic_points_to_get() {
        let diags = parse(
            "\
error[E0369]: cannot add `{integer}` to `ThreadIndex`
   --> k/src/lib.rs:10:22
    |
 10 |         out[i] = x[i + 1] - x[i];
    |                    - ^ - {integer}
    |                    |
    |                    ThreadIndex
    |
note: `ThreadIndex` does not implement `Add<{integer}>`
",
        );
        let hint = diags[0].hint().unwrap();
        assert!(hint.contains("`x[i.get() + 1]`"), "{hint}");
        assert!(
            hint.contains("a `ThreadIndex` is a witness, not a number"),
            "{hint}"
        );
    }

    /// rustc's output for a kernel calling another: the refused call, then the
    /// argument count of the lowered entry point at the same place.
    const CALLS_KERNEL: &str = "\
error: functions with the \"gpu-kernel\" ABI cannot be called
  --> k/src/lib.rs:16:5
   |
16 |     accumulate(x, y);
   |     ^^^^^^^^^^^^^^^^

error[E0061]: this function takes 4 arguments but 2 arguments were supplied
  --> k/src/lib.rs:16:5
   |
16 |     accumulate(x, y);
   |     ^^^^^^^^^^------
help: provide the arguments
   |
16 +     accumulate(/* *const f32 */, /* usize */, /* *mut f32 */, /* usize */);

error[E0061]: this function takes 4 arguments but 2 arguments were supplied
  --> k/src/lib.rs:30:5
   |
30 |     other(x, y);
   |     ^^^^^^^^^^^
";

    #[test]
    fn a_kernel_call_names_the_launcher_and_drops_the_follow_on_error() {
        let diags = parse(CALLS_KERNEL);
        let summary = error_summary(&diags);
        assert_eq!(summary.len(), 2, "{summary:?}");
        assert!(summary[0].contains("turns `fn name` into the kernel's launcher"));
        // An argument count elsewhere is the user's own mistake, and stays.
        assert!(summary[1].contains("k/src/lib.rs:30:5"), "{summary:?}");
        let report = error_report(&diags).unwrap();
        assert!(!report.contains("16 +     accumulate(/*"), "{report}");
        assert!(
            report.contains("note: left out: rustc's follow-on error"),
            "{report}"
        );
        assert!(!attribute_errors_only(&diags));
    }

    #[test]
    fn attribute_mistakes_are_not_device_errors() {
        let diags = parse(
            "\
error: slice parameter `out` needs an access mode: add `read(out)` to #[xlog_kernel(..)]
 --> k/src/lib.rs:7:24
  |
7 | pub fn copy(x: &[f32], out: &mut [f32]) {
  |                        ^^^

error: unknown ownership `blok`; expected `per block`
 --> k/src/lib.rs:6:29
  |
6 | #[xlog_kernel(write(out per blok))]
  |                             ^^^^
",
        );
        assert!(diags.iter().all(Diagnostic::is_attribute_error));
        assert!(attribute_errors_only(&diags));
        assert!(error_summary(&diags)[0].starts_with("`#[xlog_kernel]` error: slice parameter"));
        // A code-less error in a body, or a lint denied on a signature, is the
        // device compiler's.
        let others = parse(
            "\
error: functions with the \"gpu-kernel\" ABI cannot be called
  --> k/src/lib.rs:16:5
   |
16 |     accumulate(x, y);
   |     ^^^^^^^^^^^^^^^^

error: unused variable: `y`
 --> k/src/lib.rs:3:9
  |
3 | pub fn k(y: u32) {
  |          ^
  |
note: the lint level is defined here
",
        );
        assert!(!others.iter().any(Diagnostic::is_attribute_error));
        assert!(!attribute_errors_only(&others));
    }
}
