#!/bin/bash
# Builds the libFuzzer targets (fuzz/, clang with ASan+UBSan) into build-fuzz/ and runs each for
# SECONDS (default 30) on its seed corpus (fuzz/corpus/TARGET, read only; new inputs go to
# build-fuzz/corpus/TARGET). A crash leaves its input in build-fuzz/crash-TARGET-* and fails.
# `scripts/fuzz.sh ci` (what scripts/run-tests.sh runs): each target a fixed number of runs from
# a fixed seed, about 30 s each on the 2-core machines, so CI is reproducible.
# usage: scripts/fuzz.sh [SECONDS|ci] [TARGET...]     e.g. scripts/fuzz.sh 1800 taskgraph
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
ci=0
if [ "$secs" = ci ]; then ci=1; secs=600; fi
case "$secs" in '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS|ci] [TARGET...]" >&2; exit 2 ;; esac
declare -A ci_runs=([taskgraph]=100000 [memgraph]=200000 [planfile]=60000 [safetensors]=900000 [config]=1500000 [sizes]=10000000 [profile]=600000 [index]=100000)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(taskgraph memgraph planfile safetensors config sizes profile index)
CC=clang scripts/build.sh build-fuzz -DTP_FUZZ=ON -DTP_CUDA=OFF
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fail=0
ok=0
for t in "${targets[@]}"; do
    [ -x "build-fuzz/fuzz/fuzz_$t" ] || { echo "no fuzz target '$t'" >&2; exit 2; }
    mkdir -p "build-fuzz/corpus/$t"
    log="build-fuzz/fuzz-$t.log"
    extra=()
    if [ $ci = 1 ]; then # a fresh corpus dir, a fixed seed and a fixed number of runs
        rm -rf "build-fuzz/corpus/$t" && mkdir -p "build-fuzz/corpus/$t"
        extra=(-seed=1 -runs="${ci_runs[$t]}")
    fi
    if build-fuzz/fuzz/fuzz_"$t" "${extra[@]}" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
        -artifact_prefix="build-fuzz/crash-$t-" -print_final_stats=1 \
        "build-fuzz/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
        echo "fuzz $t: ${runs:-?} executions, ${cov:-cov: ?} edges, no crash"
        ok=$((ok + 1))
    else
        echo "fuzz $t: FAILED (input and trace: $log, build-fuzz/crash-$t-*)"
        tail -30 "$log"
        fail=$((fail + 1))
    fi
done
echo "fuzz: $ok passed, $fail failed"
[ "$fail" -eq 0 ]
