#!/usr/bin/env bash
# The sort branch's checks left for the lead (its own two calls were spent): the
# whole sort suite uncapped, memcheck over the histogram and scatter paths, and
# racecheck over the u32 and i64 keys tests, side by side. Results under $OUT/c3;
# stops starting work at $1 s (default 120).
#   mkdir -p /tmp/b && tar xzf target/sort-bundle.tgz -C /tmp/b && /tmp/b/sort-b2/run3.sh 120
set -u
export B=$(cd "$(dirname "$0")" && pwd); O=$OUT/c3; mkdir -p $O
LIMIT=${1:-120}
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
job() { # name command...
  local n=$1; shift
  timeout $(( LIMIT - $(el) )) "$@" > $O/$n.log 2>&1
  echo "$n rc=$? $(el)s $(grep -Eo 'test result: .*' $O/$n.log | tail -1) $(grep -Eo 'ERROR SUMMARY: [0-9]+ errors|RACECHECK SUMMARY: [0-9]+ hazards' $O/$n.log | tail -1)" >> $O/times
}
job plain $B/gpu_sort --test-threads=4 &
job memcheck $B/san.sh memcheck u32_keys i64_keys f32_keys pairs several_portions &
job racecheck-u32 $B/san.sh racecheck u32_keys_match &
job racecheck-i64 $B/san.sh racecheck i64_keys_match &
wait
echo "total $(el)s" >> $O/times
cat $O/times
