#!/usr/bin/python3
"""Decode benchmark of `turnip generate` on the cpu backend with a throttled link (issue 12).

For every cap (percent of what weights + KV cache + a step's work need) and every cache policy,
runs the command --repeats times and prints min / median / max of the bytes moved per token
against the bound (weights + KV - cap, when positive) and of the decode time per token against
max(compute, bound / bandwidth), compute being the median time per token at 100% with the
latency policy, where nothing moves. MB and the bound are read from turnip's printed sizes, so
to 0.1 of the unit it prints; "bytes x" is turnip's own steady-state bytes / bound, from
unrounded counts (median of the runs). A random checkpoint is made with bench/generate_torch.py
--make-model when --model is not given.

On a GPU (--backend cuda) nothing is throttled: --link-gbps is then the measured host-to-device
rate (build/bench_cuda_copy) that the time bound divides by.

--plans token (the default) or layer is passed to every run (a plan per decode step, or per
layer and head; --lookahead and --prefetch other than 1 only with layer).

usage: bench/generate_bench.py TURNIP [--model DIR] [--layers 16] [--hidden 256] [--link-gbps 1]
       [--caps 100,50,25] [--policies latency,lru,fifo,size] [--repeats 3] [--new-tokens 17]
       [--plans token|layer] [--lookahead 0|1] [--backend cpu|cuda]
"""
import argparse
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores (%s)" % (model, os.cpu_count() or 0, platform.platform())


def run(turnip, args):
    p = subprocess.run([turnip, "generate"] + args, capture_output=True, text=True)
    if p.returncode:
        sys.exit("turnip generate %s failed (%d):\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    out = p.stdout
    m = re.search(r"steady state \(after the first decode step\): ([\d.]+) (\w+) per token, ([\d.]+) s per step"
                  r"(?:, bytes / bound ([\d.]+))?", out)
    bound = re.search(r"bound \(weights \+ KV - devices x cap\): ([\d.]+) (\w+)", out)
    cache = re.search(r"cache: .*", out)
    mem = re.search(r"cap ([\d.]+ \w+) \((\d+)%\)", out)
    units = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4}
    return {
        "s_per_token": float(m.group(3)),
        "bytes": float(m.group(1)) * units[m.group(2)],
        "bound": float(bound.group(1)) * units[bound.group(2)],
        "ratio": float(m.group(4)) if m.group(4) else None, # turnip's own, from unrounded bytes
        "cache": cache.group(0) if cache else "",
        "cap": mem.group(1) if mem else "?",
    }


def mmm(xs):
    return min(xs), statistics.median(xs), max(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("turnip")
    ap.add_argument("--model")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--intermediate", type=int, default=688)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--plans", choices=("token", "layer"), default="token")
    ap.add_argument("--lookahead", default="0")
    ap.add_argument("--link-gbps", type=float, default=1.0)
    ap.add_argument("--caps", default="100,50,25")
    ap.add_argument("--policies", default="latency,lru,fifo,size")
    ap.add_argument("--prefetch", default="1")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=17)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    a = ap.parse_args()
    if a.repeats < 1 or not (math.isfinite(a.link_gbps) and a.link_gbps > 0):
        ap.error("--repeats must be at least 1 and --link-gbps a finite rate above 0")
    if a.plans == "token" and (a.lookahead != "0" or a.prefetch != "1"):
        ap.error("--lookahead and --prefetch choose between the plans of layers: they need --plans layer")
    tmp = None
    model = a.model
    if not model:
        tmp = tempfile.TemporaryDirectory()
        model = os.path.join(tmp.name, "model")
        subprocess.run([sys.executable, os.path.join(HERE, "generate_torch.py"), "--make-model", model, "--layers", str(a.layers),
                        "--hidden", str(a.hidden), "--heads", "8", "--kv-heads", "4", "--intermediate", str(a.intermediate),
                        "--vocab", str(a.vocab), "--new-tokens", "2", "--repeats", "3"], check=True, capture_output=True)
    print("machine: %s" % machine())
    print("backend %s, --plans %s; model: %s; link %.2f GB/s%s; prompt %d, %d new tokens; %d repeats per figure; figures are the "
          "steady state (decode steps after the first, which fills the empty cache)" % (a.backend, a.plans, model if a.model else
          "random, %d layers, hidden %d, intermediate %d, 8 heads (4 KV), vocab %d, f32" % (a.layers, a.hidden, a.intermediate, a.vocab),
          a.link_gbps, " (measured, not throttled)" if a.backend == "cuda" else " (throttled)", a.prompt_len, a.new_tokens, a.repeats))
    base = ["--model", model, "--seq-len", str(a.prompt_len), "--max-new-tokens", str(a.new_tokens),
            "--quiet", "--no-verify", "--plans", a.plans] + (["--lookahead", a.lookahead] if a.plans == "layer" else [])
    base += ["--backend", "cuda"] if a.backend == "cuda" else ["--link-bandwidth", str(a.link_gbps)]
    results = {}
    for cap in a.caps.split(","):
        for pol in a.policies.split(","):
            for pf in a.prefetch.split(","):
                rs = [run(a.turnip, base + ["--device-mem", cap + "%", "--policy", pol, "--prefetch", pf]) for _ in range(a.repeats)]
                results[(cap, pol, pf)] = rs
    compute = statistics.median(r["s_per_token"] for r in results.get(("100", "latency", a.prefetch.split(",")[0]), [])) \
        if ("100", "latency", a.prefetch.split(",")[0]) in results else 0.0
    print("compute (median s/token at 100%%, latency policy): %.4f" % compute)
    print("%-5s %-8s %-3s %-10s %-28s %-8s %-30s %-8s" % ("cap", "policy", "pf", "bound MB", "MB/token min/med/max", "bytes x",
                                                            "s/token min/med/max", "time x"))
    for (cap, pol, pf), rs in results.items():
        bound = rs[0]["bound"]
        b = mmm([r["bytes"] for r in rs])
        ratio = statistics.median(r["ratio"] for r in rs) if all(r["ratio"] is not None for r in rs) else None
        t = mmm([r["s_per_token"] for r in rs])
        tbound = max(compute, bound / (a.link_gbps * 1e9))
        print("%-5s %-8s %-3s %-10.2f %8.2f / %8.2f / %8.2f %-8s %8.4f / %8.4f / %8.4f  %-8s" % (
            cap + "%", pol, pf, bound / 1e6, b[0] / 1e6, b[1] / 1e6, b[2] / 1e6,
            "%.3f" % ratio if ratio is not None else "-", t[0], t[1], t[2], "%.3f" % (t[1] / tbound) if tbound > 0 else "-"))
        print("      %s" % rs[-1]["cache"])


if __name__ == "__main__":
    main()
