#!/usr/bin/env bash
# The second device call: the join bench again (the exchange overlapped with the
# join, built from a later commit), then memcheck on the multi-GPU suite with
# NCCL's kernels left uninstrumented (under full instrumentation the first call's
# memcheck did not finish the suite's first test within 32 s).
#   bash run2.sh BUNDLE_DIR OUT_DIR
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
b=$1
out=$2
mkdir -p "$out"
start=$(date +%s)
stamp() { echo "$1 at $(( $(date +%s) - start )) s" >>"$out/rc.txt"; }
XLOG_BENCH_RESULTS=$out/results.jsonl timeout 40 "$b/join_bench" >"$out/bench.md" 2>&1
echo "join_bench rc=$?" >>"$out/rc.txt"
stamp bench
skips=(--skip a_rank_left_alone --skip two_process --skip never_joins --skip teeth --skip disagree)
timeout -k 3 25 compute-sanitizer --tool memcheck --kernel-name-exclude kns=nccl --error-exitcode 99 \
  "$b/gpu_multi" --test-threads=1 "${skips[@]}" >"$out/sanitizer-memcheck.log" 2>&1
echo "sanitizer memcheck (NCCL kernels excluded) rc=$?" >>"$out/rc.txt"
stamp memcheck
python3 "$b/sanitizer_summary.py" "$out" >"$out/sanitizers.md" 2>&1
cat "$out/rc.txt"
