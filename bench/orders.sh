#!/bin/bash
# Which serial order V should the planner default to? Plans each bundled example and a few
# generated graphs with every order at caps of 100%, 60% and 35% of the example's largest
# per-device unconstrained peak (clamped to the smallest feasible capacity), and prints
# bytes offloaded, bytes reloaded and memory dependencies added (the paper's measures of
# plan quality: less traffic, fewer constraints).
# usage: bench/orders.sh [TURNIP]
set -euo pipefail
T=${1:-build/turnip}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cp examples/*.json "$D/"
$T gen layered --devices 1 --layers 3 --heads 8 --chunks 4 --seq 1024 --head-dim 64 -o "$D/gen-1dev.json"
$T gen layered --devices 3 --layers 2 --heads 6 --chunks 3 --seq 768 --head-dim 64 -o "$D/gen-3dev.json"
$T gen layered --devices 2 --layers 4 --heads 2 --chunks 8 --seq 256 --head-dim 128 -o "$D/gen-mlpheavy.json"
printf "%-18s %5s %-7s %14s %14s %9s\n" graph cap order offloaded reloaded mem-deps
tot() { awk -v col="$1" '$1 ~ /^[0-9]+$/ {gsub(/[()]/,"",$0); print}' ; }
for g in "$D"/*.json; do
    name=$(basename "$g" .json)
    # the largest unconstrained peak over orders and devices, and the smallest feasible cap
    peak=0
    minf=0
    for o in topo dfs greedy; do
        line=$($T plan "$g" --device-mem 1TiB --order $o --stats -o /dev/null | tail -1)
        for v in $(grep -o '[0-9.]* [KMG]*i*B / [0-9.]* [KMG]*i*B' <<<"$line" | sed 's/ //g'); do
            f=$(cut -d/ -f1 <<<"$v" | numfmt --from=iec-i --suffix=B 2>/dev/null | tr -d B || echo 0)
            p=$(cut -d/ -f2 <<<"$v" | numfmt --from=iec-i --suffix=B 2>/dev/null | tr -d B || echo 0)
            [ "${f%.*}" -gt "$minf" ] && minf=${f%.*}
            [ "${p%.*}" -gt "$peak" ] && peak=${p%.*}
        done
    done
    for pct in 100 60 35; do
        cap=$((peak * pct / 100))
        [ "$cap" -lt "$minf" ] && cap=$minf
        for o in topo dfs greedy; do
            out=$($T plan "$g" --device-mem "$cap" --order $o --stats -o /dev/null)
            # sum over device rows: reloads bytes col, offloads bytes, mem-deps
            read -r off rel md < <(awk '$1 ~ /^[0-9]+$/ && NF >= 11 {
                    for (i = 1; i <= NF; i++) if ($i ~ /^\(/) { v = substr($i, 2) + 0; u = $(i+1); gsub(/\)/, "", u);
                        m = (u == "KiB") ? 1024 : (u == "MiB") ? 1048576 : (u == "GiB") ? 1073741824 : 1; b[++k] = v * m }
                    off += b[3]; rel += b[2]; md += $(NF-1); k = 0 }
                    END { printf "%d %d %d\n", off, rel, md }' <<<"$out")
            printf "%-18s %4s%% %-7s %14s %14s %9s\n" "$name" "$pct" "$o" "$off" "$rel" "$md"
        done
    done
done
