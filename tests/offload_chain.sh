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
# hostile graphs: each a one-line refusal (exit 2), no traceback
/usr/bin/python3 - "$D/g.json" "$D" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
k = next(i for i, v in enumerate(g["vertices"]) if v["kind"] == "kernel")
def bad(name, f):
    h = json.loads(json.dumps(g)); f(h); json.dump(h, open("%s/bad-%s.json" % (sys.argv[2], name), "w"))
bad("bytes", lambda h: h["vertices"][k].__setitem__("bytes", -1))
bad("inplace", lambda h: h["vertices"][k].__setitem__("inplace", 99))
bad("flops", lambda h: h["vertices"][k].__setitem__("flops", "x"))
bad("input", lambda h: h["vertices"][k].__setitem__("inputs", ["nowhere"]))
used = {x for v in g["vertices"] for x in v.get("inputs", [])}
sink = next(i for i, v in enumerate(g["vertices"]) if v["kind"] == "kernel" and v["id"] not in used)
bad("layer", lambda h: h["vertices"][sink].__setitem__("id", "L999999999.d0.x"))
# no layer before the loss layer: layer 0 alone, and inputs alone
h = {"format": "turnip.taskgraph/1", "devices": 1, "outputs": ["L0.d0.k"], "vertices": [
    {"id": "L0.d0.w", "kind": "input", "device": 0, "bytes": 16},
    {"id": "L0.d0.k", "kind": "kernel", "device": 0, "op": "opaque", "inputs": ["L0.d0.w"], "bytes": 16}]}
json.dump(h, open("%s/bad-nolayer.json" % sys.argv[2], "w"))
h = {"format": "turnip.taskgraph/1", "devices": 1, "outputs": ["L-1.d0.a"], "vertices": [
    {"id": "L-1.d0.a", "kind": "input", "device": 0, "bytes": 16}]}
json.dump(h, open("%s/bad-inputs.json" % sys.argv[2], "w"))
PY
EXPECT_ONE_LINE=1
for b in "bytes:bytes must be an integer" "inplace:inplace must index its inputs" "flops:flops must be a finite number" \
    "input:inputs must name vertices" "layer:layer 999999999 with only" "nolayer:no layers" "inputs:no layers"; do
    expect 2 "${b#*:}" /usr/bin/python3 "$SRC/scripts/chain_from_taskgraph.py" "$D/bad-${b%%:*}.json" --profile a100x8
done
finish offload_chain
