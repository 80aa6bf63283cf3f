#!/usr/bin/env bash
# Call 1 of the sort branch: the sort bench (ours + CUB), then per-kernel times of
# both sides under nsys. Results under $OUT/c1.
set -u
B=$(cd "$(dirname "$0")" && pwd); O=$OUT/c1; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt 2>&1
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys=$NSYS" >> $O/device.txt
XLOG_BENCH_RESULTS=$O/results.jsonl XLOG_CUB_SCRIPT=$B/library_cub.py timeout 80 $B/bench-sort --bench > $O/bench.md 2> $O/bench.err
echo "bench rc=$? $(el)s" >> $O/times
prof() { # name cmd...
  local n=$1; shift
  timeout 50 $NSYS profile --trace=cuda --sample=none --cpuctxsw=none --force-overwrite true -o /tmp/$n "$@" > $O/nsys-$n.log 2>&1
  echo "nsys $n rc=$? $(el)s" >> $O/times
  $NSYS stats --report cuda_gpu_kern_sum --format csv --output $O/$n /tmp/$n.nsys-rep >> $O/nsys-$n.log 2>&1
  $NSYS stats --report cuda_gpu_trace --format csv --output /tmp/$n /tmp/$n.nsys-rep >> $O/nsys-$n.log 2>&1
  # The first 400 rows of the GPU trace (one sort of each case, in order).
  head -c 300000 /tmp/${n}_cuda_gpu_trace.csv > $O/${n}_trace_head.csv 2>/dev/null
  echo "stats $n $(el)s" >> $O/times
}
[ -n "$NSYS" ] && XLOG_CUB_SCRIPT=/nonexistent prof ours $B/bench-sort --bench
[ -n "$NSYS" ] && prof cub python3 $B/library_cub.py 100000000 sort
ls -la $O >> $O/times
