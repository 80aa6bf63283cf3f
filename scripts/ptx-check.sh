#!/usr/bin/env bash
# Validate every device module of the workspace with ptxas, without a GPU.
#
# Builds the workspace (each kernel crate's build.rs compiles its PTX), then runs
# `ptxas -arch=<arch> -v` for sm_80 and sm_90 on every module in
# <target>/xlog-device/xlog-modules/, failing on ptxas errors and on register spills
# outside the panic path (core::fmt, core::panicking, the xlog panic handler).
#
# Needs ptxas: `pip install nvidia-cuda-nvcc`, or XLOG_PTXAS=/path/to/ptxas.
# Usage: scripts/ptx-check.sh [extra cargo build args]
set -euo pipefail
cd "$(dirname "$0")/.."

archs=(${XLOG_CHECK_ARCHS:-sm_80 sm_90})
# Functions whose spills are tolerated: the panic path only runs when a kernel fails.
allow_re='4core3fmt|4core9panicking|11xlog_device5panic|17rust_begin_unwind'

find_ptxas() {
  if [[ -n "${XLOG_PTXAS:-}" ]]; then echo "$XLOG_PTXAS"; return; fi
  if command -v ptxas >/dev/null 2>&1; then command -v ptxas; return; fi
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [[ -n "$d" && -x "$d/bin/ptxas" ]]; then echo "$d/bin/ptxas"; return; fi
  done
  python3 - <<'PY' 2>/dev/null || true
import os, nvidia
for p in nvidia.__path__:
    for rel in ("cu13/bin/ptxas", "cu12/bin/ptxas", "cuda_nvcc/bin/ptxas"):
        if os.path.isfile(os.path.join(p, rel)):
            print(os.path.join(p, rel)); raise SystemExit
PY
}

ptxas="$(find_ptxas)"
if [[ -z "$ptxas" || ! -x "$ptxas" ]]; then
  echo "error: ptxas not found: install it with 'pip install nvidia-cuda-nvcc' (no CUDA toolkit needed) or set XLOG_PTXAS" >&2
  exit 1
fi

cargo build --workspace "$@"
target="${CARGO_TARGET_DIR:-target}"
modules="${XLOG_DEVICE_TARGET_DIR:-$target/xlog-device}/xlog-modules"
shopt -s nullglob
files=("$modules"/*.ptx)
if (( ${#files[@]} == 0 )); then
  echo "error: no device modules under $modules (no kernel crate was built?)" >&2
  exit 1
fi

status=0
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for ptx in "${files[@]}"; do
  for arch in "${archs[@]}"; do
    log="$scratch/$(basename "$ptx" .ptx)-$arch.log"
    if ! "$ptxas" -arch="$arch" -v "$ptx" -o "$scratch/out.cubin" >"$log" 2>&1; then
      echo "FAIL $(basename "$ptx") $arch: ptxas rejected the module" >&2
      tail -n 20 "$log" >&2
      status=1
      continue
    fi
    # Pair each "Function properties for NAME" with the spill line that follows it.
    spills="$(awk -v allow="$allow_re" '
      /Function properties for/ { name = $NF }
      /bytes spill stores/ {
        split($0, w, /[ ,]+/)
        for (i = 1; i <= length(w); i++) {
          if (w[i] == "spill" && w[i+1] == "stores") st = w[i-2]
          if (w[i] == "spill" && w[i+1] == "loads") ld = w[i-2]
        }
        if ((st + 0 > 0 || ld + 0 > 0) && name !~ allow) print name " (" st " B stores, " ld " B loads)"
      }' "$log" | sort -u)"
    if [[ -n "$spills" ]]; then
      echo "FAIL $(basename "$ptx") $arch: register spills in:" >&2
      echo "$spills" | sed 's/^/  /' >&2
      status=1
    else
      kernels="$(grep -c "Compiling entry function" "$log" || true)"
      echo "ok   $(basename "$ptx") $arch ($kernels kernels)"
    fi
  done
done
exit $status
