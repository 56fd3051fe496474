#!/bin/bash
# LoRA training at the paper's points in simulation (issue 13; shared/papers/turnip-paper.txt,
# section 7, Figure 13): LLaMA 7B at 1K tokens, batch 8 and 32, on a100x8 and p100x4, and 65B at
# 1K, batch 8, on a100x8; weights in f32 as the paper stores them for training; r 16 on all seven
# projections; each device capped at the machine's memory. Per point: the simulated time of step 1
# (every weight loaded from the host: a single batch, as the paper times it) and of step 2 (what
# fit stayed on the devices), the bytes moved, and the paper's TURNIP and ZeRO-Infinity figures
# where it gives them. The simulator is deterministic without jitter: one run per point (three
# runs of the first point are checked equal). Then the nondeterminism ablation: step 1's time with
# --order any over --order fixed, 20 seeds, jitter 0.3 on kernels and copies (as
# bench/paper_grid.sh's prefill ablation), beside the paper's 13.4% (A100) and 14.5% (P100).
# usage: bench/train_sim.sh [TURNIP] [points|ablation]   (default: both)
set -euo pipefail
T=${1:-build/turnip}
what=${2:-both}
cd "$(dirname "$0")/.."

step() { # preset machine devices batch [extra flags...] -> "t1 t2 moved1 moved2"
    local m=$1 mach=$2 dev=$3 b=$4
    shift 4
    "$T" train --preset "$m" --weights-dtype f32 --seq-len 1024 --batch "$b" --devices "$dev" --backend sim \
        --machine "$mach" --steps 2 --no-verify "$@" >/tmp/tp-train-sim.$$ 2>&1 || { cat /tmp/tp-train-sim.$$ >&2; exit 1; }
    awk '
        /^step 1:/ { sub(/.*run /, ""); t1 = $1; m1 = $(NF-1) " " $NF }
        /^step 2:/ { sub(/.*run /, ""); t2 = $1; m2 = $(NF-1) " " $NF }
        END { printf "%s %s %s %s\n", t1, t2, m1, m2 }' /tmp/tp-train-sim.$$
}

if [ "$what" != ablation ]; then
    echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores (the simulator's own host; times below are simulated)"
    a=$(step 7b a100x8 8 8); b=$(step 7b a100x8 8 8); c=$(step 7b a100x8 8 8)
    [ "$a" = "$b" ] && [ "$b" = "$c" ] || { echo "simulated runs differ: $a / $b / $c"; exit 1; }
    printf '%-5s %-7s %-2s %-5s %10s %10s %12s %12s   %s\n' model machine D batch "step 1 s" "step 2 s" "moved 1" "moved 2" "paper (TURNIP / ZeRO-Infinity)"
    for point in "7b a100x8 8 8 5.6 s / 12.5 s" "7b a100x8 8 32 12.1 s / 17.8 s" "7b p100x4 4 8 Figure 13 (no figure in the text)" \
                 "7b p100x4 4 32 Figure 13 (no figure in the text)" "65b a100x8 8 8 58.5 s / 72.9 s"; do
        set -- $point
        r=$(step "$1" "$2" "$3" "$4")
        set -- $point
        m=$1 mach=$2 dev=$3 b=$4
        shift 4
        read -r t1 t2 m1a m1b m2a m2b <<<"$r"
        printf '%-5s %-7s %-2s %-5s %10s %10s %12s %12s   %s\n' "$m" "$mach" "$dev" "$b" "$t1" "$t2" "$m1a $m1b" "$m2a $m2b" "$*"
    done
fi
if [ "$what" != points ]; then
    echo "ablation: step 1 (any) / step 1 (fixed), 7B, 1K tokens, batch 8, jitter 0.3, seeds 1-20"
    for point in "a100x8 8 13.4" "p100x4 4 14.5"; do
        set -- $point
        ratios=$(for s in $(seq 1 20); do
            a=$(step 7b "$1" "$2" 8 --order any --seed "$s" --jitter 0.3 | cut -d' ' -f1)
            f=$(step 7b "$1" "$2" 8 --order fixed --seed "$s" --jitter 0.3 | cut -d' ' -f1)
            echo "$a $f"
        done)
        echo "$ratios" | awk '{ printf "%.6f\n", $1 / $2 }' | sort -g | awk -v m="$1" -v p="$3" '
            { r[NR] = $1; s += $1; ss += $1 * $1 }
            END { n = NR; mean = s / n; sd = sqrt(ss / n - mean * mean)
                  printf "7b on %s: mean %.4f sd %.4f min %.4f median %.4f max %.4f (any faster by %.1f%%; the paper: %s%%)\n",
                         m, mean, sd, r[1], (r[int((n + 1) / 2)] + r[int(n / 2) + 1]) / 2, r[n], (1 - mean) * 100, p }'
    done
fi
rm -f /tmp/tp-train-sim.$$
