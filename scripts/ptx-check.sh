#!/usr/bin/env bash
# Validate every kernel crate's device module with ptxas, without a GPU.
#
# The rule lives in one place, `xlog_build::ptxas::check_image` (ptxas lookup,
# sm_80 and sm_90, no register spills outside the panic path and the kernels that
# declare `min_blocks`; the device-kernels suite calls `check_module` with its own
# list): this script runs the test of each workspace kernel crate that calls it,
# the tests named `ptxas_accepts_*` (in `tests/ptx.rs`, or `tests/abi.rs` for the
# ABI kernels). A missing ptxas fails them with the way to install it
# (`pip install nvidia-cuda-nvcc`, or XLOG_PTXAS=/path/to/ptxas).
#
# Usage: scripts/ptx-check.sh [extra cargo test args, e.g. --release]
set -euo pipefail
cd "$(dirname "$0")/.."

exec cargo test --workspace --test ptx --test abi "$@" -- ptxas_accepts
