#!/bin/bash
# Hostile sizes (issue 18, defect 7's last case): one input with 10^5 consumers whose outputs
# overflow a 1 MiB device is planned, verified and simulated in seconds (it took 46 s to plan,
# and verifying its plan took 589 s: outputs were matched in outputs^2 string comparisons).
# The verifier reads a MemGraph as a stream, so top-level keys may come in any order: devices
# after the vertices that name them are still range-checked, vertex numbers are checked once the
# count is known, and a key given twice is refused.
# A 1600-layer plan that overwrites memory freed long before verifies in seconds (below).
# usage: hostile_scale.sh TURNIP SOURCE_DIR
set -u
T=$(realpath "$1")
SRC=$(realpath "$2")
EXPECT_TIMEOUT=60 # generous for the sanitizer build; the plain build needs about 1 s a command
. "$(dirname "$0")/expect.sh"

# fan GRAPH N VERTEX-FIELDS: one input X and N consumers k0..k(N-1) of it, every one an output;
# in the fields, ALPHA stands for i + 1
fan() {
    /usr/bin/python3 - "$@" <<'PY'
import sys
path, n, fields = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "w") as f:
    f.write('{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [\n')
    f.write('{"id": "X", "kind": "input", "device": 0, %s}' % fields.replace(', "op": "scale", "attrs": {"alpha": ALPHA}', ''))
    for i in range(n):
        f.write(',\n{"id": "k%d", "kind": "kernel", "device": 0, "inputs": ["X"], %s}' % (i, fields.replace("ALPHA", str(i + 1))))
    f.write('],\n"outputs": [%s]}\n' % ", ".join('"k%d"' % i for i in range(n)))
PY
}
fan "$D/mc.json" 100000 '"bytes": 4096'
# A plan that reuses memory freed long before (1600 layers under 20 GiB: fresh memory first, then
# the oldest blocks): the verifier's happens-before search went depth first through the
# overwriter's whole ancestry above the old writer (about 150 s); breadth first it takes about 3 s (docs/reliability.md).
expect 0 "" "$T" gen layered --layers 1600 -o "$D/g1600.json"
expect 0 "" "$T" plan "$D/g1600.json" --device-mem 20GiB -o "$D/g1600.plan.json"
expect 0 "valid" "$T" verify "$D/g1600.plan.json" --taskgraph "$D/g1600.json"
rm -f "$D/g1600.json" "$D/g1600.plan.json"
expect 0 "" "$T" plan "$D/mc.json" --device-mem 1MiB -o "$D/mc.plan.json"
expect 0 "valid" "$T" verify "$D/mc.plan.json" --taskgraph "$D/mc.json"
expect 0 "100000 *[0-9.]" "$T" sim "$D/mc.json" --device-mem 1MiB --machine a100x8
# every output offloaded once (independent count from the plan's text): 100000 - what stays
offl=$(grep -c '"kind": "offload"' "$D/mc.plan.json")
check "offloads ($offl) between 99000 and 100000" test "$offl" -ge 99000 -a "$offl" -le 100000

# run: 20,000 scalings of one input, each output checked against numpy
fan "$D/r.json" 20000 '"dtype": "f32", "shape": [1024], "op": "scale", "attrs": {"alpha": ALPHA}'
expect 0 "" "$T" gen inputs "$D/r.json" -o "$D/r.in.safetensors"
expect 0 "outputs" "$T" run "$D/r.json" --device-mem 256KiB --inputs "$D/r.in.safetensors" --out "$D/r.out.safetensors"
check "run outputs = numpy" /usr/bin/python3 - "$D/r.in.safetensors" "$D/r.out.safetensors" <<'PY'
import json, struct, sys
import numpy as np
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dtype=np.float32)
            for k, v in h.items() if k != "__metadata__"}
x = load(sys.argv[1])["X"]
o = load(sys.argv[2])
bad = [k for k in range(20000) if not np.array_equal(o["k%d" % k], np.float32(k + 1) * x)]
sys.exit(1 if bad or len(o) != 20000 else 0)
PY

