#!/usr/bin/env bash
# Proof that a project outside this repository can depend on released versions of
# xlog: checks that every publishable crate would publish (`cargo publish --dry-run`),
# packages them (`cargo package`), lays the packages out as
# a directory registry beside the third-party crates they need (`cargo vendor`), and
# builds, tests and runs a copy of the template project (`templates/app`) against
# that registry alone, with no path dependency on this repository. The registry and
# the kernel crate's sources are made read-only first and checked for changes after,
# so the device build is shown to write only under the target directories. The app
# runs on the CPU simulator (XLOG_BACKEND=sim). Its work lies in
# <target>/registry-check, its registry in a directory outside the repository
# ($XLOG_REGISTRY_CHECK_DIR, default under $TMPDIR); the registry is rebuilt every
# run, the build reuses what it can.
#
# Needs what scripts/test.sh installs (the device toolchain; ptxas for the
# template's ptxas test, through XLOG_PTXAS or PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
target=${CARGO_TARGET_DIR:-$repo/target}
work=$target/registry-check
# The registry lies outside this repository, as a user's would: a crate inside a
# workspace's directory tree that is not its member is refused by the device
# build's nested cargo ("believes it's in a workspace when it's not").
registry=${XLOG_REGISTRY_CHECK_DIR:-${TMPDIR:-/tmp}/xlog-registry-check-$(id -u)}/registry
app=$work/app
# The toolchain of the device build (xlog-build's PINNED_TOOLCHAIN).
DEVICE_TOOLCHAIN=nightly-2026-05-20
# The crates users depend on, in dependency order.
crates=(xlog-device xlog-macros xlog-runtime xlog xlog-build xlog-kernels xlog-interop)

for dir in "$registry" "$app"; do
  if [ -d "$dir" ]; then chmod -R u+w "$dir"; fi
done
rm -rf "$registry" "$app"
mkdir -p "$registry" "$work"

echo "-- the template project, on the released versions"
cp -r templates/app "$app"
rm -rf "$app/target" "$app/Cargo.lock"
# Beside it, an application of the kernel library (xlog-kernels, whose device
# build then runs from the read-only registry too): sorts, sums and checks.
sed -i -E 's|^members = \["kernels", "app"\]|members = ["kernels", "app", "library"]|' "$app/Cargo.toml"
grep -q '"library"' "$app/Cargo.toml"
sed -i -E "s|^(xlog-build = .*)$|\1\nxlog-kernels = { version = \"0.1.0\", path = \"../../crates/xlog-kernels\" }|" "$app/Cargo.toml"
mkdir -p "$app/library/src"
cat >"$app/library/Cargo.toml" <<'TOML'
[package]
name = "library"
version.workspace = true
edition.workspace = true
publish.workspace = true

[dependencies]
xlog.workspace = true
xlog-kernels.workspace = true
TOML
cat >"$app/library/src/main.rs" <<'RUST'
//! The kernel library from the registry: a sort and a sum, checked on the CPU.
use xlog_kernels::{reduce, sort};

fn main() -> xlog::Result<()> {
    let rt = xlog::Runtime::get(0)?;
    let s = rt.stream()?;
    let keys: Vec<u32> = (0..5000u32).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    let x = rt.upload_on(&s, &keys)?;
    let got = sort::sorted(&s, &x, sort::Order::Ascending)?.download(&s)?;
    let mut want = keys.clone();
    want.sort_unstable();
    assert_eq!(got, want, "the sort");
    let sum = reduce::sum(&s, &x)?.download(&s)?;
    assert_eq!(sum, [keys.iter().fold(0u32, |a, &k| a.wrapping_add(k))], "the sum");
    println!("ok: the kernel library from the registry sorts and sums");
    Ok(())
}
RUST
# The third-party crates the template needs, resolved while the xlog crates are
# still paths (absolute here), vendored into the same directory.
sed -i -E "s|path = \"\.\./\.\./crates/|path = \"$repo/crates/|" "$app/Cargo.toml"
cargo vendor --quiet --versioned-dirs --manifest-path "$app/Cargo.toml" "$registry" >/dev/null
# The device build's `-Zbuild-std` resolves the standard library's workspace too,
# through the same source replacement: vendor its crates (as any project that
# vendors its dependencies must).
library=$(rustc "+$DEVICE_TOOLCHAIN" --print sysroot)/lib/rustlib/src/rust/library
cargo "+$DEVICE_TOOLCHAIN" vendor --quiet --locked --no-delete --versioned-dirs \
  --manifest-path "$library/Cargo.toml" "$registry" >/dev/null
