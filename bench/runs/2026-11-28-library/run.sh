#!/usr/bin/env bash
# Runs the bundle on the GPU machine: the dense group-by suite, the suite under
# compute-sanitizer memcheck and racecheck (capped sizes), and the bench against
# PyTorch. One JSON line per step in $1/results.jsonl, each step's log beside it.
set -u
out=$1; b=$(cd "$(dirname "$0")" && pwd); mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
export XLOG_BACKEND=gpu
run() { # name timeout command...
  local name=$1 t=$2; shift 2
  local s=$(date +%s%N)
  timeout "$t" "$@" > "$out/$name.log" 2>&1; local rc=$?
  local e=$(date +%s%N)
  local res=$(grep -E "^test result|ERROR SUMMARY" "$out/$name.log" | tail -1)
  echo "{\"step\":\"$name\",\"args\":\"$*\",\"rc\":$rc,\"ms\":$(( (e - s) / 1000000 )),\"result\":\"$res\"}" | sed "s|$b/||g" >> "$out/results.jsonl"
}
run gpu_group 40 "$b/bin/test-gpu_group"
# The sanitizers on small sizes and a subset of the type pairs (every kernel path:
# one-word, two-word and global accumulators, both decodes, the error word).
export XLOG_TEST_MAX_LEN=300
subset=(u32_keys_u32 u32_keys_i64 u32_keys_f32 u8_keys_f64 keys_ recorded)
XLOG_BACKEND=direct run memcheck 35 compute-sanitizer --tool memcheck --error-exitcode 99 "$b/bin/test-gpu_group" --test-threads=1 "${subset[@]}"
XLOG_BACKEND=direct run racecheck 35 compute-sanitizer --tool racecheck --error-exitcode 99 "$b/bin/test-gpu_group" --test-threads=1 "${subset[@]}"
unset XLOG_TEST_MAX_LEN
XLOG_BENCH_RESULTS=$out/bench.jsonl XLOG_GROUP_SCRIPT="$b/dense_group_torch.py" run bench 40 "$b/bin/bench-dense_group"
