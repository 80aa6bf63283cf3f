#!/usr/bin/env bash
# GDlog, the GPU peer of examples/datalog: builds GDlog's TC and SG programs from a
# source folder staged by bench/datalog/prepare-gdlog.sh, runs them on each graph the
# way GDlog's run_tc_all.sh and run_sg_all.sh do, and writes one JSON line per
# (graph, query) to RESULTS. Runs on the GPU machine (nvcc under /usr/local/cuda/bin,
# CMake, g++); GDlog's code is never committed here, only built from the carried copy.
#
# Usage: bench/datalog/gdlog.sh SRC DATA RESULTS
#   SRC      GDlog's source (target/gdlog-src), left untouched: it is copied and the
#            copy patched and built under SRC/../gdlog-build
#   DATA     folder of tab-separated edge lists NAME.tsv (target/datalog-data)
#   RESULTS  JSON lines out; GDlog's own output goes to RESULTS with .log for .jsonl
# Environment: GRAPHS (default "fe_body CA-HepTh"), QUERIES (default "tc sg"),
#   RUNS (default 3: processes per graph and query; the line reports the median).
#   GRAPHS set but empty builds GDlog only.
#
# Input: GDlog reads `src<TAB>dst` lines (its edge.facts files have that format; CRLF
# is fine, since fscanf skips the \r), counting edges by newlines, so the .tsv files
# go in as they are. `TC FILE 0` is TC with the merge buffer ("EBM") on, as in
# run_tc_all.sh's table II; `SG FILE` takes no other argument.
#
# GDlog's timers are CUDA events, started once the edges are parsed into host memory:
#   build_s     "Build hash table time": edges uploaded and indexed
#   init_s      SG only, "sg init time": the non-recursive rule sg :- edge, edge
#   fixpoint_s  "TC time" / "sg time": the semi-naive fixpoint
#   total_s     build_s + init_s + fixpoint_s: edges in host memory to the result
# wall_s is the whole process (text parsing and CUDA context creation included).
#
# GDlog's CMakeLists.txt asks for CMake 3.9, which leaves CUDA_ARCHITECTURES to policy
# CMP0104's old behaviour; it is set to NEW so that -DCMAKE_CUDA_ARCHITECTURES=90
# surely gives sm_90 code (the log lists the machine code TC holds).
#
# One patch, applied to the copy with sed: tc.cu computes "Build hash table time"
# but has its print commented out, and it is uncommented (SG prints it already).
# Everything else builds unchanged with CUDA 13.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
fi
src=$(realpath "$1")
data=$(realpath "$2")
results=$3
log=${results%.jsonl}.log
mkdir -p "$(dirname "$results")"
graphs=${GRAPHS-fe_body CA-HepTh}
queries=${QUERIES:-tc sg}
runs=${RUNS:-3}

export PATH=/usr/local/cuda/bin:$PATH
# GDlog's main constructs std::locale(""), which throws on a locale not installed.
export LC_ALL=C

# The expected counts (shared/datasets/README.md); each line says whether they matched.
declare -A expected=(
    [fe_body/tc]=156120489 [fe_body/sg]=408443204
    [CA-HepTh/tc]=74619885 [CA-HepTh/sg]=74618689
)

# The value after "LABEL" on the line that starts with it, in GDlog's output $1.
field() { sed -n "s/^$2[: ]*\([0-9.e+-]*\).*/\1/p" "$1" | tail -n 1; }
# Arithmetic on decimals (the image may have no bc).
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }

work=$(dirname "$src")/gdlog-build
rm -rf "$work"
mkdir -p "$work"
cp -r "$src" "$work/src"
commit=$(cat "$src/COMMIT" 2>/dev/null || echo unknown)

sed -i -e '/\/\/ std::cout << "Build hash table time: "/{s|// ||;n;s|//  ||}' \
    "$work/src/test/tc.cu"
grep -q '^    std::cout << "Build hash table time: "' "$work/src/test/tc.cu" || {
    echo "gdlog.sh: the tc.cu patch did not apply" >&2
    exit 1
}

: >"$log"
echo "== nvcc: $(nvcc --version | tail -1); cmake: $(cmake --version | head -1)" | tee -a "$log"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
start=$(date +%s.%N)
cmake -S "$work/src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_POLICY_DEFAULT_CMP0104=NEW >>"$log" 2>&1 &&
    cmake --build "$work/build" -j 16 --target TC SG >>"$log" 2>&1 || {
    echo "gdlog.sh: GDlog's build failed; the end of $log:" >&2
    tail -n 60 "$log" >&2
    exit 1
}
build_s=$(calc "$(date +%s.%N) - $start")
echo "== GDlog $commit built (TC, SG) in ${build_s} s; TC's machine code:" \
    "$(cuobjdump --list-elf "$work/build/TC" 2>&1 | grep -o 'sm_[0-9a-z]*' | sort -u | paste -sd' ')" |
    tee -a "$log"

: >"$results"
failed=0
for graph in $graphs; do
    file=$data/$graph.tsv
    for query in $queries; do
        case $query in
        tc) cmd=("$work/build/TC" "$file" 0) ;;
        sg) cmd=("$work/build/SG" "$file") ;;
        *) echo "gdlog.sh: unknown query $query" >&2; exit 2 ;;
        esac
        rows=() order='' counts=''
        for ((run = 0; run < runs; run++)); do
            out=$work/$graph-$query-$run.out
            echo "== $graph $query run $run: ${cmd[*]}" >>"$log"
            t0=$(date +%s.%N)
            status=0
            "${cmd[@]}" >"$out" 2>&1 || status=$?
            wall=$(calc "$(date +%s.%N) - $t0")
            cat "$out" >>"$log"
            build=$(field "$out" "Build hash table time")
            if [[ $query == tc ]]; then
                init=0
                fix=$(field "$out" "TC time")
                tuples=$(field "$out" "Path counts")
            else
                init=$(field "$out" "sg init time")
                fix=$(field "$out" "sg time")
                tuples=$(field "$out" "sg counts")
            fi
            if [[ $status -ne 0 || -z $build || -z $init || -z $fix || -z $tuples ]]; then
                echo "gdlog.sh: $graph $query run $run failed (exit $status)" | tee -a "$log" >&2
                failed=1
                continue
            fi
            total=$(calc "$build + $init + $fix")
            rows[run]=$(printf '"tuples":%s,"build_s":%s,"init_s":%s,"fixpoint_s":%s,"total_s":%s,"wall_s":%.2f' \
                "$tuples" "$build" "$init" "$fix" "$total" "$wall")
            order+="$total $run"$'\n'
            counts+="$tuples"$'\n'
        done
        [[ ${#rows[@]} -gt 0 ]] || continue
        # The run with the median total is reported, all totals beside it.
        median_run=$(sort -g <<<"${order%$'\n'}" | sed -n "$(((${#rows[@]} + 1) / 2))p" | cut -d' ' -f2)
        totals=$(sort -n -k2 <<<"${order%$'\n'}" | cut -d' ' -f1 | paste -sd,)
        want=${expected[$graph/$query]:-null}
        ok=false
        [[ $(sort -u <<<"${counts%$'\n'}") == "$want" ]] && ok=true
        $ok || failed=1
        echo "{\"tool\":\"gdlog\",\"graph\":\"$graph\",\"query\":\"$query\",${rows[median_run]},\"expected\":$want,\"ok\":$ok,\"runs_total_s\":[$totals],\"build_time_s\":$build_s,\"commit\":\"$commit\"}" |
            tee -a "$results"
    done
done
exit "$failed"
