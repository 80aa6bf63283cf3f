#!/usr/bin/env bash
# On the GPU machine: bash run.sh BUNDLE_DIR OUT PHASES
set -u
B=$1; o=$2; phases=" $3 "; mkdir -p $o
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export XLOG_CUB_SCRIPT=$B/library_cub.py
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
has() { [[ "$phases" == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $o/device.txt; cp $B/commit $o/
if has tests; then timeout 60 $B/bin/gpu_library compact:: ten_to_the_eighth > $o/tests.log 2>&1; echo "tests rc=$? at $(el)s" >> $o/phases.txt; fi
if has bench; then XLOG_BENCH_RESULTS=$o/results.jsonl timeout 60 $B/bin/library > $o/bench.md 2>$o/bench.err; echo "bench rc=$? at $(el)s" >> $o/phases.txt; fi
if has floor; then timeout 30 python3 $B/floor.py > $o/floor.txt 2>&1; echo "floor rc=$? at $(el)s" >> $o/phases.txt; fi
if has nsys && command -v nsys >/dev/null; then
  XLOG_LIBRARY_N=100000000 timeout 50 nsys profile -t cuda -o $o/lib --force-overwrite true $B/bin/library > $o/nsys-run.log 2>&1; echo "nsys rc=$? at $(el)s" >> $o/phases.txt
  timeout 20 nsys stats -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum --format csv -o $o/nsys $o/lib.nsys-rep > /dev/null 2>&1; rm -f $o/lib.nsys-rep $o/lib.sqlite; echo "nsys stats at $(el)s" >> $o/phases.txt
fi
if has memcheck; then XLOG_TEST_MAX_LEN=20000 timeout 40 compute-sanitizer --tool memcheck --error-exitcode 99 $B/bin/gpu_library compact:: > $o/memcheck.log 2>&1; echo "memcheck rc=$? at $(el)s" >> $o/phases.txt; fi
if has racecheck; then XLOG_TEST_MAX_LEN=20000 timeout 40 compute-sanitizer --tool racecheck --error-exitcode 99 $B/bin/gpu_library compact:: --skip matches_the_cpu > $o/racecheck.log 2>&1; echo "racecheck rc=$? at $(el)s" >> $o/phases.txt; fi
tail -3 $o/tests.log $o/memcheck.log $o/racecheck.log 2>/dev/null; grep -i "unique" $o/bench.md; cat $o/floor.txt 2>/dev/null; cat $o/phases.txt
