#!/usr/bin/env bash
# The project's test command (see the README). On a fresh machine with only rustup,
# stable Rust and Python it installs what the tests need first:
#   - the pinned device toolchain (nightly-2026-05-20 + rust-src + llvm-tools), which
#     xlog-build uses to compile kernel crates to PTX;
#   - ptxas, from the PyPI wheel nvidia-cuda-nvcc, to validate every PTX module.
# Then: formatting, clippy, the CPU test suites (unit, trybuild, PTX validation),
# the docs, and the GPU suites on the CPU simulator (XLOG_BACKEND=sim). The GPU
# suites on a GPU are separate and opt-in (scripts/gpu/).
set -euo pipefail
cd "$(dirname "$0")/.."
UI_TOOLCHAIN=1.95.0
NVCC_WHEEL=13.5.37
MATURIN_VERSION=1.16.0

echo "== toolchains"
rustup component add clippy rustfmt
rustup toolchain install nightly-2026-05-20 --profile minimal --component rust-src,llvm-tools
# The compile-fail snapshots are rustc's exact output: they run on the toolchain
# that produced them (see crates/xlog-macros/tests/compiletest.rs).
rustup toolchain install "$UI_TOOLCHAIN" --profile minimal

echo "== ptxas"
# ptxas comes from NVIDIA's PyPI wheel, installed into a private virtualenv so a
# system Python that refuses global installs (PEP 668) is no obstacle.
tools=target/xlog-tools
if [ ! -x "$tools/venv/bin/python" ]; then
  rm -rf "$tools/venv"
  python3 -m venv "$tools/venv" 2>/dev/null || rm -rf "$tools/venv"
fi
# Python packages for the tools (ptxas here, maturin and the xlog wheel below):
# into the venv, or without a venv module into a folder of our own ($tools/pkgs,
# put on PYTHONPATH where used).
if [ -x "$tools/venv/bin/python" ]; then
  tools_py=$PWD/$tools/venv/bin/python
  pip_tools() { "$tools_py" -m pip install --quiet --disable-pip-version-check "$@"; }
else
  tools_py=python3
  pip_tools() {
    python3 -m pip install --quiet --disable-pip-version-check --upgrade --target "$tools/pkgs" "$@" ||
      python3 -m pip install --quiet --disable-pip-version-check --upgrade --break-system-packages --target "$tools/pkgs" "$@"
  }
fi
pip_tools "nvidia-cuda-nvcc==$NVCC_WHEEL"
ptxas_path=$(find "$tools" -path '*/bin/ptxas' -type f 2>/dev/null | head -1)
if [ -z "$ptxas_path" ]; then
  echo "ptxas not found after installing nvidia-cuda-nvcc==$NVCC_WHEEL" >&2
  exit 1
fi
chmod +x "$ptxas_path"
export XLOG_PTXAS="$PWD/$ptxas_path"
"$XLOG_PTXAS" --version | tail -1

echo "== fmt"
cargo fmt --all -- --check
echo "== clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== docs"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "== tests"
cargo test --workspace
# The same kernel crate with a feature on: the device build must see it too.
cargo test -p xlog-abi-kernels --features wide
echo "== packaged crates: the template project from a local registry"
# Every publishable crate packaged, and the template built, tested and run (on the
# simulator) against those packages alone, from a read-only directory registry.
bash scripts/registry-check.sh
echo "== GPU suites on the CPU simulator (XLOG_BACKEND=sim; not GPU coverage)"
# The same suites the GPU machine runs (scripts/gpu/run.sh), on xlog's simulator:
# kernels, streams and memory on the host, with the hazard detector checking every
# access. Sizes are capped; the stress runs at a CI scale. Integration suites only
# (`--test *`): the crates' unit tests use host-memory resources, not the simulator.
# Two simulated devices: the multi-device suite (gpu_multi: collectives, peer
# copies) needs them; every other suite uses device 0. It runs again on four.
export XLOG_BACKEND=sim XLOG_TEST_MAX_LEN=${XLOG_TEST_MAX_LEN:-20000} XLOG_SIM_DEVICES=2
cargo test --profile sim --no-fail-fast --test '*' \
  -p xlog-runtime --features xlog-runtime/gpu-tests \
  -p xlog-kernels --features xlog-kernels/gpu-tests \
  -p xlog-device-kernels --features xlog-device-kernels/gpu \
  -p xlog-stress --features xlog-stress/gpu-tests \
  -p xlog-abi-kernels --features xlog-abi-kernels/gpu-tests \
  -p xlog-guide-kernels --features xlog-guide-kernels/gpu-tests
XLOG_SIM_DEVICES=4 cargo test --profile sim -p xlog-stress --features xlog-stress/gpu-tests --test gpu_multi
cargo run --profile sim -p saxpy
cargo run --profile sim -p pipeline
cargo run --profile sim -p distributed
unset XLOG_BACKEND XLOG_TEST_MAX_LEN XLOG_SIM_DEVICES
echo "== compile-fail suite (rustc $UI_TOOLCHAIN)"
cargo "+$UI_TOOLCHAIN" test -p xlog-macros --test compiletest -- --ignored
echo "== Python module (the wheel built, installed and run here on the simulator; the GPU tests run on a GPU machine)"
(cd python && cargo fmt -- --check && CARGO_TARGET_DIR=../target/python cargo clippy --all-targets -- -D warnings)
# maturin builds the abi3 wheel (python/pyproject.toml); pip installs the file it
# built, as a user would. Its import must work without a GPU.
pip_tools "maturin==$MATURIN_VERSION"
wheel=$(bash python/build.sh "$PWD/target/wheels" | tail -1)
pip_tools --no-deps --force-reinstall "$wheel"
py_tools() { PYTHONPATH="$PWD/$tools/pkgs${PYTHONPATH:+:$PYTHONPATH}" "$tools_py" "$@"; }
py_tools -c "import xlog; print('installed', xlog.__name__, 'from', xlog.__file__)"
# Every function and element type against plain Python, and the example, on the
# simulator (test_algorithms and test_interop need a GPU, torch and cupy).
XLOG_BACKEND=sim py_tools -m unittest discover -s python/tests -p test_smoke.py
XLOG_BACKEND=sim py_tools python/example.py
