#!/usr/bin/env bash
# The pool call's bundle: pool bench, runtime + stress suites, query + datalog examples.
set -euo pipefail
cd /work/main
export XLOG_CUBIN_ARCHS=sm_90 XLOG_PTXAS=/work/main/target/xlog-tools/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas
b=/work/scratch/pool3/bundle; rm -rf $b; mkdir -p $b/bin $b/data
pick() { # prefix kind
python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]==sys.argv[2]:
    shutil.copy(m["executable"],sys.argv[1]+m["target"]["name"]); print("bundled", m["target"]["name"])
' "$1" "$2"
}
cargo test -p xlog-runtime --features gpu-tests --profile gpu --no-run --message-format=json --test gpu 2>>/work/scratch/pool3/build.err | pick $b/bin/test-xlog-runtime- test
cargo test -p xlog-stress --features gpu-tests --profile gpu --no-run --message-format=json --test gpu_stress 2>>/work/scratch/pool3/build.err | pick $b/bin/test-xlog-stress- test
cargo bench -p xlog-runtime --profile gpu --no-run --message-format=json --bench pool_alloc_free 2>>/work/scratch/pool3/build.err | pick $b/bin/bench- bench
cargo build -p datalog -p query --profile gpu 2>>/work/scratch/pool3/build.err
cp target/gpu/datalog target/gpu/query $b/bin/
cp /work/shared/datasets/*.tsv $b/data/
cp /work/scratch/pool3/run.sh $b/
git rev-parse HEAD > $b/commit; git status --short >> $b/commit
ls -la $b/bin
cd /work/scratch/pool3 && tar cf - bundle | xz -6 -T2 > /work/main/target/pool3-bundle.txz && ls -la /work/main/target/pool3-bundle.txz
