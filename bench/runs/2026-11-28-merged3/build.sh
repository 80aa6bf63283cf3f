#!/usr/bin/env bash
set -euo pipefail
cd /work/main
export XLOG_PTXAS=/work/main/target/xlog-tools/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas XLOG_CUBIN_ARCHS=sm_90
XLOG_BUNDLE_MODES=test bash scripts/gpu/build.sh > /work/scratch/m3/gpu-build.out 2>&1
for bn in pool_alloc_free launch_overhead; do
cargo bench -p xlog-runtime --profile gpu --no-run --message-format=json --bench $bn 2>>/work/scratch/m3/build.err | python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]=="bench":
    shutil.copy(m["executable"],".gpu-bundle/bin/bench-"+m["target"]["name"]); print("bundled", m["target"]["name"])
'
done
cargo bench -p xlog-kernels --profile gpu --no-run --message-format=json --bench first_use --bench typed_launch 2>>/work/scratch/m3/build.err | python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]=="bench":
    shutil.copy(m["executable"],".gpu-bundle/bin/bench-"+m["target"]["name"]); print("bundled", m["target"]["name"])
'
mkdir -p .gpu-bundle/data && cp /work/shared/datasets/*.tsv .gpu-bundle/data/
cp /work/scratch/m3/run.sh .gpu-bundle/
(git rev-parse HEAD; git status --short) > .gpu-bundle/commit
rm -f .gpu-bundle.tgz
tar cf - .gpu-bundle | xz -6 -T2 > target/m3-bundle.txz
ls -la target/m3-bundle.txz
