//! Linking device bitcode into PTX with the toolchain's own LLVM tools.
//!
//! # How the link inputs are obtained
//!
//! For `nvptx64-nvidia-cuda`, rustc's "objects" and the members of rlibs are LLVM
//! bitcode, and a `cdylib` is linked by calling a linker in the `llvm-bitcode-linker`
//! style (`--export-symbol NAME ... objects rlibs --target-cpu sm_XX -o out.ptx -O3`).
//! That component is not installable here, so the nested build passes
//! `-Clinker=<recorder>`: a small shell script ([`RECORDER_SCRIPT`]) that copies the
//! crate's own `.rcgu.o` files (rustc deletes them after linking) and writes its
//! arguments to `<out>.xlog-link/args`. xlog-build then performs the link itself,
//! from Rust, with readable errors:
//!
//! 1. extract the bitcode members of each rlib (cached per version of the rlib: its
//!    path, size and modification time; safe for build scripts running at once);
//! 2. `llvm-link` the crate's objects and all members into one module;
//! 3. `opt -passes=internalize,globaldce,default<O3>` keeping only the exported
//!    symbols (the `#[no_mangle]` kernel entry points and ABI descriptors),
//!    [`PANIC_SINK_SYMBOL`] and every `__xlog_abi_*` descriptor;
//! 4. check that no undefined function is left (a `libm` call, say), naming it;
//! 5. `llc -mcpu=sm_XX [-mattr=+ptxNN]` to PTX.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::UNIX_EPOCH;

use crate::abi::ABI_SYMBOL_PREFIX;
use crate::command;
use crate::error::{io_error, Error};
use crate::toolchain::Toolchain;

/// The device global the panic handler reports through; never internalized so the
/// host runtime can always find it (see `xlog_device::panic`).
pub const PANIC_SINK_SYMBOL: &str = "__xlog_panic_sink";

/// The link recorder given to rustc as `-Clinker`.
pub const RECORDER_SCRIPT: &str = r#"#!/bin/sh
# Written by xlog-build. rustc calls this as the nvptx "linker": it records the
# link inputs so xlog-build can link them with llvm-link / opt / llc.
out=""
prev=""
for a in "$@"; do
  if [ "$prev" = "-o" ]; then out="$a"; fi
  prev="$a"
done
if [ -z "$out" ]; then echo "xlog link recorder: no -o argument" >&2; exit 1; fi
dir="$out.xlog-link"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
: > "$dir/args.tmp" || exit 1
for a in "$@"; do
  case "$a" in
    *.rcgu.o)
      cp "$a" "$dir/" || exit 1
      printf '%s\n' "$dir/${a##*/}" >> "$dir/args.tmp" || exit 1 ;;
    *)
      printf '%s\n' "$a" >> "$dir/args.tmp" || exit 1 ;;
  esac
done
mv "$dir/args.tmp" "$dir/args" || exit 1
: > "$out"
"#;

/// Writes the recorder into `dir` (only when its content changed, so its timestamp
/// stays put) and returns its path.
pub(crate) fn install_recorder(dir: &Path) -> Result<PathBuf, Error> {
    let path = dir.join("xlog-link-recorder.sh");
    fs::create_dir_all(dir).map_err(|e| io_error(dir, "create the device target directory", e))?;
    if fs::read_to_string(&path).ok().as_deref() != Some(RECORDER_SCRIPT) {
        let tmp = dir.join(format!("xlog-link-recorder.sh.{}", std::process::id()));
        fs::write(&tmp, RECORDER_SCRIPT)
            .map_err(|e| io_error(&tmp, "write the link recorder", e))?;
        set_executable(&tmp)?;
        fs::rename(&tmp, &path).map_err(|e| io_error(&path, "install the link recorder", e))?;
    }
    Ok(path)
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|e| io_error(path, "make the link recorder executable", e))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<(), Error> {
    Ok(())
}

/// What rustc asked the linker to do, read back from the recorder's manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkInputs {
    /// Symbols to keep visible (the kernel entry points and other `#[no_mangle]` items).
    pub exports: Vec<String>,
    /// Bitcode objects of the crate being linked.
    pub objects: Vec<PathBuf>,
    /// Dependency rlibs (archives of bitcode objects plus `lib.rmeta`).
    pub rlibs: Vec<PathBuf>,
    /// `--target-cpu`, e.g. `sm_80`.
    pub target_cpu: Option<String>,
    /// The optimisation level rustc asked for: `0`..`3`, `s`, `z`.
    pub opt_level: Option<String>,
    /// The output rustc expects.
    pub output: Option<PathBuf>,
}

