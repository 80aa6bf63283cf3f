#!/usr/bin/env bash
# Runs the second bundle: the dense group-by suite, and the reduce, scan and
# recorded-library tests that cover the reduce and scan conversion. One JSON line
# per step in $1/results.jsonl, each step's log beside it.
set -u
out=$1; b=$(cd "$(dirname "$0")" && pwd); mkdir -p "$out"
export XLOG_BACKEND=gpu
run() { # name timeout command...
  local name=$1 t=$2; shift 2
  local s=$(date +%s%N)
  timeout "$t" "$@" > "$out/$name.log" 2>&1; local rc=$?
  local e=$(date +%s%N)
  local res=$(grep -E "^test result|ERROR SUMMARY" "$out/$name.log" | tail -1)
  echo "{\"step\":\"$name\",\"args\":\"$*\",\"rc\":$rc,\"ms\":$(( (e - s) / 1000000 )),\"result\":\"$res\"}" | sed "s|$b/||g" >> "$out/results.jsonl"
}
run gpu_group 12 "$b/bin/test-gpu_group"
run library-reduce-scan 18 "$b/bin/test-gpu_library" reduce:: scan:: segmented::
run graph-library 8 "$b/bin/test-gpu_graph_library"
run kernels-gpu 8 "$b/bin/test-gpu"
