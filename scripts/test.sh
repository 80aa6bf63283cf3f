#!/usr/bin/env bash
# The project's test command (see the README). On a fresh machine with only rustup,
# stable Rust and Python it installs what the tests need first:
#   - the pinned device toolchain (nightly-2026-05-20 + rust-src + llvm-tools), which
#     xlog-build uses to compile kernel crates to PTX;
#   - ptxas, from the PyPI wheel nvidia-cuda-nvcc, to validate every PTX module.
# Then: formatting, clippy, the CPU test suites (unit, trybuild, PTX validation),
# and the docs. GPU suites are separate and opt-in (scripts/gpu/).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchains"
rustup component add clippy rustfmt >/dev/null 2>&1 || true
rustup toolchain install nightly-2026-05-20 --profile minimal --component rust-src,llvm-tools
echo "== ptxas"
python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvcc
ptxas_path=$(python3 - <<'PY'
import glob, os, nvidia
for base in nvidia.__path__:
    for p in sorted(glob.glob(os.path.join(base, "*", "bin", "ptxas"))):
        print(p)
        raise SystemExit
PY
)
if [ -z "$ptxas_path" ]; then
  echo "ptxas not found after installing nvidia-cuda-nvcc" >&2
  exit 1
fi
export XLOG_PTXAS="$ptxas_path"
"$XLOG_PTXAS" --version | tail -1

echo "== fmt"
cargo fmt --all -- --check
echo "== clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== docs"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "== tests"
cargo test --workspace
