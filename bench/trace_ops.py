#!/usr/bin/env python3
"""Kernel time by kind from a turnip Chrome trace (`--trace FILE`): vertex names lose their
layer, head, group, block, device and chunk indices (L3.q.h7.b0 -> q), and the summed event
durations are printed per kind, largest first, with the copy engines' busy time and the span
from the first kernel to the last. Event durations on concurrent streams overlap, so the sum
can exceed the makespan.
usage: trace_ops.py TRACE.json [--top N]"""
import argparse, collections, json, re

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("trace")
ap.add_argument("--top", type=int, default=20)
a = ap.parse_args()
ev = [e for e in json.load(open(a.trace))["traceEvents"] if e.get("ph") == "X"]
kern = [e for e in ev if e.get("cat") == "kernel"]
agg = collections.defaultdict(lambda: [0, 0.0])
for e in kern:
    k = re.sub(r"^L\d+\.", "", e["args"]["task"])
    k = re.sub(r"\.(h|g|b|d|c|v)\d+", "", k)
    k = re.sub(r"@d\d+", "", k)
    agg[k][0] += 1
    agg[k][1] += e["dur"]
tot = sum(v[1] for v in agg.values())
print(f"{'kind':16s} {'count':>6s} {'sum ms':>9s} {'share':>6s} {'us each':>9s}")
for k, (n, d) in sorted(agg.items(), key=lambda x: -x[1][1])[:a.top]:
    print(f"{k:16s} {n:6d} {d / 1e3:9.1f} {100 * d / tot:5.1f}% {d / n:9.1f}")
print(f"kernels: {len(kern)} events, {tot / 1e3:.1f} ms summed over streams")
cats = collections.defaultdict(float)
for e in ev:
    if e.get("cat") != "kernel":
        cats[e.get("cat")] += e["dur"]
print("copies: " + ", ".join(f"{c} {d / 1e3:.1f} ms" for c, d in sorted(cats.items())))
if kern:
    print(f"first kernel starts at {min(e['ts'] for e in kern) / 1e3:.1f} ms, last ends at "
          f"{max(e['ts'] + e['dur'] for e in kern) / 1e3:.1f} ms")