impl LinkInputs {
    /// Parses the recorder's argument list (one argument per line).
    pub fn parse(args: &str) -> Result<LinkInputs, Error> {
        let mut inputs = LinkInputs::default();
        let mut it = args.lines();
        while let Some(arg) = it.next() {
            let mut value = |flag: &str| {
                it.next()
                    .map(str::to_string)
                    .ok_or_else(|| Error::Unexpected {
                        message: format!("link manifest: `{flag}` without a value"),
                    })
            };
            match arg {
                "--export-symbol" => inputs.exports.push(value(arg)?),
                "--target-cpu" => inputs.target_cpu = Some(value(arg)?),
                "-o" => inputs.output = Some(value(arg)?.into()),
                "-L" | "-l" | "--target" | "--linker-path" | "--bitcode-linker-path" => {
                    value(arg)?;
                }
                _ if arg.starts_with("-O") => inputs.opt_level = Some(arg[2..].to_string()),
                _ if arg.starts_with('-') || arg.is_empty() => {}
                _ if arg.ends_with(".rlib") || arg.ends_with(".a") => inputs.rlibs.push(arg.into()),
                _ => inputs.objects.push(arg.into()),
            }
        }
        if inputs.output.is_none() {
            return Err(Error::Unexpected {
                message: "link manifest has no `-o` output".to_string(),
            });
        }
        Ok(inputs)
    }

    /// Reads the manifest the recorder wrote for the artifact `output`.
    pub(crate) fn read_for(output: &Path) -> Result<LinkInputs, Error> {
        let path = manifest_path(output);
        let text =
            fs::read_to_string(&path).map_err(|e| io_error(&path, "read the link manifest", e))?;
        Self::parse(&text)
    }
}

/// Where the recorder writes the manifest for the artifact `output`.
pub(crate) fn manifest_path(output: &Path) -> PathBuf {
    let mut dir = output.as_os_str().to_owned();
    dir.push(".xlog-link");
    PathBuf::from(dir).join("args")
}

/// LLVM settings for the final steps.
#[derive(Debug, Clone)]
pub(crate) struct LlvmOptions {
    pub arch: String,
    pub ptx_version: Option<u32>,
}

/// The `opt` pass pipeline for a rustc opt level.
pub(crate) fn opt_pipeline(opt_level: Option<&str>) -> String {
    let level = match opt_level {
        Some("0") => None,
        Some("1") => Some("O1"),
        Some("2") => Some("O2"),
        Some("s") => Some("Os"),
        Some("z") => Some("Oz"),
        _ => Some("O3"),
    };
    match level {
        Some(level) => format!("internalize,globaldce,default<{level}>"),
        None => "internalize,globaldce".to_string(),
    }
}

/// The symbols `opt` keeps external: rustc's exports, the panic sink, and every
/// kernel ABI descriptor (a glob, which `--internalize-public-api-list` accepts), so
/// a descriptor survives even if rustc stopped listing exported statics.
pub(crate) fn public_api(exports: &[String]) -> String {
    let abi_glob = format!("{ABI_SYMBOL_PREFIX}*");
    let mut keep: Vec<&str> = exports.iter().map(String::as_str).collect();
    for always in [PANIC_SINK_SYMBOL, abi_glob.as_str()] {
        if !keep.contains(&always) {
            keep.push(always);
        }
    }
    keep.join(",")
}

/// `llc` arguments for the chosen arch and PTX ISA version.
pub(crate) fn llc_args(opts: &LlvmOptions, opt_level: Option<&str>) -> Vec<String> {
    let mut args = vec![format!("-mcpu={}", opts.arch)];
    if let Some(v) = opts.ptx_version {
        args.push(format!("-mattr=+ptx{v}"));
    }
    let level = match opt_level {
        Some("0") => "0",
        Some("1") => "1",
        Some("2") | Some("s") | Some("z") => "2",
        _ => "3",
    };
    args.push(format!("-O{level}"));
    args
}

