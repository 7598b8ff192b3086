#!/usr/bin/env bash
# Installs what trainmem needs on Debian 12, and only what is missing: the compilers and C++
# libraries from apt (when run as root; otherwise it prints the apt-get line to run), then the
# pinned npm packages with `npm ci`. `--browser` adds Debian's Chromium, which the tests drive.
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
[ "${1:-}" = "--browser" ] && want_browser=1

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || missing+=(make)
command -v clang-format >/dev/null || missing+=(clang-format)
command -v clang++ >/dev/null || missing+=(clang)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 || missing+=(libclang-rt-14-dev)
command -v em++ >/dev/null || missing+=(emscripten)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ -f /usr/include/doctest/doctest.h ] || missing+=(doctest-dev)
[ -f /usr/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
[ -f /usr/include/CLI/CLI.hpp ] || missing+=(libcli11-dev)
[ -f /usr/include/toml++/toml.h ] || missing+=(libtomlplusplus-dev)
[ -f /usr/include/yaml-cpp/yaml.h ] || missing+=(libyaml-cpp-dev)
if [ "$want_browser" = 1 ]; then
  command -v chromium >/dev/null || missing+=(chromium)
  fc-list 2>/dev/null | grep -qi dejavu || missing+=(fonts-dejavu-core)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]} from apt"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing packages. Run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

# npm ci when node_modules is missing or older than the lock file.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
