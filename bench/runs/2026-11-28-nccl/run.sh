#!/usr/bin/env bash
# What ran on the nvidia-h200-x2 machine for this folder, from the bundle built by
# the same commit (gpu profile, cubins for sm_90): the multi-GPU suite, its
# two-process and timeout tests on their own, then the bench against PyTorch.
#   bash run.sh BUNDLE_DIR OUT_DIR
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
b=$1
out=$2
mkdir -p "$out"
{
  nvidia-smi -L
  nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())"
  ldconfig -p | grep -i nccl
} >"$out/env.txt" 2>&1
t=$b/gpu_multi
timeout 100 "$t" --test-threads=1 --skip a_rank_left_alone --skip two_processes >"$out/tests.log" 2>&1
echo "suite rc=$?" >>"$out/rc.txt"
timeout 50 "$t" --exact two_processes_all_reduce_and_a_rank_that_exits_is_an_error --nocapture >"$out/two_processes.log" 2>&1
echo "two_processes rc=$?" >>"$out/rc.txt"
timeout 30 "$t" --exact a_rank_left_alone_times_out_and_is_aborted --nocapture >"$out/alone.log" 2>&1
echo "alone rc=$?" >>"$out/rc.txt"
XLOG_BENCH_RESULTS=$out/results.jsonl XLOG_NCCL_SCRIPT=$b/nccl_peers.py \
  timeout 100 "$b/bench-nccl" --bench >"$out/bench.md" 2>&1
echo "bench rc=$?" >>"$out/rc.txt"
cat "$out/rc.txt"
