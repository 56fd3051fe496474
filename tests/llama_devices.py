#!/usr/bin/python3
"""Any device count (issue 16): LLaMA prefill logits for D = 1..5 devices on tiny models with 1, 2
and 4 KV heads (D above the KV heads replicates a group's keys and values on the devices that
share it; D above the query heads leaves devices without attention), a prompt whose blocks
split unevenly over the devices, caps that force offloads, both residual decompositions
(gather, scatter) and every dispatch policy, against the PyTorch reference (tests/llama_ref.py).
Within one configuration every policy and random order gives the same bits.
usage: llama_devices.py TURNIP SOURCE_DIR"""
import atexit, os, re, shutil, subprocess, sys, tempfile
import numpy as np

turnip, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "scripts"))
sys.path.insert(0, os.path.join(src, "tests"))
from make_tiny_llama import make
from tputil import read_st, need_torch
import llama_ref

torch = need_torch()
tmp = tempfile.mkdtemp(prefix="tp-llama-dev-")
atexit.register(shutil.rmtree, tmp, True)  # on every way out, a crash included
failures = 0

# the policies the binary has (its --order choices), and two random orders
r = subprocess.run([turnip, "llama", "--help"], capture_output=True, text=True)
policies = [p for p in ("any", "fixed", "priority") if p + ":" in r.stdout or p + " (default)" in r.stdout]
assert "any" in policies and "fixed" in policies, r.stdout
runs = [(p, []) for p in policies] + [("random", ["--seed", "1"]), ("random", ["--seed", "2", "--jitter", "0.5"])]

CHUNKS = ["--vocab-chunks", "4", "--mlp-chunks", "2"]  # small weight pieces: the caps can be tight
T = 29  # blocks of 9, 10 and 10 rows: pieces of 1-3 rows over 5 devices
rng = np.random.default_rng(11)
ids = [int(i) for i in rng.integers(0, 256, T)]


def cap_for(d, D, res):
    """a per-device cap between the plan's smallest feasible capacity and its unconstrained peak
    (60% of the largest device's peak, at least the smallest feasible): offloads or drops follow"""
    p = subprocess.run([turnip, "llama", "--model", d, "--prompt-ids", ",".join(map(str, ids)), "--devices", str(D), "--residual", res,
                        "--device-mem", "1GiB", "--blocks", "3", "--all-logits", "--no-data"] + CHUNKS, capture_output=True, text=True, check=True)
    pairs = re.findall(r"(\d+) / (\d+) \(", p.stdout.split("unconstrained peak:", 1)[1].split("\n", 1)[0])
    minf, peak = max(int(a) for a, _ in pairs), max(int(b) for _, b in pairs)
    return str(max(minf, int(0.6 * peak)))


# (query heads, KV heads): every D plans offloads or drops under its cap (checked)
for heads, kv in [(4, 1), (6, 2), (8, 4)]:
    d = os.path.join(tmp, f"h{heads}kv{kv}")
    cfg = make(d, seed=heads, layers=2, hidden=48 if heads == 6 else 64, heads=heads, kv_heads=kv, intermediate=128, vocab=256)
    ref = llama_ref.reference(torch, llama_ref.load_weights(torch, d, cfg), cfg, ids)
    tol = 1e-3 * float(np.abs(ref).max())
    for D in range(1, 6):
        for res in ("gather", "scatter"):
            bits, worst, moved, cap = None, 0.0, None, cap_for(d, D, res)
            for pol, extra in runs:
                out = os.path.join(tmp, "out.st")
                args = [turnip, "llama", "--model", d, "--prompt-ids", ",".join(map(str, ids)), "--devices", str(D), "--residual", res,
                        "--device-mem", cap, "--blocks", "3", "--all-logits", "--out", out, "--order", pol] + CHUNKS + extra
                p = subprocess.run(args, capture_output=True, text=True)
                if p.returncode:
                    print(f"FAIL heads {heads} kv {kv} D={D} {res} {pol}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
                    failures += 1
                    continue
                rows = p.stdout.split("capacity", 1)[1].split("host:", 1)[0].splitlines()[1:]
                moved = sum(int(line.split()[11]) + int(line.split()[14]) for line in rows)
                vals, raws = read_st(out)
                worst = max(worst, float(np.abs(vals["logits"] - ref).max()))
                if bits is None:
                    bits = raws["logits"]
                elif raws["logits"] != bits:
                    print(f"FAIL heads {heads} kv {kv} D={D} {res}: {pol} {' '.join(extra)} gives other bits than {runs[0][0]}")
                    failures += 1
            ok = worst <= tol and moved
            print(f"{'ok  ' if ok else 'FAIL'} heads {heads} kv {kv} D={D} {res} cap {cap} B: max |logits - torch| = {worst:.2e} "
                  f"(allowed {tol:.2e}) over {len(runs)} orders, bit-identical; {moved} offloads+drops")
            failures += not ok

# blocks shorter than the devices (7 tokens in blocks of 2, 2 and 3 rows over 4-5 devices:
# fewer pieces than devices) and the last position only (only the last block is joined on
# device 0): the last logits against the reference's
d = os.path.join(tmp, "h4kv1")
cfg = make(d, seed=4, layers=2, hidden=64, heads=4, kv_heads=1, intermediate=128, vocab=256)
ref = llama_ref.reference(torch, llama_ref.load_weights(torch, d, cfg), cfg, ids[:7])[-1]
for D in (4, 5):
    for res in ("gather", "scatter"):
        out = os.path.join(tmp, "last.st")
        p = subprocess.run([turnip, "llama", "--model", d, "--prompt-ids", ",".join(map(str, ids[:7])), "--devices", str(D), "--residual",
                            res, "--device-mem", "1MiB", "--blocks", "3", "--out", out] + CHUNKS, capture_output=True, text=True)
        err = float(np.abs(read_st(out)[0]["logits"][-1] - ref).max()) if p.returncode == 0 else float("inf")
        ok = err <= 1e-3 * float(np.abs(ref).max())
        print(f"{'ok  ' if ok else 'FAIL'} 7 tokens, 3 blocks, D={D} {res}, last position: max |logits - torch| = {err:.2e} {p.stderr.strip()[:200]}")
        failures += not ok

# the builder's limits: more devices than MLP columns is refused with exit 2, naming the cause
d = os.path.join(tmp, "h4kv1")
p = subprocess.run([turnip, "llama", "--model", d, "--seq-len", "8", "--devices", "8", "--mlp-chunks", "17", "--device-mem", "1MiB"],
                   capture_output=True, text=True)
ok = p.returncode == 2 and "devices x MLP chunks (8 x 17)" in p.stderr
print(f"{'ok  ' if ok else 'FAIL'} 8 devices x 17 MLP chunks > 128 columns: exit {p.returncode}: {p.stderr.strip()[:120]}")
failures += not ok

print("llama_devices:", "FAILED" if failures else "passed", f"({failures} failures)")
sys.exit(1 if failures else 0)
