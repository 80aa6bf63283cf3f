#!/usr/bin/env bash
# Build the extension module into python/build/xlog.abi3.so (one build for every
# CPython >= 3.9 on x86_64 Linux). Needs a stable Rust toolchain; kernel crates
# are built by xlog-build (set XLOG_PTXAS if ptxas is not on PATH).
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release
target=${CARGO_TARGET_DIR:-target}
mkdir -p build
cp "$target/release/libxlog.so" build/xlog.abi3.so
echo "built python/build/xlog.abi3.so"
