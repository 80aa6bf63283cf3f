//! [`Builder`]: the device build of one kernel crate, driven from a `build.rs`.
//!
//! [`Builder::build`] runs these steps in order, each a function of its own:
//!
//! 1. read the build-script environment and decide whether to build at all
//!    (`out_dir_if_building`);
//! 2. resolve the kernel crate: its directory, manifest, lib name and module owner
//!    (`resolve_kernel_crate`); check that the crate running the build script calls
//!    `xlog::kernel_module!()` when it declares kernels (`module_call::check`), before
//!    anything slow; or write a stub module instead (`output::write_stub`);
//! 3. resolve the settings and the device target directory (`resolve_settings`,
//!    `device_target_dir` in the `settings` module), then the toolchain;
//! 4. compile the crate for the device (`compile::compile_crate`);
//! 5. link it to PTX and check the ABI descriptors (`link_module`);
//! 6. write the PTX and its inspection copy (`output::write_ptx`), warn about each
//!    recursive kernel (`recursion_warnings`), build a cubin per kernel
//!    and arch (`pieces::build_cubins`), and write the module file
//!    (`output::write_module_file`).

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::abi::{self, KernelAbi};
use crate::compile;
use crate::error::{io_error, Error};
use crate::link::{self, LinkInputs, LlvmOptions};
use crate::module_call;
use crate::output;
use crate::settings::{EnvReader, Settings, DEFAULT_ARCH, ENV_KNOBS};
use crate::toolchain::{Toolchain, PINNED_TOOLCHAIN};

/// Set in the nested device build's environment. A kernel crate's own `build.rs`
/// runs again inside that build; seeing this variable, [`Builder::build`] does
/// nothing, so the device build never recurses.
pub const GUARD_VAR: &str = "XLOG_DEVICE_BUILD";

