#!/bin/bash
# Sessions (issue 11): `turnip llama --repeat 3` on the cpu backend with a 4-layer tiny LLaMA
# (f32, hidden 256) at a cap where the whole model fits (3x its weights: the plan at an unlimited
# cap peaks at 2.2x, its allocation horizon prefetching everything) and at 50% of the weights;
# prints, per run, the host-to-device bytes moved beside the input bytes that were not resident
# at its start (the bound) and whether the bound holds, and the makespans of three invocations
# (min / median / max). Needs build/turnip (scripts/build.sh).
# usage: bench/repeat.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/repeat}
mkdir -p "$out"
T=build/turnip
/usr/bin/python3 scripts/make_tiny_llama.py "$out/llama4" --layers 4 >/dev/null
w=$(stat -c %s "$out/llama4/model.safetensors")
echo "machine: $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2}'), $(nproc) cores; checkpoint $w bytes (4 layers, f32)"
for label in 100 50; do
    cap=$((label == 100 ? w * 3 : w / 2))
    echo "== cap $cap B ($([ $label = 100 ] && echo 'the model fits: 3x the weights' || echo '50% of the weights'))"
    for rep in 1 2 3; do
        $T llama --model "$out/llama4" --seq-len 128 --device-mem "$cap" --repeat 3 >"$out/run_${label}_$rep.txt"
    done
    grep -E "^run [0-9]+ of" "$out/run_${label}_1.txt" |
        sed 's/\(.*moved h2d \([0-9]*\) B.*not resident \([0-9]*\) B\)/\1 -> bound: \2 <= \3/'
    grep -E "^run [0-9]+ of" "$out/run_${label}_1.txt" | while read -r line; do
        m=$(sed 's/.*moved h2d \([0-9]*\) B.*/\1/' <<<"$line"); nr=$(sed 's/.*not resident \([0-9]*\) B.*/\1/' <<<"$line")
        [ "$m" -le "$nr" ] || echo "BOUND MISSED: $line"
    done
    for r in 1 2 3; do
        ms=$(for rep in 1 2 3; do grep "^run $r of" "$out/run_${label}_$rep.txt" | sed 's/.*makespan \([0-9.]*\) s.*/\1/'; done | sort -n | tr '\n' ' ')
        echo "run $r makespan min / median / max over 3 invocations: $(echo $ms | awk '{print $1 " / " $2 " / " $3}') s"
    done
done
