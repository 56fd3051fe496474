#!/bin/bash
# Weight offloading inside turnip (issue 14, part 5): a chain's iteration as a TaskGraph
# (offload-plan --taskgraph --sim-profile), planned by turnip's own eviction and with each
# strategy's directed evictions (--weight-offload), verified and simulated (tests/test_offload_graph.c
# runs such plans on the cpu backend too).
# The TaskGraph's structure is checked with python3 (every layer's X, G, U and F, the start state
# of the schedule); the simulated kernel time is the chain's compute sum; on gpt2-38-b16 the
# greedy strategy comes within 2% of the compute sum (its proved bound) and beats the planner's
# own eviction; misuse exits 2 with one line.
# usage: offload_inside.sh TURNIP SOURCE_DIR
set -u
T=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/expect.sh"

C="$SRC/examples/chains/gpt2-38-b16.json"
expect 0 "algo greedy" "$T" offload-plan "$C" --taskgraph "$D/g.json" --sim-profile "$D/p.json" --schedule "$D/s.json"
check "the TaskGraph has every layer's operations and the schedule's start state" /usr/bin/python3 - "$D/g.json" "$D/s.json" "$C" <<'PY'
import json, sys
g, s, c = (json.load(open(p)) for p in sys.argv[1:4])
L = len(c["layers"])
v = {x["id"]: x for x in g["vertices"]}
ok = g["devices"] == 1 and len(v) == len(g["vertices"])
for k in range(1, L + 1):
    ok &= all(n in v for n in ("w%d" % k, "G%d" % k, "U%d" % k, "F%d" % k)) and (k == 1 or "X%d" % k in v)
    ok &= v["w%d" % k]["bytes"] == max(1, c["layers"][k - 1]["w"])
    ok &= ("resident" in v["w%d" % k]) == bool(s["resident0"][k - 1])
    ok &= v["U%d" % k]["inputs"][0] == "w%d" % k and "U%d" % k in v["F%d" % k]["inputs"]
ok &= all("resident" in v["a%d" % i] for i in range(L + 1))
sys.exit(0 if ok else 1)
PY
compute=$(/usr/bin/python3 -c "import json,sys; print(sum(l['uf']+l['ub'] for l in json.load(open(sys.argv[1]))['layers']))" "$C")
for w in none greedy greedy-star l2l; do
    flag=(); [ "$w" = none ] || flag=(--weight-offload "$w")
    expect 0 "" "$T" plan "$D/g.json" --device-mem "$(sed -n 's/^ "device_mem": \([0-9]*\),$/\1/p' "$D/p.json")" --order topo "${flag[@]}" -o "$D/m-$w.json"
    expect 0 "" "$T" verify "$D/m-$w.json" --taskgraph "$D/g.json"
    for o in any fixed; do
        "$T" sim "$D/g.json" --machine "$D/p.json" --plan-order topo --order "$o" "${flag[@]}" >"$D/sim-$w-$o.txt" 2>&1
        check "sim $w $o ran" grep -q "^totals: makespan" "$D/sim-$w-$o.txt"
    done
done
check "kernel time is the compute sum; greedy (fixed) within 2% of it and faster than turnip's own" /usr/bin/python3 - "$D" "$compute" <<'PY'
import re, sys
d, comp = sys.argv[1], float(sys.argv[2])
def get(w, o):
    t = open("%s/sim-%s-%s.txt" % (d, w, o)).read()
    m = re.search(r"totals: makespan ([0-9.e+-]+) s, kernel busy ([0-9.e+-]+) s", t)
    return float(m.group(1)), float(m.group(2))
ok = True
for w in ("none", "greedy", "greedy-star", "l2l"):
    for o in ("any", "fixed"):
        mk, busy = get(w, o)
        ok &= abs(busy - comp) <= 1e-6 * comp and mk >= comp * (1 - 1e-9)
g, n = get("greedy", "fixed")[0], get("none", "fixed")[0]
print("greedy %.4f, own %.4f of the compute sum" % (g / comp, n / comp))
sys.exit(0 if ok and g <= 1.02 * comp and g < n else 1)
PY
# a small chain: the directed evictions show in the plan statistics
cat >"$D/small.json" <<'J'
{"format": "turnip.chain/1", "mgpu": 200000, "beta": 1e8, "a0": 4096,
 "layers": [{"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}, {"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096},
            {"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}, {"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}]}
J
expect 0 "algo greedy" "$T" offload-plan "$D/small.json" --taskgraph "$D/sg.json"
expect 0 "directed evictions" "$T" plan "$D/sg.json" --device-mem 200000 --order topo --weight-offload greedy --stats -o "$D/sm.json"
expect 0 "" "$T" verify "$D/sm.json" --taskgraph "$D/sg.json"
# misuse
expect 2 "not a chain graph" "$T" sim "$SRC/examples/figure3.json" --machine "$D/p.json" --weight-offload greedy
expect 2 "--algo milp makes no schedule" "$T" offload-plan "$C" --algo milp --taskgraph "$D/x.json"
expect 2 "--weight-offload" "$T" plan "$D/g.json" --device-mem 1GiB --weight-offload belady
expect 2 "the chain's own order" "$T" plan "$D/g.json" --device-mem 15GiB --order dfs --weight-offload greedy
expect 2 "--flops is for --taskgraph" "$T" offload-plan "$C" --flops 1e9
expect 2 "unknown" "$T" run "$D/g.json" --device-mem 15GiB --inputs x --out y --weight-offload greedy
check "no TaskGraph written by a refused command" test ! -e "$D/x.json"
finish offload_inside
