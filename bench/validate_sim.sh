#!/bin/bash
# Does the sim backend with the measured cpu-local profile predict the cpu backend? Runs a
# matmul chain (bench_offload's workload, link throttled to 0.25 GB/s) and a tiny LLaMA
# prefill (1 device, same link) at caps of 100% and 25% of their unconstrained
# peaks, on the cpu backend (best of 3) and in simulation, and prints the relative error.
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
best() { sort -g | head -1; }
printf "%-26s %6s %12s %12s %8s\n" workload cap "cpu ms" "sim ms" error
peak=$("$T" plan "$D/chain.json" --device-mem 1TiB --order topo --stats -o /dev/null | tail -1 | grep -o '/ [0-9.]* [KMG]iB' | head -1 | tr -d '/ ' | numfmt --from=iec-i --suffix=B | tr -d B)
inputs=$(python3 -c "import json;print(sum(v.get('bytes',0) or 4*__import__('math').prod(v['shape']) for v in json.load(open('$D/chain.json'))['vertices'] if v['kind']=='input'))")
for pct in 100 25; do
    cap=$(( (peak + inputs) * pct / 100 ))
    m=$(for i in 1 2 3; do "$T" run "$D/chain.json" --device-mem $cap --plan-order topo --inputs "$D/chain.st" --out "$D/o.st" --link-bandwidth 0.25 --no-verify | ms; done | best)
    s=$("$T" sim "$D/chain.json" --machine $P --device-mem $cap --plan-order topo | ms)
    printf "%-26s %5s%% %12.2f %12.2f %7.1f%%\n" "matmul chain (24 layers)" $pct "$m" "$s" "$(echo "($s - $m) * 100 / $m" | bc -l)"
done
lpeak=$("$T" llama --preset tiny --seq-len 128 --device-mem 1TiB --no-data --blocks 4 --mlp-chunks 2 --vocab-chunks 2 | tail -1 | grep -o '/ [0-9]* ' | head -1 | tr -d '/ ')
for pct in 100 25; do
    cap=$(( lpeak * pct / 100 ))
    args=(--preset tiny --seq-len 128 --device-mem $cap --blocks 4 --mlp-chunks 2 --vocab-chunks 2)
    m=$(for i in 1 2 3; do "$T" llama "${args[@]}" --link-bandwidth 0.25 | ms; done | best)
    s=$("$T" llama "${args[@]}" --backend sim --machine $P | ms)
    printf "%-26s %5s%% %12.2f %12.2f %7.1f%%\n" "tiny LLaMA prefill (T=128)" $pct "$m" "$s" "$(echo "($s - $m) * 100 / $m" | bc -l)"
done
