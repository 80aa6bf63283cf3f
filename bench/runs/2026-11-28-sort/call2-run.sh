#!/usr/bin/env bash
# Call 2 of the sort branch: the sort bench (xlog and CUB, alone on the GPU), the
# per-kernel times of one sort on each side (ncu, gpu__time_duration), then the
# sort suite, its 10^8-key test, memcheck and racecheck on the paths the change
# touches, side by side. Results under $OUT/c2. Stops starting work at $1 s.
set -u
B=$(cd "$(dirname "$0")" && pwd); O=$OUT/c2; mkdir -p $O/logs
LIMIT=${1:-115}
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( LIMIT - $(el) )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt 2>&1
XLOG_BENCH_RESULTS=$O/results.jsonl XLOG_CUB_SCRIPT=$B/library_cub.py timeout 45 $B/bench-sort --bench > $O/bench.md 2> $O/logs/bench.err
echo "bench rc=$? $(el)s" >> $O/times
# Per-kernel times: the second u32 sort and the second i64 sort of the bench (its
# first timed warm-up), and one sort of each case on the CUB side.
NCU="ncu --csv --metrics gpu__time_duration.sum"
XLOG_CUB_SCRIPT=/nonexistent timeout 30 $NCU --kernel-name regex:^sort_ --launch-skip 6 --launch-count 6 $B/bench-sort --bench > $O/ncu-ours-u32.csv 2> $O/logs/ncu-ours-u32.err
echo "ncu ours u32 rc=$? $(el)s" >> $O/times
timeout 30 $NCU python3 $B/cub_once.py > $O/ncu-cub.csv 2> $O/logs/ncu-cub.err
echo "ncu cub rc=$? $(el)s" >> $O/times
job() { # name timeout command...
  local n=$1 t=$2; shift 2
  local l; l=$(left); [ "$l" -gt 5 ] || { echo "$n skipped" >> $O/times; return; }
  [ "$t" -gt "$l" ] && t=$l
  timeout $t "$@" > $O/logs/$n.log 2>&1
  echo "$n rc=$? $(el)s" >> $O/times
}
san() { XLOG_BACKEND=direct XLOG_TEST_MAX_LEN=7000 compute-sanitizer --tool $1 --error-exitcode 99 $B/gpu_sort --test-threads=1 "${@:2}"; }
export -f san
job plain-cap2e6 70 env XLOG_TEST_MAX_LEN=2000000 $B/gpu_sort --test-threads=4 &
job ten-to-the-eighth 70 $B/gpu_sort --exact ten_to_the_eighth_keys_sort_as_the_cpu_does &
job memcheck 70 bash -c 'san memcheck u32_keys i64_keys f32_keys pairs several_portions' &
job racecheck-u32 70 bash -c 'san racecheck u32_keys_match' &
job racecheck-i64 70 bash -c 'san racecheck i64_keys_match' &
XLOG_CUB_SCRIPT=/nonexistent job ncu-ours-i64 40 $NCU --kernel-name 'regex:__i64$' --launch-skip 9 --launch-count 9 $B/bench-sort --bench
wait
cp $O/logs/ncu-ours-i64.log $O/ncu-ours-i64.csv 2>/dev/null
echo "total $(el)s" >> $O/times
