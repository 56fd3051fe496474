#!/usr/bin/python3
"""LLaMA prefill on the cpu backend at caps of 100%, 50% and 25% of the unconstrained peak,
side by side with PyTorch CPU running the same forward (Hugging Face semantics, eager, f32)
with the same weights and thread count and no cap.

Model: 4 layers, hidden 1024, 16 heads (8 KV), intermediate 2816, vocab 8000, f32; 512 tokens;
one device; attention in 4 query blocks, MLP in 4 chunks, vocabulary in 8 chunks.
usage: bench/llama_vs_torch.py [TURNIP]"""
import os, re, subprocess, sys, tempfile, time
import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "scripts"))
sys.path.insert(0, os.path.join(root, "tests"))
turnip = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "turnip")
from make_tiny_llama import make
import torch
import llama_ref

threads = 2
torch.set_num_threads(threads)
tmp = tempfile.mkdtemp(prefix="tp-lb-")
d = os.path.join(tmp, "model")
cfg = make(d, layers=4, hidden=1024, heads=16, kv_heads=8, intermediate=2816, vocab=8000, seed=1)
T = 512
ids = [int(i) for i in np.random.default_rng(0).integers(0, 8000, T)]
common = ["--model", d, "--prompt-ids", ",".join(map(str, ids)), "--blocks", "4", "--mlp-chunks", "4", "--vocab-chunks", "8"]
env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))


def ours(cap, nodata=False):
    r = subprocess.run([turnip, "llama"] + common + ["--device-mem", str(cap)] + (["--no-data"] if nodata else []),
                       capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return r.stdout


out = ours(1 << 40, nodata=True)  # the bounds, with no cap
peak = int(re.search(r"capacity / unconstrained peak: (\d+) / (\d+)", out).group(2))
minf = int(re.search(r"capacity / unconstrained peak: (\d+) / (\d+)", out).group(1))

# PyTorch: the tests' reference forward (tests/llama_ref.py)
W = llama_ref.load_weights(torch, d, cfg)
best_torch = 1e9
with torch.no_grad():
    for _ in range(3):
        t0 = time.perf_counter()
        llama_ref.reference(torch, W, cfg, ids)
        best_torch = min(best_torch, time.perf_counter() - t0)

print(f"torch {torch.__version__}, {threads} threads; OpenBLAS threads {threads}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
print(f"model: 4 layers, hidden 1024, 16 heads (8 KV), vocab 8000, f32, {T} tokens; unconstrained peak {peak / 2**20:.1f} MiB, "
      f"smallest feasible {minf / 2**20:.1f} MiB")
print(f"{'run':28s} {'cap MiB':>8s} {'makespan ms':>12s} {'compute ms':>11s} {'moved MiB':>10s} {'bound ms':>9s} {'ratio':>6s}")
print(f"{'PyTorch CPU (no cap)':28s} {'-':>8s} {best_torch * 1e3:12.1f}")
res = {}
for frac in (1.0, 0.5, 0.25):
    cap = max(minf, int(peak * frac))
    best = None
    for _ in range(3):
        o = ours(cap)
        mk = float(re.search(r"makespan ([\d.]+) ms", o).group(1))
        row = [l for l in o.splitlines() if re.match(r"^0\s+\d+\s", l) and "," in l][0].split()
        busy = float(row[2])
        cells = re.findall(r"(\d+), ([\d.]+) (B|KiB|MiB|GiB), ([\d.]+)", o.split("peer-in (n, bytes, ms)", 1)[1].splitlines()[1])
        unit = {"B": 1, "KiB": 1024, "MiB": 2**20, "GiB": 2**30}
        moved = sum(float(c[1]) * unit[c[2]] for c in cells) / 2**20
        link = max(float(c[3]) for c in cells)
        bound = max(busy, link)
        if best is None or mk < best[0]:
            best = (mk, busy, moved, bound)
    res[frac] = best
    print(f"{f'turnip, {frac:.0%} of peak':28s} {cap / 2**20:8.1f} {best[0]:12.1f} {best[1]:11.1f} {best[2]:10.1f} {best[3]:9.1f} {best[0] / best[3]:6.2f}")
print(f"turnip at 100% / PyTorch: {res[1.0][0] / (best_torch * 1e3):.2f} (target <= 1.2)")
print(f"turnip at 25% / turnip at 100%: {res[0.25][0] / res[1.0][0]:.2f} (target <= 1.3)")
