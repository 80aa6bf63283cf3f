#!/bin/bash
# Call 2: first use with a cubin per kernel, part by part; then the GPU suites.
B=/tmp/b; O=$OUT/m2; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/device.txt 2>&1
cd $B
for i in 1 2; do XLOG_BENCH_RESULTS=$O/first_use-$i.jsonl timeout 20 ./bench-first_use > $O/first_use-$i.md 2>&1; echo "bench $i rc=$?" >> $O/rc; done
[ -x ./bench-first_use-old ] && { XLOG_BENCH_RESULTS=$O/first_use-old.jsonl timeout 20 ./bench-first_use-old > $O/first_use-old.md 2>&1; echo "old bench rc=$?" >> $O/rc; }
timeout 25 python3 measure2.py $O/driver.jsonl > $O/driver.log 2>&1; echo "measure rc=$?" >> $O/rc
for t in test-*; do ( timeout 40 ./$t --test-threads=4 > $O/$t.log 2>&1; echo "$t rc=$?" >> $O/rc ) & done; wait
cat $O/rc $O/first_use-*.md; grep -h "test result\|FAILED\|panicked" $O/test-*.log | head -40
python3 - <<'PY'
import json,os,collections
rows=[json.loads(l) for l in open(os.environ['OUT']+'/m2/driver.jsonl')]
g=collections.defaultdict(list)
for r in rows: g[r['kind']].append(r)
for k,v in g.items():
    keys=[x for x in v[0] if x not in ('kind','rep','rc')]
    med={}
    for f in keys:
        xs=sorted(x[f] for x in v if isinstance(x.get(f),(int,float)))
        if xs: med[f]=round(xs[len(xs)//2],3)
    print(k,json.dumps(med),[x.get('err') for x in v if x.get('err')][:1])
PY
