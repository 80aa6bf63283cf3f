"""Builds results.jsonl from the calls' raw files: bench rows with call, build and
device; `sort-kernels` rows with ncu's gpu__time_duration of each scatter pass."""
import csv, json, pathlib, statistics, sys

here = pathlib.Path(__file__).parent
builds = dict(a.split("=", 1) for a in sys.argv[1:])  # c1=<build> c2=<build>
rows = []
for call, build in builds.items():
    d = here / call
    device = (d / "device.txt").read_text().strip()
    for line in (d / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        r.update(call=int(call[1:]), build=build, device=device,
                 peers="torch 2.11.0+cu130, cupy 14.2.0")
        rows.append(r)
    for f in sorted(d.glob("ncu-ours-*.csv")):
        times = {}
        for rec in csv.reader(f.open()):
            # The bench's own output lines are in the log too: only ncu's rows.
            if len(rec) < 5 or not rec[-1].replace(",", "").replace(".", "").isdigit():
                continue
            times.setdefault(rec[4], []).append(float(rec[-1].replace(",", "")) / 1000)
        for kernel, us in times.items():
            rows.append(dict(bench="sort-kernels", kernel=kernel, launches=len(us),
                             median_us=statistics.median(us), call=int(call[1:]),
                             build=build, device=device, tool="ncu gpu__time_duration.sum"))
with open(here / "results.jsonl", "w") as out:
    for r in rows:
        out.write(json.dumps(r) + "\n")
print(len(rows), "rows")
