//! Turning a nested device compilation's output into a few readable lines.
//!
//! Cargo shows a build script's output only when the script fails, and then as one
//! block. So the device build's diagnostics are condensed: each rustc `error` /
//! `warning` headline is paired with its `--> file:line:col` location and first
//! `help:` note, and re-emitted as one `cargo:warning=` line, which cargo prints
//! prominently (and also for successful builds of workspace crates).

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
    /// The whole diagnostic as rustc printed it: headline, spans, notes.
    pub rendered: String,
}

/// What to do about mistakes people make in their first kernels, in the device
/// build's words: `(what rustc's headline contains, the hint)`.
const HINTS: &[(&[&str], &str)] = &[
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
        &["\"gpu-kernel\"", "gpu-kernel ABI"],
        "a kernel cannot call another kernel: move the shared code into a plain `fn` and \
         call that from both kernels",
    ),
];

impl Diagnostic {
    /// What to do about it, for the mistakes new kernel authors make most.
    pub fn hint(&self) -> Option<&'static str> {
        HINTS
            .iter()
            .find(|(needles, _)| needles.iter().any(|n| self.message.contains(n)))
            .map(|(_, hint)| *hint)
    }

    /// The one-line form used for `cargo:warning=`.
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
        if let Some(hint) = self.hint() {
            line.push_str(" — ");
            line.push_str(hint);
        }
        line
    }
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

/// The errors among `diags`, each as rustc printed it, followed by the hints they
/// call for (each once): the text of a failed device build.
pub fn error_report(diags: &[Diagnostic]) -> Option<String> {
    let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.level == "error").collect();
    if errors.is_empty() {
        return None;
    }
    let mut report = String::new();
    for d in errors.iter().take(MAX_DIAGNOSTICS) {
        report.push_str(&d.rendered);
        report.push_str("\n\n");
    }
    if errors.len() > MAX_DIAGNOSTICS {
        report.push_str(&format!(
            "... and {} more errors\n\n",
            errors.len() - MAX_DIAGNOSTICS
        ));
    }
    let mut hints: Vec<&str> = errors.iter().filter_map(|d| d.hint()).collect();
    hints.dedup();
    for hint in hints {
        report.push_str(&format!("hint: {hint}\n"));
    }
    Some(report.trim_end().to_string())
}

/// The `cargo:warning=` lines for `diags`: at most [`MAX_DIAGNOSTICS`], then a count.
pub fn warning_lines(diags: &[Diagnostic]) -> Vec<String> {
    let mut lines: Vec<String> = diags
        .iter()
        .take(MAX_DIAGNOSTICS)
        .map(|d| format!("cargo:warning={}", d.one_line()))
        .collect();
    if diags.len() > MAX_DIAGNOSTICS {
        lines.push(format!(
            "cargo:warning=... and {} more device diagnostics",
            diags.len() - MAX_DIAGNOSTICS
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

    #[test]
    fn caps_the_number_of_lines() {
        let many: Vec<Diagnostic> = (0..MAX_DIAGNOSTICS + 5)
            .map(|i| Diagnostic {
                level: "error".into(),
                message: format!(": e{i}"),
                location: None,
                help: None,
                rendered: format!("error: e{i}"),
            })
            .collect();
        let lines = warning_lines(&many);
        assert_eq!(lines.len(), MAX_DIAGNOSTICS + 1);
        assert_eq!(
            lines.last().unwrap(),
            "cargo:warning=... and 5 more device diagnostics"
        );
        assert_eq!(lines[0], "cargo:warning=device error: e0");
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
        assert!(diags[0].one_line().contains("kernels are `no_std`"));
        let report = error_report(&diags).unwrap();
        assert!(
            report.starts_with(
                "error[E0412]: cannot find type `Vec` in this scope\n --> src/lib.rs:4:12"
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

    const SAMPLE_WARNING_ONLY: &str = "\
warning: unused variable: `y`
 --> src/lib.rs:3:9
";
}