/// Links `inputs` into PTX text. `work` is a scratch directory for this artifact;
/// `cache` holds extracted rlib members shared by all builds in the target dir.
pub(crate) fn link(
    tc: &Toolchain,
    inputs: &LinkInputs,
    opts: &LlvmOptions,
    work: &Path,
    cache: &Path,
) -> Result<String, Error> {
    fs::create_dir_all(work).map_err(|e| io_error(work, "create the link directory", e))?;
    let mut files: Vec<PathBuf> = inputs.objects.clone();
    for rlib in &inputs.rlibs {
        files.extend(extract_rlib(tc, rlib, cache)?);
    }

    let linked = work.join("linked.bc");
    let mut cmd = Command::new(tc.llvm_tool("llvm-link"));
    cmd.args(&files).arg("-o").arg(&linked);
    command::run(&mut cmd, "llvm-link of the device bitcode")?;

    let optimized = work.join("optimized.bc");
    let mut cmd = Command::new(tc.llvm_tool("opt"));
    cmd.arg(format!(
        "-passes={}",
        opt_pipeline(inputs.opt_level.as_deref())
    ))
    .arg(format!(
        "--internalize-public-api-list={}",
        public_api(&inputs.exports)
    ))
    .arg(&linked)
    .arg("-o")
    .arg(&optimized);
    command::run(
        &mut cmd,
        "opt (internalize + optimise) of the device bitcode",
    )?;

    check_undefined(tc, &optimized)?;

    let ptx = work.join("module.ptx");
    let mut cmd = Command::new(tc.llvm_tool("llc"));
    cmd.args(llc_args(opts, inputs.opt_level.as_deref()))
        .arg(&optimized)
        .arg("-o")
        .arg(&ptx);
    command::run(&mut cmd, "llc (bitcode to PTX)")?;
    fs::read_to_string(&ptx).map_err(|e| io_error(&ptx, "read the PTX llc wrote", e))
}

/// Fails, naming the functions, when the linked module still calls something no
/// crate defined: ptxas would reject it later with a far less helpful message.
fn check_undefined(tc: &Toolchain, module: &Path) -> Result<(), Error> {
    let mut cmd = Command::new(tc.llvm_tool("llvm-nm"));
    cmd.arg("--undefined-only").arg(module);
    let out = command::run(&mut cmd, "llvm-nm of the linked device module")?;
    let undefined = undefined_symbols(&String::from_utf8_lossy(&out.stdout));
    if undefined.is_empty() {
        return Ok(());
    }
    Err(Error::Unexpected {
        message: format!(
            "device code calls functions that no crate defines: {}. These usually come from \
             `std`-only float methods or C math (`exp`, `sinf`, ...) that have no GPU \
             implementation: use `xlog_device::math` instead",
            undefined.join(", ")
        ),
    })
}

/// Names from `llvm-nm --undefined-only`, minus LLVM intrinsics the backend lowers.
pub(crate) fn undefined_symbols(nm_output: &str) -> Vec<String> {
    nm_output
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|name| !name.starts_with("llvm.") && !name.ends_with(':'))
        .map(str::to_string)
        .collect()
}

/// Extracts the bitcode members of `rlib` into the cache and returns their paths in
/// archive order; `lib.rmeta` and other non-object members are skipped.
///
/// Build scripts of several kernel crates run at once and share the cache, so an
/// entry is never changed in place: each version of an rlib (its path, size and
/// modification time) has a directory of its own, extracted under a private name and
/// renamed into place whole. A build that loses the race to publish it uses the
/// winner's identical copy; no build ever deletes a directory another one reads.
fn extract_rlib(tc: &Toolchain, rlib: &Path, cache: &Path) -> Result<Vec<PathBuf>, Error> {
    let meta = fs::metadata(rlib).map_err(|e| io_error(rlib, "read the rlib", e))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let name = rlib
        .file_name()
        .map_or_else(|| "rlib".into(), |n| n.to_string_lossy().into_owned());
    let version = format!("{} {} {}", rlib.display(), meta.len(), mtime);
    let dir = cache.join(format!("{name}-{:016x}", fnv1a(version.as_bytes())));
    let members_path = dir.join(".xlog-members");
    if !members_path.exists() {
        publish_extraction(tc, rlib, cache, &dir)?;
    }
    let members = fs::read_to_string(&members_path)
        .map_err(|e| io_error(&members_path, "read the rlib member list", e))?;
    Ok(members
        .lines()
        .filter(|m| m.ends_with(".o"))
        .map(|m| dir.join(m))
        .collect())
}

