//! `ptxas`: finding it, compiling PTX to cubin, and reading its `-v` resource report.
//!
//! `ptxas` is optional for building (without it modules ship PTX only and the driver
//! JIT-compiles them) but required by the CI check that every kernel validates for
//! sm_80 and sm_90 without register spills. No CUDA toolkit is needed: the PyPI wheel
//! `nvidia-cuda-nvcc` ships it (`pip install nvidia-cuda-nvcc`).
//!
//! Search order ([`find`]): `$XLOG_PTXAS`, `PATH`, `$CUDA_HOME/bin`, `$CUDA_PATH/bin`,
//! `/usr/local/cuda/bin`, then the `nvidia` Python package of `python3` (the wheel's
//! `nvidia/cu13/bin/ptxas` or `nvidia/cuda_nvcc/bin/ptxas`).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::command;
use crate::error::{io_error, Error};

/// How to get ptxas, for error messages.
pub const INSTALL_HINT: &str = "install it with `pip install nvidia-cuda-nvcc` (no CUDA toolkit \
    needed), or point XLOG_PTXAS at a ptxas binary";

/// Finds a ptxas binary (see the module docs for the order).
pub fn find() -> Option<PathBuf> {
    if let Some(p) = env::var_os("XLOG_PTXAS") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = env::var_os("PATH") {
        candidates.extend(env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = env::var_os(var) {
            candidates.push(PathBuf::from(home).join("bin/ptxas"));
        }
    }
    candidates.push("/usr/local/cuda/bin/ptxas".into());
    if let Some(p) = candidates.into_iter().find(|p| p.is_file()) {
        return Some(p);
    }
    python_wheel_ptxas()
}

/// Asks `python3` where the `nvidia` namespace package lives and looks for the
/// wheel's ptxas there.
fn python_wheel_ptxas() -> Option<PathBuf> {
    const SCRIPT: &str = "import nvidia\nfor p in nvidia.__path__: print(p)";
    let python = env::var_os("XLOG_PYTHON").unwrap_or_else(|| "python3".into());
    let out = Command::new(python).args(["-c", SCRIPT]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .flat_map(|dir| {
            let dir = PathBuf::from(dir.trim());
            ["cu13/bin/ptxas", "cu12/bin/ptxas", "cuda_nvcc/bin/ptxas"].map(|rel| dir.join(rel))
        })
        .find(|p| p.is_file())
}

/// Like [`find`], but an error that says how to install ptxas when there is none.
pub fn require() -> Result<PathBuf, Error> {
    find().ok_or_else(|| Error::ToolNotFound {
        tool: "ptxas".to_string(),
        hint: INSTALL_HINT.to_string(),
    })
}

/// Resource usage of one function, from `ptxas -v`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionReport {
    /// The (mangled) function name.
    pub name: String,
    /// Whether it is a kernel entry point (`.entry`) rather than a device function.
    pub is_entry: bool,
    /// Registers per thread, when reported.
    pub registers: Option<u32>,
    /// Bytes of local stack frame.
    pub stack_frame: u64,
    /// Bytes of register spill stores.
    pub spill_stores: u64,
    /// Bytes of register spill loads.
    pub spill_loads: u64,
    /// Bytes of static shared memory (`smem`), when reported.
    pub shared_bytes: u64,
}

impl FunctionReport {
    /// Whether ptxas had to spill registers to local memory.
    pub fn spills(&self) -> bool {
        self.spill_stores != 0 || self.spill_loads != 0
    }
}

/// The parsed `ptxas -v` output for one module and arch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The arch it was compiled for (`sm_90`).
    pub arch: String,
    /// One entry per function ptxas reported on.
    pub functions: Vec<FunctionReport>,
}

