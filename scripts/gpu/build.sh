#!/usr/bin/env bash
# Build every GPU test suite and benchmark on this machine (no GPU needed) into
# .gpu-bundle/, ready to be copied to a GPU machine that has no Rust toolchain.
#
#   scripts/gpu/build.sh            # then: copy the repo (or just .gpu-bundle and scripts/) over
#   scripts/gpu/run.sh OUT_DIR      # on the GPU machine
#
# Binaries use the lean `gpu` profile (release, stripped) to stay small.
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=.gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/bin"

# package:features pairs whose GPU suites and benches go into the bundle.
suites=(
  "xlog-runtime:gpu-tests"
  "xlog-kernels:gpu-tests"
  "xlog-device-kernels:gpu"
  "xlog-stress:gpu-tests"
  "xlog-abi-kernels:gpu-tests"
)
for entry in "${suites[@]}"; do
  pkg=${entry%%:*}
  feat=${entry#*:}
  for mode in test bench; do
    # Build errors go to stderr; only the JSON artifact lines are parsed.
    cargo "$mode" -p "$pkg" --features "$feat" --profile gpu --no-run --message-format=json |
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
# Example applications, run by run.sh as-is.
for example in saxpy pipeline; do
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
du -sh "$bundle"
