//! [`Builder`]: the device build of one kernel crate, driven from a `build.rs`.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::abi::{self, KernelAbi};
use crate::command;
use crate::diagnostics;
use crate::error::{io_error, tail, Error, STDERR_TAIL_LINES};
use crate::features;
use crate::link::{self, LinkInputs, LlvmOptions};
use crate::ptxas;
use crate::toolchain::{Toolchain, PINNED_TOOLCHAIN};

/// The device target triple.
pub const DEVICE_TARGET: &str = "nvptx64-nvidia-cuda";

/// Set in the nested device build's environment. A kernel crate's own `build.rs`
/// runs again inside that build; seeing this variable, [`Builder::build`] does
/// nothing, so the device build never recurses.
pub const GUARD_VAR: &str = "XLOG_DEVICE_BUILD";

/// The file stem of everything written to `OUT_DIR`: `xlog-module.ptx`,
/// `xlog-module-cubins.rs`, `xlog-module-kernels.rs`. `xlog_device::kernel_module!`
/// includes these fixed names, so it needs no arguments.
pub const MODULE_STEM: &str = "xlog-module";

/// The default PTX target: sm_80 PTX is JIT-compiled by the driver for sm_80 and every
/// later GPU (sm_86, sm_89, sm_90, ...), and sm_80 is the oldest arch with the
/// features the kernels rely on (`redux`, async copies, bf16).
pub const DEFAULT_ARCH: &str = "sm_80";

/// `rustc` flags applied to every crate of the device build (core included).
/// `-Zmir-enable-passes=-JumpThreading` guards against rust-lang/rust#137086: MIR
/// jump threading can duplicate code around aligned barriers into divergent
/// branches, which miscompiles block-level reductions.
pub const BARRIER_GUARD_FLAG: &str = "-Zmir-enable-passes=-JumpThreading";

/// `rustc` flags for the kernel crate itself (not its dependencies) in the device
/// build. Safe code must not be able to define entry points or ABI descriptors of
/// its own next to the ones `#[xlog_kernel]` generates (a launcher would trust
/// them): `global_asm!` needs an unstable feature on nvptx, so only
/// `abi_gpu_kernel` is allowed; and `#[no_mangle]` / `#[export_name]` must be
/// written `#[unsafe(..)]`, as edition 2024 requires, in every edition.
pub const KERNEL_CRATE_GUARDS: &[&str] = &[
    "-Zallow-features=abi_gpu_kernel",
    "-Funsafe_attr_outside_unsafe",
];

/// The module's owner, as `$OUT_DIR/xlog-module.rs` records it: the compiled
/// crate's manifest directory and lib crate name. `kernel_module!` embeds it in the module image and
/// each launcher compares it with its own crate's (`CARGO_MANIFEST_DIR#CARGO_CRATE_NAME`),
/// so only the lib target of the crate that was compiled for the device can launch
/// it through typed launchers.
pub fn module_owner(kernel_dir: &Path, lib_name: &str) -> String {
    format!("{}#{lib_name}", kernel_dir.display())
}

/// Environment knobs, each re-read (and tracked with `rerun-if-env-changed`) on every
/// build. They override the builder's settings.
pub const ENV_KNOBS: &[&str] = &[
    "XLOG_DEVICE_ARCH",
    "XLOG_PTX_VERSION",
    "XLOG_CUBIN_ARCHS",
    "XLOG_DEVICE_PROFILE",
    "XLOG_DEVICE_RUSTFLAGS",
    "XLOG_DEVICE_TARGET_DIR",
    "XLOG_DEVICE_TOOLCHAIN",
    "XLOG_DEVICE_STUB",
    "XLOG_NO_AUTO_INSTALL",
    "XLOG_PTXAS",
    "XLOG_RUSTUP",
    GUARD_VAR,
];

/// Builds a kernel crate for the GPU and writes the module into `OUT_DIR`.
///
/// ```no_run
/// // build.rs of a kernel crate
/// fn main() {
///     xlog_build::Builder::new().run();
/// }
/// ```
///
/// Settings are resolved as: `XLOG_*` environment variable, else the builder call,
/// else the default. See `docs/toolchain.md` for the whole pipeline.
///
/// # Features
///
/// The device build of the crate running the build script gets exactly the cargo
/// features the host build has (`--no-default-features --features <host set>`,
/// `default` included when it is on), so `cfg(feature = ..)` selects the same
/// code on both sides. A feature that enables a host-only dependency must
/// therefore declare that dependency under
/// `[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]`.
/// [`feature`](Self::feature) adds to that set and
/// [`no_default_features`](Self::no_default_features) removes `default` from it.
/// With [`kernel_crate`](Self::kernel_crate), nothing is forwarded: the host's
/// features belong to another crate.
#[derive(Debug, Clone)]
pub struct Builder {
    kernel_crate: Option<PathBuf>,
    toolchain: String,
    arch: String,
    ptx_version: Option<u32>,
    cubin_archs: Vec<String>,
    profile: String,
    rustflags: Vec<String>,
    features: Vec<String>,
    no_default_features: bool,
    target_dir: Option<PathBuf>,
    inject_crate_attrs: bool,
    auto_install: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

/// What a device build produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// `$OUT_DIR/xlog-module.ptx`.
    pub ptx: PathBuf,
    /// The kernel entry points found in the PTX, in order, each with its ABI
    /// descriptor (checked against the entry's parameters).
    pub kernels: Vec<KernelAbi>,
    /// `(arch, path)` of each cubin compiled.
    pub cubins: Vec<(String, PathBuf)>,
}

