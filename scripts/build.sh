#!/bin/bash
# Configures and builds into DIR (default build/) with extra CMake arguments. Quiet unless
# something fails; the full log is DIR/build.log.
# usage: scripts/build.sh [DIR] [CMAKE ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
mkdir -p "$dir"
echo "building $dir ..."
if ! { cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" && cmake --build "$dir" -j"$(nproc)"; } >"$dir/build.log" 2>&1; then
    tail -40 "$dir/build.log"
    echo "build failed; full log: $dir/build.log" >&2
    exit 1
fi
