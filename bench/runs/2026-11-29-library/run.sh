#!/usr/bin/env bash
# On the two-GPU machine, from the repo root: bash run.sh (the bundle unpacked in .gpu-bundle/).
# 1. Every bench, nothing else running (scripts/gpu/run.sh's bench phase: report.md, results.jsonl).
# 2. Every suite and example, four at a time (the multi-GPU suite and example among them).
# 3. The distributed join's bench alone; memcheck and initcheck over the multi-GPU suite
#    with NCCL's kernels left uninstrumented.
set -u
phase=${1:-all}
o=$OUT/fin; mkdir -p $o/jobs $o/multi
b=.gpu-bundle/bin
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi > $o/device.txt 2>&1; cp .gpu-bundle/commit $o/ 2>/dev/null
if [ "$phase" != multi ]; then
XLOG_PHASES=bench timeout ${BENCH_LIMIT:-280} scripts/gpu/run.sh $o/bench > $o/bench.log 2>&1; echo "bench rc=$? $(el)s" >> $o/times
job() { local n=$1; shift; timeout ${SUITE_LIMIT:-200} bash -c '"$@"' _ "$@" > $o/jobs/$n.log 2>&1; echo "$n rc=$? $(el)s" >> $o/times; }
export -f job el; export o b T0
{
  for t in $b/test-*; do n=$(basename $t); case $n in *gpu_stress) echo "$n $t --test-threads=1";; *) echo "$n $t --test-threads=4";; esac; done
  for e in $b/example-*; do echo "$(basename $e) $e"; done
} > $o/joblist
XLOG_DATALOG_BIN=$PWD/$b/datalog xargs -P 4 -L 1 bash -c 'job "$@"' _ < $o/joblist
fi
if [ "$phase" != suites ]; then
XLOG_BENCH_RESULTS=$o/multi/join_bench.jsonl timeout 60 $b/join_bench > $o/multi/join_bench.md 2>&1; echo "join_bench rc=$? $(el)s" >> $o/times
m=$b/test-xlog-stress-gpu_multi
skips=(--skip a_rank_left_alone --skip two_process --skip never_joins --skip teeth --skip disagree --skip all_reduce_over_every)
for tool in memcheck initcheck; do
  timeout -k 3 ${SAN_LIMIT:-50} compute-sanitizer --tool $tool --kernel-name-exclude kns=nccl --error-exitcode 99 $m --test-threads=1 "${skips[@]}" > $o/multi/$tool.log 2>&1; echo "multi $tool rc=$? $(el)s" >> $o/times
done
fi
for f in $o/jobs/*.log; do n=$(basename $f .log); r=$(grep -Eo "test result: \w+\. [0-9]+ passed; [0-9]+ failed" $f | awk '{p+=$4; q+=$6} END {print p" passed "q" failed"}'); echo "$n | $r | $(grep "^$n rc" $o/times | cut -d' ' -f2)"; done | tee $o/rows.txt
cat $o/times; grep -h "Targets met" $o/bench/report.md; grep -h "ERROR SUMMARY\|test result" $o/multi/*.log; tail -30 $o/multi/join_bench.md
cd $OUT && tar czf fin-$phase.tgz fin && rm -rf fin
