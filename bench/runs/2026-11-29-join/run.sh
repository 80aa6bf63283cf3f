#!/usr/bin/env bash
# Device run of the join branch: bench (2^26 build keys and 2^20), ncu counters of
# the probe kernels and the gathers, the GPU suite, memcheck + racecheck. Writes
# under $1: bench.md, results.jsonl, ncu.csv, status.txt, logs.tgz (the rest).
out=$1; b=$(dirname "$0")/bin; logs=$out/logs
mkdir -p "$logs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$logs/device.txt"
export XLOG_BACKEND=direct
step() { echo "$1 rc=$2 $(( $(date +%s)-t0 ))s $3" >> "$out/status.txt"; }
t0=$(date +%s)
XLOG_BENCH_RESULTS=$out/results.jsonl timeout 40 "$b/bench-join" --bench > "$out/bench.md" 2>&1; step bench $?
t0=$(date +%s)
XLOG_JOIN_LOG2=20 XLOG_BENCH_RESULTS=$logs/results-l2.jsonl timeout 15 "$b/bench-join" --bench > "$logs/bench-l2.md" 2>&1; step bench-l2 $?
t0=$(date +%s)
timeout 40 "$b/test-gpu_join" --test-threads=4 > "$logs/tests.log" 2>&1; step tests $? "$(grep -E '^test result' "$logs/tests.log" | tail -1)"
for tool in memcheck racecheck; do
  t0=$(date +%s)
  filt=(); [ $tool = racecheck ] && filt=(sizes_around_the_tile duplicates_on_both_sides zero_and_max_keys no_matches empty every_probe_key_missing every_probe_key_matches all_keys_equal)
  XLOG_TEST_MAX_LEN=100003 timeout 40 compute-sanitizer --tool $tool --error-exitcode 99 "$b/test-gpu_join" --test-threads=1 "${filt[@]}" > "$logs/$tool.log" 2>&1
  step $tool $? "$(grep -Eo 'ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY.*' "$logs/$tool.log" | tail -1); $(grep -E '^test result' "$logs/$tool.log" | tail -1)"
done
# Counters: the first probe kernels (inner count + write, semi count + select) and
# the first gathers of the bench's default size, 2^27 probe rows.
t0=$(date +%s)
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
XLOG_BENCH_RESULTS=$logs/ncu-results.jsonl timeout 45 ncu --clock-control none --kernel-name regex:'join_count|join_write|join_select|gather_indexed' --launch-count 12 --metrics $m --csv "$b/bench-join" --bench > "$out/ncu.csv" 2> "$logs/ncu.err"; step ncu $?
tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$logs"
cat "$out/status.txt"
