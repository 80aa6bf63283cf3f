#!/usr/bin/env bash
# The second device call for this folder: the distributed example on two GPUs, one
# process per GPU under torchrun (xlog's `ranks` and torch.distributed's
# `ranks_torch.py`), and a second sample of the one-process bench.
#   bash run2.sh BUNDLE_DIR OUT_DIR
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
b=$1
out=$2
mkdir -p "$out"
timeout 25 "$b/distributed" >"$out/example.log" 2>&1
echo "example rc=$?" >>"$out/rc2.txt"
run() { timeout 30 python3 -m torch.distributed.run --standalone --nproc_per_node=2 "$@"; }
XLOG_NCCL_ID_FILE=$(mktemp -u /tmp/xlog-nccl-id.XXXXXX) run --no-python "$b/ranks" >"$out/ranks_xlog.txt" 2>"$out/ranks_xlog.err"
echo "ranks rc=$?" >>"$out/rc2.txt"
run "$b/ranks_torch.py" >"$out/ranks_torch.txt" 2>"$out/ranks_torch.err"
echo "ranks_torch rc=$?" >>"$out/rc2.txt"
XLOG_BENCH_RESULTS=$out/results2.jsonl XLOG_NCCL_SCRIPT=$b/nccl_peers.py \
  timeout 50 "$b/bench-nccl" --bench >"$out/bench2.md" 2>&1
echo "bench rc=$?" >>"$out/rc2.txt"
cat "$out/rc2.txt"
