#!/bin/bash
# Weight offloading inside turnip (issue 14, part 5): a chain's iteration as a TaskGraph
# (offload-plan --taskgraph --sim-profile), planned by turnip's own eviction and with each
# strategy's directed evictions (--weight-offload), verified and simulated (tests/test_offload_graph.c
# runs such plans on the cpu backend too), and run by turnip run on the cpu backend (a session
# of the plan's sizes, resident inputs at zeros) with opaque kernels that take flops / --opaque-rate.
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
for w in none greedy greedy-star l2l; do
    flag=(); [ "$w" = none ] || flag=(--weight-offload "$w")
    expect 0 "" "$T" plan "$D/g.json" --device-mem "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device_mem"])' "$D/p.json")" --order topo "${flag[@]}" -o "$D/m-$w.json"
    expect 0 "" "$T" verify "$D/m-$w.json" --taskgraph "$D/g.json"
    for o in any fixed; do
        "$T" sim "$D/g.json" --machine "$D/p.json" --plan-order topo --order "$o" "${flag[@]}" >"$D/sim-$w-$o.txt" 2>&1
        check "sim $w $o ran" grep -q "^totals: makespan" "$D/sim-$w-$o.txt"
    done
done
# every run: kernel time is the compute sum, makespan at least it; greedy (fixed) within 2% of
# it (tests/sim_within.py) and faster than turnip's own eviction
for w in none greedy greedy-star l2l; do
    for o in any fixed; do
        hi=(); [ "$w/$o" = greedy/fixed ] && hi=(--hi 1.02) # else no upper bound
        check "sim $w $o: kernel time the compute sum, makespan at least it${hi[1]:+, within ${hi[1]} x it}" \
            /usr/bin/python3 "$SRC/tests/sim_within.py" "$D/sim-$w-$o.txt" --chain "$C" ${hi[@]+"${hi[@]}"}
    done
done
mk() { sed -n 's/^totals: makespan \([0-9.e+-]*\) s.*/\1/p' "$1"; }
check "greedy (fixed) faster than turnip's own" /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) >= float(sys.argv[2]))' \
    "$(mk "$D/sim-greedy-fixed.txt")" "$(mk "$D/sim-none-fixed.txt")"
# milp (the MILP's selection, solved with the machine's kernel rate and link): within 2% of the
# compute sum (the proved bound) under fixed, every kernel's time there; on the TaskGraph in the
# start state of the milp schedule
expect 0 "algo milp" "$T" offload-plan "$C" --algo milp --taskgraph "$D/gm.json"
"$T" sim "$D/gm.json" --machine "$D/p.json" --plan-order topo --order fixed --weight-offload milp --milp-time-limit 30 >"$D/sim-milp.txt" 2>&1
check "sim milp (fixed) within 2% of the compute sum, with directed evictions" /usr/bin/python3 "$SRC/tests/sim_within.py" "$D/sim-milp.txt" --chain "$C" --hi 1.02 --directed
# a small chain: the directed evictions show in the plan statistics
cat >"$D/small.json" <<'J'
{"format": "turnip.chain/1", "mgpu": 200000, "beta": 1e8, "a0": 4096,
 "layers": [{"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}, {"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096},
            {"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}, {"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}]}
J
expect 0 "algo greedy" "$T" offload-plan "$D/small.json" --taskgraph "$D/sg.json"
expect 0 "directed evictions" "$T" plan "$D/sg.json" --device-mem 200000 --order topo --weight-offload greedy --stats -o "$D/sm.json"
expect 0 "" "$T" verify "$D/sm.json" --taskgraph "$D/sg.json"
# turnip run of the chain graph on the cpu backend, with the greedy strategy and without: it
# completes, plans what turnip plan plans (the same statistics line), carries out the plan's
# copies (h2d = loads + reloads, d2h = offloads, by count and bytes), and the directed evictions
# are the chain's Greedy schedule's offloads and deletes (one per choice of Algorithm 1)
"$T" offload-plan "$D/small.json" --schedule "$D/ss.json" >/dev/null
for w in none greedy; do
    flag=(); [ "$w" = none ] || flag=(--weight-offload "$w")
    "$T" plan "$D/sg.json" --device-mem 200000 --order topo "${flag[@]}" --stats -o "$D/pm-$w.json" >"$D/plan-$w.txt" 2>&1
    expect 0 "outputs: not written" "$T" run "$D/sg.json" --device-mem 200000 --plan-order topo --zero-inputs \
        --link-bandwidth 0.1 --opaque-rate 1e13 "${flag[@]}"
    cp "$D/.out" "$D/run-$w.txt"