/// The settings after applying the environment, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub toolchain: String,
    pub arch: String,
    pub ptx_version: Option<u32>,
    pub cubin_archs: Vec<String>,
    pub profile: String,
    pub rustflags: Vec<String>,
    pub features: Vec<String>,
    pub no_default_features: bool,
    pub inject_no_std: bool,
    pub inject_abi_feature: bool,
    pub auto_install: bool,
}

impl Builder {
    /// A builder for the crate whose `build.rs` is running, with the defaults:
    /// [`PINNED_TOOLCHAIN`], [`DEFAULT_ARCH`], the PTX version LLVM picks for it,
    /// no cubins, the `release` profile.
    pub fn new() -> Self {
        Builder {
            kernel_crate: None,
            toolchain: PINNED_TOOLCHAIN.to_string(),
            arch: DEFAULT_ARCH.to_string(),
            ptx_version: None,
            cubin_archs: Vec::new(),
            profile: "release".to_string(),
            rustflags: Vec::new(),
            features: Vec::new(),
            no_default_features: false,
            target_dir: None,
            inject_crate_attrs: true,
            auto_install: true,
        }
    }

    /// Builds the kernel crate at `dir` (its `Cargo.toml`'s directory) instead of the
    /// crate running the build script: for an application that embeds another
    /// crate's kernels. The build script's own features are then not forwarded
    /// (they belong to another crate); that crate's device build uses its default
    /// features plus [`feature`](Self::feature).
    pub fn kernel_crate(mut self, dir: impl Into<PathBuf>) -> Self {
        self.kernel_crate = Some(dir.into());
        self
    }

