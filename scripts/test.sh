#!/usr/bin/env bash
# Runs every test: formatting; the C++ core and CLI under ctest, plainly, then built to
# WebAssembly and run under Node, then under address and undefined-behaviour sanitizers; a bounded
# libFuzzer run of each of the core's entries, over the same sanitized build; the WebAssembly
# modules under Node; and the built page in Debian's Chromium.
# Installs what is missing first (see scripts/setup.sh). Each phase says how long it took, and the
# end lists them all.
set -euo pipefail
cd "$(dirname "$0")/.."

timings=()
phase_name=""
phase_start=$SECONDS
test_start=$SECONDS
# Ends the phase under way (saying its time) and, given a name, starts the next.
phase() {
  if [ -n "$phase_name" ]; then
    local took=$((SECONDS - phase_start))
    timings+=("$(printf '%5d s  %s' "$took" "$phase_name")")
    echo "-- $phase_name: ${took} s"
  fi
  phase_name="${1:-}"
  phase_start=$SECONDS
  [ -z "$phase_name" ] || echo "== $phase_name"
}
summary() {
  local status=$?
  phase
  echo "== Each phase's time (total $((SECONDS - test_start)) s)"
  printf '%s\n' "${timings[@]}"
  return $status
}
trap summary EXIT

phase "Installing what is missing"
bash scripts/setup.sh --browser

jobs=$(nproc 2>/dev/null || echo 2)
export jobs
# The same suites built to WebAssembly against the page's core objects (only this script builds
# them; em++ needs acorn) run when TRAINMEM_WASM_SUITES=1: a third of the test builds and the
# longest single-threaded run, which would take the command past 15 minutes on two cores. The
# page's own modules run under Node and Chromium either way.
wasm_suites=${TRAINMEM_WASM_SUITES:-0}
sanitized_build='CC=clang CXX=clang++ cmake -S . -B build-sanitize -DTRAINMEM_SANITIZE=ON >/dev/null && cmake --build build-sanitize -j "$jobs"'
# The build's last minute is one link on one core (trainmem-full.wasm's link-time optimisation,
# while the native build has ended): the sanitized build starts beside it at the lowest priority
# (nice 19), on what the build leaves idle, and goes on beside the page's tests, which it yields
# to. Its status and output wait in files for the phase that runs its suites.
sanitized_log=$(mktemp)
sanitized_status=$(mktemp -u)
export sanitized_log sanitized_status
if [ "$wasm_suites" != 1 ]; then
  (
    status=0
    nice -n 19 bash -c "set -euo pipefail; $sanitized_build" >"$sanitized_log" 2>&1 || status=$?
    echo "$status" >"$sanitized_status"
  ) &
fi
phase "Building (native, WebAssembly, the page; the sanitized build started beside, at the lowest priority)"
bash scripts/build.sh

phase "Formatting"
bash scripts/lint.sh

# Three cases repeat code over thousands of setups, and run natively alone. The searches for the
# fewest devices over Llama 3 405B, under Megatron-LM (some 8,000 steps replayed: 4 s natively, 51 s
# in the page's -Oz core and 85 s under the sanitizers) and under torchtitan (1 s natively, 13 s
# sanitized): the WebAssembly and sanitized builds run the same search code in the smaller searches
# of fit_test.cpp. The plate's view against the full estimate over every preset, 18 setups each
# (3 s natively, 23 s sanitized): they run the same two views in the plate's other cases.
export slow_case='fewest devices: 126 layers*,torchtitan tp: the fewest-devices search*,plate: the plate*for every preset'
source scripts/side-by-side.sh

# Each build's suites in one process (each single-threaded). ctest lists each doctest case as a
# test of its own for a developer (ctest --test-dir build), and a name CMake splits in two, at a
# ';', would pass there without running: the counts must agree. Under the sanitizers, one
# process, not one a case (each sanitized start costs a quarter of a second).
native='
  build/trainmem_tests --no-colors
  cases=$(build/trainmem_tests --count --no-colors | sed -n "s/.*current filters: \([0-9]*\).*/\1/p")
  listed=$(ctest --test-dir build -N | sed -n "s/^Total Tests: \([0-9]*\)$/\1/p")
  if [ "$((cases + 2))" != "$listed" ]; then
    echo "ctest lists $listed tests for $cases doctest cases and 2 CLI runs: is a ; in a test name?" >&2
    exit 1
  fi
  ctest --test-dir build --output-on-failure --no-tests=error -R "^cli\."'
