"""Summarise compute-sanitizer logs (sanitizer-<tool>.log in the folder given) as a
markdown table and sanitizers.jsonl.

Each report is split by where it comes from:
- "NCCL API probes": a CUDA API call that failed inside libnccl (the host
  backtrace's frames are in libnccl), which NCCL makes to find out what the
  driver supports and handles itself. These are left out of the count; every
  one is listed by call and error.
- everything else counts: API errors from xlog or the test, and device-side
  reports (memory, initialisation, synchronisation, races) in any kernel,
  NCCL's included.
"""
import json
import os
import re
import sys

folder = sys.argv[1]
rows = []
for tool in ["memcheck", "initcheck", "synccheck", "racecheck"]:
    path = os.path.join(folder, f"sanitizer-{tool}.log")
    if not os.path.exists(path):
        continue
    lines = open(path, errors="replace").read().splitlines()
    reports, cur = [], None
    summary = None
    for line in lines:
        # A report can start on the line a test's name is printed on.
        at = line.find("=========")
        if at < 0:
            continue
        line = line[at:]
        body = line[len("========="):]
        if body.startswith("     ") or body.strip() == "":
            if cur is not None and body.strip():
                cur.append(body.strip())
            continue
        body = body.strip()
        if body.startswith(("ERROR SUMMARY", "RACECHECK SUMMARY")):
            summary = body
            cur = None
            continue
        if body.startswith(("COMPUTE-SANITIZER", "Target application returned", "Warning: ")) and "Race" not in body:
            cur = None
            continue
        cur = [body]
        reports.append(cur)
    probes, counted = {}, []
    for r in reports:
        head = r[0]
        api = re.search(r"on CUDA API call to (\w+)", head)
        if api and any("libnccl" in l for l in r[1:]):
            err = re.search(r"hit (\w+)", head)
            key = f"{api.group(1)} ({err.group(1) if err else '?'})"
            probes[key] = probes.get(key, 0) + 1
        else:
            where = "nccl kernel" if any("nccl" in l.lower() for l in r) else "xlog or test"
            counted.append((where, head))
    passed = [l for l in lines if l.startswith("test result:")]
    rows.append({
        "tool": tool,
        "summary": summary,
        "reports": len(reports),
        "nccl_api_probes": probes,
        "counted": len(counted),
        "counted_reports": counted[:20],
        "tests": passed[-1] if passed else None,
    })
with open(os.path.join(folder, "sanitizers.jsonl"), "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
print("| tool | tests | tool's summary | NCCL API probes (left out) | counted reports |")
print("| --- | --- | --- | --- | --- |")
for r in rows:
    probes = ", ".join(f"{k} x{v}" for k, v in sorted(r["nccl_api_probes"].items())) or "none"
    print(f"| {r['tool']} | {r['tests']} | {r['summary']} | {probes} | {r['counted']} |")
for r in rows:
    for where, head in r["counted_reports"]:
        print(f"- {r['tool']} ({where}): {head}")
