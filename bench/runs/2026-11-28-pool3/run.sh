#!/usr/bin/env bash
# On the GPU machine: bash /tmp/p/bundle/run.sh (after unpacking the bundle to /tmp/p).
set -u
b=/tmp/p/bundle/bin; d=/tmp/p/bundle/data
o=$OUT/pool3; mkdir -p $o
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi > $o/device.txt 2>&1; cp /tmp/p/bundle/commit $o/
# 1. Pool bench alone (median of five processes).
XLOG_BENCH_RESULTS=$o/pool-results.jsonl timeout 150 $b/bench-pool_alloc_free --bench > $o/pool-bench.md 2>&1; echo "pool bench rc=$? $(el)s" >> $o/times
# 2. Datalog, pool on and off, each graph and query, 3 processes each.
for g in fe_body CA-HepTh; do for q in tc sg; do for pool in 1 0; do for r in 1 2 3; do
  XLOG_POOL=$pool timeout 120 $b/datalog $q $d/$g.tsv > $o/datalog-$g-$q-pool$pool.$r.log 2>&1; echo "exit $?" >> $o/datalog-$g-$q-pool$pool.$r.log
done; done; done; done; echo "datalog $(el)s" >> $o/times
# 3. Query example, pool on and off.
for pool in 1 0; do XLOG_POOL=$pool timeout 60 $b/query > $o/query-pool$pool.log 2>&1; echo "exit $?" >> $o/query-pool$pool.log; done; echo "query $(el)s" >> $o/times
# 4. Suites with the pool as the default stack.
timeout 200 $b/test-xlog-runtime-gpu --test-threads=4 > $o/runtime.log 2>&1; echo "runtime rc=$? $(el)s" >> $o/times
timeout 200 $b/test-xlog-stress-gpu_stress --test-threads=1 --nocapture > $o/stress.log 2>&1; echo "stress rc=$? $(el)s" >> $o/times
cat $o/times
grep -h "peak device memory\|^tuples\|solve " $o/datalog-*.1.log | head -40
grep -h "peak" $o/query-*.log $o/stress.log
grep -h "test result" $o/*.log
tail -30 $o/pool-bench.md