impl Report {
    /// Parses `ptxas -v` output (ptxas writes it to stderr).
    pub fn parse(arch: &str, text: &str) -> Report {
        let mut functions: Vec<FunctionReport> = Vec::new();
        let mut entries: Vec<String> = Vec::new();
        let mut current: Option<usize> = None;
        let index_of = |functions: &mut Vec<FunctionReport>, name: &str| {
            if let Some(i) = functions.iter().position(|f| f.name == name) {
                i
            } else {
                functions.push(FunctionReport {
                    name: name.to_string(),
                    ..FunctionReport::default()
                });
                functions.len() - 1
            }
        };
        for line in text.lines() {
            let l = line.trim();
            if let Some(rest) = l.strip_prefix("ptxas info    : Compiling entry function '") {
                let name = rest.split('\'').next().unwrap_or_default();
                entries.push(name.to_string());
                current = Some(index_of(&mut functions, name));
            } else if let Some(rest) = l.strip_prefix("ptxas info    : Function properties for ") {
                current = Some(index_of(&mut functions, rest.trim()));
            } else if l.contains("bytes stack frame") {
                if let Some(f) = current.map(|i| &mut functions[i]) {
                    f.stack_frame = number_before(l, "bytes stack frame").unwrap_or(0);
                    f.spill_stores = number_before(l, "bytes spill stores").unwrap_or(0);
                    f.spill_loads = number_before(l, "bytes spill loads").unwrap_or(0);
                }
            } else if l.starts_with("ptxas info    : Used ") {
                if let Some(f) = current.map(|i| &mut functions[i]) {
                    f.registers = number_before(l, "registers").map(|n| n as u32);
                    f.shared_bytes = number_before(l, "bytes smem").unwrap_or(0);
                }
            }
        }
        for f in &mut functions {
            f.is_entry = entries.contains(&f.name);
        }
        Report {
            arch: arch.to_string(),
            functions,
        }
    }

    /// The functions that spilled.
    pub fn spilling(&self) -> impl Iterator<Item = &FunctionReport> {
        self.functions.iter().filter(|f| f.spills())
    }
}

/// The integer right before `unit` in `line` (`"0 bytes spill stores"` → 0).
fn number_before(line: &str, unit: &str) -> Option<u64> {
    let head = &line[..line.find(unit)?];
    head.split([' ', ','])
        .rfind(|w| !w.is_empty())?
        .parse()
        .ok()
}

/// Substrings of the mangled names of functions on the panic path: `core::fmt`
/// (reachable through the function pointers in a panic's `fmt::Arguments`),
/// `core::panicking` and xlog-device's `panic` module (its panic handler and the
/// out-of-line panics of its checks, `panic::cold`). Spills there cost nothing in a
/// kernel that does not panic, so [`check_module`] ignores them.
pub const PANIC_PATH_FUNCTIONS: &[&str] = &[
    "4core3fmt",
    "4core9panicking",
    "11xlog_device5panic",
    "17rust_begin_unwind",
];

/// Compiles `ptx` for `arch` with `ptxas -v`, returning the cubin and the report.
/// `label` names the module in errors; `scratch` is a directory for temporary files.
pub fn compile(
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    label: &str,
    scratch: &Path,
) -> Result<(Vec<u8>, Report), Error> {
    fs::create_dir_all(scratch).map_err(|e| io_error(scratch, "create the ptxas directory", e))?;
    let stem = format!("{}-{arch}", sanitize(label));
    let input = scratch.join(format!("{stem}.ptx"));
    let output = scratch.join(format!("{stem}.cubin"));
    fs::write(&input, ptx).map_err(|e| io_error(&input, "write PTX for ptxas", e))?;
    let mut cmd = Command::new(ptxas);
    cmd.arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&input)
        .arg("-o")
        .arg(&output);
    let out = command::run(&mut cmd, &format!("ptxas -arch={arch} of `{label}`"))?;
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    let cubin =
        fs::read(&output).map_err(|e| io_error(&output, "read the cubin ptxas wrote", e))?;
    Ok((cubin, Report::parse(arch, &text)))
}

