#!/usr/bin/env bash
# The final call's bundle: the suites and benches that changed this session.
set -euo pipefail
cd /work/main
export XLOG_CUBIN_ARCHS=sm_90 XLOG_PTXAS=/work/main/target/xlog-tools/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas
b=/work/scratch/final/bundle; mkdir -p $b/bin
cargo test -p xlog-runtime --features gpu-tests --profile gpu --no-run --message-format=json --test gpu 2>>/work/scratch/final/build.err | python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]=="test":
    shutil.copy(m["executable"],"'$b'/bin/test-xlog-runtime-"+m["target"]["name"]); print("bundled runtime", m["target"]["name"])
'
for t in gpu_graph gpu_stress gpu_multi; do
  cargo test -p xlog-stress --features gpu-tests --profile gpu --no-run --message-format=json --test $t 2>>/work/scratch/final/build.err | python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]=="test":
    shutil.copy(m["executable"],"'$b'/bin/test-xlog-stress-"+m["target"]["name"]); print("bundled stress", m["target"]["name"])
'
done
for t in ${KERNEL_SUITES:-gpu_predicate gpu_library gpu_sort}; do
  cargo test -p xlog-kernels --features gpu-tests --profile gpu --no-run --message-format=json --test $t 2>>/work/scratch/final/build.err | python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]=="test":
    shutil.copy(m["executable"],"'$b'/bin/test-xlog-kernels-"+m["target"]["name"]); print("bundled kernels", m["target"]["name"])
'
done
cargo bench -p xlog-runtime --profile gpu --no-run --message-format=json --bench pool_alloc_free 2>>/work/scratch/final/build.err | python3 -c '
import json,sys,shutil
for l in sys.stdin:
  try: m=json.loads(l)
  except ValueError: continue
  if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"][0]=="bench":
    shutil.copy(m["executable"],"'$b'/bin/bench-pool_alloc_free"); print("bundled bench pool_alloc_free")
'
cargo build -p distributed --profile gpu 2>>/work/scratch/final/build.err && for e in target/gpu/distributed target/gpu/ranks; do [ -f $e ] && cp $e $b/bin/ && echo bundled $e; done
[ -n "${NO_DATALOG:-}" ] || cargo build -p datalog --profile gpu 2>>/work/scratch/final/build.err && cp target/gpu/datalog $b/bin/datalog && echo bundled datalog
ls -la $b/bin