/// Extracts `rlib` into a private directory of `cache`, writes its member list last,
/// and renames the directory to `dir`, unless another build published `dir` first.
fn publish_extraction(tc: &Toolchain, rlib: &Path, cache: &Path, dir: &Path) -> Result<(), Error> {
    let nanos = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let private = cache.join(format!(".extracting-{}-{nanos}", std::process::id()));
    fs::create_dir_all(&private).map_err(|e| io_error(&private, "create the rlib cache", e))?;
    let extracted = (|| {
        let mut cmd = Command::new(tc.llvm_tool("llvm-ar"));
        cmd.arg("x")
            .arg(format!("--output={}", private.display()))
            .arg(rlib);
        command::run(&mut cmd, "llvm-ar extraction of a device rlib")?;
        let mut cmd = Command::new(tc.llvm_tool("llvm-ar"));
        cmd.arg("t").arg(rlib);
        let listing = command::run(&mut cmd, "llvm-ar listing of a device rlib")?;
        let list = private.join(".xlog-members");
        fs::write(&list, &listing.stdout)
            .map_err(|e| io_error(&list, "write the rlib member list", e))
    })();
    let published = extracted.and_then(|()| match fs::rename(&private, dir) {
        Ok(()) => Ok(()),
        // Another build published the same version first: use its copy.
        Err(_) if dir.join(".xlog-members").exists() => Ok(()),
        Err(e) => Err(io_error(dir, "publish the extracted rlib", e)),
    });
    // Gone after a successful rename; otherwise ours is the only reference to it.
    let _ = fs::remove_dir_all(&private);
    published
}

/// The 64-bit FNV-1a hash of `bytes`: a stable name for a cache entry.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Names of the `.entry` functions (kernels) in PTX text, in order.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines().filter_map(entry_name).collect()
}

