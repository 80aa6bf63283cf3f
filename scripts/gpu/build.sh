#!/usr/bin/env bash
# Build every GPU test suite and benchmark on this machine (no GPU needed) into
# .gpu-bundle/, ready to be copied to a GPU machine that has no Rust toolchain.
#
#   scripts/gpu/build.sh            # then: copy the repo (or just .gpu-bundle and scripts/) over
#   scripts/gpu/run.sh OUT_DIR      # on the GPU machine
#
# Binaries use the lean `gpu` profile (release, stripped) to stay small.
#
# XLOG_CUBIN_ARCHS (default sm_90) names the architectures whose machine code is
# built in; XLOG_BUNDLE_MODES (default "test bench") picks what is bundled: "bench" alone
# builds only the benchmarks (the xlog benches, the peers bench in bench/peers)
# and the report generator, for a bench-only run (XLOG_PHASES=bench run.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
# Machine code for the GPUs the suites run on (default: sm_90, the H100/H200), so
# that no kernel waits for the driver to compile PTX; XLOG_CUBIN_ARCHS="" ships PTX only.
export XLOG_CUBIN_ARCHS=${XLOG_CUBIN_ARCHS-sm_90}
bundle=.gpu-bundle
modes=${XLOG_BUNDLE_MODES:-test bench}
rm -rf "$bundle"
mkdir -p "$bundle/bin"

# The executable of target $1 in cargo's JSON messages on stdin.
exe() {
  python3 -c '
import json, sys
for line in sys.stdin:
  try:
      m = json.loads(line)
  except ValueError:
      continue
  if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
      print(m["executable"])
' "$1"
}

# package:features pairs whose GPU suites and benches go into the bundle.
suites=(
  "xlog-runtime:gpu-tests"
  "xlog-kernels:gpu-tests"
  "xlog-device-kernels:gpu"
  "xlog-stress:gpu-tests"
  "xlog-abi-kernels:gpu-tests"
  "xlog-guide-kernels:gpu-tests"
)
for entry in "${suites[@]}"; do
  pkg=${entry%%:*}
  feat=${entry#*:}
  for mode in $modes; do
    # Benches measure what users get: xlog-runtime's suite feature turns on its test
    # switches (fault points, the fencing kill-switch), which its benches do not need.
    features=$feat
    [ "$mode" = bench ] && [ "$pkg" = xlog-runtime ] && features=""
    # Build errors go to stderr; only the JSON artifact lines are parsed.
    cargo "$mode" -p "$pkg" ${features:+--features "$features"} --profile gpu --no-run --message-format=json |
      python3 -c '
import json, shutil, sys, os
bundle, pkg, mode = sys.argv[1], sys.argv[2], sys.argv[3]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    kind = m["target"]["kind"][0]
    # Only the opt-in GPU suites (targets named gpu*); CPU tests run in CI.
    if mode == "test" and (kind != "test" or not m["target"]["name"].startswith("gpu")):
        continue
    if mode == "bench" and kind != "bench":
        continue
    name = "%s-%s-%s" % (kind, pkg, m["target"]["name"])
    shutil.copy(m["executable"], os.path.join(bundle, "bin", name))
    print("bundled", name)
' "$bundle" "$pkg" "$mode"
  done
done
# Example applications, run by run.sh as-is (with the test suites).
# The Python wheel (maturin: scripts/test.sh installs it under target/xlog-tools),
# its tests and the example: run.sh installs the wheel with pip and runs them
# against PyTorch and CuPy.
if [[ " $modes " == *" test "* ]]; then
  mkdir -p "$bundle/python"
  bash python/build.sh "$PWD/$bundle/python" >/dev/null
  cp python/tests/*.py python/example.py "$bundle/python/"
  echo "bundled python ($(basename "$bundle"/python/xlog-*.whl))"
fi
# The Datalog example's end-to-end test runs its binary (XLOG_DATALOG_BIN in run.sh);
# the binary itself is bundled apart from the examples run.sh runs without arguments.
if [[ " $modes " == *" test "* ]]; then
  fixpoint=$(cargo test -p datalog --features gpu-tests --profile gpu --no-run --message-format=json | exe fixpoint)
  cp "$fixpoint" "$bundle/bin/test-datalog-fixpoint" && echo "bundled test-datalog-fixpoint"
  cargo build -p datalog --profile gpu
  cp "${CARGO_TARGET_DIR:-target}/gpu/datalog" "$bundle/bin/datalog" && echo "bundled datalog"
fi
[[ " $modes " == *" test "* ]] && examples=(saxpy pipeline query distributed) || examples=()
for example in "${examples[@]}"; do
  cargo build -p "$example" --profile gpu --message-format=json |
    python3 -c '
import json, shutil, sys
bundle, name = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == name:
        shutil.copy(m["executable"], bundle + "/bin/example-" + name)
        print("bundled example-" + name)
' "$bundle" "$example"
done
# The distributed join's bench (one GPU against two, in one process); run by hand
# on a machine of two GPUs, not by run.sh.
if [[ " $modes " == *" bench "* ]]; then
  cargo build -p distributed --bin join_bench --profile gpu
  cp "${CARGO_TARGET_DIR:-target}/gpu/join_bench" "$bundle/bin/join_bench" && echo "bundled join_bench"
fi
# The report generator (run.sh runs it after the benches) and the peers bench:
# xlog against CubeCL and cudarc in one process. The peers bench is a workspace of
# its own so that the root workspace's builds and tests never compile CubeCL.
if [[ " $modes " == *" bench "* ]]; then
  report=$(cargo build -p xlog-bench-report --profile gpu --message-format=json | exe xlog-bench-report)
  cp "$report" "$bundle/bin/report" && echo "bundled report"
  peers=$(CARGO_TARGET_DIR="$PWD/target/peers" cargo build --manifest-path bench/peers/Cargo.toml --profile gpu --message-format=json | exe xlog-bench-peers)
  cp "$peers" "$bundle/bin/bench-peers" && echo "bundled bench-peers"
fi
du -sh "$bundle"
# The bundle outgrows what a device call may carry (every kernel-library binary
# embeds the whole module); PTX compresses about fourfold. Carry the archive
# (`.gpu-bundle.tgz`); run.sh unpacks it when `.gpu-bundle` is absent.
tar czf "$bundle.tgz" "$bundle"
du -sh "$bundle.tgz"
