#!/bin/bash
# bench_plan_llama at 16K, one run: three configurations (fused at 40 GiB, fused at 6 GiB, scores
# at 40 GiB) with the blocks each attention picks, and the default's MemGraph the size of the one
# `turnip llama` plans for the same command (the bench must time what a user runs), its positions
# the TaskGraph's non-input vertices as turnip llama counts them.
# usage: bench_plan_llama.sh BENCH TURNIP
set -euo pipefail
B=$1 T=$2
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
out=$("$B" --max-seq 16384 --runs 1) || fail "bench_plan_llama exit $?"
[ "$(grep -c '^== ' <<<"$out")" = 3 ] || fail "three configurations"
row() { awk -v c="$1" '/^== /{cur=$2} cur==c":" && $1=="16384"{print $2, $4, $14}' <<<"$out"; }
read -r db dv dp <<<"$(row default)"
read -r gb _ <<<"$(row 6gib)"
read -r sb sv _ <<<"$(row scores)"
[ "$db" = 2 ] && [ "$gb" = 6 ] && [ "$sb" = 1 ] || fail "blocks $db $gb $sb, wanted 2 6 1 (8192 rows; 3072 rows at 6 GiB; scores 1)"
lo=$("$T" llama --preset 65b --devices 8 --device-mem 40GiB --no-data --seq-len 16384)
want=$(sed -n 's/^plan: \([0-9]*\) vertices.*/\1/p' <<<"$lo")
[ "$dv" = "$want" ] || fail "default's MemGraph $dv vertices, turnip llama plans $want"
want=$(sed -n 's/^TaskGraph: \([0-9]*\) non-input vertices.*/\1/p' <<<"$lo")
[ "$dp" = "$want" ] || fail "default's positions $dp, turnip llama's TaskGraph has $want non-input vertices"
want=$("$T" llama --preset 65b --devices 8 --device-mem 40GiB --no-data --seq-len 16384 --attention scores | sed -n 's/^plan: \([0-9]*\) vertices.*/\1/p')
[ "$sv" = "$want" ] || fail "scores' MemGraph $sv vertices, turnip llama --attention scores plans $want"
echo "ok: blocks 2 / 6 / 1, MemGraphs as turnip llama plans them ($dv, $sv vertices), $dp positions"
