#!/usr/bin/python3
"""sim_within.py - a `turnip sim` run's makespan within [1, HI] x a reference (1e-6 relative
below): the compute sum of a chain (--chain FILE, whose kernel busy time the run must also
equal, 1e-6 relative) or a number (--ref S). --directed also wants directed evictions in the
plan's statistics. Prints the ratio; exit 0 when it holds, 1 otherwise, 2 on bad usage.
usage: sim_within.py SIM_OUTPUT (--chain CHAIN.json | --ref S) [--hi HI] [--directed]
(--hi: no upper bound when left out)"""
import argparse
import json
import math
import re
import sys


def positive(text):
    v = float(text)
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError("%s is not a finite number > 0" % text)
    return v


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("usage: ", 1)[1].split("\n")[0])
    ap.add_argument("output")
    ref_of = ap.add_mutually_exclusive_group(required=True)
    ref_of.add_argument("--chain")
    ref_of.add_argument("--ref", type=positive)
    ap.add_argument("--hi", type=positive, default=math.inf)
    ap.add_argument("--directed", action="store_true")
    a = ap.parse_args()
    with open(a.output) as f:
        t = f.read()
    ref = a.ref
    if a.chain:
        with open(a.chain) as f:
            ref = sum(l["uf"] + l["ub"] for l in json.load(f)["layers"])
    m = re.search(r"totals: makespan ([0-9.e+-]+) s, kernel busy ([0-9.e+-]+) s", t)
    if not m or not ref > 0:
        print("no totals line, or no reference above 0")
        return 1
    mk, busy = float(m.group(1)), float(m.group(2))
    print("makespan %.4f of the reference" % (mk / ref))
    ok = ref * (1 - 1e-6) <= mk <= a.hi * ref
    if a.chain:
        ok &= abs(busy - ref) <= 1e-6 * ref
    if a.directed:
        ok &= re.search(r"^directed evictions: [1-9]", t, re.M) is not None
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
