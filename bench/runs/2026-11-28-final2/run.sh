#!/usr/bin/env bash
# The final call (nvidia-h200-x2): the pool bench and the Datalog comparison alone
# first, then the changed suites and the sanitizers over them as parallel jobs.
set -u
cd "$(dirname "$0")/../.."   # the repository root (this file is target/final/run.sh)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
b=target/final/bundle/bin
o=$OUT/final; mkdir -p $o/jobs
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi > $o/device.txt 2>&1
# 1. The pool bench (median of five processes), alone on the machine.
XLOG_BENCH_RESULTS=$o/pool-results.jsonl timeout 120 $b/bench-pool_alloc_free --bench > $o/pool-bench.md 2>&1; echo "pool bench rc=$? $(el)s" >> $o/times
# 2. Datalog beside GDlog (pool now the default stack), one process each.
mkdir -p target/datalog-bin && cp $b/datalog target/datalog-bin/datalog
RUNS=${DL_RUNS:-1} PARTS=compare timeout 200 bash bench/datalog/run.sh $o/datalog > $o/datalog.out 2>&1; echo "datalog rc=$? $(el)s" >> $o/times
# 3. Suites and sanitizers, side by side.
job() { # name command...
  local n=$1; shift
  local left=$(( ${DEADLINE:-520} - ($(date +%s) - T0) ))
  [ "$left" -gt 5 ] || { echo "$n skipped: no time left" >> $o/times; return; }
  timeout $left bash -c '"$@"' _ "$@" > $o/jobs/$n.log 2>&1
  echo "$n rc=$? $(el)s" >> $o/times
}
export -f job el; export o b T0
san() { # tool binary args...
  local tool=$1 t=$2; shift 2
  XLOG_STRESS_THREADS=$([ $tool = racecheck ] && echo 1 || echo 4) XLOG_STRESS_SEEDS=1 XLOG_STRESS_OPS=2000 XLOG_TEST_MAX_LEN=20011 XLOG_BACKEND=direct \
    compute-sanitizer --tool $tool --error-exitcode 99 $t --test-threads=1 --skip missing_kernel_names_kernel_and_module --skip panic --skip teeth \
    --skip inside_a_graph_capture --skip sees_no_gpu --skip opposite_orders_never_deadlock \
    $([ $tool = racecheck ] && echo "--skip threads_allocate_and_launch_on_shared_buffers --skip sixteen_threads") \
    $([ $tool = initcheck ] && echo "--skip sixteen_threads") "$@"
}
export -f san
{
  for t in $b/test-*; do echo "test-$(basename $t) $t --test-threads=4"; done
  echo "example-distributed $b/distributed"
  for tool in memcheck racecheck synccheck initcheck; do
    for t in $b/test-xlog-runtime-gpu $b/test-xlog-stress-gpu_graph $b/test-xlog-stress-gpu_stress $b/test-xlog-stress-gpu_multi $b/test-xlog-kernels-gpu_predicate $b/test-xlog-kernels-gpu_graph_library; do
      [ -e $t ] && echo "$tool-$(basename $t) san $tool $t"
    done
  done
  # racecheck over the two suites whose racecheck ran past 400 s: four shards each.
  for s in gpu_library gpu_sort; do
    t=$b/test-xlog-kernels-$s
    $t --list 2>/dev/null | sed -n 's/: test$//p' | grep -v "panic\|teeth" | awk '{print > "'$o'/shard-'$s'-" (NR % 4)}'
    for k in 0 1 2 3; do
      [ -s $o/shard-$s-$k ] && echo "racecheck-$s-shard$k san racecheck $t --exact $(paste -sd' ' $o/shard-$s-$k)"
    done
  done
} > $o/joblist
xargs -P ${JOBS:-14} -L 1 bash -c 'job "$@"' _ < $o/joblist
cat $o/times
for f in $o/jobs/*.log; do
  n=$(basename $f .log)
  r=$(grep -Eo "test result: \w+\. [0-9]+ passed; [0-9]+ failed" $f | awk '{p+=$4; q+=$6} END {print p" passed "q" failed"}')
  e=$(grep -Eo "ERROR SUMMARY: [0-9]+|\(([0-9]+) errors" $f | tail -1 | grep -Eo "[0-9]+" || true)
  echo "$n | $r | sanitizer errors: ${e:--}"
done | tee $o/rows.txt
cd $OUT && tar czf final.tgz final && rm -rf final
