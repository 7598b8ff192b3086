#!/usr/bin/env bash
# Runs every test: the C++ core and CLI under ctest, the WebAssembly module under Node, and the
# built page in Debian's Chromium. Installs what is missing first (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
bash scripts/build.sh

echo "== Formatting"
bash scripts/lint.sh

echo "== C++ core and CLI (ctest)"
ctest --test-dir build --output-on-failure

echo "== WebAssembly module and page (node --test)"
node --test --test-reporter=spec tests/node/*.test.mjs tests/browser/*.test.mjs
