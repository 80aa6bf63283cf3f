#!/usr/bin/env bash
# Device run of the join branch: bench, GPU suite, memcheck + racecheck. Writes under $1.
out=$1; b=$(dirname "$0")/bin
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt"
export XLOG_BACKEND=direct
t0=$(date +%s)
XLOG_BENCH_RESULTS=$out/results.jsonl timeout 50 "$b/bench-join" --bench > "$out/bench.md" 2>&1; echo "bench rc=$? $(( $(date +%s)-t0 ))s" >> "$out/status.txt"
t0=$(date +%s)
XLOG_JOIN_LOG2=20 XLOG_BENCH_RESULTS=$out/results-l2.jsonl timeout 15 "$b/bench-join" --bench > "$out/bench-l2.md" 2>&1; echo "bench-l2 rc=$? $(( $(date +%s)-t0 ))s" >> "$out/status.txt"
t0=$(date +%s)
timeout 50 "$b/test-gpu_join" --test-threads=4 > "$out/tests.log" 2>&1; echo "tests rc=$? $(( $(date +%s)-t0 ))s" >> "$out/status.txt"
# racecheck on the small cases (every kernel, every key type, tails, duplicates).
for tool in memcheck racecheck; do
  t0=$(date +%s)
  filt=(); [ $tool = racecheck ] && filt=(sizes_around_the_tile duplicates_on_both_sides zero_and_max_keys no_matches empty every_probe_key_missing)
  XLOG_TEST_MAX_LEN=100003 timeout 40 compute-sanitizer --tool $tool --error-exitcode 99 "$b/test-gpu_join" --test-threads=1 "${filt[@]}" > "$out/$tool.log" 2>&1
  echo "$tool rc=$? $(( $(date +%s)-t0 ))s $(grep -Eo 'ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY.*' "$out/$tool.log" | tail -1)" >> "$out/status.txt"
done
cat "$out/status.txt"
