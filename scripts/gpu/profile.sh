#!/usr/bin/env bash
# Profile the kernel library's slowest kernels against CUB with Nsight Compute on a
# GPU machine (no Rust toolchain needed; run after build.sh's bundle is unpacked).
#
#   scripts/gpu/profile.sh OUT_DIR [KERNEL_REGEX]
#
# Runs the library or sort bench at n = 10^8 under `ncu` once per kernel that
# KERNEL_REGEX matches (by default all three: the i32 scan, the f32 select and the
# u32 radix sort's onesweep pass), profiling its second launch, and writes each
# report as text: occupancy, registers, throughput against the memory ceiling and
# where warps stall. The peers (PyTorch / CuPy) are not run under the profiler.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-gpu-out}}
regex=${2:-^(scan_inclusive_sum__i32|select_by_flags__f32|sort_onesweep__u32)$}
mkdir -p "$out"
if [ ! -d .gpu-bundle ] && [ -f .gpu-bundle.tgz ]; then
  tar xzf .gpu-bundle.tgz
fi
bin=.gpu-bundle/bin
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
# The CUB side needs no profile: point the benches at a script that is not there
# (they then stop after xlog's side, which is all `ncu` needs).
export XLOG_CUB_SCRIPT=/nonexistent XLOG_LIBRARY_N=${XLOG_LIBRARY_N:-100000000}
# One kernel per bench run: `--launch-count` counts every matching launch.
for k in scan_inclusive_sum__i32:library select_by_flags__f32:library sort_onesweep__u32:sort; do
  kernel=${k%%:*}
  b=${k#*:}
  [[ "$kernel" =~ $regex ]] || continue
  timeout 280 ncu --kernel-name "$kernel" --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$bin/bench-xlog-kernels-$b" --bench >"$out/ncu-$kernel.txt" 2>&1
  echo "ncu $kernel: exit $?"
done
