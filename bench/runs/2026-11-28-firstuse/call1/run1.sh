#!/bin/bash
# Call 1: what the first use costs, part by part.
set -x
B=/tmp/b; O=$OUT/m1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/device.txt 2>&1
python3 -c "import ctypes;cu=ctypes.CDLL('libcuda.so.1');v=ctypes.c_int();cu.cuDriverGetVersion(ctypes.byref(v));print('driver api',v.value)" >> $O/device.txt
cd $B
timeout 120 python3 measure.py $O/driver.jsonl > $O/driver.log 2>&1; echo "measure rc=$?" >> $O/rc
for mode in default EAGER LAZY; do
  if [ $mode = default ]; then env -u CUDA_MODULE_LOADING XLOG_BENCH_RESULTS=$O/bench-$mode.jsonl timeout 60 ./bench-first_use > $O/bench-$mode.md 2>&1
  else CUDA_MODULE_LOADING=$mode XLOG_BENCH_RESULTS=$O/bench-$mode.jsonl timeout 60 ./bench-first_use > $O/bench-$mode.md 2>&1; fi
  echo "bench $mode rc=$?" >> $O/rc
done
cat $O/rc $O/device.txt $O/bench-*.md
python3 - <<'PY'
import json,os,collections
rows=[json.loads(l) for l in open(os.environ['OUT']+'/m1/driver.jsonl')]
g=collections.defaultdict(list)
for r in rows: g[(r['mode_env'],r['image'],r['loader'])].append(r)
for k,v in g.items():
    def med(f):
        xs=sorted(x[f] for x in v if isinstance(x.get(f),(int,float)))
        return round(xs[len(xs)//2],3) if xs else None
    print(k,{f:med(f) for f in ['ctx','mode','load','getfunc','loaded_after_get','funcload','global','hostalloc','memcpy','getlimit','second_module','hostalloc2']}, [x.get('err') for x in v if x.get('err')][:1])
PY
