#!/usr/bin/env bash
# From the repo root on nvidia-h200-x2, the bundle unpacked in .gpu-bundle/:
#   bash run.sh multi    gpu_multi, the distributed example, join_bench on two GPUs,
#                        the NCCL bench against PyTorch + NCCL, gpu_multi under
#                        memcheck and initcheck (NCCL's kernels excluded)
set -u
o=$OUT/fin; mkdir -p $o/multi
b=.gpu-bundle/bin
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export XLOG_NCCL_SCRIPT=$PWD/crates/xlog-runtime/benches/nccl_peers.py
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi > $o/device.txt 2>&1; nvidia-smi topo -m >> $o/device.txt 2>&1; cp .gpu-bundle/commit $o/ 2>/dev/null
m=$b/test-xlog-stress-gpu_multi
timeout 150 $m --test-threads=1 > $o/multi/gpu_multi.log 2>&1; echo "gpu_multi rc=$? $(el)s" >> $o/times
timeout 60 $b/example-distributed > $o/multi/example.log 2>&1; echo "distributed rc=$? $(el)s" >> $o/times
XLOG_BENCH_RESULTS=$o/multi/join_bench.jsonl timeout 90 $b/join_bench > $o/multi/join_bench.md 2>&1; echo "join_bench rc=$? $(el)s" >> $o/times
XLOG_BENCH_RESULTS=$o/multi/nccl.jsonl timeout 120 $b/bench-xlog-runtime-nccl --bench > $o/multi/nccl.md 2>&1; echo "nccl bench rc=$? $(el)s" >> $o/times
skips=(--skip a_rank_left_alone --skip two_process --skip never_joins --skip teeth --skip disagree --skip all_reduce_over_every)
for tool in memcheck initcheck; do
  timeout -k 3 ${SAN_LIMIT:-50} compute-sanitizer --tool $tool --kernel-name-exclude kns=nccl --error-exitcode 99 $m --test-threads=1 "${skips[@]}" > $o/multi/$tool.log 2>&1; echo "multi $tool rc=$? $(el)s" >> $o/times
done
cat $o/times; grep -h "ERROR SUMMARY\|test result" $o/multi/*.log 2>/dev/null; tail -12 $o/multi/example.log; tail -14 $o/multi/join_bench.md; tail -20 $o/multi/nccl.md
cd $OUT && tar czf fin-multi.tgz fin && rm -rf fin
