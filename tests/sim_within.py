#!/usr/bin/python3
"""sim_within.py - a `turnip sim` run's makespan within [1, HI] x a reference (1e-6 relative
below): the compute sum of a chain (--chain FILE, whose kernel busy time the run must also
equal, 1e-6 relative) or a number (--ref S). --directed also wants directed evictions in the
plan's statistics. Prints the ratio; exit 0 when it holds, 1 otherwise.
usage: sim_within.py SIM_OUTPUT (--chain CHAIN.json | --ref S) --hi HI [--directed]"""
import json
import re
import sys


def main(argv):
    if len(argv) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    t = open(argv[0]).read()
    a = argv[1:]
    chain = a[a.index("--chain") + 1] if "--chain" in a else None
    ref = float(a[a.index("--ref") + 1]) if "--ref" in a else None
    hi = float(a[a.index("--hi") + 1])
    if chain:
        ref = sum(l["uf"] + l["ub"] for l in json.load(open(chain))["layers"])
    m = re.search(r"totals: makespan ([0-9.e+-]+) s, kernel busy ([0-9.e+-]+) s", t)
    if not m or ref is None:
        print("no totals line, or no reference")
        return 1
    mk, busy = float(m.group(1)), float(m.group(2))
    print("makespan %.4f of the reference" % (mk / ref))
    ok = ref * (1 - 1e-6) <= mk <= hi * ref
    if chain:
        ok &= abs(busy - ref) <= 1e-6 * ref
    if "--directed" in a:
        ok &= re.search(r"^directed evictions: [1-9]", t, re.M) is not None
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