    /// The GPU arch the PTX targets (`sm_80`, `sm_90`, ...). Env: `XLOG_DEVICE_ARCH`.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = arch.into();
        self
    }

    /// The PTX ISA version as a number (`78` for PTX 7.8); by default LLVM's minimum
    /// for the arch, which the oldest drivers accept. Env: `XLOG_PTX_VERSION`.
    pub fn ptx_version(mut self, version: u32) -> Self {
        self.ptx_version = Some(version);
        self
    }

    /// Also compile a cubin for `arch` with ptxas, when ptxas is found. Env:
    /// `XLOG_CUBIN_ARCHS` (comma-separated).
    pub fn cubin_arch(mut self, arch: impl Into<String>) -> Self {
        self.cubin_archs.push(arch.into());
        self
    }

    /// The cargo profile of the device build (`release` by default; `dev` keeps
    /// debug assertions and overflow checks). Env: `XLOG_DEVICE_PROFILE`.
    pub fn profile(mut self, profile: impl Into<String>) -> Self {
        self.profile = profile.into();
        self
    }

    /// An extra rustc flag for every crate of the device build. Env:
    /// `XLOG_DEVICE_RUSTFLAGS` (whitespace-separated, appended).
    pub fn rustflag(mut self, flag: impl Into<String>) -> Self {
        self.rustflags.push(flag.into());
        self
    }

    /// Enable a cargo feature of the kernel crate in the device build, in addition to
    /// the features forwarded from the host build (see [`Builder`]'s "Features").
    pub fn feature(mut self, feature: impl Into<String>) -> Self {
        self.features.push(feature.into());
        self
    }

    /// Build the kernel crate without its default features. For the crate running
    /// the build script this removes the feature `default` from the forwarded set;
    /// features that `default` enabled on the host stay on, since cargo reports the
    /// resolved set, not how it was requested.
    pub fn no_default_features(mut self) -> Self {
        self.no_default_features = true;
        self
    }

    /// The target directory of the nested device build. By default
    /// `<outer target dir>/xlog-device`, shared by every profile and kernel crate so
    /// `core` is compiled once. Env: `XLOG_DEVICE_TARGET_DIR`.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Whether to add `#![no_std]` and `#![feature(abi_gpu_kernel)]` to the kernel
    /// crate's device build with `-Zcrate-attr` (on by default; each is skipped when
    /// `src/lib.rs` already mentions it).
    pub fn inject_crate_attrs(mut self, inject: bool) -> Self {
        self.inject_crate_attrs = inject;
        self
    }

    /// Whether a missing toolchain or component may be installed with rustup (on by
    /// default). Env: `XLOG_NO_AUTO_INSTALL=1` turns it off.
    pub fn auto_install(mut self, auto_install: bool) -> Self {
        self.auto_install = auto_install;
        self
    }

    /// Runs [`Builder::build`]; on failure prints the error and exits the build script
    /// with status 1 (a short message instead of a panic backtrace).
    pub fn run(self) -> Option<Output> {
        match self.build() {
            Ok(out) => out,
            Err(err) => {
                eprintln!("error: xlog device build: {err}");
                std::process::exit(1);
            }
        }
    }

    /// Compiles the kernel crate to PTX (and cubins), writes the module files into
    /// `OUT_DIR` and prints the `cargo:` directives. Returns `None` inside a device
    /// build (the recursion guard) or when building for the device itself.
    pub fn build(self) -> Result<Option<Output>, Error> {
        for knob in ENV_KNOBS {
            println!("cargo:rerun-if-env-changed={knob}");
        }
        if env::var_os(GUARD_VAR).is_some()
            || env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("nvptx64")
        {
            return Ok(None);
        }
        let out_dir = PathBuf::from(required_env("OUT_DIR")?);
        let kernel_dir = match &self.kernel_crate {
            Some(dir) => dir.clone(),
            None => PathBuf::from(required_env("CARGO_MANIFEST_DIR")?),
        };
        let manifest = kernel_dir.join("Cargo.toml");
        println!("cargo:rerun-if-changed={}", manifest.display());
        println!(
            "cargo:rerun-if-changed={}",
            kernel_dir.join("src").display()
        );

        let manifest_text = fs::read_to_string(&manifest)
            .map_err(|e| io_error(&manifest, "read the kernel crate's manifest", e))?;
        let lib_name = lib_name(&manifest_text).ok_or_else(|| Error::Unexpected {
            message: format!("no package or lib name in {}", manifest.display()),
        })?;
        let owner = module_owner(&kernel_dir, &lib_name);

        if env::var_os("XLOG_DEVICE_STUB").is_some() || env::var_os("DOCS_RS").is_some() {
            return write_stub(&out_dir, &owner).map(Some);
        }

        let lib_source = fs::read_to_string(kernel_dir.join("src/lib.rs")).unwrap_or_default();
        // No `rerun-if-env-changed` for the feature variables: cargo reruns a build
        // script whenever its package's feature set changes.
        let settings = self.settings(&lib_source, &manifest_text, &EnvReader::process())?;
        let target_dir = match env::var_os("XLOG_DEVICE_TARGET_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => match &self.target_dir {
                Some(dir) => dir.clone(),
                None => default_target_dir(&out_dir),
            },
        };

        let toolchain = Toolchain::resolve(&settings.toolchain, settings.auto_install)?;
        let recorder = link::install_recorder(&target_dir)?;

        let started = Instant::now();
        let mut cmd = toolchain.command("cargo");
        cmd.args(cargo_args(&settings, &manifest, &target_dir, &recorder))
            .env("CARGO_ENCODED_RUSTFLAGS", encoded_rustflags(&settings))
            .env(GUARD_VAR, "1")
            .env("CARGO_TERM_COLOR", "never");
        let mut what = format!(
            "device compilation of `{lib_name}` ({DEVICE_TARGET}, {}",
            settings.arch
        );
        if !settings.features.is_empty() {
            what.push_str(&format!(", features {}", settings.features.join(",")));
        }
        what.push(')');
        compile_device(&mut cmd, &what)?;

        let artifacts = target_dir
            .join(DEVICE_TARGET)
            .join(profile_dir(&settings.profile));
        track_dep_info(&artifacts.join(format!("{lib_name}.d")), &toolchain.sysroot);

        let output = artifacts.join("deps").join(format!("{lib_name}.ptx"));
        let inputs = LinkInputs::read_for(&output)?;
        let opts = LlvmOptions {
            arch: settings.arch.clone(),
            ptx_version: settings.ptx_version,
        };
        let work = artifacts.join("xlog-link").join(&lib_name);
        let cache = target_dir.join("xlog-rlib-cache");
        let ptx = link::link(&toolchain, &inputs, &opts, &work, &cache)?;
        // Fails on an entry whose parameters differ from its descriptor, before
        // anything is written.
        let kernels = abi::kernel_abis(&ptx)?;

        let ptx_path = out_dir.join(format!("{MODULE_STEM}.ptx"));
        write_if_changed(&ptx_path, ptx.as_bytes())?;
        let modules = target_dir.join("xlog-modules");
        fs::create_dir_all(&modules)
            .map_err(|e| io_error(&modules, "create the module directory", e))?;
        write_if_changed(&modules.join(format!("{lib_name}.ptx")), ptx.as_bytes())?;

        let cubins = build_cubins(&settings, &ptx, &lib_name, &out_dir)?;
        write_if_changed(
            &out_dir.join(format!("{MODULE_STEM}.rs")),
            module_source(
                &owner,
                &ptx,
                &cubins_source(&cubin_bytes(&cubins)?),
                &kernels_source(&kernels),
            )
            .as_bytes(),
        )?;
        if env::var_os("XLOG_BUILD_TIMINGS").is_some() {
            println!(
                "cargo:warning=xlog-build: `{lib_name}` device build took {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(Some(Output {
            ptx: ptx_path,
            kernels,
            cubins,
        }))
    }

    /// Applies the environment to the builder's settings and validates them.
    /// `manifest` is the kernel crate's `Cargo.toml` text.
    pub(crate) fn settings(
        &self,
        lib_source: &str,
        manifest: &str,
        env: &EnvReader,
    ) -> Result<Settings, Error> {
        let arch = env
            .get("XLOG_DEVICE_ARCH")
            .unwrap_or_else(|| self.arch.clone());
        check_arch("XLOG_DEVICE_ARCH / Builder::arch", &arch)?;
        let ptx_version = match env.get("XLOG_PTX_VERSION") {
            Some(v) => Some(parse_ptx_version(&v)?),
            None => self.ptx_version,
        };
        if let Some(v) = ptx_version {
            if !(60..=99).contains(&v) {
                return Err(Error::InvalidSetting {
                    name: "XLOG_PTX_VERSION / Builder::ptx_version".into(),
                    value: v.to_string(),
                    expected: "a PTX ISA version such as 78 or 7.8 (6.0 to 9.9)".into(),
                });
            }
        }
        let cubin_archs = match env.get("XLOG_CUBIN_ARCHS") {
            Some(list) => comma_list(&list),
            None => self.cubin_archs.clone(),
        };
        for a in &cubin_archs {
            check_arch("XLOG_CUBIN_ARCHS / Builder::cubin_arch", a)?;
        }
        let mut rustflags = self.rustflags.clone();
        if let Some(extra) = env.get("XLOG_DEVICE_RUSTFLAGS") {
            rustflags.extend(extra.split_whitespace().map(str::to_string));
        }
        let profile = env
            .get("XLOG_DEVICE_PROFILE")
            .unwrap_or_else(|| self.profile.clone());
        if profile.is_empty() || profile.contains(char::is_whitespace) {
            return Err(Error::InvalidSetting {
                name: "XLOG_DEVICE_PROFILE / Builder::profile".into(),
                value: profile,
                expected: "a cargo profile name such as release or dev".into(),
            });
        }
        let (features, no_default_features) = self.device_features(manifest, env)?;
        Ok(Settings {
            toolchain: env
                .get("XLOG_DEVICE_TOOLCHAIN")
                .unwrap_or_else(|| self.toolchain.clone()),
            arch,
            ptx_version,
            cubin_archs,
            profile,
            rustflags,
            features,
            no_default_features,
            inject_no_std: self.inject_crate_attrs && !lib_source.contains("no_std"),
            inject_abi_feature: self.inject_crate_attrs && !lib_source.contains("abi_gpu_kernel"),
            auto_install: self.auto_install && env.get("XLOG_NO_AUTO_INSTALL").is_none(),
        })
    }

    /// The `--features` list and `--no-default-features` flag of the device build:
    /// the host's features plus [`Builder::feature`] for the crate running the build
    /// script, the builder's own settings for [`Builder::kernel_crate`].
    fn device_features(
        &self,
        manifest: &str,
        env: &EnvReader,
    ) -> Result<(Vec<String>, bool), Error> {
        if self.kernel_crate.is_some() {
            return Ok((self.features.clone(), self.no_default_features));
        }
        let mut features = features::host_features(env, manifest)?;
        if self.no_default_features {
            features.retain(|f| f != "default");
        }
        for f in &self.features {
            if !features.contains(f) {
                features.push(f.clone());
            }
        }
        Ok((features, true))
    }
}