done
check "run on cpu does what the plan says" /usr/bin/python3 - "$D" <<'PY'
import json, re, sys
d = sys.argv[1]
def stats(t):  # plan table of device 0: loads, reloads, offloads (count, bytes)
    m = re.search(r"^0 +\S+ \S+ +\S+ +\S+ +(\d+) \(([^)]*)\) +(\d+) \(([^)]*)\) +(\d+) \(([^)]*)\)", t, re.M)
    return [int(m.group(i)) for i in (1, 3, 5)]
def copies(t):  # run summary of device 0: h2d and d2h counts; totals' bytes
    m = re.search(r"^0 +\d+ +\S+ +\S+ +(\d+), [^,]*, \S+ +(\d+),", t, re.M)
    b = re.search(r"h2d (\d+) B, d2h (\d+) B", t)
    return int(m.group(1)), int(m.group(2)), int(b.group(1)), int(b.group(2))
ok = True
for w in ("none", "greedy"):
    p, r = open("%s/plan-%s.txt" % (d, w)).read(), open("%s/run-%s.txt" % (d, w)).read()
    loads, reloads, offloads = stats(p)
    ok &= stats(r) == [loads, reloads, offloads]
    h2d, d2h, hb, db = copies(r)
    ok &= (h2d, d2h) == (loads + reloads, offloads) and hb == 65536 * h2d and db == 65536 * d2h
    ev = lambda t: re.findall(r"^directed evictions: .*$", t, re.M)
    ok &= ev(p) == ev(r) and (len(ev(r)) == 1) == (w == "greedy")
s = json.load(open(d + "/ss.json"))
n = sum(o["op"] in ("offload", "delete") for o in s["ops"])
ok &= re.search(r"^directed evictions: (\d+) ", open(d + "/run-greedy.txt").read(), re.M).group(1) == str(n) and n > 0
sys.exit(0 if ok else 1)
PY
# milp on the cpu backend: the rates of the run (--opaque-rate, --link-bandwidth) make the chain
expect 0 "outputs: not written" "$T" run "$D/sg.json" --device-mem 200000 --plan-order topo --zero-inputs \
    --link-bandwidth 0.1 --opaque-rate 1e13 --weight-offload milp
check "run milp has directed evictions" grep -q "^directed evictions: [1-9]" "$D/.out"
# a plan file of the chain graph (turnip plan --weight-offload) runs in a session too
expect 0 "outputs:" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --plan "$D/sm.json"
# the opaque wait: at --opaque-rate R a kernel of F flops takes at least F / R (its slice in the
# trace) and not much more (a loose bound: the machine may be busy); without the flag no time
expect 0 "outputs:" "$T" run "$D/sg.json" --device-mem 200000 --plan-order topo --zero-inputs --weight-offload greedy \
    --opaque-rate 2e11 --trace "$D/wait.json"
cp "$D/.out" "$D/wait.txt"
expect 0 "outputs:" "$T" run "$D/sg.json" --device-mem 200000 --plan-order topo --zero-inputs --weight-offload greedy
cp "$D/.out" "$D/nowait.txt"
check "an opaque kernel sleeps flops / rate" /usr/bin/python3 - "$D" 2e11 <<'PY'
import json, re, sys
d, rate = sys.argv[1], float(sys.argv[2])
flops = {v["id"]: v.get("flops", 0) for v in json.load(open(d + "/sg.json"))["vertices"]}
t = json.load(open(d + "/wait.json"))
ks = [e for e in (t["traceEvents"] if isinstance(t, dict) else t) if e.get("ph") == "X" and e.get("cat") == "kernel"]
want = [flops[e["args"]["task"]] / rate for e in ks]  # seconds
got = [e["dur"] * 1e-6 for e in ks]
ok = len(ks) == 15 and all(w >= 4e-4 for w in want)  # 15 kernels of 0.5 to 9.5 ms
ok &= all(g >= w - 1e-8 and g <= 2 * w + 0.05 for g, w in zip(got, want))
busy = lambda f: float(re.search(r"kernel busy ([0-9.e+-]+) s", open(f).read()).group(1))
mk = float(re.search(r"totals: makespan ([0-9.e+-]+) s", open(d + "/wait.txt").read()).group(1))
ok &= busy(d + "/wait.txt") >= sum(want) - 1e-6 and mk >= sum(want) - 1e-6 and busy(d + "/nowait.txt") < 0.1 * sum(want)
print("opaque kernels: %d, asked %.4f s, slept %.4f s (%.1f us over each on average)" % (
    len(ks), sum(want), sum(got), 1e6 * (sum(got) - sum(want)) / max(1, len(ks))))
