#!/usr/bin/env bash
# san.sh TOOL FILTER...: compute-sanitizer TOOL over the sort suite's tests matching
# FILTER, sizes capped at 7000 (the binary is found next to this script).
B=$(cd "$(dirname "$0")" && pwd)
XLOG_BACKEND=direct XLOG_TEST_MAX_LEN=7000 exec compute-sanitizer --tool "$1" --error-exitcode 99 "$B/gpu_sort" --test-threads=1 "${@:2}"
