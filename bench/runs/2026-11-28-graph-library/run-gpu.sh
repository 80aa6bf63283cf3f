#!/usr/bin/env bash
# The graph2 branch's GPU run: the library-graph suite, the eager suites whose
# calls it reworked, and the graph stress suite under racecheck and synccheck with
# small sizes. Writes results.jsonl and logs under $1. Stops starting steps after
# $2 seconds.
set -u
B=$(cd "$(dirname "$0")" && pwd)
OUT=$1
LIMIT=${2:-220}
T0=$(date +%s)
export XLOG_BACKEND=direct
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt" 2>&1
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
record() { # suite mode rc seconds log
  local passed failed errs
  passed=$(grep -Eo "[0-9]+ passed" "$5" | awk '{s+=$1} END {print s+0}')
  failed=$(grep -Eo "[0-9]+ failed" "$5" | awk '{s+=$1} END {print s+0}')
  errs=$(grep -Eo "ERROR SUMMARY: [0-9]+|\(([0-9]+) errors" "$5" | tail -1 | grep -Eo "[0-9]+" || echo null)
  [ -z "$errs" ] && errs=null
  echo "{\"suite\":\"$1\",\"mode\":\"$2\",\"rc\":$3,\"seconds\":$4,\"passed\":$passed,\"failed\":$failed,\"sanitizer_errors\":$errs}" >> "$OUT/results.jsonl"
}
step() { # suite mode timeout cmd...
  local suite=$1 mode=$2 to=$3; shift 3
  local l; l=$(left)
  if [ "$l" -lt 10 ]; then
    echo "{\"suite\":\"$suite\",\"mode\":\"$mode\",\"skipped\":\"out of time\"}" >> "$OUT/results.jsonl"; return
  fi
  [ "$to" -gt "$l" ] && to=$l
  local log=$OUT/$suite.$mode.log s=$(date +%s.%N)
  timeout "$to" "$@" > "$log" 2>&1
  local rc=$? e; e=$(python3 -c "import time; print(round(time.time() - $s, 1))")
  record "$suite" "$mode" "$rc" "$e" "$log"
}
step gpu_graph_library plain 40 "$B/gpu_graph_library" --test-threads=4
XLOG_TEST_MAX_LEN=2000000 step gpu_sort plain-cap2e6 40 "$B/gpu_sort" --test-threads=4
XLOG_TEST_MAX_LEN=2000000 step gpu_set plain-cap2e6 25 "$B/gpu_set" --test-threads=4
XLOG_TEST_MAX_LEN=2000000 step gpu_library plain-cap2e6 40 "$B/gpu_library" --test-threads=4 --skip panic
export XLOG_TEST_MAX_LEN=5000 XLOG_STRESS_THREADS=1 XLOG_STRESS_SEEDS=1 XLOG_STRESS_OPS=300
SK=(--skip panic --skip teeth --skip inside_a_graph_capture --skip sees_no_gpu --skip sixteen_threads --skip threads)
step gpu_graph racecheck 45 compute-sanitizer --tool racecheck --error-exitcode 99 "$B/gpu_graph" --test-threads=1 "${SK[@]}"
step gpu_graph synccheck 30 compute-sanitizer --tool synccheck --error-exitcode 99 "$B/gpu_graph" --test-threads=1 "${SK[@]}"
step gpu_graph_library racecheck 40 compute-sanitizer --tool racecheck --error-exitcode 99 "$B/gpu_graph_library" --test-threads=1 --skip portion
step gpu_graph_library synccheck 30 compute-sanitizer --tool synccheck --error-exitcode 99 "$B/gpu_graph_library" --test-threads=1 --skip portion
echo "total $(( $(date +%s) - T0 )) s" >> "$OUT/device.txt"
