#!/bin/bash
# Configures and builds into DIR (default build/) with extra CMake arguments.
# usage: scripts/build.sh [DIR] [CMAKE ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