sanitized='
  build-sanitize/trainmem_tests --no-colors --test-case-exclude="$slow_case"
  ctest --test-dir build-sanitize --output-on-failure --no-tests=error -R "^cli\."'
# The test command's fuzzing is a bounded smoke run (20 s, against `npm run fuzz`'s 30): it is on
# the command's longest path.
export FUZZ_SECONDS=${FUZZ_SECONDS:-20}
# The page's suites in one process, sharing one Chromium (tests/run-page-tests.mjs).
page_tests='node --test-reporter=spec tests/run-page-tests.mjs'
if [ "$wasm_suites" = 1 ]; then
  phase "The suites built to WebAssembly, and sanitized with the fuzz targets (clang), side by side"
  side_by_side \
    'NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH} cmake --build build-wasm --target trainmem_tests -j "$jobs"' \
    "$sanitized_build"
  phase "The C++ core and CLI's suites: native, sanitized and WebAssembly under Node, side by side"
  side_by_side "$native $sanitized" \
    'node build-wasm/trainmem_tests.js --no-colors --test-case-exclude="$slow_case"'
  phase "Fuzzing the core's entries for ${FUZZ_SECONDS} s (libFuzzer)"
  bash scripts/fuzz.sh
  phase "WebAssembly modules, the API's types and the page (one node process)"
  bash -c "set -euo pipefail; $page_tests"
else
  # The page's tests (one process, one Chromium: tests/run-page-tests.mjs) keep most of both cores
  # busy for some 380 s (Chromium's renderer and compositor beside Node); beside them, on what they
  # leave, runs the rest: the sanitized build (build-sanitize, flags in CMakeLists.txt; begun
  # beside the build phase), whose core is compiled once with libFuzzer's coverage and linked into
  # the suites and the fuzz targets (the readers and the CLI at -O0 there: CMakeLists.txt); then
  # the sanitized suites, single-threaded, then the native suites (built in the build phase), and
  # beside them the fuzz targets' bounded run.
  phase "Beside the page's tests (the WebAssembly modules, the API's types and the page, one node process): the suites sanitized with the fuzz targets (clang), run, the C++ core and CLI's native suites, and fuzzing the core's entries for ${FUZZ_SECONDS} s (libFuzzer)"
  # The sanitized suites (single-threaded) and the fuzzing (bounded in wall time) were the
  # command's longest path one after the other (596 s against the page's side's 541 s at 1a71f5e,
  # 929 s in all). The fuzzing starts on the first core freed: when the page's side has ended,
  # beside the sanitized suites, or when they have, beside the page's tests. Started beside both,
  # its targets barely passed their seeds (8 executions of the estimate's in its 4 s). The page's
  # tests were the longer side at 4eb9612 (516 s, and the native suites 19 s after them, against
  # 524 s), so the native suites run on this side.
  export page_done suites_done
  page_done=$(mktemp -u)
  suites_done=$(mktemp -u)
  side_by_side "
    while [ ! -e \"\$sanitized_status\" ]; do sleep 1; done
    cat \"\$sanitized_log\"
    [ \"\$(cat \"\$sanitized_status\")\" = 0 ] || { echo 'the sanitized build failed' >&2; exit 1; }
    echo \"-- beside the page's tests: the sanitized build ended by \${SECONDS} s\"
    fuzz_log=\$(mktemp)
    (
      while [ ! -e \"\$page_done\" ] && [ ! -e \"\$suites_done\" ]; do sleep 1; done
      bash scripts/fuzz.sh
    ) >\"\$fuzz_log\" 2>&1 &
    fuzzing=\$!
    trap \"kill \$fuzzing 2>/dev/null || true\" EXIT
    $sanitized
    touch \"\$suites_done\"
    echo \"-- beside the page's tests: the sanitized suites ended at \${SECONDS} s\"
    $native
    echo \"-- beside the page's tests: the native suites ended at \${SECONDS} s\"
    fuzzed=0
    wait \"\$fuzzing\" || fuzzed=\$?
    cat \"\$fuzz_log\"
    rm -f \"\$fuzz_log\"
    echo \"-- beside the page's tests: fuzzing ended by \${SECONDS} s\"
    exit \"\$fuzzed\"" \
    "
    trap 'touch \"\$page_done\"' EXIT
    $page_tests
    echo \"-- the page's tests ended at \${SECONDS} s\""
  rm -f "$page_done" "$suites_done" "$sanitized_log" "$sanitized_status"
fi
