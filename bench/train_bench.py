#!/usr/bin/python3
"""LoRA training step on the cpu backend against PyTorch CPU autograd (issue 13).

One run of this script measures, side by side on one machine:
- PyTorch (Debian's /usr/bin/python3 torch): the same model (weights upcast to float32), the
  same LoRA adapters (PEFT's formula y = x W^T + alpha/r (x A^T) B^T on the chosen targets), the
  mean next-token cross-entropy, torch.utils.checkpoint per layer (the recompute turnip's step
  graph does too; --torch-no-checkpoint also times it without), torch.optim.AdamW on the
  adapters; --repeats runs of --steps steps each, after one warm-up step;
- `turnip train` at each cap of --caps (percent of what a step needs with nothing evicted, as
  the command's --device-mem P% takes it), --repeats runs each.
A step's time is the median over the steps of a run after the first --skip (the first two
plan; the later ones reuse the second plan); each figure is printed as min / median / max over
the runs, and the ratios the issue sets targets on: turnip at 100% over PyTorch (target <= 1.3)
and turnip at 25% over turnip at 100% (target <= 1.3), from the medians.

usage: bench/train_bench.py TURNIP [--model DIR] [--layers 4] [--hidden 1024] [--heads 16] [--kv-heads 8]
       [--intermediate 2816] [--vocab 8000] [--batch 4] [--seq-len 256] [--steps 6] [--skip 2]
       [--caps 100,50,25] [--repeats 3] [--threads 2] [--rank 16] [--alpha 32] [--torch-no-checkpoint]
       [--deterministic-cost]
"""
import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
           "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def machine():
    """the CPU model and core count: bench/generate_bench.py's machine()"""
    spec = importlib.util.spec_from_file_location("generate_bench", os.path.join(ROOT, "bench", "generate_bench.py"))
    gb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gb)
    return gb.machine()


def mmm(xs):
    return min(xs), statistics.median(xs), max(xs)


def fmt(xs):
    lo, med, hi = mmm(xs)
    return "%.3f / %.3f / %.3f" % (lo, med, hi)


def turnip_run(turnip, model, a, cap, extra=()):
    args = [turnip, "train", "--model", model, "--seq-len", str(a.seq_len), "--batch", str(a.batch), "--steps", str(a.steps),
            "--device-mem", "%d%%" % cap, "--lora-rank", str(a.rank), "--lora-alpha", str(a.alpha), "--no-verify",
            "--streams", "1"] + list(extra)
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    steps = [float(m.group(1)) for m in re.finditer(r"^step \d+: loss [-\d.]+, ([\d.]+) s", p.stdout, re.M)]
    moved = [m.group(1) for m in re.finditer(r"^step \d+: .*moved ([\d.]+ \w+)", p.stdout, re.M)]
    mem = re.search(r"^memory: .*", p.stdout, re.M)
    if len(steps) != a.steps:
        sys.exit("could not read %d step times from:\n%s" % (a.steps, p.stdout))
    return statistics.median(steps[a.skip:]), moved[-1], mem.group(0) if mem else ""


