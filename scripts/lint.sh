#!/usr/bin/env bash
# Checks formatting: clang-format for C++, prettier for the page, tests and scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
clang-format --dry-run -Werror cpp/*/*.cpp cpp/*/*.hpp cpp/src/*/*.cpp cpp/src/*/*.hpp \
  cpp/include/trainmem/*.hpp tests/cpp/*.cpp tests/fuzz/*.cpp tests/fuzz/*.hpp
npx prettier --check --log-level warn web tests scripts
echo "lint: formatting is clean"