/// The non-empty, trimmed items of a comma-separated list.
pub(crate) fn comma_list(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reads the `XLOG_*` settings and the feature variables cargo sets for build
/// scripts (`CARGO_CFG_FEATURE`, `CARGO_FEATURE_*`); a seam so tests need not touch
/// the process environment.
pub(crate) struct EnvReader {
    vars: Vec<(String, String)>,
}

impl EnvReader {
    pub(crate) fn process() -> Self {
        EnvReader {
            vars: env::vars()
                .filter(|(k, _)| {
                    k.starts_with("XLOG_")
                        || k.starts_with("CARGO_FEATURE_")
                        || k == "CARGO_CFG_FEATURE"
                })
                .collect(),
        }
    }

    #[cfg(test)]
    pub(crate) fn from(vars: &[(&str, &str)]) -> Self {
        EnvReader {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// The variables whose name starts with `prefix`, as `(name, value)`.
    pub(crate) fn with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.vars
            .iter()
            .filter(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

fn required_env(name: &str) -> Result<OsString, Error> {
    env::var_os(name).ok_or_else(|| Error::Unexpected {
        message: format!("{name} is not set: xlog_build::Builder must run from a build script"),
    })
}

fn check_arch(name: &str, arch: &str) -> Result<(), Error> {
    let ok = arch
        .strip_prefix("sm_")
        .map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let suffix = &rest[digits.len()..];
            digits.len() >= 2 && (suffix.is_empty() || suffix == "a" || suffix == "f")
        })
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidSetting {
            name: name.to_string(),
            value: arch.to_string(),
            expected: "an NVIDIA arch such as sm_80, sm_90 or sm_90a".to_string(),
        })
    }
}

fn parse_ptx_version(text: &str) -> Result<u32, Error> {
    let digits: String = text.chars().filter(|c| *c != '.').collect();
    digits.parse().map_err(|_| Error::InvalidSetting {
        name: "XLOG_PTX_VERSION".into(),
        value: text.into(),
        expected: "a PTX ISA version such as 78 or 7.8".into(),
    })
}

/// `cargo rustc` arguments of the nested device build.
pub(crate) fn cargo_args(
    s: &Settings,
    manifest: &Path,
    target_dir: &Path,
    recorder: &Path,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "rustc".into(),
        "--manifest-path".into(),
        manifest.into(),
        "--lib".into(),
        "--crate-type".into(),
        "cdylib".into(),
        "--target".into(),
        DEVICE_TARGET.into(),
        "-Zbuild-std=core".into(),
        "--profile".into(),
        s.profile.clone().into(),
        "--target-dir".into(),
        target_dir.into(),
        "--color".into(),
        "never".into(),
    ];
    if s.no_default_features {
        args.push("--no-default-features".into());
    }
    if !s.features.is_empty() {
        args.push("--features".into());
        args.push(s.features.join(",").into());
    }
    args.push("--".into());
    args.extend(KERNEL_CRATE_GUARDS.iter().map(OsString::from));
    if s.inject_abi_feature {
        args.push("-Zcrate-attr=feature(abi_gpu_kernel)".into());
    }
    if s.inject_no_std {
        args.push("-Zcrate-attr=no_std".into());
    }
    let mut linker = OsString::from("-Clinker=");
    linker.push(recorder);
    args.push(linker);
    args
}

