#!/bin/bash
# Decode at paper scale in simulation (issue 12): LLaMA 7B and 65B (fp16, random weights: the
# sim holds no data) on a100x8 (8 GPUs, the layers spread over them) and on one h100, each
# device capped at 25% of what its share of the weights, the KV cache and a step need.
# Prints, per point, the simulated decode time per token (steady state: after the first decode
# step, which fills the empty cache), the bytes moved per token, and the link bound: bytes
# (weights + KV - the devices' memory) over one device's host link (decode steps run one
# device at a time). The simulator is deterministic: three runs give one figure (checked).
# usage: bench/generate_sim.sh [TURNIP [generate flags, e.g. --plans layer]]
set -euo pipefail
T=${1:-build/turnip}
extra=("${@:2}")
cd "$(dirname "$0")/.."
printf '%-5s %-7s %-4s %-10s %-12s %-12s %-10s %-12s %-10s\n' model machine D cap "s/token" "GB/token" "bound GB" "bound s" "x bound"
for m in 7b 65b; do
    for mach in a100x8 h100; do
        D=1
        bw=50e9
        if [ "$mach" = a100x8 ]; then D=8; bw=25e9; fi
        runs=()
        for r in 1 2 3; do
            out=$("$T" generate --preset "$m" --backend sim --machine "$mach" --devices "$D" --seq-len 128 \
                --max-new-tokens 5 --device-mem 25% --no-verify ${extra[@]+"${extra[@]}"})
            runs+=("$(echo "$out" | grep -o '(run [0-9.]* s), moved .*')")
        done
        [ "${runs[0]}" = "${runs[1]}" ] && [ "${runs[1]}" = "${runs[2]}" ] || { echo "runs differ: ${runs[*]}"; exit 1; }
        # the steady state in run (virtual) time: the decode steps after the first
        line=$(echo "$out" | grep '^memory:')
        cap=$(echo "$line" | sed -n 's/.*; cap \([0-9.]* [KMGT]*i*B\).*/\1/p')
        python3 - "$out" "$bw" "$D" "$m" "$mach" "$cap" <<'EOF'
import re, sys
out, bw, D, m, mach, cap = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
u = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
steps = [(float(a), float(b), c) for a, b, c in re.findall(r"step \d+: decode [\d.]+ s \(run ([\d.]+) s\), moved ([\d.]+) (\w+)", out)]
bound = re.search(r"bound \(weights \+ KV - devices x cap\): ([\d.]+) (\w+)", out)
bb = float(bound.group(1)) * u[bound.group(2)]
steady = steps[1:]
t = sum(s[0] for s in steady) / len(steady)
by = sum(s[1] * u[s[2]] for s in steady) / len(steady)
tb = bb / bw
print("%-5s %-7s %-4d %-10s %-12.3f %-12.2f %-10.2f %-12.3f %-10s" % (m, mach, D, cap, t, by / 1e9, bb / 1e9, tb, "%.2f" % (t / tb) if tb else "-"))
EOF
    done
done
