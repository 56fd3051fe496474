#!/usr/bin/env python3
"""LLaMA-3-8B-shaped prefill (bf16, random weights) on one GPU with the device memory capped
at 50% and 25% of the weights: turnip's cuda backend against its bound and, side by side on
the same GPU with the same checkpoint and prompt, a PyTorch loop that prefetches the next
layer from pinned memory and Hugging Face accelerate's CPU offload (bench/llama_cuda_peers.py).

The bound of a turnip run is max(h2d bytes / measured h2d bandwidth, d2h bytes / measured d2h
bandwidth, compute time), the compute time being the kernel busy time of an uncapped run with
one stream (every weight resident, kernels back to back, timed by CUDA events).
usage: llama_cuda.py TURNIP CKPT_DIR H2D_GBPS D2H_GBPS [--seq 4096,16384] [--fracs 50,25]
       [--streams 4] [--reps 3] [--peers prefetch,accelerate] [--csv FILE]"""
import argparse, os, re, subprocess, sys, time
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("turnip")
ap.add_argument("ckpt")
ap.add_argument("h2d", type=float)
ap.add_argument("d2h", type=float)
ap.add_argument("--seq", default="4096,16384")
ap.add_argument("--fracs", default="50,25")
ap.add_argument("--streams", type=int, default=4)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--peers", default="prefetch,accelerate")
ap.add_argument("--csv")
ap.add_argument("--completion", default="")
a = ap.parse_args()
os.environ["TURNIP"] = os.path.abspath(a.turnip)  # llama_cuda_peers.py asks it for the prompt ids
here = os.path.dirname(os.path.abspath(__file__))
wbytes = os.path.getsize(os.path.join(a.ckpt, "model.safetensors"))
tmp = os.environ.get("TMPDIR", "/tmp")


def sh(cmd, timeout=900):
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    sys.stderr.write(f"[{time.time() - t0:6.1f} s] {' '.join(cmd)} -> {r.returncode}\n")
    if r.returncode:
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
    return r


