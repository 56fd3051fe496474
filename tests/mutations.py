#!/usr/bin/python3
"""Mutation tests for `turnip verify`: plans of random TaskGraphs are damaged in ways that
break correctness, and the verifier must reject each one (exit 1); damage that leaves the
plan correct (removing a memory dependency that other paths already imply) must be
accepted (exit 0). Reachability and the smallest feasible caps are computed here, in
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


def expect(name, mg, tg, code):
    got, out = verify(mg, tg)
    counts[name] = counts.get(name, 0) + 1
    if got != code:
        failures.append(f"{tg}: mutation '{name}': exit {got}, wanted {code}: {out.strip()}")
    elif code == 1 and "INVALID" not in out:
        failures.append(f"{tg}: mutation '{name}': no violation printed: {out.strip()}")


def min_caps(tg):
    byid = {v["id"]: v for v in tg["vertices"]}

    def size(v):
        if v["kind"] == "transfer":
            return size(byid[v["inputs"][0]])
        return v["bytes"]

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
        m["vertices"][d]["deps"].append(u)
        expect("cycle", m, tgp, 1)

    # 8. a kernel missing
    kern = [v for v in V if v["kind"] == "kernel" and not any(rd["from"] == v["id"] for w in V for rd in w["reads"])
            and not any(o["from"] == v["id"] for o in mg["outputs"])]
    if kern:
        k = rnd.choice(kern)
        m = copy(mg)
        m["vertices"][k["id"]]["kind"] = "reload"
        expect("kernel replaced", m, tgp, 1)

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
need = ["delete memory dep", "shift region to overlap", "drop a reload", "reorder reads"]
for n in need:
    if counts.get(n, 0) < 3:
        print(f"FAIL: mutation '{n}' was tried only {counts.get(n, 0)} times")
        failures.append(n)
print(f"{sum(counts.values()) - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
