#!/usr/bin/env bash
# Builds the libFuzzer target with clang, address and undefined-behaviour sanitizers, and runs it
# for FUZZ_SECONDS (default 60) from the seed corpus in tests/fuzz/corpus. Prints libFuzzer's
# executions and coverage; any crash or broken invariant fails the run and leaves its input.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DTRAINMEM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz --target fuzz_core -j "$(nproc 2>/dev/null || echo 2)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/* "$work"/
status=0
./build-fuzz/fuzz_core -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
  -artifact_prefix=build-fuzz/ "$work" >"$work.log" 2>&1 || status=$?
grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|ERROR|SUMMARY|invariant" "$work.log" || true
[ "$status" = 0 ] || tail -40 "$work.log"
rm -f "$work.log"
echo "fuzz: $seconds s, exit status $status"
exit "$status"
