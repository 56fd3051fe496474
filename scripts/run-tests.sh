#!/bin/bash
# All tests: install, build twice (plain, and ASan+UBSan), run the CTest suite on both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
scripts/build.sh build
(cd build && ctest --output-on-failure -j"$jobs")
scripts/build.sh build-asan -DTP_SANITIZE=address
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")
