//! The check that a crate with kernels calls `xlog::kernel_module!()`.
//!
//! Every launcher that `#[xlog_kernel]` generates loads `crate::MODULE`, the static
//! that `xlog::kernel_module!()` defines at the crate root. Without the macro, rustc
//! reports "cannot find value `MODULE` in the crate root" once per kernel, which does
//! not say what to add. So before anything is compiled, the build script reads the
//! text of the crate's `src/**/*.rs` and fails with one error naming the line to
//! add when a file mentions `xlog_kernel` and none mentions `kernel_module`.
//!
//! The rule is a text search for whole words, so it never blocks a crate that calls
//! the macro in any spelling (`xlog::kernel_module!()`, an alias import of it, a
//! call under `#[cfg]`); a crate that defines `MODULE` another way (through a macro
//! of its own, say) passes by naming `kernel_module` in a comment. It can miss a
//! crate whose kernels come from elsewhere, which then gets rustc's errors.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{io_error, Error};

/// The word whose absence the check reports.
const MACRO_WORD: &str = "kernel_module";
/// The word that marks a file as declaring kernels.
const KERNEL_WORD: &str = "xlog_kernel";

/// Fails with [`Error::KernelModuleMissing`] when a file of `crate_dir/src` mentions
/// `xlog_kernel` and no file there mentions `kernel_module`. A crate without `src/`
/// passes.
pub(crate) fn check(crate_dir: &Path, package: &str) -> Result<(), Error> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    if src.is_dir() {
        rust_files(&src, &mut files)?;
    }
    files.sort();
    let mut sources = Vec::with_capacity(files.len());
    for path in files {
        let bytes = fs::read(&path).map_err(|e| io_error(&path, "read a source file", e))?;
        sources.push((path, String::from_utf8_lossy(&bytes).into_owned()));
    }
    match missing_call(&sources) {
        None => Ok(()),
        Some(kernels_in) => Err(Error::KernelModuleMissing {
            package: package.to_string(),
            kernels_in: relative(kernels_in, crate_dir),
            crate_root: relative(&src.join("lib.rs"), crate_dir),
        }),
    }
}

/// The first file (in the order given) that mentions `xlog_kernel`, when no file
/// mentions `kernel_module`.
fn missing_call(sources: &[(PathBuf, String)]) -> Option<&Path> {
    if sources
        .iter()
        .any(|(_, text)| mentions_word(text, MACRO_WORD))
    {
        return None;
    }
    sources
        .iter()
        .find(|(_, text)| mentions_word(text, KERNEL_WORD))
        .map(|(path, _)| path.as_path())
}

/// Whether `word` occurs in `text` as a whole identifier (not inside a longer one,
/// such as `xlog_kernels`).
fn mentions_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c == '_' || c.is_alphanumeric();
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Appends every `.rs` file under `dir` to `out`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let entries = fs::read_dir(dir).map_err(|e| io_error(dir, "list a source directory", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, "list a source directory", e))?;
        let path = entry.path();
        // `metadata` follows symlinks, as rustc does for `mod` files.
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => rust_files(&path, out)?,
            Ok(meta) if meta.is_file() && path.extension().is_some_and(|e| e == "rs") => {
                out.push(path)
            }
            _ => {}
        }
    }
    Ok(())
}

/// `path` relative to `base` when it lies under it, for a short message.
fn relative(path: &Path, base: &Path) -> PathBuf {
    path.strip_prefix(base).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    }

    #[test]
    fn words_are_whole_identifiers() {
        assert!(mentions_word("xlog::kernel_module!();", "kernel_module"));
        assert!(mentions_word("#[xlog_kernel(write(out))]", "xlog_kernel"));
        assert!(mentions_word(
            "use xlog::{kernel_module as km};",
            "kernel_module"
        ));
        assert!(mentions_word("kernel_module", "kernel_module"));
        assert!(!mentions_word("use xlog_kernels::sum;", "xlog_kernel"));
        assert!(!mentions_word("my_kernel_module!();", "kernel_module"));
        assert!(!mentions_word("kernel_modules", "kernel_module"));
        assert!(!mentions_word("", "kernel_module"));
    }

    #[test]
    fn kernels_without_the_macro_are_reported_at_the_first_file() {
        let files = sources(&[
            ("src/lib.rs", "use xlog::prelude::*;\nmod ops;\n"),
            (
                "src/ops.rs",
                "#[xlog_kernel(write(y))]\npub fn f(y: &mut [u32]) {}\n",
            ),
            (
                "src/more.rs",
                "#[xlog::xlog_kernel(write(y))]\npub fn g(y: &mut [u32]) {}\n",
            ),
        ]);
        assert_eq!(missing_call(&files), Some(Path::new("src/ops.rs")));
    }

    #[test]
    fn any_mention_of_the_macro_passes() {
        for call in [
            "xlog::kernel_module!();",
            "xlog_device::kernel_module!();",
            "use xlog::kernel_module as module;\nmodule!();",
            "#[cfg(feature = \"gpu\")]\nxlog::kernel_module!();",
            "// MODULE comes from my_kernels!(), which calls kernel_module!",
        ] {
            let files = sources(&[
                ("src/lib.rs", call),
                (
                    "src/k.rs",
                    "#[xlog_kernel(write(y))]\npub fn f(y: &mut [u32]) {}\n",
                ),
            ]);
            assert_eq!(missing_call(&files), None, "{call}");
        }
    }

    #[test]
    fn a_crate_without_kernels_passes() {
        let files = sources(&[("src/lib.rs", "pub use xlog_kernels::sum;\n")]);
        assert_eq!(missing_call(&files), None);
        assert_eq!(missing_call(&[]), None);
    }

    #[test]
    fn the_error_names_the_line_to_add_and_where() {
        let dir = std::env::temp_dir().join(format!("xlog-module-call-{}", std::process::id()));
        let src = dir.join("src/kernels");
        fs::create_dir_all(&src).unwrap();
        fs::write(
            dir.join("src/lib.rs"),
            "use xlog::prelude::*;\nmod kernels;\n",
        )
        .unwrap();
        fs::write(
            src.join("mod.rs"),
            "#[xlog_kernel(write(y))]\npub fn f(y: &mut [u32]) {}\n",
        )
        .unwrap();
        let text = check(&dir, "my-kernels").unwrap_err().to_string();
        fs::write(
            dir.join("src/lib.rs"),
            "xlog::kernel_module!();\nmod kernels;\n",
        )
        .unwrap();
        let fixed = check(&dir, "my-kernels");
        fs::remove_dir_all(&dir).unwrap();

        assert!(text.contains("`my-kernels`"), "{text}");
        assert!(text.contains("src/kernels/mod.rs"), "{text}");
        assert!(text.contains("    xlog::kernel_module!();"), "{text}");
        assert!(text.contains("src/lib.rs"), "{text}");
        assert!(fixed.is_ok(), "{fixed:?}");
    }
}
