#!/usr/bin/env bash
# Stages what bench/datalog/gdlog.sh needs on the GPU machine, under the git-ignored
# target/ so that `run` can carry it and none of it is committed:
#
#   target/gdlog-src     GDlog (harp-lab/gdlog, MIT) exported from its local mirror at
#                        HEAD, without its data/ folder (about 2.4 MB); COMMIT names
#                        the exported commit
#   target/datalog-data  the benchmark graphs (fe_body.tsv, CA-HepTh.tsv): the
#                        shared/ folder beside the checkout does not travel
#
# Usage: bench/datalog/prepare-gdlog.sh [MIRROR] [DATASETS]
#   MIRROR    GDlog's git directory (default /work/.mirror/harp-lab+gdlog/repo)
#   DATASETS  folder with the .tsv graphs (default /work/shared/datasets)
#
# Then, from the repository root, one `run` call (carry target/gdlog-src and
# target/datalog-data):
#   bench/datalog/gdlog.sh target/gdlog-src target/datalog-data $OUT/gdlog.jsonl
set -euo pipefail

mirror=${1:-/work/.mirror/harp-lab+gdlog/repo}
datasets=${2:-/work/shared/datasets}
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/target/gdlog-src
data=$root/target/datalog-data

rm -rf "$src" "$data"
mkdir -p "$src" "$data"
git --git-dir="$mirror" archive --format=tar HEAD -- . ':(exclude)data' | tar -x -C "$src"
git --git-dir="$mirror" rev-parse HEAD >"$src/COMMIT"
cp "$datasets"/*.tsv "$data"/

echo "GDlog $(cat "$src/COMMIT") in $src ($(du -sh "$src" | cut -f1))"
echo "graphs in $data: $(cd "$data" && ls | tr '\n' ' ')"
