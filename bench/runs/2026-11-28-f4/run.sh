#!/usr/bin/env bash
# After the merges: the runtime suite (the pool as the default stack, the restored
# pressure tests) and the stress suites, then memcheck and racecheck over the pool's
# tests and the stress through the pool. One call.
set -u
b=/tmp/f/bundle/bin; o=$OUT/f4; mkdir -p $o
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cp /tmp/f/bundle/commit $o/; nvidia-smi -L > $o/device.txt
timeout 150 $b/test-xlog-runtime-gpu --test-threads=4 > $o/runtime.log 2>&1; echo "runtime rc=$? $(el)s" >> $o/times
timeout 100 $b/test-xlog-stress-gpu_stress --test-threads=1 --nocapture > $o/stress.log 2>&1; echo "stress rc=$? $(el)s" >> $o/times
timeout 100 $b/test-xlog-stress-gpu_graph --test-threads=4 > $o/graph.log 2>&1; echo "graph rc=$? $(el)s" >> $o/times
san() { local tool=$1 t=$2; shift 2
  XLOG_POOL=1 XLOG_BACKEND=direct XLOG_STRESS_THREADS=$([ $tool = racecheck ] && echo 1 || echo 4) XLOG_STRESS_SEEDS=1 XLOG_STRESS_OPS=2000 \
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 99 $t --test-threads=1 --skip teeth "$@"; }
san memcheck $b/test-xlog-runtime-gpu pool:: alloc:: > $o/memcheck-runtime.log 2>&1 & 
san memcheck $b/test-xlog-stress-gpu_stress pool > $o/memcheck-stress.log 2>&1 &
san racecheck $b/test-xlog-runtime-gpu pool:: > $o/racecheck-runtime.log 2>&1 &
san initcheck $b/test-xlog-runtime-gpu pool:: > $o/initcheck-runtime.log 2>&1 &
wait; echo "sanitizers $(el)s" >> $o/times
cat $o/times
for f in $o/*.log; do echo "$(basename $f) | $(grep -Eo 'test result: \w+\. [0-9]+ passed; [0-9]+ failed' $f | tail -1) | $(grep -Eo 'ERROR SUMMARY: [0-9]+ errors|RACECHECK SUMMARY: [0-9]+ hazards' $f | tail -1)"; done | tee $o/rows.txt
grep -h "FAILED\|panicked" $o/*.log | head -20
grep -h "peak" $o/stress.log | head
cd $OUT && tar czf f4.tgz f4 && rm -rf f4
