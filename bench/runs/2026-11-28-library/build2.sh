#!/usr/bin/env bash
# The second bundle: the dense group-by suite again (its fixed test) and the suites
# that cover the reduce and scan conversion (gpu_library, gpu_graph_library, gpu),
# gpu profile, sm_90 cubins; packed with run2.sh.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export CARGO_TARGET_DIR=$PWD/target XLOG_CUBIN_ARCHS=sm_90
export XLOG_PTXAS=/work/main/target/xlog-tools/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas
b=/tmp/library-bundle2; rm -rf "$b"; mkdir -p "$b/bin"
cargo test -p xlog-kernels --features gpu-tests --profile gpu --test gpu_group --test gpu_library --test gpu_graph_library --test gpu --no-run --message-format=json | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"][0] == "test":
        shutil.copy(m["executable"], "/tmp/library-bundle2/bin/test-" + m["target"]["name"]); print("bundled", m["target"]["name"])
'
cp bench/runs/2026-11-28-library/run2.sh "$b/"
git rev-parse --short HEAD > "$b/commit.txt"
tar czf /work/main/target/library-bundle.tgz -C "$b" .
ls -la "$b/bin" /work/main/target/library-bundle.tgz
