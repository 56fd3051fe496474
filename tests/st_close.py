#!/usr/bin/python3
"""`turnip generate --out` files against a reference run's: the same tensor names, `tokens`
bit-identical, every `logits.S` within TOL (absolute) of the reference's.

usage: st_close.py REF.st [--tol 1e-4] NAME=RUN.st [NAME=RUN.st ...]
Prints one line per run; exit 0 all close, 1 a run differs, 2 bad usage."""
import argparse, math, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tputil import read_st


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("usage: ", 1)[1].split("\n")[0])
    ap.add_argument("ref")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    if not (math.isfinite(a.tol) and a.tol >= 0):
        ap.error("--tol must be finite and >= 0")
    ref, ref_raw = read_st(a.ref)
    bad = 0
    for item in a.runs:
        name, sep, path = item.partition("=")
        if not sep:
            ap.error("each run is NAME=FILE, not %r" % item)
        got, got_raw = read_st(path)
        if got.keys() != ref.keys():
            print("FAIL %s: tensors %s, the reference has %s" % (name, sorted(got), sorted(ref)))
            bad += 1
            continue
        if "tokens" not in ref or got_raw["tokens"] != ref_raw["tokens"]:
            print("FAIL %s: tokens differ from the reference's (or there are none)" % name)
            bad += 1
            continue
        worst = max(float(abs(got[k] - ref[k]).max()) for k in ref if k.startswith("logits"))
        ok = worst < a.tol
        bad += not ok
        print("%s %-9s same tokens, logits within %.3g of the reference" % ("ok  " if ok else "FAIL", name, worst))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
