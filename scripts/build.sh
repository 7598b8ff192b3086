#!/usr/bin/env bash
# Builds everything: the native core, CLI and tests (build/), the WebAssembly module
# (build-wasm/), and the page (dist/).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's emscripten needs its acorn from /usr/share/nodejs for optimised links.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=$(nproc 2>/dev/null || echo 2)
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON

# The native and WebAssembly builds side by side: each one's links (the WebAssembly modules'
# link-time optimisation, 25 s on one core) run while the other compiles.
source scripts/side-by-side.sh
export werror jobs
side_by_side \
  'cmake -S . -B build -DTRAINMEM_WARNINGS_AS_ERRORS=$werror >/dev/null && cmake --build build -j "$jobs"' \
  'emcmake cmake -S . -B build-wasm -DTRAINMEM_WARNINGS_AS_ERRORS=$werror >/dev/null && cmake --build build-wasm -j "$jobs"'

node scripts/build-web.mjs
