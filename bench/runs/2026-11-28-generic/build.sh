#!/usr/bin/env bash
# Builds the GPU suites this branch's changes touch into /tmp/gb/bin.
set -euo pipefail
cd /work/wt-generic
export CARGO_TARGET_DIR=/work/wt-generic/target XLOG_CUBIN_ARCHS=sm_90
export XLOG_PTXAS=/work/main/target/xlog-tools/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas
mkdir -p /tmp/gb/bin
build() { # pkg features prefix
  cargo test -p "$1" --features "$2" --profile gpu --no-run --message-format=json | python3 -c '
import json, shutil, sys
prefix = sys.argv[1]
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"][0] == "test" and m["target"]["name"].startswith("gpu"):
        shutil.copy(m["executable"], "/tmp/gb/bin/test-%s-%s" % (prefix, m["target"]["name"]))
        print("bundled", prefix, m["target"]["name"])
' "$3"
}
build xlog-abi-kernels gpu-tests abi
build xlog-device-kernels gpu device
build xlog-kernels gpu-tests kernels
git rev-parse --short HEAD > /tmp/gb/commit.txt
ls -la /tmp/gb/bin
