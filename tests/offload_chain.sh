#!/bin/bash
# A chain derived from a training-shaped TaskGraph (scripts/chain_from_taskgraph.py, issue 14):
# its compute sum is the sim backend's kernel busy time for the same graph and profile (the
# simulator times the kernels itself, sharing no code with the script), its weights are the
# graph's weight inputs (counted here with python3), and every strategy plans it at or above
# the MILP bound, from the tightest memory to all weights resident.
# usage: offload_chain.sh TURNIP SOURCE_DIR
set -u
T=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/expect.sh"

expect 0 "" "$T" gen layered --devices 1 --layers 5 --heads 2 --chunks 2 --seq 256 --head-dim 64 --backward -o "$D/g.json"
busy=$("$T" sim "$D/g.json" --machine a100x8 2>&1 | sed -n 's/^totals:.*kernel busy \([0-9.e+-]*\) s.*/\1/p')
check "sim printed the kernel busy time ($busy)" test -n "$busy"
for f in 0 0.5 1; do
    expect 0 "chain: 5 layers" /usr/bin/python3 "$SRC/scripts/chain_from_taskgraph.py" "$D/g.json" --profile a100x8 --mem-frac "$f" -o "$D/c$f.json"
    check "chain $f: compute sum = sim busy, weights = the graph's" /usr/bin/python3 - "$D/c$f.json" "$D/g.json" "$busy" <<'PY'
import json, sys
c, g, busy = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
comp = sum(l["uf"] + l["ub"] for l in c["layers"])
wts = sum(v["bytes"] for v in g["vertices"] if v["kind"] == "input" and ".d0.w" in v["id"])
ok = abs(comp - busy) <= 1e-6 + 1e-3 * busy and sum(l["w"] for l in c["layers"]) == wts and len(c["layers"]) == 5
sys.exit(0 if ok else 1)
PY
    for a in greedy greedy-star l2l; do
        "$T" offload-plan "$D/c$f.json" --algo "$a" --bound --time-limit 20 >"$D/o.txt" 2>&1
        r=$(sed -n 's/^makespan\/bound \([0-9.]*\)$/\1/p' "$D/o.txt")
        check "$a at mem-frac $f: makespan/bound ($r) >= 1" /usr/bin/python3 -c "import sys; sys.exit(0 if float('${r:-0}') >= 1 - 1e-6 else 1)"
    done
done
expect 2 "not a regular file" /usr/bin/python3 "$SRC/scripts/chain_from_taskgraph.py" "$D/missing.json" --profile a100x8
finish offload_chain
