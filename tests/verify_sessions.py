#!/usr/bin/python3
"""Sessions (issue 11) in `turnip verify`: hand-built TaskGraph + MemGraph pairs with resident
inputs, in-place kernels and kept values. Valid plans must verify (exit 0); each damaged plan
must be rejected (exit 1, "INVALID: ..." naming the problem); a TaskGraph that misuses the new
fields is unusable input (exit 2). Every case prints ok or FAIL; the script exits 1 on any FAIL.
Independent of the C code: the plans are written out here by hand.

usage: verify_sessions.py TURNIP
"""
import copy, json, os, shutil, subprocess, sys, tempfile

turnip = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp-sess-")
failures = []
ncases = 0


def dev(d, off, b):
    return {"space": "device", "device": d, "offset": off, "bytes": b}


def host(off, b):
    return {"space": "host", "offset": off, "bytes": b}


def inp(id, b, device=0, **kw):
    return {"id": id, "kind": "input", "device": device, "bytes": b, **kw}


def kern(id, inputs, b, device=0, **kw):
    return {"id": id, "kind": "kernel", "device": device, "inputs": inputs, "bytes": b, **kw}


def taskgraph(vertices, outputs, keep=None, devices=1):
    tg = {"format": "turnip.taskgraph/1", "devices": devices, "vertices": vertices, "outputs": outputs}
    if keep is not None:
        tg["keep"] = keep
    return tg


def V(kind, task, writes, reads=(), deps=(), **extra):
    """one MemGraph vertex; reads name producers (their regions are filled in by memgraph),
    deps add memory dependencies to the data ones"""
    return {"kind": kind, "task": task, "writes": writes, "reads": list(reads), "deps": list(deps), **extra}


