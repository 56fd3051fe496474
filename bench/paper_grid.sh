#!/bin/bash
# The paper's prefill grid in simulation (Figures 10-12): 7B and 65B, one sequence, 1K-32K
# tokens, on a100x8 (8 x 40 GB) and p100x4 (4 x 16 GB) at their real memory sizes, 16-bit
# weights; then the nondeterminism ablation: makespan(any) / makespan(fixed) over 20 seeds
# with jitter 0.3 on copies and kernels. Writes docs/sim/*.csv and *.png.
# usage: [RESIDUAL=scatter] [ATTENTION=scores] bench/paper_grid.sh [TURNIP] [ablation]   (ablation: skip the grid)
# RESIDUAL (gather, the default, or scatter: turnip llama --residual) names the files *-scatter.*;
# ATTENTION (fused, the default since 2026-11-24, or scores: turnip llama --attention) names the
# fused ones *-fused.* (the files without it are the scores attention's, the default before)
set -euo pipefail
T=${1:-build/turnip}
out=docs/sim
res=${RESIDUAL:-gather}
case $res in gather) sfx= ;; scatter) sfx=-scatter ;; *) echo "RESIDUAL must be gather or scatter" >&2; exit 2 ;; esac
att=${ATTENTION:-fused}
case $att in fused) sfx=$sfx-fused ;; scores) ;; *) echo "ATTENTION must be fused or scores" >&2; exit 2 ;; esac
mkdir -p $out
[ "${2:-}" = ablation ] || for m in 7b 65b; do
    for mach in a100x8 p100x4; do
        dev=$([ $mach = a100x8 ] && echo 8 || echo 4)
        $T llama --preset $m --devices $dev --backend sim --machine $mach --residual $res --attention $att --sweep-seq 1024,2048,4096,8192,16384,32768 \
            --csv $out/$m-$mach$sfx.csv --png $out/$m-$mach$sfx.png
    done
done
echo
echo "ablation: makespan(any) / makespan(fixed), jitter 0.3, seeds 1-20"
for point in "7b a100x8 8 16384" "65b a100x8 8 16384" "7b p100x4 4 8192" "65b p100x4 4 4096"; do
    set -- $point
    ratios=$(for s in $(seq 1 20); do
        a=$($T llama --preset $1 --devices $3 --backend sim --machine $2 --seq-len $4 --seed $s --jitter 0.3 --residual $res --attention $att --order any | grep -o 'makespan [0-9.]*' | head -1 | awk '{print $2}')
        f=$($T llama --preset $1 --devices $3 --backend sim --machine $2 --seq-len $4 --seed $s --jitter 0.3 --residual $res --attention $att --order fixed | grep -o 'makespan [0-9.]*' | head -1 | awk '{print $2}')
        echo "$a $f" | awk '{print $1 / $2}'
    done)
    echo "$ratios" | python3 -c "
import sys, statistics as st
r = sorted(float(x) for x in sys.stdin.read().split())
m = st.mean(r)
print(f'{\"$1 on $2, $4 tokens\":28s} mean {m:.4f} sd {st.stdev(r):.4f} min {r[0]:.4f} median {st.median(r):.4f} max {r[-1]:.4f} (any faster by {(1 / m - 1) * 100:.1f}%)')"
done
