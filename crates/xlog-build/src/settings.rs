//! The device build's settings: the builder's calls overridden by `XLOG_*` variables,
//! validated, and where the nested build puts its artifacts.
//!
//! Each setting resolves as: environment variable, else the builder call, else the
//! default. The environment is read through [`EnvReader`], so the rules unit-test
//! without touching the process environment.

use std::env;
use std::path::{Path, PathBuf};

use crate::builder::{Builder, GUARD_VAR};
use crate::error::Error;
use crate::features;

/// The default PTX target: sm_80 PTX is JIT-compiled by the driver for sm_80 and every
/// later GPU (sm_86, sm_89, sm_90, ...), and sm_80 is the oldest arch with the
/// features the kernels rely on (`redux`, async copies, bf16).
pub const DEFAULT_ARCH: &str = "sm_80";

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
    crate::error::VERBOSE_ENV,
    GUARD_VAR,
];

/// The settings after applying the environment, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// The rustup toolchain of the device build.
    pub toolchain: String,
    /// The arch the PTX targets (`sm_80`).
    pub arch: String,
    /// The PTX ISA version (`78`), or `None` for LLVM's minimum for `arch`.
    pub ptx_version: Option<u32>,
    /// The archs to compile cubins for.
    pub cubin_archs: Vec<String>,
    /// The cargo profile of the device build.
    pub profile: String,
    /// Extra rustc flags, after the ones every device crate gets.
    pub rustflags: Vec<String>,
    /// The `--features` list of the device build.
    pub features: Vec<String>,
    /// Whether the device build passes `--no-default-features`.
    pub no_default_features: bool,
    /// Whether to add `#![no_std]` with `-Zcrate-attr`.
    pub inject_no_std: bool,
    /// Whether to add `#![feature(abi_gpu_kernel)]` with `-Zcrate-attr`.
    pub inject_abi_feature: bool,
    /// Whether a missing toolchain or component may be installed.
    pub auto_install: bool,
}

impl Builder {
    /// Applies the environment to the builder's settings and validates them.
    /// `lib_source` is the kernel crate's `src/lib.rs`, `manifest` its `Cargo.toml`
    /// text.
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
            inject_no_std: self.inject_crate_attrs && !has_crate_attr(lib_source, "no_std"),
            inject_abi_feature: self.inject_crate_attrs
                && !has_crate_attr(lib_source, "abi_gpu_kernel"),
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

    /// The nested build's target directory: `XLOG_DEVICE_TARGET_DIR`, else
    /// [`Builder::target_dir`], else [`default_target_dir`] of `out_dir`.
    pub(crate) fn device_target_dir(&self, out_dir: &Path) -> PathBuf {
        match env::var_os("XLOG_DEVICE_TARGET_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => match &self.target_dir {
                Some(dir) => dir.clone(),
                None => default_target_dir(out_dir),
            },
        }
    }
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

/// Whether `lib.rs` has an inner attribute (`#![..]`) naming `word`, such as
/// `#![no_std]` or `#![cfg_attr(target_arch = "nvptx64", no_std)]`. Words in comments
/// and docs do not count.
pub(crate) fn has_crate_attr(lib_source: &str, word: &str) -> bool {
    lib_source
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("#!["))
        .any(|l| l.contains(word))
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
    /// The relevant variables of the build script's own environment.
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

    /// A reader over `vars` alone.
    #[cfg(test)]
    pub(crate) fn from(vars: &[(&str, &str)]) -> Self {
        EnvReader {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// The value of `name`, the last one when it is listed twice.
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

/// Checks that `arch` names an NVIDIA arch (`sm_` and at least two digits, with an
/// optional `a` or `f` suffix); `name` says which setting it came from.
fn check_arch(name: &str, arch: &str) -> Result<(), Error> {
    let ok = arch
        .strip_prefix("sm_")
        .map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let suffix = &rest[digits.len()..];
            // sm_70 and later: the device panic handler and the look-back waits
            // rely on independent thread scheduling and `nanosleep`.
            digits.len() >= 2
                && digits.parse::<u32>().is_ok_and(|v| v >= 70)
                && (suffix.is_empty() || suffix == "a" || suffix == "f")
        })
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidSetting {
            name: name.to_string(),
            value: arch.to_string(),
            expected: "an NVIDIA arch of sm_70 or later, such as sm_80, sm_90 or sm_90a"
                .to_string(),
        })
    }
}

/// A PTX ISA version written `78` or `7.8`, as the number `78`.
fn parse_ptx_version(text: &str) -> Result<u32, Error> {
    let digits: String = text.chars().filter(|c| *c != '.').collect();
    digits.parse().map_err(|_| Error::InvalidSetting {
        name: "XLOG_PTX_VERSION".into(),
        value: text.into(),
        expected: "a PTX ISA version such as 78 or 7.8".into(),
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

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
            "invalid value \"ampere\" for XLOG_DEVICE_ARCH / Builder::arch: expected an NVIDIA arch of sm_70 or later, such as sm_80, sm_90 or sm_90a"
        );
        assert!(settings(&[("XLOG_PTX_VERSION", "x")]).is_err());
        assert!(settings(&[("XLOG_PTX_VERSION", "120")]).is_err());
        assert!(settings(&[("XLOG_CUBIN_ARCHS", "sm_9")]).is_err());
        // Before sm_70 there is no independent thread scheduling or `nanosleep`.
        assert!(settings(&[("XLOG_DEVICE_ARCH", "sm_61")]).is_err());
        assert!(settings(&[("XLOG_DEVICE_PROFILE", "a b")]).is_err());
        for ok in ["sm_70", "sm_80", "sm_90a", "sm_100f", "sm_120"] {
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
    fn crate_attributes_are_found_in_attributes_only() {
        assert!(has_crate_attr("#![no_std]\nfn f() {}", "no_std"));
        assert!(has_crate_attr(
            "  #![cfg_attr(target_arch = \"nvptx64\", no_std)]",
            "no_std"
        ));
        assert!(!has_crate_attr(
            "//! Kernels are `no_std` on the GPU.\n",
            "no_std"
        ));
        assert!(!has_crate_attr("// #![no_std]", "no_std"));
    }
}
