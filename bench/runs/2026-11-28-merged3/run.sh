#!/usr/bin/env bash
# On the GPU machine, from the repo root after unpacking target/m3-bundle.txz.
set -u
b=.gpu-bundle/bin; d=.gpu-bundle/data
o=$OUT/m3; mkdir -p $o/jobs
export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi > $o/device.txt 2>&1; cp .gpu-bundle/commit $o/
# 1. Benches alone.
XLOG_BENCH_RESULTS=$o/pool-results.jsonl timeout 150 $b/bench-pool_alloc_free --bench > $o/pool-bench.md 2>&1; echo "pool bench rc=$? $(el)s" >> $o/times
XLOG_BENCH_RESULTS=$o/launch-results.jsonl timeout 100 $b/bench-launch_overhead --bench > $o/launch-bench.md 2>&1; echo "launch bench rc=$? $(el)s" >> $o/times
XLOG_BENCH_RESULTS=$o/typed-results.jsonl timeout 100 $b/bench-typed_launch --bench > $o/typed-bench.md 2>&1; echo "typed bench rc=$? $(el)s" >> $o/times
XLOG_BENCH_RESULTS=$o/first_use.jsonl timeout 100 $b/bench-first_use --bench > $o/first_use.md 2>&1; echo "first_use rc=$? $(el)s" >> $o/times
# 2. Datalog, pool on and off, 3 processes each.
for g in fe_body CA-HepTh; do for q in tc sg; do for pool in 1 0; do for r in 1 2 3; do
  XLOG_POOL=$pool timeout 120 $b/datalog $q $d/$g.tsv > $o/jobs/datalog-$g-$q-pool$pool.$r.log 2>&1; echo "exit $?" >> $o/jobs/datalog-$g-$q-pool$pool.$r.log
done; done; done; done; echo "datalog $(el)s" >> $o/times
for pool in 1 0; do XLOG_POOL=$pool timeout 60 $b/example-query > $o/jobs/query-pool$pool.log 2>&1; echo "exit $?" >> $o/jobs/query-pool$pool.log; done
# 3. Every suite and example, four at a time.
job() { local n=$1; shift; timeout 300 bash -c '"$@"' _ "$@" > $o/jobs/$n.log 2>&1; echo "$n rc=$? $(el)s" >> $o/times; }
export -f job el; export o b T0
{
  for t in $b/test-*; do n=$(basename $t); case $n in *gpu_stress) echo "$n $t --test-threads=1 --nocapture";; *) echo "$n $t --test-threads=4";; esac; done
  for e in saxpy pipeline distributed; do echo "example-$e $b/example-$e"; done
} > $o/joblist
XLOG_DATALOG_BIN=$PWD/$b/datalog xargs -P 4 -L 1 bash -c 'job "$@"' _ < $o/joblist
cat $o/times
for f in $o/jobs/*.log; do n=$(basename $f .log); r=$(grep -Eo "test result: \w+\. [0-9]+ passed; [0-9]+ failed" $f | awk '{p+=$4; q+=$6} END {print p" passed "q" failed"}'); echo "$n | $r"; done | grep -v datalog | tee $o/rows.txt
grep -h "peak device memory\|solve " $o/jobs/datalog-*.1.log
grep -h "peak" $o/jobs/query-*.log $o/jobs/*gpu_stress.log | head
grep -h "first\|ratio\|^|" $o/first_use.md | head -20
# 4. The sort branch's sanitizer checks (its own bundle).
mkdir -p /tmp/sb && tar xzf target/sort-bundle.tgz -C /tmp/sb && /tmp/sb/sort-b2/run3.sh 110 > $o/sort-c3.txt 2>&1; mv $OUT/c3 $o/sort-c3 2>/dev/null
cat $o/sort-c3.txt
cd $OUT && tar czf m3.tgz m3 && rm -rf m3
