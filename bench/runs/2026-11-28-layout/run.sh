#!/usr/bin/env bash
# The layout branch's changed suites on the GPU, then memcheck and racecheck over
# the narrow reductions and the guide's kernels (direct backend, capped sizes).
cd "$(dirname "$0")"
out=${OUT:-/tmp/out}
mkdir -p "$out"
git_commit=$(cat COMMIT)
echo "commit $git_commit" > "$out/run.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$out/run.log"
res="$out/results.jsonl"
: > "$res"
run() { # name, timeout, env..., binary, args...
  local name=$1 to=$2; shift 2
  local t0=$(date +%s.%N)
  timeout "$to" env "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  local passed=$(grep -Eo "[0-9]+ passed" "$out/$name.log" | awk '{s+=$1} END {print s+0}')
  local failed=$(grep -Eo "[0-9]+ failed" "$out/$name.log" | awk '{s+=$1} END {print s+0}')
  local errs=$(grep -Eo "ERROR SUMMARY: [0-9]+|\(([0-9]+) errors" "$out/$name.log" | tail -1 | grep -Eo "[0-9]+" || echo null)
  printf '{"run":"%s","commit":"%s","exit":%d,"passed":%d,"failed":%d,"sanitizer_errors":%s,"seconds":%.1f}\n' \
    "$name" "$git_commit" "$rc" "$passed" "$failed" "${errs:-null}" "$(awk "BEGIN{print $t1 - $t0}")" >> "$res"
  echo "$name exit $rc passed $passed failed $failed sanitizer_errors ${errs:-none}" >> "$out/run.log"
}
run gpu_guide 16 XLOG_BACKEND=gpu bin/gpu_guide --test-threads=4
run gpu_library_reduce 22 XLOG_BACKEND=gpu bin/gpu_library reduce --test-threads=4
run gpu_empty_and_axpy 8 XLOG_BACKEND=gpu bin/gpu every_library_function_accepts_empty_inputs vector_chunks --test-threads=4
run memcheck_narrow 16 XLOG_BACKEND=direct XLOG_TEST_MAX_LEN=100003 compute-sanitizer --tool memcheck --error-exitcode 99 bin/gpu_library reduce::narrow --test-threads=1
run memcheck_guide 12 XLOG_BACKEND=direct XLOG_TEST_MAX_LEN=100003 compute-sanitizer --tool memcheck --error-exitcode 99 bin/gpu_guide --test-threads=1
run racecheck_guide 10 XLOG_BACKEND=direct XLOG_TEST_MAX_LEN=20000 compute-sanitizer --tool racecheck --error-exitcode 99 bin/gpu_guide --test-threads=1
cat "$out/run.log"
