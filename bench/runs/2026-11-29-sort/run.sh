#!/usr/bin/env bash
# The sort branch's GPU call: run.sh NAME LIMIT PHASES...; results under $OUT/NAME,
# no new job starts after LIMIT seconds. Phases, in order:
#   bench  the sort bench, xlog against CUB (cupy.sort, torch.sort), alone on the GPU
#   ncu    per-kernel times (gpu__time_duration) of the bench's second u32 and i64 sorts
#   nsys   what else runs per sort call (memsets, copies, allocation calls, syncs):
#          the bench's xlog cases at n = 10^7 under nsys, its GPU and API summaries
#   tests  the whole gpu_sort suite (uncapped but the 10^8 test, which runs alone
#          after it), memcheck over the u32/i64/f32 keys, pairs and portions tests and
#          racecheck over the u32 and i64 keys tests (sizes <= 7000), side by side
set -u
export B=$(cd "$(dirname "$0")" && pwd)
NAME=$1 LIMIT=$2; shift 2
export O=$OUT/$NAME; mkdir -p $O/logs
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( LIMIT - $(el) )); }
job() { # name timeout command...
  local n=$1 t=$2; shift 2
  local l; l=$(left); [ "$l" -gt 5 ] || { echo "$n skipped" >> $O/times; return; }
  [ "$t" -gt "$l" ] && t=$l
  timeout $t "$@" > $O/logs/$n.log 2>&1
  echo "$n rc=$? $(el)s $(grep -Eo 'test result: .*' $O/logs/$n.log | tail -1) $(grep -Eo 'ERROR SUMMARY: [0-9]+ errors?|RACECHECK SUMMARY: [0-9]+ hazards?' $O/logs/$n.log | tail -1)" >> $O/times
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $O/device.txt 2>&1
NCU="ncu --csv --metrics gpu__time_duration.sum"
for phase in "$@"; do case $phase in
bench)
  XLOG_BENCH_RESULTS=$O/results.jsonl XLOG_CUB_SCRIPT=$B/library_cub.py job bench 50 $B/bench-sort --bench
  cp $O/logs/bench.log $O/bench.md ;;
ncu)
  XLOG_CUB_SCRIPT=/nonexistent job ncu-u32 25 $NCU --kernel-name regex:^sort_ --launch-skip 6 --launch-count 6 $B/bench-sort --bench
  XLOG_CUB_SCRIPT=/nonexistent job ncu-i64 30 $NCU --kernel-name 'regex:__i64$' --launch-skip 9 --launch-count 9 $B/bench-sort --bench
  cp $O/logs/ncu-u32.log $O/ncu-ours-u32.csv; cp $O/logs/ncu-i64.log $O/ncu-ours-i64.csv ;;
nsys)
  XLOG_LIBRARY_N=10000000 XLOG_CUB_SCRIPT=/nonexistent job nsys 40 nsys profile -t cuda --stats=false -o $O/sort-nsys $B/bench-sort --bench
  job nsys-stats 20 nsys stats -q --report cuda_gpu_sum,cuda_api_sum --format csv -o $O/nsys $O/sort-nsys.nsys-rep
  rm -f $O/sort-nsys.nsys-rep $O/sort-nsys.sqlite ;;
tests)
  job suite 100 $B/gpu_sort --test-threads=4 --skip ten_to_the_eighth &
  job memcheck 100 $B/san.sh memcheck u32_keys i64_keys f32_keys pairs several_portions &
  job racecheck-u32 100 $B/san.sh racecheck u32_keys_match &
  job racecheck-i64 100 $B/san.sh racecheck i64_keys_match &
  wait
  job ten-to-the-eighth 60 $B/gpu_sort --exact ten_to_the_eighth_keys_sort_as_the_cpu_does ;;
esac; done
echo "total $(el)s" >> $O/times
cat $O/times