/// The kernel name when `line` opens a `.entry`.
pub(crate) fn entry_name(line: &str) -> Option<String> {
    let l = line.trim_start();
    let rest = l
        .strip_prefix(".visible .entry ")
        .or_else(|| l.strip_prefix(".entry "))?;
    let name = rest.split(['(', ' ']).next()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "--export-symbol\nsaxpy\n--export-symbol\nreduce\n\
/t/deps/k.ptx.xlog-link/k.k.abc-cgu.0.rcgu.o\n/t/deps/libcore-1.rlib\n\
/t/deps/libcompiler_builtins-2.rlib\n-L\n/t/deps/raw-dylibs\n--target\nnvptx64-nvidia-cuda\n\
--target-cpu\nsm_80\n-L\n/sysroot/self-contained\n-o\n/t/deps/k.ptx\n-O3\n--debug\n";

    /// Build scripts of several kernel crates extract the same rlibs into one cache
    /// at once: each must get a complete, readable copy (before the cache published
    /// whole directories, one build deleted the directory another was reading).
    #[test]
    fn concurrent_extractions_of_one_rlib_all_succeed() {
        let tc = Toolchain::resolve(crate::toolchain::PINNED_TOOLCHAIN, false)
            .expect("the pinned device toolchain (scripts/test.sh installs it)");
        let root = std::env::temp_dir().join(format!("xlog-rlib-race-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let members: Vec<String> = (0..64).map(|i| format!("m{i}.o")).collect();
        for (i, m) in members.iter().enumerate() {
            fs::write(root.join(m), format!("member {i} ").repeat(4096)).unwrap();
        }
        let rlib = root.join("libfake-1.rlib");
        let mut cmd = Command::new(tc.llvm_tool("llvm-ar"));
        cmd.current_dir(&root).arg("rc").arg(&rlib).args(&members);
        command::run(&mut cmd, "llvm-ar creation of a test rlib").unwrap();

        for round in 0..3 {
            let cache = root.join(format!("cache-{round}"));
            std::thread::scope(|s| {
                for _ in 0..8 {
                    s.spawn(|| {
                        let paths = extract_rlib(&tc, &rlib, &cache).unwrap();
                        assert_eq!(paths.len(), members.len());
                        for (i, p) in paths.iter().enumerate() {
                            let text = fs::read_to_string(p)
                                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                            assert_eq!(text, format!("member {i} ").repeat(4096));
                        }
                    });
                }
            });
            let left: Vec<_> = fs::read_dir(&cache)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(
                left.len(),
                1,
                "one published entry, no private leftovers: {left:?}"
            );
        }
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn parses_the_recorded_rustc_link_line() {
        let inputs = LinkInputs::parse(MANIFEST).unwrap();
        assert_eq!(inputs.exports, ["saxpy", "reduce"]);
        assert_eq!(
            inputs.objects,
            [PathBuf::from(
                "/t/deps/k.ptx.xlog-link/k.k.abc-cgu.0.rcgu.o"
            )]
        );
        assert_eq!(
            inputs.rlibs,
            [
                PathBuf::from("/t/deps/libcore-1.rlib"),
                PathBuf::from("/t/deps/libcompiler_builtins-2.rlib")
            ]
        );
        assert_eq!(inputs.target_cpu.as_deref(), Some("sm_80"));
        assert_eq!(inputs.opt_level.as_deref(), Some("3"));
        assert_eq!(inputs.output, Some(PathBuf::from("/t/deps/k.ptx")));
    }

    #[test]
    fn manifest_without_output_is_an_error() {
        let err = LinkInputs::parse("--export-symbol\nk\n").unwrap_err();
        assert!(err.to_string().contains("no `-o`"));
        let err = LinkInputs::parse("--export-symbol").unwrap_err();
        assert!(err.to_string().contains("without a value"));
    }

    #[test]
    fn manifest_sits_next_to_the_output() {
        assert_eq!(
            manifest_path(Path::new("/t/deps/k.ptx")),
            PathBuf::from("/t/deps/k.ptx.xlog-link/args")
        );
    }

    #[test]
    fn pipelines_follow_the_opt_level() {
        assert_eq!(opt_pipeline(Some("3")), "internalize,globaldce,default<O3>");
        assert_eq!(opt_pipeline(None), "internalize,globaldce,default<O3>");
        assert_eq!(opt_pipeline(Some("0")), "internalize,globaldce");
        assert_eq!(opt_pipeline(Some("s")), "internalize,globaldce,default<Os>");
    }

    #[test]
    fn the_panic_sink_and_descriptors_are_always_kept() {
        assert_eq!(
            public_api(&["a".into(), "b".into()]),
            "a,b,__xlog_panic_sink,__xlog_abi_*"
        );
        assert_eq!(
            public_api(&[PANIC_SINK_SYMBOL.into()]),
            "__xlog_panic_sink,__xlog_abi_*"
        );
    }

    #[test]
    fn llc_arguments() {
        let opts = LlvmOptions {
            arch: "sm_90".into(),
            ptx_version: Some(78),
        };
        assert_eq!(
            llc_args(&opts, Some("3")),
            ["-mcpu=sm_90", "-mattr=+ptx78", "-O3"]
        );
        let opts = LlvmOptions {
            arch: "sm_80".into(),
            ptx_version: None,
        };
        assert_eq!(llc_args(&opts, Some("0")), ["-mcpu=sm_80", "-O0"]);
    }

    #[test]
    fn undefined_symbols_skip_intrinsics() {
        let nm = "                 U expf\n                 U llvm.nvvm.barrier0\n                 U pow\n";
        assert_eq!(undefined_symbols(nm), ["expf", "pow"]);
        assert!(undefined_symbols("").is_empty());
    }

    #[test]
    fn finds_entries() {
        let ptx =
            ".visible .entry saxpy(\n\t.param .f32 a\n)\n.visible .func helper()\n.entry other(\n";
        assert_eq!(ptx_entries(ptx), ["saxpy", "other"]);
    }

    #[test]
    fn recorder_records_and_copies() {
        let dir = std::env::temp_dir().join(format!("xlog-recorder-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let script = install_recorder(&dir).unwrap();
        let obj = dir.join("k.k.abc-cgu.0.rcgu.o");
        fs::write(&obj, b"BC").unwrap();
        let out = dir.join("k.ptx");
        let status = Command::new(&script)
            .args(["--export-symbol", "k"])
            .arg(&obj)
            .args(["--target-cpu", "sm_80", "-o"])
            .arg(&out)
            .arg("-O3")
            .status()
            .unwrap();
        assert!(status.success());
        let inputs = LinkInputs::read_for(&out).unwrap();
        assert_eq!(inputs.exports, ["k"]);
        let copied = &inputs.objects[0];
        assert!(
            copied.starts_with(dir.join("k.ptx.xlog-link")),
            "{copied:?}"
        );
        assert_eq!(fs::read(copied).unwrap(), b"BC");
        assert!(out.is_file());
        fs::remove_dir_all(&dir).unwrap();
    }
}
