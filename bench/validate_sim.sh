#!/bin/bash
# Does the sim backend with the measured cpu-local profile predict the cpu backend? Runs a
# matmul chain (bench_offload's workload, link throttled to 0.25 GB/s) and a tiny LLaMA
# prefill (1 device, same link) at caps of 100% and 25% of their unconstrained
# peaks, on the cpu backend (5 runs: best, median, worst) and in simulation, and prints the
# relative error against the best and the median run.
# Run build/measure_cpu > profiles/cpu-local.json first, on a quiet machine.
# usage: bench/validate_sim.sh [BUILD_DIR]
set -euo pipefail
B=${1:-build}
T=$B/turnip
P=profiles/cpu-local.json
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
TP_BENCH_DUMP=$D/chain.json timeout 2 "$B/bench_offload" --quick >/dev/null 2>&1 || true
"$T" gen inputs "$D/chain.json" -o "$D/chain.st"
ms() { grep -o 'makespan [0-9.]*' | head -1 | awk '{print $2}'; }
# five cpu-backend makespans in, "best median worst" out
spread() { sort -g | awk '{v[NR] = $1} END {print v[1], v[3], v[5]}'; }
row() { # name pct "best median worst" sim
    read -r b m w <<<"$3"
    printf "%-26s %5s%% %9.2f %9.2f %9.2f %9.2f %8.1f%% %8.1f%%\n" "$1" "$2" "$b" "$m" "$w" "$4" \
        "$(echo "($4 - $b) * 100 / $b" | bc -l)" "$(echo "($4 - $m) * 100 / $m" | bc -l)"
}
printf "%-26s %6s %9s %9s %9s %9s %9s %9s\n" workload cap "cpu best" median worst "sim ms" "vs best" "vs median"
peak=$("$T" plan "$D/chain.json" --device-mem 1TiB --order topo --stats -o /dev/null | tail -1 | grep -o '/ [0-9.]* [KMG]iB' | head -1 | tr -d '/ ' | numfmt --from=iec-i --suffix=B | tr -d B)
inputs=$(python3 -c "import json;print(sum(v.get('bytes',0) or 4*__import__('math').prod(v['shape']) for v in json.load(open('$D/chain.json'))['vertices'] if v['kind']=='input'))")
for pct in 100 25; do
    cap=$(( (peak + inputs) * pct / 100 ))
    m=$(for i in 1 2 3 4 5; do "$T" run "$D/chain.json" --device-mem $cap --plan-order topo --inputs "$D/chain.st" --out "$D/o.st" --link-bandwidth 0.25 --no-verify | ms; done | spread)
    s=$("$T" sim "$D/chain.json" --machine $P --device-mem $cap --plan-order topo | ms)
    row "matmul chain (24 layers)" $pct "$m" "$s"
done
lpeak=$("$T" llama --preset tiny --seq-len 128 --device-mem 1TiB --no-data --blocks 4 --mlp-chunks 2 --vocab-chunks 2 | tail -1 | grep -o '/ [0-9]* ' | head -1 | tr -d '/ ')
for pct in 100 25; do
    cap=$(( lpeak * pct / 100 ))
    args=(--preset tiny --seq-len 128 --device-mem $cap --blocks 4 --mlp-chunks 2 --vocab-chunks 2)
    m=$(for i in 1 2 3 4 5; do "$T" llama "${args[@]}" --link-bandwidth 0.25 | ms; done | spread)
    s=$("$T" llama "${args[@]}" --backend sim --machine $P | ms)
    row "tiny LLaMA prefill (T=128)" $pct "$m" "$s"
done
