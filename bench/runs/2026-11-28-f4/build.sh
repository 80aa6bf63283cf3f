#!/usr/bin/env bash
set -euo pipefail
cd /work/main
export XLOG_CUBIN_ARCHS=sm_90 XLOG_PTXAS=/work/main/target/xlog-tools/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas
b=/work/scratch/f4/bundle; rm -rf $b; mkdir -p $b/bin
pick() {
python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]==sys.argv[2]:
    shutil.copy(m["executable"],sys.argv[1]+m["target"]["name"]); print("bundled", m["target"]["name"])
' "$1" "$2"
}
cargo test -p xlog-runtime --features gpu-tests --profile gpu --no-run --message-format=json --test gpu 2>>/work/scratch/f4/build.err | pick $b/bin/test-xlog-runtime- test
cargo test -p xlog-stress --features gpu-tests --profile gpu --no-run --message-format=json --test gpu_stress --test gpu_graph 2>>/work/scratch/f4/build.err | pick $b/bin/test-xlog-stress- test
cp /work/scratch/f4/run.sh $b/
(git rev-parse HEAD; git status --short) > $b/commit
cd /work/scratch/f4 && tar cf - bundle | xz -6 -T2 > /work/main/target/f4-bundle.txz && ls -la /work/main/target/f4-bundle.txz
