#!/usr/bin/env bash
# examples/datalog beside GDlog on one GPU, in one call: builds GDlog (gdlog.sh), runs
# both on every graph and query, optionally the CPU peer (ascent, every core), and
# writes OUT/results.jsonl and OUT/summary.md (the ratios, GDlog's time over xlog's).
#
# Here, first:
#   bench/datalog/prepare-gdlog.sh                                  # GDlog's source, the graphs
#   XLOG_CUBIN_ARCHS=sm_90 cargo build -p datalog --profile gpu     # machine code for the H200
#   mkdir -p target/datalog-bin && cp target/gpu/datalog target/datalog-bin/
# Then on the GPU machine (carry target/gdlog-src, target/datalog-data, target/datalog-bin):
#   bench/datalog/run.sh OUT
# Environment: PARTS (default "compare": what runs; "scale" adds the scale runs),
#   RUNS (default 3 processes per graph and query, the median reported),
#   CPU_RUNS (graph:query pairs the CPU peer also runs, e.g. "CA-HepTh:tc fe_body:sg";
#   default none), CPU_TIMEOUT (s, 300: a run stopped there reports the timeout as a
#   lower bound), SCALE (node counts of the scale runs, default
#   "20000 40000 60000 80000 90000 100000"), SCALE_GDLOG (those GDlog also runs,
#   default "20000 40000 60000"), SCALE_TIMEOUT (s, 240), BUDGET_RUN (a budget in
#   bytes for one run of same generation on fe_body that must be refused, default
#   4000000000).
#
# The scale runs: transitive closure over bench/datalog/synthetic.py's strongly
# connected graphs of N nodes, whose closure has exactly N*N tuples, one process each,
# up to sizes that do not fit in the GPU's memory; OUT/scale.jsonl gets each run's
# outcome (count, time, peak, or the error it stopped with) and summary.md a table.
#
# Both are timed the way GDlog times itself: from the edge list in host memory to
# the count (xlog's `solve` line; GDlog's build + init + fixpoint timers). Cubins
# for sm_90 are in xlog's binary, as GDlog's build holds sm_90 machine code: neither
# pays for the driver's compilation of PTX.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/datalog/run.sh OUT}
mkdir -p "$out"
runs=${RUNS:-3}
bin=target/datalog-bin/datalog
data=target/datalog-data
export RUNS=$runs
parts=" ${PARTS:-compare} "
if [[ "$parts" == *" compare "* ]]; then
bash bench/datalog/gdlog.sh target/gdlog-src "$data" "$out/gdlog.jsonl" || echo "gdlog.sh failed: $?"
: >"$out/xlog.jsonl"
for graph in fe_body CA-HepTh; do
  for query in tc sg; do
    for r in $(seq "$runs"); do
      log=$out/xlog-$graph-$query.log
      timeout 300 "$bin" "$query" "$data/$graph.tsv" >"$log.$r" 2>&1
      echo "exit $?" >>"$log.$r"
    done
    python3 - "$graph" "$query" "$out" "$runs" <<'PY' >>"$out/xlog.jsonl"
import json, re, statistics, sys
graph, query, out, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = []
for r in range(1, runs + 1):
    text = open(f"{out}/xlog-{graph}-{query}.log.{r}").read()
    def num(pat, cast=float):
        m = re.search(pat, text)
        return cast(m.group(1)) if m else None
    rows.append({
        "tuples": num(r"^tuples (\d+)$".replace("^", "(?m)^"), int),
        "solve_s": (num(r"solve ([\d.]+) ms") or float("nan")) / 1e3,
        "end_to_end_s": (num(r"end-to-end ([\d.]+) ms") or float("nan")) / 1e3,
        "iterations": num(r"(?m)^iterations (\d+)$", int),
        "peak_bytes": num(r"peak device memory (\d+) bytes", int),
        "exit": num(r"exit (\d+)", int),
    })
