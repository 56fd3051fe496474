#!/usr/bin/python3
"""decode_gaps.py - where the host-to-device link of a decode step idles (issue 12).

Runs `turnip generate` REPEATS times with --trace and --plan-out (the last decode step's plan and
its Chrome trace) and splits the time of that step's run on device 0's host-to-device lane:

  busy      the lane copies
  dep       idle while the next copy waits for a vertex it depends on (in the MemGraph: the
            last readers of the bytes it overwrites, or the value it copies) that ends after
            the lane became free; `dep kernel` when that vertex is a kernel (the room is full:
            the copy overwrites bytes a kernel still reads)
  launch    idle from the later of (lane free, last dependency done) to the copy's start: the
            executor's and the copy worker's reaction time
  tail      after the last copy, until the run's last vertex ends

and prints each as min / median / max over the runs, in ms and as a share of the run, with the
step's wall time from turnip's "steady state" line. One run at a time; nothing else should run.

usage: bench/decode_gaps.py TURNIP --model DIR [--device-mem 50%] [--repeats 3] [--link-gbps 1]
                            [--new-tokens 17] [--prompt-len 16] [-- EXTRA TURNIP FLAGS]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from generate_bench import machine  # bench/: the script's own directory is on the path


def analyse(trace_path, plan_path):
    ev, lane = {}, None
    for e in json.load(open(trace_path))["traceEvents"]:
        if e.get("ph") == "X":
            ev[e["args"]["vertex"]] = e
        elif e.get("ph") == "M" and e.get("name") == "thread_name" and e["pid"] == 0 and e["args"]["name"] == "h2d 0":
            lane = e["tid"]
    verts = {v["id"]: v for v in json.load(open(plan_path))["vertices"]}
    h2d = sorted((e for e in ev.values() if e["pid"] == 0 and e["tid"] == lane), key=lambda e: e["ts"])
    if not h2d:
        return None
    start = min(e["ts"] for e in ev.values())
    end = max(e["ts"] + e["dur"] for e in ev.values())
    out = {"run": end - start, "busy": 0.0, "dep": 0.0, "dep_kernel": 0.0, "launch": 0.0, "tail": 0.0, "copies": len(h2d)}
    free = start
    for e in h2d:
        v = verts[e["args"]["vertex"]]
        ready, last = start, None
        for d in v["deps"]:
            if d in ev and ev[d]["ts"] + ev[d]["dur"] > ready:
                ready, last = ev[d]["ts"] + ev[d]["dur"], d
        idle = max(0.0, e["ts"] - free)
        dep = min(idle, max(0.0, ready - free))
        out["dep"] += dep
        if last is not None and verts[last]["kind"] == "kernel":
            out["dep_kernel"] += dep
        out["launch"] += idle - dep
        out["busy"] += e["dur"]
        free = max(free, e["ts"] + e["dur"])
    out["tail"] = max(0.0, end - free)
    return {k: (x / 1000.0 if k != "copies" else x) for k, x in out.items()}  # us -> ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("turnip")
    ap.add_argument("--model", required=True)
    ap.add_argument("--device-mem", default="50%")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--link-gbps", type=float, default=1.0)
    ap.add_argument("--new-tokens", type=int, default=17)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("extra", nargs="*", help="more turnip generate flags, after --")
    a = ap.parse_args()
    if a.repeats < 1 or a.repeats > 100 or not (0 < a.link_gbps < 1e6) or a.new_tokens < 2 or a.prompt_len < 1:
        ap.error("--repeats 1..100, --link-gbps above 0, --new-tokens at least 2, --prompt-len at least 1")
    print("machine: %s" % machine())
    print("generate --model %s --device-mem %s --link-bandwidth %g, prompt %d, %d new tokens %s; %d runs; the last decode "
          "step's run on device 0's host-to-device lane" % (a.model, a.device_mem, a.link_gbps, a.prompt_len, a.new_tokens,
                                                               " ".join(a.extra), a.repeats))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tr, pl = os.path.join(tmp, "trace.json"), os.path.join(tmp, "plan.json")
        for _ in range(a.repeats):
            cmd = [a.turnip, "generate", "--model", a.model, "--seq-len", str(a.prompt_len), "--max-new-tokens",
                   str(a.new_tokens), "--device-mem", a.device_mem, "--link-bandwidth", str(a.link_gbps), "--quiet",
                   "--no-verify", "--trace", tr, "--plan-out", pl] + a.extra
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                sys.exit("decode_gaps: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-400:]))
            m = re.search(r"steady state \(after the first decode step\): .*?, ([\d.]+) s per step", p.stdout)
            r = analyse(tr, pl)
            if r is None or not m:
                sys.exit("decode_gaps: no host-to-device copy in the last step, or no steady state line")
            r["wall"] = float(m.group(1)) * 1000
            rows.append(r)
    print("%-24s %-26s %s" % ("", "ms min / med / max", "share of the run (median)"))
    for k, label in (("wall", "step (wall, all steps)"), ("run", "run of the last step"), ("busy", "lane copying"),
                     ("dep", "idle: waiting on a dep"), ("dep_kernel", "  of which on a kernel"),
                     ("launch", "idle: launch latency"), ("tail", "idle: after the last copy")):
        xs = sorted(r[k] for r in rows)
        print("%-24s %7.3f / %7.3f / %7.3f   %s" % (label, xs[0], statistics.median(xs), xs[-1],
                                                   "" if k == "wall" else "%.1f %%" % (100 * statistics.median(
                                                       r[k] / r["run"] for r in rows))))
    print("copies in the step: %d" % rows[0]["copies"])


if __name__ == "__main__":
    main()
