#!/usr/bin/python3
"""Mutation tests for `turnip verify`: plans of random TaskGraphs are damaged in ways that
break correctness, and the verifier must reject each one (exit 1); damage that leaves the
plan correct (removing a memory dependency that other paths already imply) must be
accepted (exit 0). Plans with sum-into groups (issue 13) are damaged group by group: a join
that misses a member, a read of a member, an edge between members, a member's write moved, an
unordered writer of the group's region, a member starting from a wrong init. Reachability and the smallest feasible caps are computed here, in
Python, independently of the C code.

usage: mutations.py TURNIP TEST_PROPS SOURCE_DIR
"""
import json, os, random, subprocess, sys, tempfile

turnip, test_props, src = sys.argv[1:4]
tmp = tempfile.mkdtemp(prefix="tp-mut-")
NGRAPHS = 40
subprocess.run([test_props, "dump", tmp, str(NGRAPHS)], check=True)
rnd = random.Random(12345)
failures = []
counts = {}


def verify(mg, tg):
    path = os.path.join(tmp, "m.json")
    with open(path, "w") as f:
        json.dump(mg, f)
    r = subprocess.run([turnip, "verify", path, "--taskgraph", tg], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def expect(name, mg, tg, code, why=()):
    """why: words one of which the violation must contain (it names the broken rule)"""
    got, out = verify(mg, tg)
    if os.environ.get("TP_MUTATIONS_SHOW") and name.startswith("group"):
        print(f"{name}: {out.strip()}")
    counts[name] = counts.get(name, 0) + 1
    if got != code:
        failures.append(f"{tg}: mutation '{name}': exit {got}, wanted {code}: {out.strip()}")
    elif code == 1 and "INVALID" not in out:
        failures.append(f"{tg}: mutation '{name}': no violation printed: {out.strip()}")
    elif why and not any(w in out for w in why):
        failures.append(f"{tg}: mutation '{name}': rejected for another reason than {why}: {out.strip()}")


def min_caps(tg):
    byid = {v["id"]: v for v in tg["vertices"]}

    def size(v):
        if v["kind"] == "transfer":
            return size(byid[v["inputs"][0]])
        if "bytes" in v:
            return v["bytes"]
        n = {"f32": 4, "f16": 2, "bf16": 2}[v["dtype"]]
        for d in v["shape"]:
            n *= d
        return n

    caps = [1] * tg["devices"]
    for v in tg["vertices"]:
        if v["kind"] == "input":
            continue
        need = [0] * tg["devices"]
        for i in set(v.get("inputs", [])):
            need[byid[i]["device"]] += size(byid[i])
        need[v["device"]] += size(v)
        caps = [max(a, b) for a, b in zip(caps, need)]
    return caps


def ancestors(mg):
    """anc[i]: bitmask of vertices with a path to i (topological sweep)."""
    n = len(mg["vertices"])
    indeg = [len(set(v["deps"])) for v in mg["vertices"]]
    succ = [[] for _ in range(n)]
    for v in mg["vertices"]:
        for d in set(v["deps"]):
            succ[d].append(v["id"])
    order = [i for i in range(n) if indeg[i] == 0]
    for u in order:
        for w in succ[u]:
            indeg[w] -= 1
            if indeg[w] == 0:
                order.append(w)
    assert len(order) == n, "planner produced a cycle"
    anc = [0] * n
    for u in order:
        for d in set(mg["vertices"][u]["deps"]):
            anc[u] |= anc[d] | (1 << d)
    return anc


def region(v):
    return (v["writes"]["space"], v["writes"].get("device"), v["writes"]["offset"], v["writes"]["bytes"])


def copy(mg):
    return json.loads(json.dumps(mg))


for gi in range(NGRAPHS):
    tgp = os.path.join(tmp, f"g{gi:03d}.json")
    with open(tgp) as f:
        tg = json.load(f)
    caps = min_caps(tg)
    mgp = os.path.join(tmp, f"mg{gi:03d}.json")
    r = subprocess.run([turnip, "plan", tgp, "--device-mem", ",".join(map(str, caps)), "-o", mgp],
                       capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{tgp}: plan at the smallest feasible caps failed: {r.stderr.strip()}")
        continue
    with open(mgp) as f:
        mg = json.load(f)
    expect("unchanged", mg, tgp, 0)
    V = mg["vertices"]
    anc = ancestors(mg)

    def before(a, b):
        return bool(anc[b] >> a & 1)

    # 1. delete a memory dependency: rejected unless other paths imply it
    memdeps = [(v["id"], d) for v in V for d in v["deps"] if d not in {x["from"] for x in v["reads"]}]
    for (u, d) in rnd.sample(memdeps, min(8, len(memdeps))):
        m = copy(mg)
        m["vertices"][u]["deps"].remove(d)
        implied = any(bool(anc[w] >> d & 1) for w in m["vertices"][u]["deps"])
        expect("delete memory dep (implied)" if implied else "delete memory dep", m, tgp, 0 if implied else 1)

    # 2. shift a region onto an unordered neighbour's region on the same device
    writers = [v for v in V if v["writes"]["space"] == "device"]
    pairs = [(a, b) for a in writers for b in writers
             if a["id"] != b["id"] and a["writes"]["device"] == b["writes"]["device"]
             and not before(a["id"], b["id"]) and not before(b["id"], a["id"])
             and b["writes"]["offset"] + a["writes"]["bytes"] <= mg["devices"][b["writes"]["device"]]["capacity"]]
    if pairs:
        a, b = rnd.choice(pairs)
        m = copy(mg)
        off = b["writes"]["offset"]
        m["vertices"][a["id"]]["writes"]["offset"] = off
        for v in m["vertices"]:
            for rd in v["reads"]:
                if rd["from"] == a["id"]:
                    rd["offset"] = off
        for o in m["outputs"]:
            if o["from"] == a["id"]:
                o["offset"] = off
        expect("shift region to overlap", m, tgp, 1)

    # 3. drop a reload: its readers read the host copy instead, ids renumbered
    reloads = [v for v in V if v["kind"] == "reload" and any(rd["from"] == v["id"] for w in V for rd in w["reads"])]
    if reloads:
        rl = rnd.choice(reloads)
        src_id = rl["reads"][0]["from"]
        gone = rl["id"]
        m = copy(mg)
        ren = lambda i: i - 1 if i > gone else i
        newv = []
        for v in m["vertices"]:
            if v["id"] == gone:
                continue
            for rd in v["reads"]:
                if rd["from"] == gone:
                    rd.clear()
                    rd.update({"from": src_id, **V[src_id]["writes"]})
                rd["from"] = ren(rd["from"])
            v["deps"] = sorted({ren(src_id if d == gone else d) for d in v["deps"]})
            v["id"] = ren(v["id"])
            newv.append(v)
        m["vertices"] = newv
        for o in m["outputs"]:
            o["from"] = ren(o["from"])
        expect("drop a reload", m, tgp, 1)

    # 4. reorder a kernel's reads (two different values)
    ks = [v for v in V if v["kind"] == "kernel" and len(v["reads"]) >= 2
          and V[v["reads"][0]["from"]]["task"] != V[v["reads"][1]["from"]]["task"]]
    if ks:
        k = rnd.choice(ks)
        m = copy(mg)
        rr = m["vertices"][k["id"]]["reads"]
        rr[0], rr[1] = rr[1], rr[0]
        expect("reorder reads", m, tgp, 1)

    # 5. a read whose producer is not among the deps
    rs = [v for v in V if v["reads"]]
    v = rnd.choice(rs)
    m = copy(mg)
    m["vertices"][v["id"]]["deps"].remove(v["reads"][0]["from"])
    expect("data dep missing", m, tgp, 1)

    # 6. a region past the end of its device
    v = rnd.choice(writers)
    m = copy(mg)
    m["vertices"][v["id"]]["writes"]["offset"] = mg["devices"][v["writes"]["device"]]["capacity"]
    expect("region out of bounds", m, tgp, 1)

    # 7. a cycle: an edge from a descendant back to its ancestor
    cands = [(u, d) for u in range(len(V)) for d in V[u]["deps"]]
    if cands:
        u, d = rnd.choice(cands)
        m = copy(mg)
        m["vertices"][d]["deps"] = sorted(set(m["vertices"][d]["deps"]) | {u})  # the format keeps deps increasing
        expect("cycle", m, tgp, 1)

    # 8. a kernel missing
    kern = [v for v in V if v["kind"] == "kernel" and not any(rd["from"] == v["id"] for w in V for rd in w["reads"])
            and not any(o["from"] == v["id"] for o in mg["outputs"])]
    if kern:
        k = rnd.choice(kern)
        m = copy(mg)
        m["vertices"][k["id"]]["kind"] = "reload"
        expect("kernel replaced", m, tgp, 1)

# sum-into groups (issue 13): plans of random graphs with accumulation groups, damaged group by group
NACCUM = 24
accdir = os.path.join(tmp, "accum")
os.makedirs(accdir)
subprocess.run([test_props, "dump", accdir, str(NACCUM), "accum"], check=True)
for gi in range(NACCUM):
    tgp = os.path.join(accdir, f"g{gi:03d}.json")
    with open(tgp) as f:
        tg = json.load(f)
    caps = min_caps(tg)
    mgp = os.path.join(accdir, f"mg{gi:03d}.json")
    r = subprocess.run([turnip, "plan", tgp, "--device-mem", ",".join(map(str, caps)), "-o", mgp], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{tgp}: plan at the smallest unlowered caps failed: {r.stderr.strip()}")
        continue
    with open(mgp) as f:
        mg = json.load(f)
    V = mg["vertices"]
    joins = [v for v in V if v["kind"] == "join"]
    if not joins:
        continue
    expect("group plan unchanged", mg, tgp, 0)
    anc = ancestors(mg)

    def before(a, b):
        return bool(anc[b] >> a & 1)

    J = rnd.choice([j for j in joins if len(j["deps"]) >= 2] or joins)
    g = J["group"]
    mem = [v for v in V if v["kind"] == "accumulate" and v["group"] == g]
    init = mem[0]["reads"][0]["from"]
    R = J["writes"]

    # a. the join loses a member
    m = copy(mg)
    m["vertices"][J["id"]]["deps"].remove(rnd.choice(mem)["id"])
    expect("group: drop a join dep", m, tgp, 1, ["does not depend on its accumulate"])

    # b. something reads from a member instead of the join
    readers = [(w["id"], k) for w in V for k, rd in enumerate(w["reads"]) if rd["from"] == J["id"]]
    m = copy(mg)
    a = rnd.choice(mem)["id"]
    if readers:
        w, k = rnd.choice(readers)
        m["vertices"][w]["reads"][k]["from"] = a
        m["vertices"][w]["deps"] = sorted(set(m["vertices"][w]["deps"]) | {a})
    else:
        outs = [o for o in m["outputs"] if o["from"] == J["id"]]
        for o in outs[:1]:
            o["from"] = a
        readers = outs
    if readers:
        expect("group: read from a member", m, tgp, 1, ["an accumulate of group", "names vertex"])

    # c. an edge between two members
    if len(mem) >= 2:
        a, b = rnd.sample(mem, 2)
        if before(b["id"], a["id"]):
            a, b = b, a
        m = copy(mg)
        m["vertices"][b["id"]]["deps"] = sorted(set(b["deps"]) | {a["id"]})
        expect("group: edge between members", m, tgp, 1, ["ordered only by its lock"])

    # d. a member's write moves (to a free-looking offset of the same size, or by one element)
    mv = rnd.choice(mem)
    m = copy(mg)
    cap = mg["devices"][R["device"]]["capacity"]
    m["vertices"][mv["id"]]["writes"]["offset"] = (R["offset"] + R["bytes"]) if R["offset"] + 2 * R["bytes"] <= cap else 0
    if m["vertices"][mv["id"]]["writes"]["offset"] != R["offset"]:
        expect("group: move a member's write", m, tgp, 1, ["in-place write", "differ in task, device or region"])

    # e. a writer of R's bytes between the init and the join (after the init, not after the join),
    #    inside R: the violation must be about the group
    ws = [w for w in V if w["writes"]["space"] == "device" and w["writes"].get("device") == R["device"]
          and w["id"] != init and w.get("group") != g and before(init, w["id"]) and not before(J["id"], w["id"])
          and w["writes"]["bytes"] <= R["bytes"]]
    if ws:
        w = rnd.choice(ws)
        m = copy(mg)
        m["vertices"][w["id"]]["writes"]["offset"] = R["offset"]
        for v in m["vertices"]:
            for rd in v["reads"]:
                if rd["from"] == w["id"]:
                    rd["offset"] = R["offset"]
        for o in m["outputs"] + m.get("kept", []):
            if o["from"] == w["id"]:
                o["offset"] = R["offset"]
        expect("group: unordered writer of the region", m, tgp, 1, ["group", "accumulate", "join", "init", "race"])

    # f. a member starts from a wrong init: another vertex that wrote the same region, else another
    #    member, or (every other graph) the producer of another member's partial
    others = [v for v in V if v["writes"] == R and v["id"] != init and v.get("group") != g and not before(mv["id"], v["id"])]
    parts = [x["reads"][1]["from"] for x in mem if x["id"] != mv["id"] and not before(mv["id"], x["reads"][1]["from"])]
    if others:
        wrong = rnd.choice(others)["id"]
    elif gi % 2 and parts:
        wrong = rnd.choice(parts)
    else:
        wrong = rnd.choice([x for x in mem if x["id"] != mv["id"]] or [mv])["id"]
    if wrong != mv["id"]:
        m = copy(mg)
        m["vertices"][mv["id"]]["reads"][0] = {"from": wrong, **V[wrong]["writes"]}
        m["vertices"][mv["id"]]["deps"] = sorted(set(m["vertices"][mv["id"]]["deps"]) | {wrong})
        expect("group: wrong init", m, tgp, 1, ["init", "not an input of the sum", "in-place write"])

# sum-into, by hand: one sum of four partials, then mutations aimed at each group rule
hand = {"format": "turnip.taskgraph/1", "devices": 1, "vertices":
        [{"id": "x", "kind": "input", "device": 0, "dtype": "f32", "shape": [16, 16]}] +
        [{"id": f"a{i}", "kind": "kernel", "device": 0, "op": "scale", "inputs": ["x"], "dtype": "f32", "shape": [16, 16],
          "attrs": {"alpha": i}} for i in range(1, 5)] +
        [{"id": "s", "kind": "kernel", "device": 0, "op": "sum", "inputs": ["a1", "a2", "a3", "a4"], "dtype": "f32",
          "shape": [16, 16], "attrs": {"accumulate": True}},
         {"id": "y", "kind": "kernel", "device": 0, "op": "silu", "inputs": ["s"], "dtype": "f32", "shape": [16, 16]}],
        "outputs": ["y"]}
htg, hmg = os.path.join(tmp, "hand.json"), os.path.join(tmp, "hand-mg.json")
with open(htg, "w") as f:
    json.dump(hand, f)
subprocess.run([turnip, "plan", htg, "--device-mem", "64KiB", "-o", hmg], check=True, capture_output=True)
with open(hmg) as f:
    mg = json.load(f)
V = mg["vertices"]
mem = [v for v in V if v["kind"] == "accumulate"]
J = next(v for v in V if v["kind"] == "join")
I = mem[0]["reads"][0]["from"]
assert len(mem) == 3, "the hand-made sum was not lowered"
expect("hand group unchanged", mg, htg, 0)
m = copy(mg)  # a partial added twice (and one missing)
m["vertices"][mem[1]["id"]]["reads"][1] = dict(mem[0]["reads"][1])
m["vertices"][mem[1]["id"]]["deps"] = sorted(set(mem[1]["deps"]) - {mem[1]["reads"][1]["from"]} | {mem[0]["reads"][1]["from"]})
expect("hand group: partial added twice", m, htg, 1, ["added twice"])
m = copy(mg)  # the init offloaded, unordered with the members
m["host_bytes"] += V[I]["writes"]["bytes"]
m["vertices"].append({"id": len(V), "kind": "offload", "task": V[I]["task"], "device": 0,
                      "writes": {"space": "host", "offset": mg["host_bytes"], "bytes": V[I]["writes"]["bytes"]},
                      "reads": [{"from": I, **V[I]["writes"]}], "deps": [I]})
expect("hand group: init read unordered with a member", m, htg, 1, ["reads the init of group"])
m = copy(mg)  # x reloaded into the group's region after the init, unordered with the members
inp = next(v for v in V if v["kind"] == "input")
m["vertices"].append({"id": len(V), "kind": "reload", "task": "x", "device": 0, "writes": dict(V[I]["writes"]),
                      "reads": [{"from": inp["id"], **inp["writes"]}], "deps": sorted({inp["id"], I})})
expect("hand group: a write into the open group's region", m, htg, 1, ["accumulate", "group"])
m = copy(mg)  # a second join
m["vertices"].append(dict(copy(J), id=len(V)))
expect("hand group: two joins", m, htg, 1, ["two joins", "join of more than one group"])
m = copy(mg)  # the join reads the init
m["vertices"][J["id"]]["reads"] = [{"from": I, **V[I]["writes"]}]
m["vertices"][J["id"]]["deps"] = sorted(set(J["deps"]) | {I})
expect("hand group: a join that reads", m, htg, 1, ["reads, should have 0"])
m = copy(mg)  # a member in another group (no join there, one member short here)
m["vertices"][mem[2]["id"]]["group"] = J["group"] + 1
expect("hand group: a member in a group of its own", m, htg, 1, ["has no join", "does not depend", "accumulates for a sum"])
m = copy(mg)  # an accumulate of a sum not marked "accumulate"
hand2 = copy(hand)
del hand2["vertices"][5]["attrs"]
htg2 = os.path.join(tmp, "hand2.json")
with open(htg2, "w") as f:
    json.dump(hand2, f)
expect("hand group: sum not marked", m, htg2, 1, ["not a sum marked"])

# unusable input: exit 2
bad = os.path.join(tmp, "bad.json")
with open(bad, "w") as f:
    f.write('{"format": "turnip.memgraph/1", "devices": [')
r = subprocess.run([turnip, "verify", bad, "--taskgraph", os.path.join(tmp, "g000.json")], capture_output=True)
counts["truncated MemGraph"] = 1
if r.returncode != 2:
    failures.append(f"truncated MemGraph: exit {r.returncode}, wanted 2")

for name in sorted(counts):
    print(f"{counts[name]:4d} x {name}")
for f in failures:
    print("FAIL:", f)
need = ["delete memory dep", "shift region to overlap", "drop a reload", "reorder reads", "group: drop a join dep",
        "group: read from a member", "group: edge between members", "group: move a member's write",
        "group: unordered writer of the region", "group: wrong init"]
hand_need = [n for n in counts if n.startswith("hand group")]
if len(hand_need) < 8:
    print(f"FAIL: only {len(hand_need)} hand-made group cases ran")
    failures.append("hand group cases")
for n in need:
    if counts.get(n, 0) < 3:
        print(f"FAIL: mutation '{n}' was tried only {counts.get(n, 0)} times")
        failures.append(n)
print(f"{sum(counts.values()) - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
