#!/usr/bin/python3
"""Plan files (issue 15): `turnip plan --format binary`, `turnip convert` and `turnip run --plan`.

- JSON -> binary -> JSON gives back the same bytes, for random TaskGraphs (plain and sum-into,
  at several caps) and for a session graph (resident, in-place, keep);
- a plan loaded from a file (JSON or binary) runs to the same outputs as a fresh plan, the
  fresh run being the reference;
- a plan for other caps or another graph, and --plan with --repeat, are refused (exit 2);
- damaged binary files (truncated, bytes flipped, and bytes changed with the checksum made good
  again, so that the range checks behind it are reached) and truncated JSON files are refused
  with exit 2 and a message, or (a change that leaves a valid plan) accepted; never a crash.

usage: plan_files.py TURNIP TEST_PROPS SOURCE_DIR
"""
import os, random, struct, subprocess, sys, tempfile

turnip, test_props, src = sys.argv[1:4]
tmp = tempfile.mkdtemp(prefix="tp-planfiles-")
failures = []
rnd = random.Random(15)


def run(*args):
    r = subprocess.run([turnip, *args], capture_output=True, text=True, errors="replace")
    return r.returncode, r.stdout + r.stderr


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def write(p, b):
    with open(p, "wb") as f:
        f.write(b)


def fnv(b, h=14695981039346656037):
    """FNV-1a-64 (docs/formats.md), its standard offset basis by default"""
    for c in b:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def round_trip(tg, cap, tag):
    """plans tg at cap in both formats; checks the conversions. Returns (json path, bin path) or None."""
    mj, mb = os.path.join(tmp, tag + ".json"), os.path.join(tmp, tag + ".bin")
    rc, out = run("plan", tg, "--device-mem", cap, "-o", mj)
    if rc != 0:
        check(rc == 2, f"{tag}: plan exit {rc}: {out}")
        return None
    rc, out = run("plan", tg, "--device-mem", cap, "-o", mb, "--format", "binary")
    check(rc == 0 and read(mb)[:8] == b"TURNIPMG", f"{tag}: plan --format binary: {rc} {out}")
    back, cb, back2 = mj + ".back.json", mj + ".conv.bin", mj + ".back2.json"
    for args, what in (((mb, back), "binary -> json"), ((mj, cb), "json -> binary"), ((cb, back2), "converted binary -> json")):
        rc, out = run("convert", *args)
        check(rc == 0, f"{tag}: convert {what}: {rc} {out}")
    check(read(back) == read(mj), f"{tag}: the planner's binary converts to other JSON than the planner's")
    check(read(back2) == read(mj), f"{tag}: JSON -> binary -> JSON is not byte-identical")
    check(len(read(mb)) < len(read(mj)) or len(read(mj)) < 2000, f"{tag}: the binary plan is not smaller")
    return mj, mb


# 1. round trips on random graphs: plain families and sum-into (accumulate / join / group)
plain, accum = os.path.join(tmp, "plain"), os.path.join(tmp, "accum")
os.makedirs(plain)
os.makedirs(accum)
subprocess.run([test_props, "dump", plain, "10"], check=True)
subprocess.run([test_props, "dump", accum, "6", "accum"], check=True)
planned = 0
for d in (plain, accum):
    for name in sorted(os.listdir(d)):
        for cap in ("3KiB", "8KiB", "1GiB"):
            if round_trip(os.path.join(d, name), cap, f"{os.path.basename(d)}-{name}-{cap}"):
                planned += 1
check(planned >= 15, f"only {planned} random plans were feasible")

# a session graph: a resident input, an in-place kernel, kept values
sess = os.path.join(tmp, "sess.json")
with open(sess, "w") as f:
    f.write('{"format": "turnip.taskgraph/1", "devices": 1, "vertices": ['
            '{"id": "x", "kind": "input", "device": 0, "dtype": "f32", "shape": [64]},'
            '{"id": "w", "kind": "input", "device": 0, "dtype": "f32", "shape": [64], "resident": {"offset": 1024}},'
            '{"id": "y", "kind": "kernel", "device": 0, "op": "add", "inputs": ["x", "w"], "dtype": "f32", "shape": [64]},'
            '{"id": "z", "kind": "kernel", "device": 0, "op": "relu", "inputs": ["y"], "dtype": "f32", "shape": [64], "inplace": 0}],'
            ' "outputs": ["z"], "keep": ["z", "w"]}')
check(round_trip(sess, "4KiB", "session") is not None, "the session graph did not plan")
check('"kept"' in read(os.path.join(tmp, "session.json")).decode() and '"resident"' in read(os.path.join(tmp, "session.json")).decode(),
      "the session plan lacks kept / resident (the round trip does not cover them)")