def torch_steps(model, a, checkpoint):
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint as ckpt
    spec = importlib.util.spec_from_file_location("generate_torch_reference", os.path.join(ROOT, "tests", "generate_torch.py"))
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    cfg = json.load(open(os.path.join(model, "config.json")))
    W = ref.load_weights(model, cfg)
    L, H = cfg["num_hidden_layers"], cfg["hidden_size"]
    NH, NKV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps, V = H // NH, cfg.get("rms_norm_eps", 1e-6), cfg["vocab_size"]
    inv = ref.hf_inv_freq(cfg.get("rope_theta", 10000.0), hd)
    T, B = a.seq_len, a.batch
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    scale = a.alpha / a.rank
    g = torch.Generator().manual_seed(0)
    ad = {}
    for layer in range(L):
        for t, blk in TARGETS.items():
            w = W["model.layers.%d.%s.%s.weight" % (layer, blk, t)]
            A = ((torch.rand(a.rank, w.shape[1], generator=g) * 2 - 1) / w.shape[1] ** 0.5).requires_grad_()
            Bm = torch.zeros(w.shape[0], a.rank).requires_grad_()
            ad[(layer, t)] = (A, Bm)
    opt = torch.optim.AdamW([p for pair in ad.values() for p in pair], lr=1e-4, weight_decay=0.0)
    mask = torch.full((T, T), float("-inf")).triu(1)

    def lin(x, layer, blk, t):
        y = x @ W["model.layers.%d.%s.%s.weight" % (layer, blk, t)].T
        A, Bm = ad[(layer, t)]
        return y + scale * ((x @ A.T) @ Bm.T)

    def block(x, layer):
        p = "model.layers.%d." % layer
        h = ref.rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = lin(h, layer, "self_attn", "q_proj").view(B, T, NH, hd).transpose(1, 2)
        k = lin(h, layer, "self_attn", "k_proj").view(B, T, NKV, hd).transpose(1, 2)
        v = lin(h, layer, "self_attn", "v_proj").view(B, T, NKV, hd).transpose(1, 2)
        q = q * cos + ref.rotate_half(q) * sin
        k = k * cos + ref.rotate_half(k) * sin
        k = k.repeat_interleave(NH // NKV, dim=1)
        v = v.repeat_interleave(NH // NKV, dim=1)
        s = torch.softmax(q @ k.transpose(-1, -2) / hd ** 0.5 + mask, dim=-1)
        o = (s @ v).transpose(1, 2).reshape(B, T, H)
        x = x + lin(o, layer, "self_attn", "o_proj")
        h = ref.rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        m = F.silu(lin(h, layer, "mlp", "gate_proj")) * lin(h, layer, "mlp", "up_proj")
        return x + lin(m, layer, "mlp", "down_proj")

    ids = torch.tensor(np.random.default_rng(0).integers(0, V, (B, T)))
    times = []
    for s in range(a.steps + 1):  # step 0: warm-up
        t0 = time.perf_counter()
        x = W["model.embed_tokens.weight"][ids]
        for layer in range(L):
            x = ckpt(block, x, layer, use_reentrant=False) if checkpoint else block(x, layer)
        logits = ref.rms_norm(x, W["model.norm.weight"], eps) @ W["lm_head.weight"].T
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if s:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("turnip")
    ap.add_argument("--model")
    for k, v in [("layers", 4), ("hidden", 1024), ("heads", 16), ("kv-heads", 8), ("intermediate", 2816), ("vocab", 8000),
                 ("batch", 4), ("seq-len", 256), ("steps", 6), ("skip", 2), ("repeats", 3), ("threads", 2), ("rank", 16)]:
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--alpha", type=float, default=32.0)
    ap.add_argument("--caps", default="100,50,25")
    ap.add_argument("--torch-no-checkpoint", action="store_true")
    ap.add_argument("--deterministic-cost", action="store_true",
                    help="also run every cap with --deterministic (sum-into groups in member order) and print the ratio")
    a = ap.parse_args()
    if a.repeats < 3 or a.steps <= a.skip:
        ap.error("need --repeats >= 3 and --steps > --skip")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(a.threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    caps = [int(c) for c in a.caps.split(",")]
    tmp = tempfile.mkdtemp(prefix="tp-train-bench-")
    model = a.model
    if not model:
        model = os.path.join(tmp, "model")
        spec = importlib.util.spec_from_file_location("gt", os.path.join(ROOT, "tests", "generate_torch.py"))
        ref = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ref)
        ref.make_model(model, dtype="float32", seed=1, layers=a.layers, hidden=a.hidden, heads=a.heads,
                       kv_heads=a.kv_heads, intermediate=a.intermediate, vocab=a.vocab)
    cfg = json.load(open(os.path.join(model, "config.json")))
    print("machine: %s" % machine())
    print("model: %d layers, hidden %d, %d heads (%d KV), intermediate %d, vocab %d, float32; batch %d x %d tokens; "
          "LoRA r %d alpha %g on all seven projections; %d steps per run, the first %d not timed"
          % (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
             cfg["intermediate_size"], cfg["vocab_size"], a.batch, a.seq_len, a.rank, a.alpha, a.steps, a.skip))
    # alternate the systems within each repeat, so a slow phase of a shared machine hits both
    res = {("torch", True): [], ("torch", False): []}
    res.update({("turnip", c): [] for c in caps})
    res.update({("det", c): [] for c in caps})
    info = {}
    torch_mod = None
    for r in range(a.repeats):
        t, torch_mod = torch_steps(model, a, True)
        res[("torch", True)].append(t)
        if a.torch_no_checkpoint:
            res[("torch", False)].append(torch_steps(model, a, False)[0])
        for c in caps:
            t, moved, mem = turnip_run(a.turnip, model, a, c)
            res[("turnip", c)].append(t)
            info[c] = (moved, mem)
            if a.deterministic_cost:
                res[("det", c)].append(turnip_run(a.turnip, model, a, c, ["--deterministic"])[0])
        print("repeat %d done" % (r + 1), flush=True)
    print("torch %s, %d threads; OPENBLAS_NUM_THREADS=%s; turnip: cpu backend, 1 compute stream per device, "
          "OpenBLAS with %s threads" % (torch_mod.__version__, torch_mod.get_num_threads(), os.environ["OPENBLAS_NUM_THREADS"],
                                       os.environ["OPENBLAS_NUM_THREADS"]))
    print("%-34s %28s %16s" % ("seconds per step", "min / median / max", "moved per step"))
    print("%-34s %28s" % ("PyTorch autograd, checkpointing", fmt(res[("torch", True)])))
    if a.torch_no_checkpoint:
        print("%-34s %28s" % ("PyTorch autograd, no checkpointing", fmt(res[("torch", False)])))
    for c in caps:
        print("%-34s %28s %16s" % ("turnip train at %d%%" % c, fmt(res[("turnip", c)]), info[c][0]))
        if a.deterministic_cost:
            print("%-34s %28s" % ("  the same, --deterministic", fmt(res[("det", c)])))
    for c in caps:
        print("  %d%%: %s" % (c, info[c][1]))
    if a.deterministic_cost:
        for c in caps:
            print("--deterministic / any at %d%%: %.3f at the medians (runs: %s)" % (
                c, statistics.median(res[("det", c)]) / statistics.median(res[("turnip", c)]),
                ", ".join("%.3f" % (d / t) for d, t in zip(res[("det", c)], res[("turnip", c)]))))
    tmed = statistics.median(res[("torch", True)])
    if 100 in caps:
        full = statistics.median(res[("turnip", 100)])
        ratios = [x / tmed for x in res[("turnip", 100)]]
        print("turnip 100%% / PyTorch (checkpointing): %.2f at the medians (runs: %s; target <= 1.3)"
              % (full / tmed, ", ".join("%.2f" % x for x in ratios)))
        for c in caps:
            if c != 100:
                print("turnip %d%% / turnip 100%%: %.2f at the medians (runs: %s; target <= 1.3 at 25%%)"
                      % (c, statistics.median(res[("turnip", c)]) / full,
                         ", ".join("%.2f" % (x / full) for x in res[("turnip", c)])))


if __name__ == "__main__":
    main()