def turnip(T, cap, streams, reps, extra=()):
    out = os.path.join(tmp, f"tp_{T}_{cap}.st")
    cmd = [a.turnip, "llama", "--model", a.ckpt, "--seq-len", str(T), "--device-mem", str(cap), "--backend", "cuda",
           "--streams", str(streams), "--repeat", str(reps), "--out", out] + list(extra)
    if a.completion:
        cmd += ["--completion", a.completion]
    r = sh(cmd)
    if r.returncode:
        return None
    ms = [float(x) for x in re.findall(r"run \d+ of \d+: makespan ([0-9.]+) s", r.stdout)]
    tot = re.search(r"totals: makespan ([0-9.]+) s, kernel busy ([0-9.]+) s, h2d (\d+) B, d2h (\d+) B", r.stdout)
    vals = {}
    try:
        sys.path.insert(0, os.path.join(here, "..", "tests"))
        from tputil import read_st
        vals = read_st(out)[0]
    except Exception as e:  # noqa: BLE001
        sys.stderr.write(f"cannot read {out}: {e}\n")
    lg = vals.get("logits")
    return {"best": min(ms) if ms else float(tot.group(1)), "median": sorted(ms)[len(ms) // 2] if ms else float(tot.group(1)),
            "max": max(ms) if ms else float(tot.group(1)),
            "busy": float(tot.group(2)), "h2d": int(tot.group(3)), "d2h": int(tot.group(4)),
            "logits": None if lg is None else lg.reshape(-1)[-128256:], "plan": r.stdout}


def peer(kind, T, cap):
    out = os.path.join(tmp, f"{kind}_{T}_{cap}.npy")
    r = sh([sys.executable, os.path.join(here, "llama_cuda_peers.py"), kind, a.ckpt, "--seq-len", str(T), "--cap", str(cap),
            "--reps", str(a.reps), "--out", out])
    m = re.search(r"RESULT .*", r.stdout)
    if not m:
        return {"text": f"failed (exit {r.returncode})"}
    line = m.group(0)
    res = {"text": line}
    b = re.search(r"best_s=([0-9.]+) median_s=([0-9.]+) max_s=([0-9.]+) peak_GiB=([0-9.]+)", line)
    if b:
        res.update(best=float(b.group(1)), median=float(b.group(2)), max=float(b.group(3)), peak=float(b.group(4)))
        res["logits"] = np.load(out) if os.path.exists(out) else None
    return res


rows = []
print(f"checkpoint {a.ckpt}: {wbytes / 1e9:.2f} GB of weights; measured link: h2d {a.h2d:.1f} GB/s, d2h {a.d2h:.1f} GB/s")
for T in map(int, a.seq.split(",")):
    ref = turnip(T, int(wbytes * 1.6) + (8 << 30), 1, 2, ["--completion", "poll"] if not a.completion else [])
    compute = ref["busy"] if ref else float("nan")
    print(f"T={T}: uncapped, 1 stream: makespan {ref['best'] if ref else float('nan'):.3f} s, kernel busy (compute time) {compute:.3f} s",
          flush=True)
    for frac in map(int, a.fracs.split(",")):
        cap = wbytes * frac // 100
        tp = turnip(T, cap, a.streams, a.reps)
        row = {"T": T, "frac": frac, "cap": cap, "compute": compute}
        if tp:
            bound = max(tp["h2d"] / (a.h2d * 1e9), tp["d2h"] / (a.d2h * 1e9), compute)
            row.update(tp_best=tp["best"], tp_median=tp["median"], tp_max=tp["max"], h2d=tp["h2d"], d2h=tp["d2h"], bound=bound)
            print(f"T={T} cap {frac}% ({cap / 2 ** 30:.2f} GiB): turnip best {tp['best']:.3f} s (median {tp['median']:.3f}, max {tp['max']:.3f}); "
                  f"moved h2d {tp['h2d'] / 1e9:.1f} GB, d2h {tp['d2h'] / 1e9:.1f} GB; bound {bound:.3f} s; "
                  f"ratio {tp['best'] / bound:.2f}", flush=True)
        for kind in [p for p in a.peers.split(",") if p]:
            p = peer(kind, T, cap)
            row[kind] = p
            txt = (f"{p['best']:.3f} s (median {p['median']:.3f}, max {p['max']:.3f}, peak {p['peak']:.2f} GiB)"
                   if "best" in p else p["text"])
            agree = ""
            if tp and tp.get("logits") is not None and p.get("logits") is not None:
                d = float(np.abs(tp["logits"] - p["logits"].reshape(-1)).max())
                agree = f"; max |logits - turnip| {d:.3f} (logit scale {float(np.abs(p['logits']).max()):.2f})"
                row[kind + "_diff"] = d
            print(f"T={T} cap {frac}%: {kind} {txt}{agree}", flush=True)
        rows.append(row)

print("\nmin / median / max of the timed runs (s); ratios at the medians")
print("| tokens | cap (% of weights) | turnip | bound | turnip / bound | PyTorch prefetch loop | accelerate offload | "
      "prefetch / turnip | accelerate / turnip |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    def f(k):
        if k in r and "best" in r[k]:
            return f"{r[k]['best']:.3f} / {r[k]['median']:.3f} / {r[k]['max']:.3f}"
        return r[k]["text"][:40] if k in r else "-"

    def ratio(k):
        return f"{r[k]['median'] / r['tp_median']:.2f}" if k in r and "median" in r[k] and "tp_median" in r else "-"
    tp = f"{r['tp_best']:.3f} / {r['tp_median']:.3f} / {r['tp_max']:.3f}" if "tp_best" in r else "failed"
    print(f"| {r['T']} | {r['frac']}% ({r['cap'] / 2 ** 30:.2f} GiB) | {tp} | {r.get('bound', float('nan')):.3f} | "
          f"{r.get('tp_median', float('nan')) / r.get('bound', float('nan')):.2f} | {f('prefetch')} | {f('accelerate')} | "
          f"{ratio('prefetch')} | {ratio('accelerate')} |")


def write_csv(fcsv):
    fcsv.write("tokens,cap_frac,cap_bytes,turnip_best_s,turnip_median_s,h2d_bytes,d2h_bytes,compute_s,bound_s,prefetch_best_s,accelerate_best_s\n")
    for r in rows:
        g = lambda k: r[k]["best"] if k in r and "best" in r[k] else ""
        fcsv.write(f"{r['T']},{r['frac']},{r['cap']},{r.get('tp_best', '')},{r.get('tp_median', '')},{r.get('h2d', '')},"
                   f"{r.get('d2h', '')},{r['compute']},{r.get('bound', '')},{g('prefetch')},{g('accelerate')}\n")


if a.csv:
    sys.path.insert(0, os.path.join(here, "..", "scripts"))
    from atomic_write import write_atomic
    write_atomic(a.csv, write_csv)