/// The module's owner, as `$OUT_DIR/xlog-module.rs` records it: the compiled
/// crate's manifest directory and lib crate name. `kernel_module!` embeds it in the module image and
/// each launcher compares it with its own crate's (`CARGO_MANIFEST_DIR#CARGO_CRATE_NAME`),
/// so only the lib target of the crate that was compiled for the device can launch
/// it through typed launchers.
pub fn module_owner(kernel_dir: &Path, lib_name: &str) -> String {
    format!("{}#{lib_name}", kernel_dir.display())
}

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
    // Crate-visible for the `settings` module, which applies the environment to
    // these calls.
    /// [`Builder::kernel_crate`], `None` for the crate running the build script.
    pub(crate) kernel_crate: Option<PathBuf>,
    /// The rustup toolchain of the device build.
    pub(crate) toolchain: String,
    /// [`Builder::arch`].
    pub(crate) arch: String,
    /// [`Builder::ptx_version`].
    pub(crate) ptx_version: Option<u32>,
    /// [`Builder::cubin_arch`], in call order.
    pub(crate) cubin_archs: Vec<String>,
    /// [`Builder::profile`].
    pub(crate) profile: String,
    /// [`Builder::rustflag`], in call order.
    pub(crate) rustflags: Vec<String>,
    /// [`Builder::feature`], in call order.
    pub(crate) features: Vec<String>,
    /// [`Builder::no_default_features`].
    pub(crate) no_default_features: bool,
    /// [`Builder::target_dir`].
    pub(crate) target_dir: Option<PathBuf>,
    /// [`Builder::inject_crate_attrs`].
    pub(crate) inject_crate_attrs: bool,
    /// [`Builder::auto_install`].
    pub(crate) auto_install: bool,
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
    /// Per arch compiled, the paths of its cubins: one per kernel, in the order of
    /// [`kernels`](Self::kernels).
    pub cubins: Vec<(String, Vec<PathBuf>)>,
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

    /// Also compile cubins for `arch` with ptxas (one per kernel, see [`crate::pieces`]),
    /// when ptxas is found. Env:
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

    /// Runs [`Builder::build`]; on failure logs the error as `cargo::error=` lines
    /// ([`Error::cargo_error_lines`]) and ends the build script, which fails the build.
    ///
    /// Cargo prints each such line as `error: <package>@<version>: <line>`, so the
    /// first line the user reads is the error itself (for a device compile error:
    /// each of rustc's errors on one line, then each in full). The script then exits
    /// with status 0: the logged errors fail the build all the same, and a non-zero
    /// status would make cargo also dump the script's whole stdout (every `rerun-if`
    /// directive, and the error again) and stderr below it. `cargo::error` needs
    /// Cargo 1.84, older than the `rust-version` xlog declares.
    pub fn run(self) -> Option<Output> {
        match self.build() {
            Ok(out) => out,
            Err(err) => {
                for line in err.cargo_error_lines() {
                    println!("cargo::error={line}");
                }
                std::process::exit(0);
            }
        }
    }

    /// Compiles the kernel crate to PTX (and cubins), writes the module files into
    /// `OUT_DIR` and prints the `cargo:` directives. Returns `None` inside a device
    /// build (the recursion guard) or when building for the device itself.
    pub fn build(self) -> Result<Option<Output>, Error> {
        let Some(out_dir) = out_dir_if_building()? else {
            return Ok(None);
        };
        let krate = self.resolve_kernel_crate()?;
        check_module_call(&krate)?;
        if stub_requested() {
            return output::write_stub(&out_dir, &krate.owner).map(Some);
        }
        let settings = self.resolve_settings(&krate)?;
        let target_dir = self.device_target_dir(&out_dir);
        let toolchain = Toolchain::resolve(&settings.toolchain, settings.auto_install)?;
        let recorder = link::install_recorder(&target_dir)?;

        let started = Instant::now();
        let artifacts = compile::compile_crate(
            &toolchain,
            &settings,
            &krate.manifest,
            &krate.lib_name,
            &target_dir,
            &recorder,
        )?;
        let (ptx, kernels) = link_module(&toolchain, &settings, &krate, &artifacts, &target_dir)?;
        let ptx_path = output::write_ptx(&out_dir, &target_dir, &krate.lib_name, &ptx)?;
        for warning in recursion_warnings(&krate.lib_name, &ptx) {
            println!("cargo:warning={warning}");
        }
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        let cubins = crate::pieces::build_cubins(
            &settings.cubin_archs,
            &ptx,
            &names,
            &krate.lib_name,
            &out_dir,
        )?;
        output::write_module_file(&out_dir, &krate.owner, &ptx, &cubins, &kernels)?;
        report_time(&krate.lib_name, started);
        Ok(Some(Output {
            ptx: ptx_path,
            kernels,
            cubins,
        }))
    }

    /// Finds the kernel crate ([`Builder::kernel_crate`], else the crate running the
    /// build script) and reads its lib name from its manifest. Tells cargo to rerun
    /// the build script when the manifest or `src/` changes.
    fn resolve_kernel_crate(&self) -> Result<KernelCrate, Error> {
        let dir = match &self.kernel_crate {
            Some(dir) => dir.clone(),
            None => PathBuf::from(required_env("CARGO_MANIFEST_DIR")?),
        };
        let manifest = dir.join("Cargo.toml");
        println!("cargo:rerun-if-changed={}", manifest.display());
        println!("cargo:rerun-if-changed={}", dir.join("src").display());

        let manifest_text = fs::read_to_string(&manifest)
            .map_err(|e| io_error(&manifest, "read the kernel crate's manifest", e))?;
        let lib_name = lib_name(&manifest_text).ok_or_else(|| Error::Unexpected {
            message: format!("no package or lib name in {}", manifest.display()),
        })?;
        let owner = module_owner(&dir, &lib_name);
        Ok(KernelCrate {
            dir,
            manifest,
            manifest_text,
            lib_name,
            owner,
        })
    }

    /// The settings for `krate`: the builder's calls with the process environment
    /// applied, validated.
    fn resolve_settings(&self, krate: &KernelCrate) -> Result<Settings, Error> {
        let lib_source = fs::read_to_string(krate.dir.join("src/lib.rs")).unwrap_or_default();
        // No `rerun-if-env-changed` for the feature variables: cargo reruns a build
        // script whenever its package's feature set changes.
        self.settings(&lib_source, &krate.manifest_text, &EnvReader::process())
    }
}

/// The crate compiled for the device, as its manifest describes it.
struct KernelCrate {
    /// The directory of its `Cargo.toml`.
    dir: PathBuf,
    /// Its `Cargo.toml`.
    manifest: PathBuf,
    /// The text of `manifest`, which also declares the crate's features.
    manifest_text: String,
    /// Its lib target's crate name ([`lib_name`]).
    lib_name: String,
    /// [`module_owner`] of `dir` and `lib_name`.
    owner: String,
}

