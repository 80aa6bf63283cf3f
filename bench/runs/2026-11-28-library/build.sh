#!/usr/bin/env bash
# Builds the dense group-by's GPU suite and bench (gpu profile, sm_90 cubins) and
# packs them with run.sh and the PyTorch script into one tarball.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export CARGO_TARGET_DIR=$PWD/target XLOG_CUBIN_ARCHS=sm_90
export XLOG_PTXAS=/work/main/target/xlog-tools/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas
b=/tmp/library-bundle; rm -rf "$b"; mkdir -p "$b/bin"
pick() { # kind name dest
  python3 -c '
import json, shutil, sys
kind, name, dest = sys.argv[1:]
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"][0] == kind and m["target"]["name"] == name:
        shutil.copy(m["executable"], dest); print("bundled", dest)
' "$@"
}
cargo test -p xlog-kernels --features gpu-tests --profile gpu --test gpu_group --no-run --message-format=json | pick test gpu_group "$b/bin/test-gpu_group"
cargo bench -p xlog-kernels --features gpu-tests --profile gpu --bench dense_group --no-run --message-format=json | pick bench dense_group "$b/bin/bench-dense_group"
cp crates/xlog-kernels/benches/dense_group_torch.py bench/runs/2026-11-28-library/run.sh "$b/"
git rev-parse --short HEAD > "$b/commit.txt"
tar czf /work/main/target/library-bundle.tgz -C "$b" .
ls -la "$b" "$b/bin" /work/main/target/library-bundle.tgz