fn sanitize(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The archs every kernel crate's CI check validates: the default target and the
/// GPUs the project runs on.
pub const CHECKED_ARCHS: &[&str] = &["sm_80", "sm_90"];

/// The CI check of a kernel crate's embedded module: [`check_module`] for
/// [`CHECKED_ARCHS`] with no spills allowed (outside the panic path and kernels that
/// declare `min_blocks`, whose register limit is a deliberate trade), and ptxas must
/// report every kernel of the module's table.
///
/// ```no_run
/// # static MODULE: xlog_device::ModuleImage = unsafe { xlog_device::ModuleImage::from_ptx("k", "") };
/// xlog_build::ptxas::check_image(&MODULE).unwrap_or_else(|e| panic!("{e}"));
/// ```
pub fn check_image(image: &xlog_device::ModuleImage) -> Result<Vec<Report>, Error> {
    // A kernel declaring `min_blocks = N` traded registers for occupancy on purpose
    // (its bench shows whether the trade pays): ptxas may spill to meet it.
    let traded: Vec<&str> = image
        .kernels()
        .iter()
        .filter(|(_, words)| {
            words
                .first()
                .is_some_and(|&h| xlog_device::abi::HeaderAbi::decode(h).min_blocks > 0)
        })
        .map(|(k, _)| *k)
        .collect();
    let reports = check_module(image.name(), image.ptx(), CHECKED_ARCHS, &traded)?;
    for r in &reports {
        // ptxas also reports device functions (the panic path, say): look for each
        // kernel of the table by name.
        if let Some((missing, _)) = image
            .kernels()
            .iter()
            .find(|(k, _)| !r.functions.iter().any(|f| f.name == *k))
        {
            return Err(Error::Unexpected {
                message: format!(
                    "ptxas -arch={} did not report kernel `{missing}` of `{}`",
                    r.arch,
                    image.name()
                ),
            });
        }
    }
    Ok(reports)
}

/// Validates `ptx` for every arch in `archs`, failing when ptxas is missing, rejects
/// the PTX, or reports spills in a function not listed in `allow_spills` or
/// [`PANIC_PATH_FUNCTIONS`] (names are matched as substrings of the mangled name).
///
/// This is what the CI check of every kernel crate calls:
///
/// ```no_run
/// # let ptx = "";
/// xlog_build::ptxas::check_module("my-kernels", ptx, &["sm_80", "sm_90"], &[]).unwrap();
/// ```
pub fn check_module(
    label: &str,
    ptx: &str,
    archs: &[&str],
    allow_spills: &[&str],
) -> Result<Vec<Report>, Error> {
    let ptxas = require()?;
    let scratch = env::temp_dir().join(format!("xlog-ptxas-{}", std::process::id()));
    let mut reports = Vec::new();
    for arch in archs {
        let (_, report) = compile(&ptxas, ptx, arch, label, &scratch)?;
        let spilling: Vec<String> = report
            .spilling()
            .filter(|f| {
                !allow_spills
                    .iter()
                    .chain(PANIC_PATH_FUNCTIONS)
                    .any(|a| f.name.contains(a))
            })
            .map(|f| {
                format!(
                    "{} ({} B stores, {} B loads)",
                    f.name, f.spill_stores, f.spill_loads
                )
            })
            .collect();
        if !spilling.is_empty() {
            let _ = fs::remove_dir_all(&scratch);
            return Err(Error::Unexpected {
                message: format!(
                    "ptxas -arch={arch} reports register spills in `{label}`: {}; \
                     reduce register pressure (smaller per-thread arrays, fewer live values) \
                     or list the function in allow_spills with a reason",
                    spilling.join(", ")
                ),
            });
        }
        reports.push(report);
    }
    let _ = fs::remove_dir_all(&scratch);
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
ptxas info    : Function properties for saxpy
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Function properties for _ZN4core9panicking5panic17h1E
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'reduce' for 'sm_90'
ptxas info    : Function properties for reduce
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 1 barriers, 128 bytes smem
ptxas info    : Compile time = 2.210 ms
";

    #[test]
    fn parses_the_verbose_report() {
        let r = Report::parse("sm_90", SAMPLE);
        assert_eq!(r.functions.len(), 3);
        let saxpy = &r.functions[0];
        assert_eq!(
            (saxpy.name.as_str(), saxpy.is_entry, saxpy.registers),
            ("saxpy", true, Some(10))
        );
        assert!(!saxpy.spills());
        let helper = &r.functions[1];
        assert!(!helper.is_entry);
        assert_eq!(
            (helper.stack_frame, helper.spill_stores, helper.spill_loads),
            (16, 8, 4)
        );
        let reduce = &r.functions[2];
        assert_eq!((reduce.registers, reduce.shared_bytes), (Some(18), 128));
        let spilling: Vec<_> = r.spilling().map(|f| f.name.as_str()).collect();
        assert_eq!(spilling, ["_ZN4core9panicking5panic17h1E"]);
    }

    #[test]
    fn numbers_before_units() {
        assert_eq!(
            number_before(
                "12 bytes stack frame, 3 bytes spill stores",
                "bytes spill stores"
            ),
            Some(3)
        );
        assert_eq!(number_before("Used 40 registers", "registers"), Some(40));
        assert_eq!(number_before("nothing", "registers"), None);
    }

    #[test]
    fn install_hint_names_the_wheel() {
        assert!(INSTALL_HINT.contains("pip install nvidia-cuda-nvcc"));
    }
}