sys.exit(0 if ok else 1)
PY
# resident inputs hold zeros: a resident f32 input with --zero-inputs runs (relu of zeros)
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "a", "kind": "input", "device": 0, "dtype": "f32", "shape": [2, 3], "resident": {"offset": 0, "host_copy": false}}, {"id": "b", "kind": "kernel", "device": 0, "op": "relu", "inputs": ["a"], "dtype": "f32", "shape": [2, 3]}], "outputs": ["b"]}' >"$D/res.json"
expect 0 "outputs: $D/res.st" "$T" run "$D/res.json" --device-mem 1KiB --zero-inputs --out "$D/res.st"
check "zeros out of zeros" /usr/bin/python3 -c "
import json, struct, sys
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
o = h['b']['data_offsets']; sys.exit(0 if h['b']['dtype'] == 'F32' and b[8 + n + o[0]:8 + n + o[1]] == bytes(24) else 1)" "$D/res.st"
# misuse
expect 2 "not a chain graph" "$T" sim "$D/res.json" --machine "$D/p.json" --weight-offload greedy
expect 2 "--weight-offload milp needs the kernels' rate" "$T" plan "$D/g.json" --device-mem 15GiB --weight-offload milp
expect 2 "give --opaque-rate and --link-bandwidth" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --weight-offload milp --opaque-rate 1e9
expect 2 "--milp-time-limit is for --weight-offload milp" "$T" sim "$D/g.json" --machine "$D/p.json" --weight-offload greedy --milp-time-limit 5
expect 2 "--milp-time-limit is for --weight-offload milp" "$T" sim "$D/g.json" --machine "$D/p.json" --milp-time-limit 5
EXPECT_ONE_LINE=1 expect 2 "not a chain graph" "$T" sim "$D/res.json" --machine "$D/p.json" --weight-offload milp
expect 2 "--weight-offload" "$T" plan "$D/g.json" --device-mem 1GiB --weight-offload belady
expect 2 "the chain's own order" "$T" plan "$D/g.json" --device-mem 15GiB --order dfs --weight-offload greedy
expect 2 "--flops is for --taskgraph" "$T" offload-plan "$C" --flops 1e9
expect 2 "not a chain graph" "$T" run "$SRC/examples/figure3.json" --device-mem 1MiB --zero-inputs --weight-offload greedy
expect 2 "the chain's own order" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --plan-order dfs --weight-offload greedy
expect 2 "--weight-offload plans; --plan runs a plan" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --plan "$D/sm.json" --weight-offload greedy
expect 2 "--repeat plans what stays resident itself" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --repeat 2 --weight-offload greedy
expect 2 "--inputs is required (or --zero-inputs)" "$T" run "$D/sg.json" --device-mem 200000
expect 2 "--inputs and --zero-inputs exclude each other" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --inputs x
expect 2 "input 'a' is resident with dtype f32" "$T" run "$D/res.json" --device-mem 1KiB --inputs "$D/res.st"
expect 2 "opaque-rate needs a number in" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --opaque-rate 0
expect 2 "opaque-rate needs a number in" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --opaque-rate 1e19
expect 2 "opaque-rate needs a number in" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --opaque-rate nan
expect 2 "--opaque-rate is for --backend cpu" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --opaque-rate 1e9 --backend cuda
expect 2 "vertex 'X4' (opaque, 1e+09 flops) would take 1e+09 s at --opaque-rate 1" "$T" run "$D/sg.json" --device-mem 200000 --zero-inputs --opaque-rate 1
printf '{"format": "turnip.chain/1", "mgpu": 100000, "beta": 1e8, "a0": 4096, "layers": [{"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}, {"uf": 0.001, "ub": 0.002, "w": 65536, "a": 4096}]}' >"$D/nofit.json"
expect 2 "needs 43360 bytes more than mgpu" "$T" offload-plan "$D/nofit.json" --taskgraph "$D/x.json" --schedule "$D/xs.json"
absent "$D/x.json" # no TaskGraph or schedule written by a refused command
# the op that fits nowhere, named by its file layer (0..L-1) by Algorithm 1 and by the bound alike
printf '{"format": "turnip.chain/1", "mgpu": 40000, "beta": 1e8, "a0": 100, "layers": [{"uf": 0.001, "ub": 0.002, "w": 10000, "a": 100}, {"uf": 0.001, "ub": 0.002, "w": 10000, "a": 100}, {"uf": 0.001, "ub": 0.002, "w": 50000, "a": 100}]}' >"$D/nofit2.json"
expect 2 "offload: B of layer 2 needs" "$T" offload-plan "$D/nofit2.json"
expect 2 "bound: B of layer 2 needs 100400 bytes" "$T" offload-plan "$D/nofit2.json" --bound
expect 2 "--time-limit is the solver's" "$T" offload-plan "$D/nofit2.json" --time-limit 5
absent "$D/xs.json"
finish offload_inside
