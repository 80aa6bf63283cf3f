#!/usr/bin/env bash
# From the repo root on the GPU machine, the bundle unpacked in .gpu-bundle/:
#   bash run.sh bench    every bench of the bundle (scripts/gpu/run.sh's bench phase)
#   bash run.sh suites   every single-GPU suite and example, four at a time, then
#                        the runtime's suite (its out-of-memory test fills the device),
#                        gpu_stress and example-query alone (each takes the device's
#                        free memory as its budget); join_bench on one GPU; the Python
#                        module's GPU tests; gpu_join under four sanitizers
set -u
phase=${1:-bench}
o=$OUT/fin; mkdir -p $o/jobs $o/multi
b=.gpu-bundle/bin
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi > $o/device.txt 2>&1; cp .gpu-bundle/commit $o/ 2>/dev/null
if [ "$phase" = bench ]; then
  XLOG_PHASES=bench timeout ${BENCH_LIMIT:-540} scripts/gpu/run.sh $o/bench > $o/bench.log 2>&1; echo "bench rc=$? $(el)s" >> $o/times
  grep -h "Targets met\|targets met" $o/bench/report.md | head -3
fi
if [ "$phase" = suites ]; then
  job() { local n=$1; shift; timeout ${SUITE_LIMIT:-200} bash -c '"$@"' _ "$@" > $o/jobs/$n.log 2>&1; echo "$n rc=$? $(el)s" >> $o/times; }
  export -f job el; export o b T0
  {
    for t in $b/test-*; do n=$(basename $t); case $n in *gpu_stress|*gpu_multi|test-xlog-runtime-*) ;; *) echo "$n $t --test-threads=4";; esac; done
    for e in $b/example-*; do case $e in *distributed|*example-query) ;; *) echo "$(basename $e) $e";; esac; done
  } > $o/joblist
  XLOG_DATALOG_BIN=$PWD/$b/datalog xargs -P 4 -L 1 bash -c 'job "$@"' _ < $o/joblist
  for t in $b/test-xlog-runtime-*; do job $(basename $t) $t --test-threads=4; done
  job test-xlog-stress-gpu_stress $b/test-xlog-stress-gpu_stress --test-threads=1
  job example-query $b/example-query
  XLOG_BENCH_RESULTS=$o/multi/join_bench.jsonl timeout 90 $b/join_bench > $o/multi/join_bench.md 2>&1; echo "join_bench (one GPU) rc=$? $(el)s" >> $o/times
  # The Python module's GPU tests (torch, cupy), from the bundled wheel.
  site=/tmp/xlog-site; mkdir -p $site
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target $site .gpu-bundle/python/xlog-*.whl > $o/jobs/python.log 2>&1
  PYTHONPATH=$site timeout 200 python3 -m unittest discover -s .gpu-bundle/python -v >> $o/jobs/python.log 2>&1; echo "python rc=$? $(el)s" >> $o/times
  # The join's kernels under the sanitizers, the two largest cases left out for time.
  for tool in memcheck racecheck synccheck initcheck; do
    timeout -k 3 ${SAN_LIMIT:-120} compute-sanitizer --tool $tool --error-exitcode 99 $b/test-xlog-kernels-gpu_join --test-threads=1 --skip hundred_million --skip large_random > $o/multi/join-$tool.log 2>&1; echo "gpu_join $tool rc=$? $(el)s" >> $o/times
  done
fi
for f in $o/jobs/*.log; do [ -e "$f" ] || continue; n=$(basename $f .log); r=$(grep -Eo "test result: \w+\. [0-9]+ passed; [0-9]+ failed" $f | awk '{p+=$4; q+=$6} END {print p" passed "q" failed"}'); echo "$n | $r | $(grep "^$n rc" $o/times | cut -d' ' -f2)"; done | tee $o/rows.txt
cat $o/times; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|test result" $o/multi/*.log 2>/dev/null; tail -25 $o/multi/join_bench.md 2>/dev/null
cd $OUT && tar czf fin-$phase.tgz fin && rm -rf fin