# ---- key order, references and duplicates in a MemGraph read as a stream ---------------------
F=$SRC/examples/figure3.json
expect 0 "" "$T" plan "$F" --device-mem 4KiB -o "$D/f3.json"
edit() { # edit NAME PYTHON-EXPRESSION-ON-d: writes $D/NAME.json with top-level keys reversed
    /usr/bin/python3 - "$D/f3.json" "$D/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
out = "{" + ", ".join(json.dumps(k) + ": " + json.dumps(d[k]) for k in reversed(list(d))) + "}"
open(sys.argv[2], "w").write(out)
PY
}
edit same 'pass'
expect 0 "valid" "$T" verify "$D/same.json" --taskgraph "$F"
edit dev 'd["vertices"][3]["device"] = 7'
expect 1 "vertex 3 .*device 7 out of range" "$T" verify "$D/dev.json" --taskgraph "$F"
edit wdev 'd["vertices"][3]["writes"]["device"] = 9'
expect 1 "vertex 3: writes names device 9" "$T" verify "$D/wdev.json" --taskgraph "$F"
edit from 'd["vertices"][3]["reads"][0]["from"] = 10**12'
expect 1 "vertex 3 .*read 0 is from vertex 4294967295, which does not exist" "$T" verify "$D/from.json" --taskgraph "$F"
edit dep 'd["vertices"][3]["deps"].append(len(d["vertices"]))'
expect 1 "vertex 3 .*dependency on vertex $(/usr/bin/python3 -c "import json; print(len(json.load(open('$D/f3.json'))['vertices']))")" "$T" verify "$D/dep.json" --taskgraph "$F"
edit outs 'd["outputs"] = d["outputs"][::-1][1:]'
expect 1 "is not in the MemGraph's outputs" "$T" verify "$D/outs.json" --taskgraph "$F"
edit nodev 'del d["devices"]'
expect 2 "field 'devices' must be an array" "$T" verify "$D/nodev.json" --taskgraph "$F"
sed 's/^{/{"host_bytes": 0, /' "$D/same.json" >"$D/dup.json"
expect 2 "duplicate" "$T" verify "$D/dup.json" --taskgraph "$F"
# a semantic error early and a syntax error late: the syntax error is reported
edit late 'd["vertices"][0]["kind"] = "bogus"'
printf ' x' >>"$D/late.json"
expect 2 "not valid JSON" "$T" verify "$D/late.json" --taskgraph "$F"
# ---- dot: a file's devices times its vertices, or a vertex's reads times its deps, is not the
# cost (they were loops inside loops: 4 x 10^10 steps for each of these two files)
/usr/bin/python3 - "$D/wide.json" "$D/deep.json" <<'PY'
import sys
n = 200000
with open(sys.argv[1], "w") as f:
    f.write('{"format": "turnip.memgraph/1", "devices": [%s], "host_bytes": 0, "vertices": [' % ",".join(['{"capacity": 1}'] * n))
    f.write(",".join('{"id": %d, "kind": "kernel", "task": "t", "device": %d, "reads": [], "deps": []}' % (i, i) for i in range(n)))
    f.write('], "outputs": []}')
with open(sys.argv[2], "w") as f:
    f.write('{"format": "turnip.memgraph/1", "devices": [{"capacity": 1}], "host_bytes": 0, "vertices": [')
    f.write('{"id": 0, "kind": "input", "task": "x", "reads": [], "deps": []}, ')
    f.write('{"id": 1, "kind": "kernel", "task": "y", "device": 0, "reads": [%s], "deps": [%s]}' %
            (",".join('{"from": 0}' for _ in range(n)), ",".join("0" for _ in range(n))))
    f.write('], "outputs": []}')
PY
expect 0 "" "$T" dot "$D/wide.json" -o "$D/wide.dot"
check "wide.dot: 200000 clusters" test "$(grep -c '^  subgraph cluster_dev' "$D/wide.dot")" = 200000
expect 0 "" "$T" dot "$D/deep.json" -o "$D/deep.dot"
check "deep.dot: 200000 data edges" test "$(grep -c '^  v0 -> v1;$' "$D/deep.dot")" = 200000
expect 2 "duplicate" "$T" dot "$D/dup.json"
finish hostile_scale
