//! The kernel crate's cargo features, forwarded from the host build to the device
//! build.
//!
//! The host and device builds are two cargo invocations, so features do not unify
//! between them: without forwarding, a crate built with `--features wide` on the
//! host would get PTX compiled without `wide`. [`host_features`] recovers the exact
//! set cargo enabled for the crate whose build script is running, which the nested
//! build then receives as `--no-default-features --features <set>`.
//!
//! Cargo 1.85 and later list the enabled features by name in `CARGO_CFG_FEATURE`
//! (comma-separated). Older cargo only sets `CARGO_FEATURE_<NAME>` (upper-cased,
//! `-` turned into `_`), which is lossy; those are mapped back through the names the
//! manifest declares: the `[features]` table and the optional dependencies (each an
//! implicit feature unless a `dep:` reference hides it).

use crate::error::Error;
use crate::settings::{comma_list, EnvReader};

/// The features cargo enabled for the crate running the build script, by their
/// manifest names, sorted (`default` included when it is on).
pub(crate) fn host_features(env: &EnvReader, manifest: &str) -> Result<Vec<String>, Error> {
    let mut features: Vec<String> = match env.get("CARGO_CFG_FEATURE") {
        Some(list) => comma_list(&list),
        None => {
            let declared = declared_features(manifest);
            let mut found = Vec::new();
            for (var, _) in env.with_prefix("CARGO_FEATURE_") {
                let mangled = &var["CARGO_FEATURE_".len()..];
                let matches: Vec<&String> = declared
                    .iter()
                    .filter(|name| env_name(name) == mangled)
                    .collect();
                match matches.as_slice() {
                    [one] => found.push((*one).clone()),
                    [] => {
                        return Err(Error::Unexpected {
                            message: format!(
                                "cargo set {var} but the kernel crate's Cargo.toml declares no \
                                 matching feature or optional dependency, so the device build \
                                 cannot be given the host's features: use cargo 1.85 or later \
                                 (it sets CARGO_CFG_FEATURE)"
                            ),
                        })
                    }
                    several => {
                        let names: Vec<&str> = several.iter().map(|s| s.as_str()).collect();
                        return Err(Error::Unexpected {
                            message: format!(
                                "cargo set {var}, which could be any of the features {}: use \
                                 cargo 1.85 or later (it sets CARGO_CFG_FEATURE with exact names)",
                                names.join(", ")
                            ),
                        });
                    }
                }
            }
            found
        }
    };
    features.sort();
    features.dedup();
    Ok(features)
}

/// A feature name as cargo spells it in `CARGO_FEATURE_<NAME>`.
fn env_name(feature: &str) -> String {
    feature.to_uppercase().replace('-', "_")
}

/// The feature names a manifest declares: the keys of `[features]` and the names
/// of optional dependencies (`[dependencies]`, `[target.'…'.dependencies]`, inline
/// or as `[dependencies.name]` tables). A line scanner, enough for these keys.
pub(crate) fn declared_features(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut section = String::new();
    // The dependency named by a `[dependencies.name]` table header.
    let mut dep_table: Option<String> = None;
    for raw in manifest.lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            section = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            dep_table = section
                .rsplit_once('.')
                .filter(|(table, _)| is_dependency_table(table))
                .map(|(_, name)| unquote(name).to_string());
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (unquote(key.trim()), value.trim());
        if section == "features" {
            names.push(key.to_string());
        } else if is_dependency_table(&section) {
            let inline: String = value.chars().filter(|c| !c.is_whitespace()).collect();
            if inline.starts_with('{') && inline.contains("optional=true") {
                names.push(key.to_string());
            }
        } else if let Some(dep) = &dep_table {
            if key == "optional" && value == "true" {
                names.push(dep.clone());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// `dependencies` or `target.<cfg>.dependencies` (not dev- or build-dependencies).
fn is_dependency_table(section: &str) -> bool {
    section == "dependencies"
        || (section.starts_with("target.") && section.ends_with(".dependencies"))
}

fn unquote(s: &str) -> &str {
    s.trim().trim_matches(|c| c == '"' || c == '\'')
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
[package]
name = "k"

[dependencies]
xlog-device = { workspace = true }
half = { version = "2", optional = true } # implicit feature `half`
plain-dep = "1"

[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]
xlog-runtime = { workspace = true, optional = true }

[dependencies.extra-dep]
version = "1"
optional = true

[dev-dependencies]
not-a-feature = { version = "1", optional = true }

[features]
default = ["wide"]
wide = []
"fast-math" = []
gpu = ["dep:xlog-runtime"]
"#;

    fn features(vars: &[(&str, &str)]) -> Result<Vec<String>, Error> {
        host_features(&EnvReader::from(vars), MANIFEST)
    }

    #[test]
    fn manifest_declarations() {
        assert_eq!(
            declared_features(MANIFEST),
            [
                "default",
                "extra-dep",
                "fast-math",
                "gpu",
                "half",
                "wide",
                "xlog-runtime"
            ]
        );
    }

    #[test]
    fn exact_names_come_from_cargo_cfg_feature() {
        let got = features(&[
            ("CARGO_CFG_FEATURE", "wide,default,fast-math"),
            ("CARGO_FEATURE_FAST_MATH", "1"),
        ])
        .unwrap();
        assert_eq!(got, ["default", "fast-math", "wide"]);
        // Set but empty, or absent with no CARGO_FEATURE_*: no features at all.
        assert!(features(&[("CARGO_CFG_FEATURE", "")]).unwrap().is_empty());
        assert!(features(&[]).unwrap().is_empty());
    }

    #[test]
    fn older_cargo_names_are_mapped_back_through_the_manifest() {
        let got = features(&[
            ("CARGO_FEATURE_FAST_MATH", "1"),
            ("CARGO_FEATURE_DEFAULT", "1"),
            ("CARGO_FEATURE_EXTRA_DEP", "1"),
            ("CARGO_FEATURE_XLOG_RUNTIME", "1"),
        ])
        .unwrap();
        assert_eq!(got, ["default", "extra-dep", "fast-math", "xlog-runtime"]);
    }

    #[test]
    fn unknown_or_ambiguous_older_cargo_names_fail() {
        let err = features(&[("CARGO_FEATURE_NOPE", "1")]).unwrap_err();
        assert!(err.to_string().contains("CARGO_FEATURE_NOPE"), "{err}");
        let manifest = "[features]\na-b = []\na_b = []\n";
        let err =
            host_features(&EnvReader::from(&[("CARGO_FEATURE_A_B", "1")]), manifest).unwrap_err();
        assert!(
            err.to_string().contains("any of the features a-b, a_b"),
            "{err}"
        );
    }
}
