#!/usr/bin/python3
"""chain_from_taskgraph.py - a turnip.chain/1 training chain (docs/weight-offload.md) derived from a
training-shaped TaskGraph of `turnip gen layered --backward --devices 1` (issue 14, part 4).

Layer i of the chain is the TaskGraph's layer i: its vertices are named L<i>.d0.<name>, the
backward's L<i>.d0.bw.<name>; the loss (L<L>.*) is counted in the last forward (the paper
neglects it). Per layer:
  uf, ub  the sum over its forward / backward kernels of the sim backend's kernel time under a
          machine profile (src/backend/sim/sim.c: launch + max(flops / (peak x efficiency), bytes
          touched / memory bandwidth); bytes touched = the output and every input), so the chain's
          compute sum is what `turnip sim` reports as the device's kernel busy time;
  w       the bytes of its weight inputs (L<i>.d0.w*);
  a       the bytes its forward keeps for the backward: every forward kernel output of the layer
          that a backward kernel reads (the chain model's a^i, held from F_i to B_i);
  a0      the bytes of the graph's input L-1.d0.x0.
mgpu is --mgpu BYTES, or by --mem-frac F (default 0.3) between the least any schedule needs (the
largest M_o with no other weight, equation 1) and what holds every weight at every operation.
beta is --beta BYTES_PER_S, default the profile's h2d_bw.
usage: scripts/chain_from_taskgraph.py TASKGRAPH --profile NAME|FILE [--mgpu BYTES | --mem-frac F]
                                       [--beta B] [-o CHAIN]      (default: standard output)"""
import json
import math
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def die(msg):
    print("chain_from_taskgraph: " + msg, file=sys.stderr)
    sys.exit(2)


def number(p, key):
    v = p.get(key)
    v = v.get("value") if isinstance(v, dict) else v
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
        die("profile: %s must be a finite non-negative number" % key)
    return float(v)


def main(argv):
    args, opts, i = [], {}, 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if a in ("--profile", "--mgpu", "--mem-frac", "--beta", "-o"):
            if i + 1 >= len(argv):
                die("%s needs a value" % a)
            opts[a] = argv[i + 1]
            i += 2
            continue
        if a.startswith("-"):
            die("unknown flag %s (--help)" % a)
        args.append(a)
        i += 1
    if len(args) != 1 or "--profile" not in opts:
        die("usage: chain_from_taskgraph.py TASKGRAPH --profile NAME|FILE [...] (--help)")
    prof = opts["--profile"]
    if os.sep not in prof and not prof.endswith(".json"):
        prof = os.path.join(ROOT, "profiles", prof + ".json")
    for path in (args[0], prof):
        if not os.path.isfile(path):
            die("%s: not a regular file" % path)
    with open(prof) as f:
        p = json.load(f)
    peak, eff, mem_bw, launch = number(p, "peak_flops"), number(p, "efficiency"), number(p, "mem_bw"), number(p, "launch_s")
    if not (peak > 0 and eff > 0 and mem_bw > 0):
        die("profile: peak_flops, efficiency and mem_bw must be > 0")
    with open(args[0]) as f:
        g = json.load(f)
    if g.get("format") != "turnip.taskgraph/1" or g.get("devices") != 1:
        die("%s: a turnip.taskgraph/1 graph on one device (turnip gen layered --backward --devices 1)" % args[0])
    verts = {v["id"]: v for v in g["vertices"]}
    name = re.compile(r"^L(-?\d+)\.d0\.(bw\.)?(.+)$")
    layer_of, L = {}, 0
    for vid in verts:
        m = name.match(vid)
        if not m:
            die("%s: vertex '%s' is not named L<i>.d0.<name> (turnip gen layered)" % (args[0], vid))
        layer_of[vid] = (int(m.group(1)), m.group(2) is not None, m.group(3))
        L = max(L, int(m.group(1)))
    nl = L  # layers 0..L-1; L<L> holds the loss
    if nl < 1:
        die("%s: no layers" % args[0])
    uf, ub, w, a = [0.0] * nl, [0.0] * nl, [0] * nl, [0] * nl
    read_by_bw = set()
    for vid, v in verts.items():
        if v["kind"] == "kernel" and layer_of[vid][1]:
            read_by_bw.update(v.get("inputs", []))
    for vid, v in verts.items():
        li, bw, short = layer_of[vid]
        if v["kind"] == "input":
            if li >= 0 and short.startswith("w"):
                w[li] += v["bytes"]
            continue
        if v["kind"] != "kernel":
            die("%s: vertex '%s' is a %s; one device has no transfers" % (args[0], vid, v["kind"]))
        touched = v["bytes"] + sum(verts[x]["bytes"] for x in v.get("inputs", []))
        t = launch + max(v.get("flops", 0) / (peak * eff), touched / mem_bw)
        k = min(li, nl - 1)
        if bw:
            ub[k] += t
        else:
            uf[k] += t
            if vid in read_by_bw and li < nl:
                a[li] += v["bytes"]
    a0 = sum(v["bytes"] for vid, v in verts.items() if v["kind"] == "input" and layer_of[vid][0] < 0)
    # equation 1: M_F_i = w_i + sum_{k<=i} a^k, M_B_i = 2 w_i + sum_{k<=i} a^k (a^0 = a0)
    lo, hi, acc, ws = 0, 0, a0, sum(w)
    for i in range(nl):
        acc += a[i]
        for m in (w[i] + acc, 2 * w[i] + acc):
            lo = max(lo, m + 0)
            hi = max(hi, m + ws - w[i])
    try:
        if "--mgpu" in opts:
            mgpu = int(opts["--mgpu"])
            if not 0 <= mgpu <= 2 ** 53:
                die("--mgpu must be bytes in [0, 2^53]")
        else:
            frac = float(opts.get("--mem-frac", 0.3))
            if not 0 <= frac <= 1:  # also false for NaN
                die("--mem-frac must be in [0, 1]")
            mgpu = lo + int(frac * (hi - lo))
        beta = float(opts["--beta"]) if "--beta" in opts else number(p, "h2d_bw")
    except ValueError:
        die("--mgpu, --mem-frac and --beta take numbers")
    if not 1 <= beta <= 1e18:  # the range turnip.chain/1 accepts; false for NaN
        die("--beta must be bytes per second in [1, 1e18]")
    chain = {"format": "turnip.chain/1", "mgpu": mgpu, "beta": beta, "a0": a0,
             "layers": [{"uf": uf[i], "ub": ub[i], "w": w[i], "a": a[i]} for i in range(nl)]}
    text = json.dumps(chain, indent=1) + "\n"
    out = opts.get("-o")
    if out:
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, out)
    else:
        sys.stdout.write(text)
    print("chain: %d layers, compute sum %.6g s, weights %d bytes, mgpu %d (least %d, all %d), beta %g"
          % (nl, sum(uf) + sum(ub), ws, mgpu, lo, hi, beta), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
