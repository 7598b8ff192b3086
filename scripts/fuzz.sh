#!/usr/bin/env bash
# Runs the libFuzzer targets, one per entry of the core (tests/fuzz/fuzz_*.cpp: the setups'
# estimates, the views made of them, typed settings, config.json, and each launch reader), each
# from its seed corpus under tests/fuzz/corpus/, sharing FUZZ_SECONDS (default 30) of wall time:
# as many at once as there are cores, each for its share. The targets are the sanitized build's
# (build-sanitize: address and undefined-behaviour sanitizers, clang), which scripts/test.sh also
# runs the tests from; this builds it where it is missing. Prints each target's executions and
# the total; any crash or broken invariant fails the run and leaves its input in build-sanitize/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
jobs=$(nproc 2>/dev/null || echo 2)
targets=(estimate views settings config launch launch_torchtitan launch_megatron launch_deepspeed
  launch_axolotl)

CC=clang CXX=clang++ cmake -S . -B build-sanitize -DTRAINMEM_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j "$jobs" --target "${targets[@]/#/fuzz_}"

# Each target's share of the wall time, `jobs` at a time: the rounds of targets split it.
rounds=$(((${#targets[@]} + jobs - 1) / jobs))
each=$((seconds / rounds))
[ "$each" -ge 1 ] || each=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A unit's timeout catches a hang, not a slow view: a view of verl's RL setup on 8 devices (the
# savings and the fit map, some 70 estimates) takes 5 s alone under the sanitizers here, and can
# take twice that beside the page's tests in the test command, past the 10 s it once had.
unit_timeout=60

run_target() {
  local target=$1
  mkdir -p "$work/$target"
  cp tests/fuzz/corpus/"$target"/* "$work/$target"/
  local status=0
  ./build-sanitize/fuzz_"$target" -max_total_time="$each" -print_final_stats=1 -timeout="$unit_timeout" \
    -artifact_prefix=build-sanitize/"$target"- "$work/$target" >"$work/$target.log" 2>&1 || status=$?
  echo "$status" >"$work/$target.status"
}

for ((start = 0; start < ${#targets[@]}; start += jobs)); do
  for target in "${targets[@]:start:jobs}"; do run_target "$target" & done
  wait
done

status=0
total=0
for target in "${targets[@]}"; do
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log")
  runs=${runs:-0}
  total=$((total + runs))
  printf '%-20s %10s executions in %s s\n' "$target" "$runs" "$each"
  if [ "$(cat "$work/$target.status")" != 0 ]; then
    status=1
    grep -E "ERROR|SUMMARY|invariant|Test unit written" "$work/$target.log" || true
    tail -30 "$work/$target.log"
  fi
done
echo "fuzz: $total executions over ${#targets[@]} targets in $seconds s, exit status $status"
exit "$status"