/// Reads the build-script environment and decides whether to build at all. Tells
/// cargo to rerun the build script when any of [`ENV_KNOBS`] changes; returns
/// `None` inside the nested device build ([`GUARD_VAR`]) or when the build script
/// runs for the device itself, else `OUT_DIR`.
fn out_dir_if_building() -> Result<Option<PathBuf>, Error> {
    for knob in ENV_KNOBS {
        println!("cargo:rerun-if-env-changed={knob}");
    }
    if env::var_os(GUARD_VAR).is_some()
        || env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("nvptx64")
    {
        return Ok(None);
    }
    required_env("OUT_DIR").map(|dir| Some(PathBuf::from(dir)))
}

/// Fails when the crate running the build script declares kernels but never calls
/// `xlog::kernel_module!()`: its launchers load `crate::MODULE`, which that macro
/// defines, from the module written into its `OUT_DIR`. With
/// [`Builder::kernel_crate`] that crate is not the one compiled for the device.
fn check_module_call(krate: &KernelCrate) -> Result<(), Error> {
    let dir = env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| krate.dir.clone(), PathBuf::from);
    let package = env::var("CARGO_PKG_NAME").unwrap_or_else(|_| krate.lib_name.clone());
    module_call::check(&dir, &package)
}

/// Whether to write an empty stub module instead of compiling device code:
/// `XLOG_DEVICE_STUB` is set, or the build runs on docs.rs (`DOCS_RS`), which has no
/// device toolchain.
fn stub_requested() -> bool {
    env::var_os("XLOG_DEVICE_STUB").is_some() || env::var_os("DOCS_RS").is_some()
}

/// Links the device build's bitcode (in `artifacts`) into PTX, and reads each
/// kernel's ABI descriptor from it. Fails on an entry whose parameters differ from
/// its descriptor, before anything is written.
fn link_module(
    toolchain: &Toolchain,
    settings: &Settings,
    krate: &KernelCrate,
    artifacts: &Path,
    target_dir: &Path,
) -> Result<(String, Vec<KernelAbi>), Error> {
    let output = artifacts
        .join("deps")
        .join(format!("{}.ptx", krate.lib_name));
    let inputs = LinkInputs::read_for(&output)?;
    let opts = LlvmOptions {
        arch: settings.arch.clone(),
        ptx_version: settings.ptx_version,
    };
    let work = artifacts.join("xlog-link").join(&krate.lib_name);
    let cache = target_dir.join("xlog-rlib-cache");
    let ptx = link::link(toolchain, &inputs, &opts, &work, &cache)?;
    let kernels = abi::kernel_abis(&ptx)?;
    Ok((abi::with_launch_bounds(&ptx, &kernels), kernels))
}

/// Warns how long the device build of `lib_name` took since `started`, when
/// `XLOG_BUILD_TIMINGS` is set.
fn report_time(lib_name: &str, started: Instant) {
    if env::var_os("XLOG_BUILD_TIMINGS").is_some() {
        println!(
            "cargo:warning=xlog-build: `{lib_name}` device build took {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
}

/// The variable `name` of the build script's environment, which cargo always sets.
fn required_env(name: &str) -> Result<OsString, Error> {
    env::var_os(name).ok_or_else(|| Error::Unexpected {
        message: format!("{name} is not set: xlog_build::Builder must run from a build script"),
    })
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

/// One warning per kernel of `ptx` that reaches a cycle of calls
/// (`xlog_device::callgraph`): its stack need depends on its data, so a deep
/// recursion can overflow the GPU stack, which ends the context.
pub fn recursion_warnings(lib_name: &str, ptx: &str) -> Vec<String> {
    xlog_device::callgraph::recursive_kernels(ptx)
        .into_iter()
        .map(|r| {
            format!(
                "xlog-build: in `{lib_name}`, {r}: its GPU stack need depends on the recursion's \
                 depth, and a recursion deeper than the stack (1 KiB per thread unless \
                 `Runtime::set_stack_size` raises it) overflows it, which ends the launch with \
                 `Error::StackOverflow` and leaves the context unusable; bound the depth or \
                 write it as a loop"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recursive_kernel_is_warned_about_with_its_cycle() {
        let ptx = ".visible .entry walk(\n.param .u64 p\n)\n{\ncall.uni _RNvCs1_5crate4down, (param0);\nret;\n}\n\
                   .func _RNvCs1_5crate4down(\n.param .u64 p\n)\n{\ncall.uni _RNvCs1_5crate4down, (param0);\nret;\n}\n\
                   .visible .entry flat(\n.param .u64 p\n)\n{\nret;\n}\n";
        let warnings = recursion_warnings("k", ptx);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = &warnings[0];
        assert!(
            w.contains("kernel `walk` recurses (crate::down → crate::down)"),
            "{w}"
        );
        assert!(w.contains("Runtime::set_stack_size"), "{w}");
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
}
