#!/usr/bin/env bash
# Build the xlog wheel with maturin: one abi3 wheel for every CPython >= 3.9 on
# x86_64 Linux, written to OUT_DIR (default target/wheels; an older xlog wheel
# there is removed first) and its path printed last.
#
#   python/build.sh [OUT_DIR]
#   pip install target/wheels/xlog-*.whl
#
# maturin: $MATURIN, else the one scripts/test.sh installs under target/xlog-tools,
# else the one on PATH (`pip install maturin`). Cargo builds into
# $CARGO_TARGET_DIR (default target/python). The kernel crates are compiled by
# xlog-build (set XLOG_PTXAS if ptxas is not on PATH, XLOG_CUBIN_ARCHS=sm_90 to
# ship machine code for one GPU). `pip install ./python` does the same through
# pyproject.toml, in a build environment of its own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/wheels}
maturin=${MATURIN:-}
for m in "$root/target/xlog-tools/venv/bin/maturin" "$root/target/xlog-tools/pkgs/bin/maturin" \
  "$(command -v maturin || true)"; do
  if [ -z "$maturin" ] && [ -n "$m" ] && [ -x "$m" ]; then maturin=$m; fi
done
if [ -z "$maturin" ]; then
  echo "maturin not found: pip install maturin (scripts/test.sh installs it under target/xlog-tools)" >&2
  exit 1
fi
mkdir -p "$out"
rm -f "$out"/xlog-*.whl
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target/python} \
  "$maturin" build --release --manifest-path "$root/python/Cargo.toml" --out "$out" >&2
ls "$out"/xlog-*.whl