# 2. runs from plan files against a fresh plan
for ex, cap in (("mlp.json", "1MiB"), ("transformer.json", "2MiB")):
    tg = os.path.join(src, "examples", ex)
    ins = os.path.join(tmp, ex + ".in.st")
    rc, out = run("gen", "inputs", tg, "-o", ins, "--seed", "7")
    check(rc == 0, f"gen inputs {ex}: {out}")
    rt = round_trip(tg, cap, ex)
    check(rt is not None, f"{ex} did not plan at {cap}")
    if not rt:
        continue
    fresh = os.path.join(tmp, ex + ".fresh.st")
    rc, out = run("run", tg, "--device-mem", cap, "--inputs", ins, "--out", fresh)
    check(rc == 0, f"{ex}: fresh run: {out}")
    for p in rt:
        o = p + ".out.st"
        rc, out = run("run", tg, "--device-mem", cap, "--inputs", ins, "--out", o, "--plan", p, "--order", "random", "--seed", "3")
        check(rc == 0 and "loaded from" in out and "plan verified" in out, f"{ex}: run --plan {p}: {rc} {out}")
        check(rc == 0 and read(o) == read(fresh), f"{ex}: run --plan {p} gave other outputs than a fresh plan")
    mj, mb = rt
    rc, out = run("run", tg, "--device-mem", "4MiB", "--inputs", ins, "--out", fresh + ".x", "--plan", mb)
    check(rc == 2 and "the plan is for device 0" in out, f"{ex}: other caps: {rc} {out}")
    rc, out = run("run", tg, "--device-mem", cap, "--inputs", ins, "--out", fresh + ".x", "--plan", mj, "--repeat", "2")
    check(rc == 2 and "--repeat" in out, f"{ex}: --plan with --repeat: {rc} {out}")
    other = os.path.join(src, "examples", "figure3.json")
    rc, out = run("run", other, "--device-mem", cap + "," + cap + "," + cap, "--inputs", ins, "--out", fresh + ".x", "--plan", mb)
    check(rc == 2 and "another graph" in out, f"{ex}: a plan for another graph: {rc} {out}")

# 3. damaged files
tg = os.path.join(src, "examples", "mlp.json")
ins = os.path.join(tmp, "mlp.json.in.st")
mj, mb = os.path.join(tmp, "mlp.json.json"), os.path.join(tmp, "mlp.json.bin")
good, goodj = read(mb), read(mj)
bad = os.path.join(tmp, "bad.bin")
outj = os.path.join(tmp, "bad.out.json")


def refused_or_ok(args, tag, allow_ok):
    rc, out = run(*args)
    ok = rc == 2 and out.strip() != "" or (allow_ok and rc == 0)
    check(ok, f"{tag}: exit {rc} (wanted 2{' or 0' if allow_ok else ''} without a crash): {out[-300:]}")
    return rc


cuts = sorted(set([0, 1, 7, 8, 9, 79, 80, 81, len(good) - 9, len(good) - 8, len(good) - 1] +
                  [rnd.randrange(len(good)) for _ in range(40)]))
for n in cuts:
    write(bad, good[:n])
    refused_or_ok(("convert", bad, outj), f"binary cut at {n}", False)
for _ in range(60):
    b = bytearray(good)
    i = rnd.randrange(len(b))
    b[i] ^= 1 << rnd.randrange(8)
    write(bad, bytes(b))
    refused_or_ok(("convert", bad, outj), f"binary bit flip at {i}", False)
# the checksum is the standard FNV-1a-64 of every byte before it (recomputed here), and a file
# checksummed with the basis of files written before 2026-11-24 (a digit short) is still read
check(struct.unpack("<Q", good[-8:])[0] == fnv(good[:-8]), "binary checksum: not the standard FNV-1a-64")
write(bad, good[:-8] + struct.pack("<Q", fnv(good[:-8], 1469598103934665603)))
rc, out = run("convert", bad, outj)
check(rc == 0, f"binary with the legacy checksum: exit {rc}: {out[-300:]}")
write(bad, good[:-8] + struct.pack("<Q", fnv(good[:-8], 1469598103934665602)))
refused_or_ok(("convert", bad, outj), "binary with another basis's checksum", False)
# changes behind a good checksum: the header's counts, then any byte
accepted = 0
for k in range(400):
    b = bytearray(good[:-8])
    if k < 80:
        off = rnd.choice([8, 12, 16, 24, 32, 40, 48, 56, 60, 64, 72]) + rnd.choice([0, 1, 3])
        b[off] = rnd.choice([0, 1, 2, 0x7F, 0x80, 0xFF, b[off] ^ 1])
    else:
        for _ in range(rnd.choice([1, 1, 2, 4])):
            off = rnd.randrange(len(b))
            b[off] = rnd.choice([0, 1, 0xFF, b[off] ^ (1 << rnd.randrange(8)), rnd.randrange(256)])
    b += struct.pack("<Q", fnv(bytes(b)))
    write(bad, bytes(b))
    if k % 5 == 0:  # the executor's path too: checked, then verified against the TaskGraph
        refused_or_ok(("run", tg, "--device-mem", "1MiB", "--inputs", ins, "--out", os.path.join(tmp, "bad.st"), "--plan", bad),
                      f"run --plan, byte {off} changed behind a good checksum", True)
    accepted += refused_or_ok(("convert", bad, outj), f"byte {off} changed behind a good checksum", True) == 0
check(accepted < 400, "no forged file was refused")
badj = os.path.join(tmp, "bad.json")
for n in sorted(set([0, 1, 10, len(goodj) - 2] + [rnd.randrange(len(goodj) - 1) for _ in range(30)])):  # the last byte is a newline
    write(badj, goodj[:n])
    refused_or_ok(("convert", badj, os.path.join(tmp, "bad.out.bin")), f"JSON cut at {n}", False)
    refused_or_ok(("run", tg, "--device-mem", "1MiB", "--inputs", ins, "--out", os.path.join(tmp, "bad.st"), "--plan", badj),
                  f"run --plan, JSON cut at {n}", False)

if failures:
    print(f"{len(failures)} failures", file=sys.stderr)
    sys.exit(1)
print(f"ok: {planned} random plans round-tripped; damaged files refused ({accepted} of 400 forged files still valid plans)")
