#!/usr/bin/env bash
# What ran on the nvidia-h200-x2 machine for this folder, from the bundle built by
# the same commit (gpu profile, kernels as sm_90 cubins):
#   bash run.sh BUNDLE_DIR OUT_DIR [PHASES]
# PHASES (default "tests bench sanitizers"): the multi-GPU suite and its init
# timeout and two-process tests one by one (the lone-rank timeout test, unchanged
# since the last run, is left out); the join bench and the example; the four
# compute-sanitizer tools on the suite, one at a time, nothing else running.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
b=$1
out=$2
phases=${3:-tests bench sanitizers}
mkdir -p "$out"
t=$b/gpu_multi
has() { [[ " $phases " == *" $1 "* ]]; }
start=$(date +%s)
stamp() { echo "$1 at $(( $(date +%s) - start )) s" >>"$out/rc.txt"; }
if has tests; then
  {
    nvidia-smi -L
    nvidia-smi topo -m
    ldconfig -p | grep -i nccl
    compute-sanitizer --version
  } >"$out/env.txt" 2>&1
  timeout 100 "$t" --test-threads=1 --skip a_rank_left_alone --skip two_processes --skip never_joins >"$out/tests.log" 2>&1
  echo "suite rc=$?" >>"$out/rc.txt"
  timeout 45 "$t" --exact a_rank_whose_peer_never_joins_times_out_at_init --nocapture >"$out/init_timeout.log" 2>&1
  echo "init_timeout rc=$?" >>"$out/rc.txt"
  timeout 60 "$t" --exact two_processes_all_reduce_and_a_rank_that_exits_is_an_error --nocapture >"$out/two_processes.log" 2>&1
  echo "two_processes rc=$?" >>"$out/rc.txt"
  stamp tests
fi
if has bench; then
  XLOG_BENCH_RESULTS=$out/results.jsonl timeout 150 "$b/join_bench" >"$out/bench.md" 2>&1
  echo "join_bench rc=$?" >>"$out/rc.txt"
  timeout 60 "$b/distributed" >"$out/example.log" 2>&1
  echo "example rc=$?" >>"$out/rc.txt"
  stamp bench
fi
if has sanitizers; then
  # The suite alone under each tool (nothing else on the machine), without the
  # tests that time out or exit on purpose and the teeth tests (fencing off, a
  # race on purpose). NCCL's kernels are checked like xlog's.
  skips=(--skip a_rank_left_alone --skip two_process --skip never_joins --skip teeth --skip disagree)
  for tool in ${SANITIZER_TOOLS:-memcheck initcheck synccheck racecheck}; do
    timeout -k 3 "${SANITIZER_TIMEOUT:-60}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$t" --test-threads=1 "${skips[@]}" >"$out/sanitizer-$tool.log" 2>&1
    echo "sanitizer $tool rc=$?" >>"$out/rc.txt"
    stamp "$tool"
  done
  python3 "$b/sanitizer_summary.py" "$out" >"$out/sanitizers.md" 2>&1
fi
cat "$out/rc.txt"
