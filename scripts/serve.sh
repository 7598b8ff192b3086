#!/usr/bin/env bash
# Builds the workshop and serves dist/ on http://localhost:${PORT:-8000}/ until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec node scripts/serve.mjs dist --port "${PORT:-8000}"