ok = [r for r in rows if r["exit"] == 0 and r["tuples"] is not None]
times = [r["solve_s"] for r in ok]
best = sorted(ok, key=lambda r: r["solve_s"])[len(ok) // 2] if ok else {}
print(json.dumps({"tool": "xlog", "graph": graph, "query": query,
                  "tuples": best.get("tuples"), "solve_s": best.get("solve_s"),
                  "end_to_end_s": best.get("end_to_end_s"), "iterations": best.get("iterations"),
                  "peak_bytes": best.get("peak_bytes"), "runs_solve_s": times,
                  "failed_runs": len(rows) - len(ok)}))
PY
  done
done
# One traced run of each, for the phase times (synchronising after each phase).
for graph in fe_body CA-HepTh; do
  for query in tc sg; do
    timeout 300 "$bin" "$query" "$data/$graph.tsv" --phases >"$out/phases-$graph-$query.log" 2>&1
  done
done
fi
: >"$out/cpu.jsonl"
for pair in ${CPU_RUNS:-}; do
  graph=${pair%%:*}
  query=${pair#*:}
  log=$out/cpu-$graph-$query.log
  timeout "${CPU_TIMEOUT:-300}" "$bin" "$query" "$data/$graph.tsv" --cpu >"$log" 2>&1
  echo "exit $?" >>"$log"
  python3 - "$graph" "$query" "$log" "$(nproc)" "${CPU_TIMEOUT:-300}" <<'PY' >>"$out/cpu.jsonl"
import json, re, sys
graph, query, log, cores, limit = sys.argv[1:6]
text = open(log).read()
m = re.search(r"cpu \(ascent, parallel\) tuples (\d+) in ([\d.]+) ms", text)
print(json.dumps({"tool": "ascent", "graph": graph, "query": query, "cores": int(cores),
                  "tuples": int(m.group(1)) if m else None,
                  "seconds": float(m.group(2)) / 1e3 if m else None,
                  "finished": m is not None,
                  "timeout_s": None if m else float(limit)}))
PY
done
if [[ "$parts" == *" scale "* ]]; then
  # GDlog's TC, built unless the compare part built it already.
  [ -x target/gdlog-build/build/TC ] || GRAPHS= bash bench/datalog/gdlog.sh target/gdlog-src "$data" "$out/gdlog-build.jsonl" || echo "gdlog.sh failed: $?"
  : >"$out/scale.jsonl"
  limit=${SCALE_TIMEOUT:-240}
  run_one() { # tool nodes log command...
    local tool=$1 n=$2 log=$3
    shift 3
    local t0 t1 rc
    t0=$(date +%s.%N)
    timeout "$limit" "$@" >"$log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    python3 - "$tool" "$n" "$log" "$rc" "$t0" "$t1" "$limit" <<'PY' >>"$out/scale.jsonl"
import json, re, sys
tool, n, log, rc, t0, t1, limit = sys.argv[1:8]
n, rc = int(n), int(rc)
text = open(log, errors="replace").read()
def num(pat, cast=float):
    m = re.search(pat, text, re.M)
    return cast(m.group(1)) if m else None
if tool == "xlog":
    tuples, secs = num(r"^tuples (\d+)$", int), num(r"solve ([\d.]+) ms")
    secs = secs / 1e3 if secs is not None else None
    peak = num(r"peak device memory (\d+) bytes", int)
else:
    tuples = num(r"Path counts[: ]*(\d+)", int)
    parts = [num(r"Build hash table time[: ]*([\d.e+-]+)"), num(r"TC time[: ]*([\d.e+-]+)")]
    secs = sum(parts) if None not in parts else None
    peak = None
last = [l for l in text.splitlines() if l.strip()][-3:]
print(json.dumps({"tool": tool, "nodes": n, "edges": 3 * n, "expected": n * n, "tuples": tuples,
                  "ok": tuples == n * n, "seconds": secs, "peak_bytes": peak, "exit": rc,
                  "wall_s": round(float(t1) - float(t0), 2), "timed_out": rc in (124, 137),
                  "timeout_s": float(limit), "last_lines": last}))
PY
  }
  for n in ${SCALE:-20000 40000 60000 80000 90000 100000}; do
    g=$data/scc-$n.tsv
    [ -e "$g" ] || python3 bench/datalog/synthetic.py "$n" >"$g"
    run_one xlog "$n" "$out/scale-xlog-$n.log" "$bin" tc "$g"
    tail -1 "$out/scale.jsonl"
  done
  for n in ${SCALE_GDLOG-20000 40000 60000}; do
    g=$data/scc-$n.tsv
    [ -e "$g" ] || python3 bench/datalog/synthetic.py "$n" >"$g"
    LC_ALL=C run_one gdlog "$n" "$out/scale-gdlog-$n.log" target/gdlog-build/build/TC "$g" 0
    tail -1 "$out/scale.jsonl"
  done
  # A budget the run cannot keep: the refusal names the step, relation and bytes.
  timeout 120 "$bin" sg "$data/fe_body.tsv" --budget "${BUDGET_RUN:-4000000000}" >"$out/budget-refusal.log" 2>&1
  echo "exit $?" >>"$out/budget-refusal.log"
  tail -3 "$out/budget-refusal.log"
fi
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
import os
load = lambda f: [json.loads(l) for l in open(f"{out}/{f}") if l.strip()] if os.path.exists(f"{out}/{f}") else []
g = {(r["graph"], r["query"]): r for r in load("gdlog.jsonl")}
x = {(r["graph"], r["query"]): r for r in load("xlog.jsonl")}
c = {(r["graph"], r["query"]): r for r in load("cpu.jsonl")}
want = {("fe_body", "tc"): 156120489, ("fe_body", "sg"): 408443204,
        ("CA-HepTh", "tc"): 74619885, ("CA-HepTh", "sg"): 74618689}
lines = ["| graph | query | tuples (expected) | xlog s | GDlog s | GDlog / xlog | xlog peak / relation | ascent s (cores) | ascent / xlog |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for k, n in want.items() if x else []:
    xr, gr, cr = x.get(k, {}), g.get(k, {}), c.get(k, {})
    xs, gs = xr.get("solve_s"), gr.get("total_s")
    ok = "✓" if xr.get("tuples") == n and gr.get("tuples") == n else f"xlog {xr.get('tuples')} GDlog {gr.get('tuples')}"
    ratio = f"{gs / xs:.2f}" if xs and gs else "-"
    peak = f"{xr['peak_bytes'] / (n * 8):.2f}" if xr.get("peak_bytes") else "-"
    cs, limit = cr.get("seconds"), cr.get("timeout_s")
    if cs:
        cpu, cratio = f"{cs:.1f} ({cr['cores']})", (f"{cs / xs:.0f}" if xs else "-")
    elif limit:
        cpu, cratio = f"> {limit:.0f} ({cr['cores']}, stopped)", (f"> {limit / xs:.0f}" if xs else "-")
    else:
        cpu, cratio = "not run", "-"
    lines.append(f"| {k[0]} | {k[1]} | {n:,} {ok} | {xs:.3f} | {gs:.3f} | {ratio} | {peak} | {cpu} | {cratio} |"
                 if xs and gs else f"| {k[0]} | {k[1]} | {n:,} {ok} | {xs} | {gs} | - | {peak} | {cpu} | - |")
if not x:
    lines = []
scale = load("scale.jsonl")
if scale:
    lines += ["", "Scale: transitive closure of synthetic.py's strongly connected graphs (exactly nodes² tuples), one process each:", "",
              "| tool | nodes | edges | tuples (expected) | seconds | peak bytes | peak / relation | outcome |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in scale:
        if r["ok"]:
            outcome = "exact"
        elif r["timed_out"]:
            outcome = f"stopped at {r['timeout_s']:.0f} s"
        else:
            outcome = f"exit {r['exit']}: " + " / ".join(r["last_lines"]).replace("|", "\\|")[:300]
        peak = r["peak_bytes"]
        ratio = f"{peak / (r['expected'] * 8):.2f}" if peak and r["ok"] else "-"
        secs = f"{r['seconds']:.2f}" if r["seconds"] is not None else "-"
        tuples = f"{r['tuples']:,}" if r["tuples"] is not None else "-"
        lines.append(f"| {r['tool']} | {r['nodes']:,} | {r['edges']:,} | {tuples} ({r['expected']:,}) | {secs} | {peak or '-'} | {ratio} | {outcome} |")
if os.path.exists(f"{out}/budget-refusal.log"):
    text = [l for l in open(f"{out}/budget-refusal.log", errors="replace").read().splitlines() if l.strip()]
    lines += ["", "Same generation on fe_body under a budget it cannot keep (`--budget`):", "", "```"] + text[-4:] + ["```"]
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
