#!/usr/bin/env bash
# Runs the GPU suites the generic-kernels branch touches, from the bundle; results
# (one JSON line per suite, each suite's log) under $1.
set -u
out=$1; b=$(cd "$(dirname "$0")" && pwd); mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
export XLOG_BACKEND=gpu
run() { # name timeout binary args...
  local name=$1 t=$2; shift 2
  local s=$(date +%s%N)
  timeout "$t" "$@" > "$out/$name.log" 2>&1; local rc=$?
  local e=$(date +%s%N)
  local res=$(grep -E "^test result" "$out/$name.log" | tail -1)
  echo "{\"suite\":\"$name\",\"args\":\"$*\",\"rc\":$rc,\"ms\":$(( (e - s) / 1000000 )),\"result\":\"$res\"}" | sed "s|$b/||" >> "$out/results.jsonl"
}
run abi-generic 15 "$b/bin/test-abi-gpu"
run library-gather 15 "$b/bin/test-kernels-gpu_library" gather::
run sort-pairs 30 "$b/bin/test-kernels-gpu_sort" pairs
run kernels-gpu 20 "$b/bin/test-kernels-gpu"
run set 10 "$b/bin/test-kernels-gpu_set"
run join 10 "$b/bin/test-kernels-gpu_join"
run intrinsics-atomic 10 "$b/bin/test-device-gpu_intrinsics" atomic
run user-operators 15 "$b/bin/test-kernels-gpu_library" a_generic_user_operator a_safe_fold
XLOG_TEST_MAX_LEN=4200000 run sort-keys 20 "$b/bin/test-kernels-gpu_sort" keys_match
