#!/usr/bin/env bash
# The pool2 device call: run from the unpacked bundle (bin/ beside this script),
# results under $OUT (few files: the device call returns a handful).
set -u
cd "$(dirname "$0")"
O=${OUT:-out}
mkdir -p "$O"
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
log=$O/logs.txt
# step NAME TIMEOUT CMD...: runs CMD, appends its output to logs.txt and
# "NAME exit seconds" to steps.txt.
step() {
  local name=$1 limit=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  timeout "$limit" "$@" >"$O/.step.log" 2>&1
  local rc=$?
  echo "$name $rc $(python3 -c "import time; print(round(time.time() - $t0, 1))")" >>"$O/steps.txt"
  { echo "===== $name (exit $rc)"; cat "$O/.step.log"; } >>"$log"
  rm -f "$O/.step.log"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$O/steps.txt"
# The runtime GPU suite with the pool as the default stack.
step t-runtime 120 bin/test-runtime --test-threads=4
# The stress suite: default stack (pooled), plain, pooled with cross-stream
# reuse, teeth, the peak with and without the pool, budget contention both ways.
step t-stress 150 bin/test-stress --test-threads=1 --nocapture
# Peak device memory of the query example without and with the pool.
step q-nopool 60 env XLOG_POOL=0 bin/example-query
step q-pool 60 env XLOG_POOL=1 bin/example-query
# Sanitizers on the pool's GPU tests (direct backend; the teeth tests disable
# fencing on purpose).
step san-memcheck 120 env XLOG_BACKEND=direct compute-sanitizer --tool memcheck --error-exitcode 99 \
  bin/test-runtime pool:: --test-threads=1 --skip teeth
step san-racecheck 120 env XLOG_BACKEND=direct compute-sanitizer --tool racecheck --error-exitcode 99 \
  bin/test-runtime pool:: --test-threads=1 --skip teeth
step san-memcheck-stress 120 env XLOG_BACKEND=direct XLOG_STRESS_SEEDS=1 XLOG_STRESS_OPS=1500 \
  compute-sanitizer --tool memcheck --error-exitcode 99 \
  bin/test-stress stress_through_the_caching_pool --test-threads=1 --nocapture
# Benches: median of five processes each (the harness's own), records in results.jsonl.
export XLOG_BENCH_RESULTS=$O/results.jsonl
step b-pool 150 bin/bench-pool_alloc_free --bench
step b-alloc 90 bin/bench-alloc_free --bench
grep -E "^\|| pool: " "$log" >"$O/bench.md" || true
