#!/usr/bin/env bash
# Second GPU call: bash run2.sh BUNDLE_DIR OUT
set -u
B=$1; O=$2; o=$O/r2; mkdir -p $o
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export XLOG_CUB_SCRIPT=$B/library_cub.py
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $o/device.txt; cp $B/commit $o/
timeout 30 $B/bin/gpu_library compact:: ten_to_the_eighth > $o/tests.log 2>&1; echo "tests rc=$? at $(el)s" >> $o/phases.txt
XLOG_BENCH_RESULTS=$o/results.jsonl timeout 30 $B/bin/library > $o/bench.md 2>$o/bench.err; echo "bench rc=$? at $(el)s" >> $o/phases.txt
XLOG_TEST_MAX_LEN=20000 timeout 30 compute-sanitizer --tool memcheck --error-exitcode 99 $B/bin/gpu_library compact:: > $o/memcheck.log 2>&1; echo "memcheck rc=$? at $(el)s" >> $o/phases.txt
XLOG_TEST_MAX_LEN=20000 timeout 30 compute-sanitizer --tool racecheck --error-exitcode 99 $B/bin/gpu_library compact::u8_ compact::i16_ compact::runs_of compact::fewer_blocks > $o/racecheck.log 2>&1; echo "racecheck rc=$? at $(el)s" >> $o/phases.txt
if command -v ncu > /dev/null; then
  timeout 30 ncu --target-processes application-only -k regex:'unique_runs|run_ends' --launch-count 2 --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy $B/bin/library > $o/ncu.txt 2>&1; echo "ncu rc=$? at $(el)s" >> $o/phases.txt
else echo "no ncu" >> $o/phases.txt; fi
cd $O && tar czf r2.tgz r2 && rm -rf r2
