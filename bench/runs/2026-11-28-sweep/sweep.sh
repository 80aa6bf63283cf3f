#!/usr/bin/env bash
# One device call: the first-use bench, then every GPU suite, and each of the four
# sanitizers over each suite, as jobs side by side (scripts/gpu/run.sh per job).
set -u
cd "$(dirname "$0")/../.."   # the repository root (this file is target/sweep/sweep.sh)
tar xzf .gpu-bundle.tgz
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
o=$OUT/sweep; mkdir -p $o/jobs
nvidia-smi > $o/device.txt 2>&1
XLOG_BENCH_RESULTS=$o/first_use.jsonl timeout 60 target/sweep/bench-first_use > $o/first_use.md 2>&1; echo "first_use rc=$?" >> $o/times
start=$(date +%s)
job() { # tool suite
  local tool=$1 suite=$2 d=$o/jobs/$1-$2
  # Every job ends by the call's deadline, so the archive below is always written.
  local left=$(( ${DEADLINE:-515} - ($(date +%s) - start) ))
  [ "$left" -gt 5 ] || { echo "$tool $suite skipped: no time left" >> $o/times; return; }
  if [ "$tool" = tests ]; then
    XLOG_PHASES=tests XLOG_PYTHON_SITE=/tmp/site-tests timeout $left bash scripts/gpu/run.sh $d > $d.out 2>&1
  else
    XLOG_PHASES=sanitizer XLOG_SANITIZER_TOOLS=$tool XLOG_SANITIZER_SUITES=$suite XLOG_PYTHON_SITE=/tmp/site-$tool-$suite \
      XLOG_SANITIZER_PYTHON=$([ "$suite" = xlog-runtime-gpu ] && echo 1 || echo 0) XLOG_SANITIZER_MAX_LEN=20011 \
      timeout $left bash scripts/gpu/run.sh $d > $d.out 2>&1
  fi
  echo "$tool $suite rc=$? $(( $(date +%s)-start ))s" >> $o/times
}
export -f job; export o start
{ echo "tests all"; for t in memcheck racecheck synccheck initcheck; do for b in .gpu-bundle/bin/test-*; do echo "$t ${b#.gpu-bundle/bin/test-}"; done; done; } > $o/joblist
xargs -P ${JOBS:-12} -L 1 bash -c 'job "$0" "$1"' < $o/joblist
cat $o/times $o/first_use.md
for f in $o/jobs/*/summary.md; do grep "^| [a-z]" $f | grep -v "^| suite\|^| sanitizer (" ; done | sort > $o/all-rows.txt
cat $o/all-rows.txt
cd $OUT && tar czf sweep.tgz sweep && rm -rf sweep