rm -f "$app/Cargo.lock"
echo "-- cargo publish --dry-run: every crate but xlog-kernels, each built from its package"
# Each crate is verified against the packages of the ones before it. xlog-kernels
# is left to the template build below: its build script runs a nested cargo (the
# device build) that resolves the crate's dependencies from the registry, which
# does not hold the unpublished xlog crates during a dry run (a release publishes
# it last, after xlog-build and the crates it depends on are on the registry).
# Cargo unpacks each package of the dry run under the cargo home's registry/src/
# (in a folder named after the local overlay registry, starting with "-") and reuses
# that folder for the same name and version: one left by an earlier run of this check
# holds that run's sources. They are caches; clear ours first.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/xlog-*
cargo publish --quiet --dry-run --allow-dirty --workspace --exclude xlog-kernels
echo "-- cargo package, into the same directory"
# --allow-dirty: this checks the working tree as it is; a release is packaged from
# a clean checkout. --no-verify: building the template below is the verification.
cargo package --quiet --allow-dirty --no-verify $(printf -- '-p %s ' "${crates[@]}")
version=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "xlog"))')
for c in "${crates[@]}"; do
  tar -xzf "$target/package/$c-$version.crate" -C "$registry"
  # A directory source checks the files listed here; the package is new, so none.
  echo '{"files":{},"package":null}' >"$registry/$c-$version/.cargo-checksum.json"
done

# Now no path dependency on this repository: the xlog crates by version only.
sed -i -E '/^xlog/s|, path = "[^"]*"||' "$app/Cargo.toml"
if grep -n "$repo" "$app/Cargo.toml"; then
  echo "the template copy still names the repository" >&2
  exit 1
fi
# The registry replaces crates.io in a Cargo home of the check's own (as a user's
# ~/.cargo/config.toml would), which every cargo of the build reads: also the
# nested one of a device build, which runs in the kernel crate's directory.
cargo_home=$work/cargo-home
rm -rf "$cargo_home"
mkdir -p "$cargo_home"
cat >"$cargo_home/config.toml" <<TOML
[source.crates-io]
replace-with = "released"

[source.released]
directory = "$registry"
TOML
# Read-only: the registry, as cargo's own would be, and the kernel crate's sources.
# Root ignores the permission bits, so the check after the build also looks for
# anything modified there since this marker.
chmod -R a-w "$registry" "$app/kernels"
marker=$work/before-build
touch "$marker"
sleep 1

# Cargo fingerprints registry crates by version: rebuild this repository's crates,
# whose contents change under the same version.
for dir in "$work/target" "$work/device"; do
  if [ -d "$dir" ]; then find "$dir" -path '*/.fingerprint/xlog-*' -prune -exec rm -rf {} +; fi
done
(
  cd "$app"
  export CARGO_TARGET_DIR=$work/target XLOG_DEVICE_TARGET_DIR=$work/device CARGO_HOME=$cargo_home
  unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
  cargo test --quiet --offline --workspace
  XLOG_BACKEND=sim cargo run --quiet --offline --release -p app | tee "$work/app.out"
  XLOG_BACKEND=sim cargo run --quiet --offline --release -p library | tee -a "$work/app.out"
)
grep -q "ok: the simulator result matches the CPU" "$work/app.out"
grep -q "ok: the kernel library from the registry sorts and sums" "$work/app.out"
written=$(find "$registry" "$app/kernels" -newer "$marker")
if [ -n "$written" ]; then
  echo "the build wrote into the registry or the kernel crate's sources:" >&2
  echo "$written" >&2
  exit 1
fi
chmod -R u+w "$registry" "$app/kernels"
echo "registry check: ok"