/// The flags every device crate gets, in order.
pub(crate) fn rustflags(s: &Settings) -> Vec<String> {
    let mut flags = vec![
        format!("-Ctarget-cpu={}", s.arch),
        BARRIER_GUARD_FLAG.to_string(),
        // Device debug info would put DWARF sections into the PTX; keep PTX lean.
        "-Cdebuginfo=0".to_string(),
    ];
    flags.extend(s.rustflags.iter().cloned());
    flags
}

/// [`rustflags`] in `CARGO_ENCODED_RUSTFLAGS` form (separated by 0x1f).
pub(crate) fn encoded_rustflags(s: &Settings) -> String {
    rustflags(s).join("\u{1f}")
}

/// The directory cargo uses for a profile's artifacts.
pub(crate) fn profile_dir(profile: &str) -> &str {
    match profile {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    }
}

/// The lib target's crate name from a manifest: `[lib] name`, else `[package] name`
/// with `-` turned into `_`. A line scanner is enough for these two keys.
pub(crate) fn lib_name(manifest: &str) -> Option<String> {
    let mut section = String::new();
    let mut package = None;
    let mut lib = None;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "name" {
            continue;
        }
        let value = value.trim().trim_matches('"').to_string();
        match section.as_str() {
            "package" => package = Some(value),
            "lib" => lib = Some(value),
            _ => {}
        }
    }
    lib.or(package).map(|n| n.replace('-', "_"))
}

/// `<target root>/xlog-device`, where the target root is the first ancestor of
/// `OUT_DIR` that cargo marked with `CACHEDIR.TAG` (the directory
/// `CARGO_TARGET_DIR` names), falling back to the directory above the profile.
pub(crate) fn default_target_dir(out_dir: &Path) -> PathBuf {
    let root = out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
        .or_else(|| {
            // OUT_DIR = <target>/[<triple>/]<profile>/build/<pkg>-<hash>/out
            out_dir.ancestors().nth(4).map(Path::to_path_buf)
        })
        .unwrap_or_else(|| out_dir.to_path_buf());
    root.join("xlog-device")
}

/// Runs the nested cargo, re-emitting device diagnostics as `cargo:warning` lines.
fn compile_device(cmd: &mut Command, what: &str) -> Result<(), Error> {
    let output = cmd.output().map_err(|source| Error::Spawn {
        command: command::render(cmd),
        source,
    })?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let diags = diagnostics::parse(&stderr);
    for line in diagnostics::warning_lines(&diags) {
        println!("{line}");
    }
    if output.status.success() {
        return Ok(());
    }
    Err(Error::CommandFailed {
        what: what.to_string(),
        command: command::render(cmd),
        status: output.status.to_string(),
        stderr_tail: tail(&compact_stderr(&stderr), STDERR_TAIL_LINES),
    })
}