def memgraph(caps, host_bytes, spec, outputs=(), kept=None):
    """spec: V(...) list in id order; outputs: (task, from) or (task, from, keep); kept: (task, from)"""
    vs = []
    for i, s in enumerate(spec):
        v = {"id": i, "kind": s["kind"], "task": s["task"]}
        if s["kind"] != "input":
            v["device"] = s.get("device", s["writes"].get("device"))
        v["writes"] = dict(s["writes"])
        v["_reads"] = s["reads"]
        v["deps"] = sorted(set(s["reads"]) | set(s["deps"]))
        for k, x in s.items():
            if k not in ("kind", "task", "writes", "reads", "deps", "device"):
                v[k] = x
        vs.append(v)
    for v in vs:
        v["reads"] = [{"from": f, **vs[f]["writes"]} for f in v.pop("_reads")]
        # keep the field order of the planner's writer: id, kind, task, device, writes, reads, deps, extras
        order = ["id", "kind", "task", "device", "writes", "reads", "deps"]
        items = sorted(v.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
        v.clear()
        v.update(items)
    mg = {"format": "turnip.memgraph/1", "devices": [{"capacity": c} for c in caps], "host_bytes": host_bytes,
          "vertices": vs, "outputs": []}
    for o in outputs:
        e = {"task": o[0], "from": o[1], **vs[o[1]]["writes"]}
        if len(o) > 2:
            e["keep"] = o[2]
        mg["outputs"].append(e)
    if kept is not None:
        mg["kept"] = [{"task": t, "from": f, **vs[f]["writes"]} for t, f in kept]
    return mg


def verify(tg, mg):
    tp, mp = os.path.join(tmp, "tg.json"), os.path.join(tmp, "mg.json")
    with open(tp, "w") as f:
        json.dump(tg, f)
    with open(mp, "w") as f:
        json.dump(mg, f)
    r = subprocess.run([turnip, "verify", mp, "--taskgraph", tp], capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def case(name, tg, mg, code, needle=None):
    """code 0: valid; 1: a violation printed as INVALID containing needle; 2: unusable input"""
    global ncases
    ncases += 1
    got, out = verify(tg, mg)
    bad = None
    if got != code:
        bad = f"exit {got}, wanted {code}"
    elif code == 1 and not out.startswith("INVALID"):
        bad = "no violation printed"
    elif needle and needle not in out:
        bad = f"message lacks {needle!r}"
    if bad:
        failures.append(name)
        print(f"FAIL {name}: {bad}: {out}")
    else:
        print(f"ok   {name}: {out}")


def edit(mg, fn):
    m = copy.deepcopy(mg)
    fn(m)
    return m


def region_move(m, vid, off):
    """moves vertex vid's write to `off`, with every read, output and kept entry naming it"""
    m["vertices"][vid]["writes"]["offset"] = off
    for v in m["vertices"]:
        for rd in v["reads"]:
            if rd["from"] == vid:
                rd["offset"] = off
    for e in m["outputs"] + m.get("kept", []):
        if e["from"] == vid:
            e["offset"] = off


CAP = [4096]

# --- A: a resident weight read directly by a kernel (host copy kept: it also has an input vertex)
tgA = taskgraph([inp("x", 256), inp("w", 256, resident={"offset": 1024}), kern("y", ["x", "w"], 256)], ["y"])
mgA = memgraph(CAP, 512, [
    V("input", "x", host(0, 256)),                    # 0
    V("input", "w", host(256, 256)),                  # 1
    V("resident", "w", dev(0, 1024, 256)),            # 2
    V("reload", "x", dev(0, 0, 256), reads=[0]),      # 3
    V("kernel", "y", dev(0, 256, 256), reads=[3, 2]),  # 4
], outputs=[("y", 4)])
case("resident input read directly by a kernel", tgA, mgA, 0)

# the same plan also loading the host copy of w
mgA2 = memgraph(CAP, 512, [
    V("input", "x", host(0, 256)),
    V("input", "w", host(256, 256)),
    V("resident", "w", dev(0, 1024, 256)),
    V("reload", "x", dev(0, 0, 256), reads=[0]),
    V("kernel", "y", dev(0, 256, 256), reads=[3, 2]),
    V("reload", "w", dev(0, 512, 256), reads=[1]),
], outputs=[("y", 4)])
case("resident input whose host copy is also reloaded", tgA, mgA2, 0)

case("resident vertex at the wrong offset", tgA, edit(mgA, lambda m: region_move(m, 2, 1280)), 1,
     "declares it resident at offset 1024")
case("resident vertex with a dependency", tgA, edit(mgA, lambda m: m["vertices"][2]["deps"].append(0)), 1,
     "resident w): has 1 deps")


def resident_on_host(m):
    m["vertices"][2]["writes"] = host(256, 256)
    m["vertices"][4]["reads"][1] = {"from": 2, **host(256, 256)}


case("resident vertex on a host region", tgA, edit(mgA, resident_on_host), 1, "resident w): writes host memory")
case("resident vertex past the device's end", taskgraph(
    [inp("x", 256), inp("w", 256, resident={"offset": 4096}), kern("y", ["x", "w"], 256)], ["y"]),
    edit(mgA, lambda m: region_move(m, 2, 4096)), 1, "past the end")

# a resident vertex for an input the TaskGraph does not declare resident
mgA_extra = copy.deepcopy(mgA)
mgA_extra["vertices"].append({"id": 5, "kind": "resident", "task": "x", "device": 0, "writes": dev(0, 2048, 256),
                              "reads": [], "deps": []})
case("resident vertex for a non-resident input", tgA, mgA_extra, 1, "does not declare input 'x' resident")
mgA_twice = copy.deepcopy(mgA)
mgA_twice["vertices"].append({"id": 5, "kind": "resident", "task": "w", "device": 0, "writes": dev(0, 1024, 256),
                              "reads": [], "deps": []})
case("two resident vertices for one input", tgA, mgA_twice, 1, "appears as resident more than once")
case("resident vertex for a kernel", tgA, edit(mgA, lambda m: m["vertices"][2].update(task="y")), 1,
     "which is not a TaskGraph input")

# w loaded from its host copy instead: valid for a plain input, missing a resident vertex otherwise
mgA_noresident = memgraph(CAP, 512, [
    V("input", "x", host(0, 256)),
    V("input", "w", host(256, 256)),
    V("reload", "x", dev(0, 0, 256), reads=[0]),
    V("reload", "w", dev(0, 1024, 256), reads=[1]),
    V("kernel", "y", dev(0, 256, 256), reads=[2, 3]),
], outputs=[("y", 4)])
tgA_plain = taskgraph([inp("x", 256), inp("w", 256), kern("y", ["x", "w"], 256)], ["y"])
case("control: the same inputs loaded from the host, nothing resident", tgA_plain, mgA_noresident, 0)
case("missing resident vertex", tgA, mgA_noresident, 1, "'w' is declared resident, but the MemGraph has no resident vertex")

# --- B: host_copy false: a resident vertex and no input vertex
tgB = taskgraph([inp("x", 256), inp("w", 256, resident={"offset": 1024, "host_copy": False}),
                 kern("y", ["x", "w"], 256)], ["y"])
mgB = memgraph(CAP, 256, [
    V("input", "x", host(0, 256)),
    V("resident", "w", dev(0, 1024, 256)),
    V("reload", "x", dev(0, 0, 256), reads=[0]),
    V("kernel", "y", dev(0, 256, 256), reads=[2, 1]),
], outputs=[("y", 3)])
case("resident input without a host copy", tgB, mgB, 0)
case("input vertex for a host_copy:false input", tgB, mgA, 1, "resident with no host copy")

# --- C: a resident value overwritten before its last reader
tgC = taskgraph([inp("x", 256), inp("w", 256, resident={"offset": 1024}), kern("y", ["x"], 256),
                 kern("z", ["y", "w"], 256)], ["z"])


def mgC(y_off):
    return memgraph(CAP, 512, [
        V("input", "x", host(0, 256)),                          # 0
        V("resident", "w", dev(0, 1024, 256)),                  # 1
        V("reload", "x", dev(0, 0, 256), reads=[0]),            # 2
        V("kernel", "y", dev(0, y_off, 256), reads=[2], deps=[1]),  # 3
        V("kernel", "z", dev(0, 512, 256), reads=[3, 1]),       # 4
    ], outputs=[("z", 4)])


case("resident value read before any overwrite", tgC, mgC(256), 0)
case("resident region overwritten before its last reader", tgC, mgC(1024), 1,
     "vertex 4 (kernel z) reads the value of vertex 1 (resident w)")
case("resident region overwritten by an unordered writer", tgC,
     edit(mgC(1024), lambda m: m["vertices"][3]["deps"].remove(1)), 1, "neither is ordered before the other")

# --- D: an in-place kernel; the other reader of the old value runs first
tgD = taskgraph([inp("x", 256), kern("a", ["x"], 256), kern("u", ["x"], 256, inplace=0)], ["a", "u"])
mgD = memgraph(CAP, 256, [
    V("input", "x", host(0, 256)),                               # 0
    V("reload", "x", dev(0, 0, 256), reads=[0]),                 # 1
    V("kernel", "a", dev(0, 256, 256), reads=[1]),               # 2
    V("kernel", "u", dev(0, 0, 256), reads=[1], deps=[2], inplace=0),  # 3
], outputs=[("a", 2), ("u", 3)])
case("in-place kernel after the other reader of the old value", tgD, mgD, 0)
case("in-place writer not ordered after another reader of the old value", tgD,
     edit(mgD, lambda m: m["vertices"][3]["deps"].remove(2)), 1,
     "vertex 2 (kernel a) reads the value of vertex 1 (reload x)")
# the same with the in-place writer before the other reader in id order (ids need not be topological)
mgD_rev = memgraph(CAP, 256, [
    V("input", "x", host(0, 256)),                               # 0
    V("reload", "x", dev(0, 0, 256), reads=[0]),                 # 1
    V("kernel", "u", dev(0, 0, 256), reads=[1], deps=[3], inplace=0),  # 2
    V("kernel", "a", dev(0, 256, 256), reads=[1]),               # 3
], outputs=[("a", 3), ("u", 2)])
case("in-place kernel with a higher-id reader ordered first", tgD, mgD_rev, 0)
case("in-place writer not ordered after a higher-id reader of the old value", tgD,
     edit(mgD_rev, lambda m: m["vertices"][2]["deps"].remove(3)), 1,
     "vertex 3 (kernel a) reads the value of vertex 1 (reload x)")
tgD_plain = taskgraph([inp("x", 256), kern("a", ["x"], 256), kern("u", ["x"], 256)], ["a", "u"])
case("inplace on a kernel that did not declare it", tgD_plain, mgD, 1, "declares no in-place argument")
case("inplace whose write differs from reads[K]", tgD, edit(mgD, lambda m: m["vertices"][3]["writes"].update(offset=512)), 1,
     "in place of read 0")
case("inplace write shorter than reads[K]", tgD, edit(mgD, lambda m: m["vertices"][3]["writes"].update(bytes=128)), 1,
     "in place of read 0")
case("in-place write without the inplace field", tgD, edit(mgD, lambda m: m["vertices"][3].pop("inplace")), 1,
     "overwrites device 0 [0, 256), which it reads")
case("inplace index past the reads", tgD, edit(mgD, lambda m: m["vertices"][3].update(inplace=1)), 1, "it has 1 reads")
case("inplace on a reload", tgD, edit(mgD, lambda m: m["vertices"][1].update(inplace=0)), 1, "only a kernel may write in place")
case("inplace not an integer", tgD, edit(mgD, lambda m: m["vertices"][3].update(inplace="0")), 2)
# the old value is an output that the in-place kernel destroys
tgD_out = taskgraph([inp("x", 256), kern("p", ["x"], 256), kern("u", ["p"], 256, inplace=0)], ["p", "u"])
mgD_out = memgraph(CAP, 256, [
    V("input", "x", host(0, 256)),
    V("reload", "x", dev(0, 0, 256), reads=[0]),
    V("kernel", "p", dev(0, 256, 256), reads=[1]),
    V("kernel", "u", dev(0, 256, 256), reads=[2], inplace=0),
], outputs=[("p", 2), ("u", 3)])
case("in-place kernel destroys an output", tgD_out, mgD_out, 1, "output 'p' (vertex 2) is overwritten by vertex 3")

# --- E: kept output and kept resident input
tgE = taskgraph([inp("x", 256), inp("w", 256, resident={"offset": 1024, "host_copy": False}),
                 kern("y", ["x", "w"], 256), kern("q", ["x"], 256)], ["y"], keep=["y", "w"])


def mgE(q_off, kept=(("y", 3), ("w", 0)), y_keep=True):
    return memgraph(CAP, 256, [
        V("resident", "w", dev(0, 1024, 256)),                      # 0
        V("input", "x", host(0, 256)),                              # 1
        V("reload", "x", dev(0, 0, 256), reads=[1]),                # 2
        V("kernel", "y", dev(0, 256, 256), reads=[2, 0]),           # 3
        V("kernel", "q", dev(0, q_off, 256), reads=[2], deps=[3]),  # 4
    ], outputs=[("y", 3, True) if y_keep else ("y", 3)], kept=list(kept))


case("kept output and kept input", tgE, mgE(512), 0)
case("kept input without host copy not listed (its value would be lost)", tgE, mgE(512, kept=[("y", 3)]), 1,
     "input 'w' is kept and has no host copy")
case("kept output without keep on its outputs entry", tgE, mgE(512, y_keep=False), 0)
case("kept entry overwritten later", tgE, mgE(1024), 1, "kept 'w' (vertex 0) is overwritten by vertex 4 (kernel q)")
case("kept output missing from kept", tgE, mgE(512, kept=[("w", 0)]), 1, "output 'y' is in 'keep', but not in the MemGraph's 'kept'")
case("kept absent altogether", tgE, edit(mgE(512), lambda m: m.pop("kept")), 1, "not in the MemGraph's 'kept'")
case("kept task not in the TaskGraph's keep", tgE, mgE(512, kept=[("y", 3), ("w", 0), ("q", 4)]), 1,
     "task 'q' is not in the TaskGraph's 'keep' list")
case("kept task listed twice", tgE, mgE(512, kept=[("y", 3), ("y", 3)]), 1, "listed twice")
case("kept entry from a vertex holding another task", tgE, mgE(512, kept=[("y", 4)]), 1, "vertex 4 holds 'q'")
case("kept entry in host memory", tgE, mgE(512, kept=[("y", 3), ("w", 0)]) | {"kept": [
    {"task": "y", "from": 3, **dev(0, 256, 256)}, {"task": "w", "from": 0, **host(0, 256)}]}, 1, "in host memory")
case("kept region not what its vertex wrote", tgE,
     edit(mgE(512), lambda m: m["kept"][0].update(offset=768)), 1, "is not what vertex 3 wrote")
tgE_nokeep = taskgraph(tgE["vertices"], ["y"], keep=["w"])
case("outputs entry marked keep for an output not kept", tgE_nokeep, mgE(512, kept=[("w", 0)]), 1,
     "marked keep, but the TaskGraph does not keep it")
case("kept entries without any keep in the TaskGraph", taskgraph(tgE["vertices"], ["y"]),
     mgE(512, kept=[("w", 0)], y_keep=False), 1, "not in the TaskGraph's 'keep' list")


def output_on_host(m):
    """y's outputs entry names a host copy (an offload) while still marked keep"""
    m["vertices"].append({"id": 5, "kind": "offload", "task": "y", "device": 0, "writes": host(0, 256),
                          "reads": [{"from": 3, **dev(0, 256, 256)}], "deps": [3]})
    m["outputs"][0].update({"from": 5, **host(0, 256)})
    m["outputs"][0].pop("device")


case("kept output entry on the host", tgE, edit(mgE(512), output_on_host), 1, "marked keep but is in host memory")

# --- F: a KV-cache-like update: resident cache, updated in place, kept for the next plan
tgF = taskgraph([inp("cache", 256, resident={"offset": 0, "host_copy": False}), inp("x", 256),
                 kern("upd", ["cache", "x"], 256, inplace=0)], ["upd"], keep=["upd"])
mgF = memgraph(CAP, 256, [
    V("resident", "cache", dev(0, 0, 256)),                           # 0
    V("input", "x", host(0, 256)),                                    # 1
    V("reload", "x", dev(0, 256, 256), reads=[1]),                    # 2
    V("kernel", "upd", dev(0, 0, 256), reads=[0, 2], inplace=0),      # 3
], outputs=[("upd", 3, True)], kept=[("upd", 3)])
case("resident cache updated in place and kept", tgF, mgF, 0)
case("in-place update of the resident cache at the wrong argument", tgF,
     edit(mgF, lambda m: m["vertices"][3].update(inplace=1)), 1, "in place of read 1")
case("kept entry for a value not in keep", tgF,
     edit(mgF, lambda m: m["kept"].append({"task": "cache", "from": 0, **dev(0, 0, 256)})), 1,
     "task 'cache' is not in the TaskGraph's 'keep' list")
tgF2 = taskgraph(tgF["vertices"], ["upd"], keep=["upd", "cache"])
case("kept input overwritten in place", tgF2,
     edit(mgF, lambda m: m["kept"].append({"task": "cache", "from": 0, **dev(0, 0, 256)})), 1,
     "kept 'cache' (vertex 0) is overwritten by vertex 3 (kernel upd)")
case("kept input without host copy overwritten in place, not listed", tgF2, mgF, 1, "input 'cache' is kept and has no host copy")

# --- TaskGraphs that misuse the new fields: unusable input (exit 2)
case("TaskGraph: keep of a vertex neither output nor input",
     taskgraph(tgE["vertices"], ["y"], keep=["q"]), mgE(512), 2, "'q': in 'keep' but neither an output nor an input")
case("TaskGraph: misaligned resident offset",
     taskgraph([inp("x", 256), inp("w", 256, resident={"offset": 1000}), kern("y", ["x", "w"], 256)], ["y"]), mgA, 2,
     "not a multiple of 256")
case("TaskGraph: inplace on an input",
     taskgraph([inp("x", 256, inplace=0), kern("a", ["x"], 256), kern("u", ["x"], 256)], ["a", "u"]), mgD, 2,
     "'x': 'inplace' is only for kernels")

shutil.rmtree(tmp, ignore_errors=True)
print(f"{ncases - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
