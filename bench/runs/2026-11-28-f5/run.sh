#!/usr/bin/env bash
# The merged library (generic segmented/compact/histogram, dense_group, generic
# reduce/scan) on the GPU: its suites, then memcheck and racecheck over them.
set -u
b=/tmp/f/bundle/bin; o=$OUT/f5; mkdir -p $o
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
cp /tmp/f/bundle/commit $o/; nvidia-smi -L > $o/device.txt
for t in gpu gpu_library gpu_graph_library gpu_group; do
  timeout 200 $b/test-xlog-kernels-$t --test-threads=4 > $o/$t.log 2>&1; echo "$t rc=$? $(el)s" >> $o/times
done
san() { local tool=$1 t=$2; shift 2
  XLOG_TEST_MAX_LEN=20011 XLOG_BACKEND=direct timeout 240 compute-sanitizer --tool $tool --error-exitcode 99 $b/test-xlog-kernels-$t --test-threads=1 --skip panic --skip teeth "$@"; }
san memcheck gpu_library compact segmented histogram reduce scan > $o/memcheck-library.log 2>&1 &
san memcheck gpu_group > $o/memcheck-group.log 2>&1 &
san racecheck gpu_library compact segmented histogram > $o/racecheck-library.log 2>&1 &
san memcheck gpu_graph_library > $o/memcheck-graph_library.log 2>&1 &
wait; echo "sanitizers $(el)s" >> $o/times
cat $o/times
for f in $o/*.log; do echo "$(basename $f) | $(grep -Eo 'test result: \w+\. [0-9]+ passed; [0-9]+ failed' $f | tail -1) | $(grep -Eo 'ERROR SUMMARY: [0-9]+ errors|RACECHECK SUMMARY: [0-9]+ hazards' $f | tail -1)"; done | tee $o/rows.txt
grep -h "FAILED\|panicked" $o/*.log | head -20
cd $OUT && tar czf f5.tgz f5 && rm -rf f5