/// Drops cargo's progress lines (`Compiling`, `Blocking`, ...) from stderr.
pub(crate) fn compact_stderr(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("Compiling ")
                || t.starts_with("Blocking ")
                || t.starts_with("Downloaded ")
                || t.starts_with("Downloading ")
                || t.starts_with("Updating ")
                || t.starts_with("Locking "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Emits `rerun-if-changed` for every source file in a cargo dep-info file, skipping
/// the toolchain's own sources.
fn track_dep_info(dep_info: &Path, sysroot: &Path) {
    let Ok(text) = fs::read_to_string(dep_info) else {
        return;
    };
    for path in dep_info_paths(&text) {
        if !Path::new(&path).starts_with(sysroot) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// The prerequisites listed in a Makefile-style dep-info file.
pub(crate) fn dep_info_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for line in text.lines() {
        // `target: dep dep ...`; spaces inside paths are escaped as `\ `.
        let Some((_, deps)) = line.split_once(": ") else {
            continue;
        };
        let mut current = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    current.push(' ');
                    chars.next();
                }
                ' ' => {
                    if !current.is_empty() {
                        paths.push(std::mem::take(&mut current));
                    }
                }
                _ => current.push(c),
            }
        }
        if !current.is_empty() {
            paths.push(current);
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Reads back the cubins [`build_cubins`] wrote, to embed them as literals.
fn cubin_bytes(cubins: &[(String, PathBuf)]) -> Result<Vec<(String, Vec<u8>)>, Error> {
    cubins
        .iter()
        .map(|(arch, path)| {
            fs::read(path)
                .map(|b| (arch.clone(), b))
                .map_err(|e| io_error(path, "read a cubin back", e))
        })
        .collect()
}

fn build_cubins(
    s: &Settings,
    ptx: &str,
    lib_name: &str,
    out_dir: &Path,
) -> Result<Vec<(String, PathBuf)>, Error> {
    if s.cubin_archs.is_empty() {
        return Ok(Vec::new());
    }
    let Some(ptxas) = ptxas::find() else {
        println!(
            "cargo:warning=xlog-build: ptxas not found, shipping PTX only for `{lib_name}` \
             (cubins for {} skipped); {}",
            s.cubin_archs.join(", "),
            ptxas::INSTALL_HINT
        );
        return Ok(Vec::new());
    };
    let scratch = out_dir.join("xlog-ptxas");
    let mut cubins = Vec::new();
    for arch in &s.cubin_archs {
        let (bytes, _) = ptxas::compile(&ptxas, ptx, arch, lib_name, &scratch)?;
        let path = out_dir.join(format!("{MODULE_STEM}.{arch}.cubin"));
        write_if_changed(&path, &bytes)?;
        cubins.push((arch.clone(), path));
    }
    Ok(cubins)
}

/// The Rust expression for the cubin table: each cubin as a byte-string literal.
/// The generated file holds data only, no macro call: an `include_bytes!` there
/// would resolve in the kernel crate's scope, where a `macro_rules!` of that name
/// could stand in for it.
pub(crate) fn cubins_source(cubins: &[(String, Vec<u8>)]) -> String {
    let mut s = String::from("&[");
    for (arch, bytes) in cubins {
        s.push_str(&format!("({arch:?}, {}.as_slice()), ", byte_string(bytes)));
    }
    s.push(']');
    s
}

/// `bytes` as a Rust byte-string literal.
fn byte_string(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 4 + 3);
    s.push_str("b\"");
    for b in bytes {
        s.push_str(&format!("\\x{b:02x}"));
    }
    s.push('"');
    s
}

/// `text` as a Rust raw string literal, with enough `#`s to hold it.
fn raw_string(text: &str) -> String {
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    format!("r{hashes}\"{text}\"{hashes}")
}

/// The Rust expression `kernel_module!` includes for the kernel table, of type
/// `&'static [(&'static str, &'static [u64])]`: each entry point with its ABI
/// descriptor words (`&[]` for an entry without one).
pub(crate) fn kernels_source(kernels: &[KernelAbi]) -> String {
    let entries: Vec<String> = kernels
        .iter()
        .map(|k| {
            let words: Vec<String> = k.words.iter().map(|w| format!("{w:#018x}u64")).collect();
            format!("({:?}, &[{}])", k.name, words.join(", "))
        })
        .collect();
    format!("&[{}]", entries.join(", "))
}

/// What `$OUT_DIR/xlog-module.rs` holds, the one file `kernel_module!` includes:
/// the tuple `(owner, ptx, cubins, kernels)` of `ModuleImage::new`'s arguments, as
/// literals only (see [`cubins_source`]).
pub(crate) fn module_source(owner: &str, ptx: &str, cubins: &str, kernels: &str) -> String {
    format!("({owner:?}, {}, {cubins}, {kernels})", raw_string(ptx))
}

fn write_stub(out_dir: &Path, owner: &str) -> Result<Output, Error> {
    println!(
        "cargo:warning=xlog-build: XLOG_DEVICE_STUB or DOCS_RS is set: no device code was built, \
         the module is an empty stub that cannot launch anything"
    );
    let ptx = format!(".version 7.0\n.target {DEFAULT_ARCH}\n.address_size 64\n");
    let path = out_dir.join(format!("{MODULE_STEM}.ptx"));
    write_if_changed(&path, ptx.as_bytes())?;
    write_if_changed(
        &out_dir.join(format!("{MODULE_STEM}.rs")),
        module_source(owner, &ptx, "&[]", "&[]").as_bytes(),
    )?;
    Ok(Output {
        ptx: path,
        kernels: Vec::new(),
        cubins: Vec::new(),
    })
}

/// Writes `bytes` unless the file already holds them (keeps timestamps stable so
/// nothing downstream rebuilds needlessly).
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    fs::write(path, bytes).map_err(|e| io_error(path, "write a device build output", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, Error> {
        Builder::new().settings("", "", &EnvReader::from(vars))
    }

    #[test]
    fn defaults() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.toolchain, "nightly-2026-05-20");
        assert_eq!(s.arch, "sm_80");
        assert_eq!(s.ptx_version, None);
        assert!(s.cubin_archs.is_empty());
        assert_eq!(s.profile, "release");
        assert!(s.inject_no_std && s.inject_abi_feature && s.auto_install);
    }

    #[test]
    fn environment_overrides_the_builder() {
        let b = Builder::new()
            .arch("sm_86")
            .ptx_version(80)
            .cubin_arch("sm_86")
            .rustflag("-Cfoo");
        let env = EnvReader::from(&[
            ("XLOG_DEVICE_ARCH", "sm_90"),
            ("XLOG_PTX_VERSION", "7.8"),
            ("XLOG_CUBIN_ARCHS", "sm_80, sm_90a"),
            ("XLOG_DEVICE_RUSTFLAGS", "-Cbar  -Cbaz"),
            ("XLOG_NO_AUTO_INSTALL", "1"),
            ("XLOG_DEVICE_PROFILE", "dev"),
        ]);
        let s = b.settings("", "", &env).unwrap();
        assert_eq!(s.arch, "sm_90");
        assert_eq!(s.ptx_version, Some(78));
        assert_eq!(s.cubin_archs, ["sm_80", "sm_90a"]);
        assert_eq!(s.rustflags, ["-Cfoo", "-Cbar", "-Cbaz"]);
        assert_eq!(s.profile, "dev");
        assert!(!s.auto_install);
    }

    #[test]
    fn rejects_bad_settings() {
        let err = settings(&[("XLOG_DEVICE_ARCH", "ampere")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid value \"ampere\" for XLOG_DEVICE_ARCH / Builder::arch: expected an NVIDIA arch such as sm_80, sm_90 or sm_90a"
        );
        assert!(settings(&[("XLOG_PTX_VERSION", "x")]).is_err());
        assert!(settings(&[("XLOG_PTX_VERSION", "120")]).is_err());
        assert!(settings(&[("XLOG_CUBIN_ARCHS", "sm_9")]).is_err());
        assert!(settings(&[("XLOG_DEVICE_PROFILE", "a b")]).is_err());
        for ok in ["sm_80", "sm_90a", "sm_100f", "sm_120"] {
            check_arch("x", ok).unwrap();
        }
    }

    #[test]
    fn crate_attrs_are_not_duplicated() {
        let s = Builder::new()
            .settings(
                "#![no_std]\n#![feature(abi_gpu_kernel)]",
                "",
                &EnvReader::from(&[]),
            )
            .unwrap();
        assert!(!s.inject_no_std && !s.inject_abi_feature);
        let s = Builder::new()
            .inject_crate_attrs(false)
            .settings("", "", &EnvReader::from(&[]))
            .unwrap();
        assert!(!s.inject_no_std && !s.inject_abi_feature);
    }

    #[test]
    fn nested_cargo_arguments() {
        let mut s = settings(&[]).unwrap();
        s.features = vec!["a".into(), "b".into()];
        s.no_default_features = true;
        let args = cargo_args(
            &s,
            Path::new("/k/Cargo.toml"),
            Path::new("/t/xlog-device"),
            Path::new("/t/rec.sh"),
        );
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "rustc --manifest-path /k/Cargo.toml --lib --crate-type cdylib --target nvptx64-nvidia-cuda \
             -Zbuild-std=core --profile release --target-dir /t/xlog-device --color never \
             --no-default-features --features a,b -- -Zallow-features=abi_gpu_kernel \
             -Funsafe_attr_outside_unsafe -Zcrate-attr=feature(abi_gpu_kernel) \
             -Zcrate-attr=no_std -Clinker=/t/rec.sh"
        );
    }

    #[test]
    fn device_rustflags_carry_the_barrier_guard() {
        let s = settings(&[("XLOG_DEVICE_RUSTFLAGS", "-Cextra")]).unwrap();
        assert_eq!(
            rustflags(&s),
            [
                "-Ctarget-cpu=sm_80",
                "-Zmir-enable-passes=-JumpThreading",
                "-Cdebuginfo=0",
                "-Cextra"
            ]
        );
        assert_eq!(
            encoded_rustflags(&s),
            "-Ctarget-cpu=sm_80\u{1f}-Zmir-enable-passes=-JumpThreading\u{1f}-Cdebuginfo=0\u{1f}-Cextra"
        );
    }

    #[test]
    fn lib_names() {
        assert_eq!(
            lib_name("[package]\nname = \"my-kernels\"\n").as_deref(),
            Some("my_kernels")
        );
        assert_eq!(
            lib_name(
                "[package]\nname = \"a\"\n[lib]\nname = \"b_lib\"\n[dependencies]\nname = 1\n"
            )
            .as_deref(),
            Some("b_lib")
        );
        assert_eq!(lib_name("[workspace]\n"), None);
    }

    #[test]
    fn profile_dirs() {
        assert_eq!(profile_dir("release"), "release");
        assert_eq!(profile_dir("dev"), "debug");
        assert_eq!(profile_dir("gpu"), "gpu");
    }

    #[test]
    fn target_dir_is_next_to_the_outer_one() {
        let root = std::env::temp_dir().join(format!("xlog-td-test-{}", std::process::id()));
        let out = root.join("debug/build/k-0123/out");
        fs::create_dir_all(&out).unwrap();
        assert_eq!(default_target_dir(&out), root.join("xlog-device"));
        fs::write(root.join("CACHEDIR.TAG"), "").unwrap();
        let out2 = root.join("x86_64-unknown-linux-gnu/release/build/k-1/out");
        assert_eq!(default_target_dir(&out2), root.join("xlog-device"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn dep_info_parsing() {
        let text =
            "/t/k.ptx: /w/k/src/lib.rs /w/dev/src/a\\ b.rs /sys/core/lib.rs\n\n/w/k/src/lib.rs:\n";
        assert_eq!(
            dep_info_paths(text),
            ["/sys/core/lib.rs", "/w/dev/src/a b.rs", "/w/k/src/lib.rs"]
        );
    }

    #[test]
    fn progress_lines_are_dropped_from_errors() {
        let s = "   Compiling core v0.0.0\nerror: boom\n    Blocking waiting for file lock\n";
        assert_eq!(compact_stderr(s), "error: boom");
    }

    #[test]
    fn host_features_are_forwarded_exactly() {
        let env = EnvReader::from(&[
            ("CARGO_CFG_FEATURE", "default,wide"),
            ("CARGO_FEATURE_DEFAULT", "1"),
            ("CARGO_FEATURE_WIDE", "1"),
        ]);
        let s = Builder::new().settings("", "", &env).unwrap();
        assert_eq!(s.features, ["default", "wide"]);
        assert!(s.no_default_features);

        // Explicit features add to the set; no_default_features drops `default`.
        let s = Builder::new()
            .feature("extra")
            .feature("wide")
            .no_default_features()
            .settings("", "", &env)
            .unwrap();
        assert_eq!(s.features, ["wide", "extra"]);
        assert!(s.no_default_features);

        // A host build without any feature: none on the device either.
        let s = Builder::new()
            .settings("", "", &EnvReader::from(&[]))
            .unwrap();
        assert!(s.features.is_empty() && s.no_default_features);
    }

    #[test]
    fn another_crates_build_gets_no_forwarded_features() {
        let env = EnvReader::from(&[("CARGO_CFG_FEATURE", "default,wide")]);
        let s = Builder::new()
            .kernel_crate("/elsewhere")
            .settings("", "", &env)
            .unwrap();
        assert!(s.features.is_empty() && !s.no_default_features);
        let s = Builder::new()
            .kernel_crate("/elsewhere")
            .feature("x")
            .no_default_features()
            .settings("", "", &env)
            .unwrap();
        assert_eq!(s.features, ["x"]);
        assert!(s.no_default_features);
    }

    #[test]
    fn older_cargo_features_map_through_the_manifest() {
        let env = EnvReader::from(&[("CARGO_FEATURE_FAST_MATH", "1")]);
        let s = Builder::new()
            .settings("", "[features]\nfast-math = []\n", &env)
            .unwrap();
        assert_eq!(s.features, ["fast-math"]);
    }

    #[test]
    fn generated_tables() {
        let table = [
            KernelAbi {
                name: "a".into(),
                words: vec![(1 << 56) | 1, 0x0200_0400_0000_0004, 0xdead_beef],
            },
            KernelAbi {
                name: "b".into(),
                words: vec![],
            },
        ];
        assert_eq!(
            kernels_source(&table),
            "&[(\"a\", &[0x0100000000000001u64, 0x0200040000000004u64, 0x00000000deadbeefu64]), \
             (\"b\", &[])]"
        );
        assert_eq!(kernels_source(&[]), "&[]");
        assert_eq!(
            cubins_source(&[("sm_90".into(), vec![0x7f, b'E', 0])]),
            "&[(\"sm_90\", b\"\\x7f\\x45\\x00\".as_slice()), ]"
        );
        assert_eq!(raw_string("a\"#b"), "r##\"a\"#b\"##");
        assert_eq!(
            module_source("/k#k", ".entry", "&[]", "&[]"),
            "(\"/k#k\", r#\".entry\"#, &[], &[])"
        );
    }
}
