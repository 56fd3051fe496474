#!/usr/bin/env python3
"""Compute-stream idle time of a LLaMA prefill on the cpu backend, from its Chrome trace.

Runs `turnip llama --preset P --seq-len T --device-mem CAP --trace FILE` R times (default: the
tiny preset, 512 tokens, a cap above the plan's peak so nothing is offloaded: 100% memory) and,
per compute stream of the trace, sums the gaps between one kernel's end and the next kernel's
start; idle fraction = gaps / span, the span running from the stream's first kernel start to
its last kernel end. Prints each run (kernels, gaps over 5 us, idle ms, span ms, idle %, mean
gap) and min / median / max of the idle fraction, with the machine's load average (timings on a
shared machine are indicative only). Target (issue 15): under 3%.
usage: prefill_idle.py [--turnip build/turnip] [--preset tiny] [--seq-len 512]
                       [--device-mem 1GiB] [--runs 3] [--streams 1] [--blocks 8]"""
import argparse, collections, json, os, statistics, subprocess, sys, tempfile

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--turnip", default="build/turnip")
ap.add_argument("--preset", default="tiny")
ap.add_argument("--seq-len", type=int, default=512)
ap.add_argument("--device-mem", default="1GiB")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--streams", type=int, default=1)
ap.add_argument("--blocks", type=int, default=8, help="query blocks (more, smaller kernels)")
a = ap.parse_args()
if not 1 <= a.runs <= 100 or not 1 <= a.seq_len <= 1 << 20 or not 1 <= a.streams <= 64 or not 1 <= a.blocks <= 4096:
    sys.exit("prefill_idle.py: --runs 1..100, --seq-len 1..2^20, --streams 1..64, --blocks 1..4096")


def idle(trace):
    ev = json.load(open(trace))["traceEvents"]
    tracks = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    gaps = span = 0.0
    n = big = 0
    for iv in tracks.values():
        iv.sort()
        span += iv[-1][1] - iv[0][0]
        end = iv[0][1]
        n += len(iv)
        for s, t in iv[1:]:
            if s > end:
                gaps += s - end
                big += s - end > 5
            end = max(end, t)
    return n, big, gaps, span


print(f"machine: {os.cpu_count()} cores, load average {open('/proc/loadavg').read().split()[:3]}")
print(f"turnip llama --preset {a.preset} --seq-len {a.seq_len} --device-mem {a.device_mem} --streams {a.streams} "
      f"--blocks {a.blocks} (cpu backend), {a.runs} runs")
print(f"{'run':>3s} {'kernels':>8s} {'gaps>5us':>9s} {'idle ms':>9s} {'span ms':>9s} {'idle %':>7s} {'mean gap us':>12s}")
fr = []
with tempfile.TemporaryDirectory() as d:
    tr = os.path.join(d, "t.json")
    for r in range(a.runs):
        p = subprocess.run([a.turnip, "llama", "--preset", a.preset, "--seq-len", str(a.seq_len), "--device-mem",
                            a.device_mem, "--streams", str(a.streams), "--blocks", str(a.blocks), "--trace", tr], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"turnip failed ({p.returncode}): {p.stderr.strip()}")
        n, big, gaps, span = idle(tr)
        fr.append(gaps / span if span else 0.0)
        print(f"{r + 1:3d} {n:8d} {big:9d} {gaps / 1e3:9.2f} {span / 1e3:9.2f} {100 * fr[-1]:6.2f}% "
              f"{gaps / max(1, n - 1):12.2f}")
print(f"idle fraction min / median / max: {100 * min(fr):.2f}% / {100 * statistics.median(fr):.2f}% / "
      f"{100 * max(fr):.2f}% (target: under 3%)")
