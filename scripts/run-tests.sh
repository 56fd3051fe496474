#!/bin/bash
# All tests: install, build three times (plain; ASan+UBSan; TSan), run the whole CTest suite
# on the first two and the executor and session tests on the third; then run every fuzz target
# briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
scripts/build.sh build
(cd build && ctest --output-on-failure -j"$jobs")
scripts/build.sh build-asan -DTP_SANITIZE=address
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")
scripts/build.sh build-tsan -DTP_SANITIZE=thread
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j"$jobs" -R '^(exec|session)_')
# the fuzz targets (clang, ASan+UBSan, libFuzzer): a fixed seed and number of runs each, ~30 s
scripts/fuzz.sh ci
