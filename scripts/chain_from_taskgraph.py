#!/usr/bin/python3
"""chain_from_taskgraph.py - a turnip.chain/1 training chain (docs/weight-offload.md) derived from a
one-device training TaskGraph (issue 14, part 4): either `turnip gen layered --backward --devices 1`
or the LoRA step of `turnip train --devices 1 --taskgraph-out FILE` (recognised by its names).

Chain layer i is the graph's decoder layer i. Per layer:
  uf, ub  the sum over its forward / backward kernels of the sim backend's kernel time under a
          machine profile (src/backend/sim/sim.c: launch + max(flops / (rate x efficiency), bytes
          touched / memory bandwidth); bytes touched = the output and every input; rate the peak,
          or the profile's vector_flops for every op but matmul when it has one), so the chain's
          compute sum is `turnip sim --no-sum-into`'s kernel busy time for the graph;
  w       the bytes of the weight inputs its kernels read;
  a       the bytes its forward keeps for the backward: the storage (an in-place output and what
          it overwrote are one buffer) of every forward output of the layer that a backward
          kernel reads (the chain model's a^i, held from F_i to B_i);
  a0      the bytes of the graph's other inputs.
gen layered: vertices L<i>.d0.<name>, the backward's L<i>.d0.bw.<name>; the loss L<L>.* is counted
  in the last forward (its time only, as the paper neglects it); w = L<i>.d0.w*.
turnip train (src/models/llama_train.c): forward L<i>.sS.*; backward the recompute L<i>.sS.r.*,
  the backward L<i>.sS.g.* and the layer's optimizer kernels (its adapters' gradient sums, Adam
  moments, AdamW: base_model.model.model.layers.<i>.*); the embedding sS.embed* in the first
  forward; the head (final norm, lm_head, loss) in the last forward, its gradient (sS.dlogits*,
  sS.dfinal*) in the last backward; input_ids, labels and hyper are a0. With activation
  checkpointing a layer keeps its output (the next layer's checkpoint; the first also the
  embedding's), the last layer every value its backward reads.
  Weights (--weights): `all` (default): w_i = layer i's frozen weights (the embedding in the
  first, the final norm and lm_head in the last) + its LoRA adapters + their Adam moments. The
  OFF model treats all of it as trained: B_i holds a gradient of |w_i| and makes the host copy
  stale, so an offload after B_i costs a transfer. For LoRA only the adapters (and moments)
  change; the frozen part has no gradient and its host copy stays valid (an offload is a free
  delete). So the chain over-charges memory and transfers: its schedules are valid LoRA
  schedules, but its bound is a bound for the chain, not for LoRA. `adapters`: w_i = the
  adapters and moments only, every frozen weight added to a0 (on the GPU the whole iteration):
  exact for "keep the base model resident, offload the adapters", when that fits. `frozen`:
  w_i = layer i's frozen weights only, each layer marked "frozen": true (no gradient, never
  written back: every removal a delete), the adapters and moments in a0, the adapters twice
  (their gradients, held the whole iteration here: at most |adapters| more than needed at
  any instant): exact for "stream the base model, keep the adapters", but for that margin.
  A weight read by kernels of two layers (tied embeddings) is refused.
mgpu is --mgpu BYTES, or by --mem-frac F (default 0.3) between the least any schedule needs (the
largest M_o with no other weight, equation 1) and what holds every weight at every operation.
beta is --beta BYTES_PER_S, default the profile's h2d_bw.
usage: scripts/chain_from_taskgraph.py TASKGRAPH --profile NAME|FILE [--weights all|adapters|frozen]
                                       [--mgpu BYTES | --mem-frac F] [--beta B] [-o CHAIN]"""
import json
import math
import os
import re
import sys

from atomic_write import write_atomic

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8, "u8": 1}  # src/io/dtype.c


def die(msg):
    print("chain_from_taskgraph: " + msg, file=sys.stderr)
    sys.exit(2)


def number(p, key, required=True):
    v = p.get(key)
    if v is None and not required:
        return 0.0
    v = v.get("value") if isinstance(v, dict) else v
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
        die("profile: %s must be a finite non-negative number" % key)
    return float(v)


def read_json(path):
    """the JSON in path, or exit 2 with one line"""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:  # ValueError: bad JSON or bad UTF-8
        die("%s: %s" % (path, e))


def load_profile(name):
    path = name
    if os.sep not in name and not name.endswith(".json"):
        path = os.path.join(ROOT, "profiles", name + ".json")
    if not os.path.isfile(path):
        die("%s: not a regular file" % path)
    p = read_json(path)
    if not isinstance(p, dict):
        die("%s: not a JSON object" % path)
    prof = {k: number(p, k) for k in ("peak_flops", "efficiency", "mem_bw", "launch_s", "h2d_bw")}
    prof["vector_flops"] = number(p, "vector_flops", required=False)
    if not (prof["peak_flops"] > 0 and prof["efficiency"] > 0 and prof["mem_bw"] > 0):
        die("profile: peak_flops, efficiency and mem_bw must be > 0")
    return prof


MAX_EXACT = 1 << 53


def is_int(x, hi=MAX_EXACT):
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= hi


def check_vertices(path, g):
    """the fields this script reads, range-checked: ids unique strings, kinds, bytes / shape within
    2^53, flops finite and >= 0, inputs known ids, inplace an index of them"""
    vs = g.get("vertices")
    if not isinstance(vs, list) or not vs:
        die("%s: no vertices" % path)
    verts = {}
    for v in vs:
        if not isinstance(v, dict) or not isinstance(v.get("id"), str) or v["id"] in verts:
            die("%s: a vertex without a string id, or a duplicate id" % path)
        verts[v["id"]] = v
    for vid, v in verts.items():
        if v.get("kind") not in ("input", "kernel"):
            die("%s: vertex '%s' is a %s; one device has no transfers" % (path, vid, v.get("kind")))
        if "bytes" in v and not is_int(v["bytes"]):
            die("%s: vertex '%s': bytes must be an integer in [0, 2^53]" % (path, vid))
        if "shape" in v and not (isinstance(v["shape"], list) and all(is_int(d) for d in v["shape"])
                                 and math.prod(v["shape"]) <= MAX_EXACT):
            die("%s: vertex '%s': shape must be integers with a product of at most 2^53" % (path, vid))
        fl = v.get("flops", 0)
        if not isinstance(fl, (int, float)) or isinstance(fl, bool) or not math.isfinite(fl) or fl < 0:
            die("%s: vertex '%s': flops must be a finite number >= 0" % (path, vid))
        ins = v.get("inputs", [])
        if not isinstance(ins, list) or any(not isinstance(x, str) or x not in verts for x in ins):
            die("%s: vertex '%s': inputs must name vertices of the graph" % (path, vid))
        if "inplace" in v and not is_int(v["inplace"], len(ins) - 1):
            die("%s: vertex '%s': inplace must index its inputs" % (path, vid))
    return verts


def nbytes(path, v):
    if "bytes" in v:
        return v["bytes"]
    if v.get("dtype") not in DTYPE_BYTES or not isinstance(v.get("shape"), list):
        die("%s: vertex '%s' has neither bytes nor a known dtype and shape" % (path, v["id"]))
    return math.prod(v["shape"]) * DTYPE_BYTES[v["dtype"]]


def kernel_time(prof, v, size):
    """the sim backend's kernel_time: launch + max(compute, memory); size(id) gives bytes"""
    touched = size(v["id"]) + sum(size(x) for x in v.get("inputs", []))
    rate = prof["vector_flops"] if prof["vector_flops"] > 0 and v.get("op") not in ("matmul", "attention") else prof["peak_flops"]
    return prof["launch_s"] + max(v.get("flops", 0) / (rate * prof["efficiency"]), touched / prof["mem_bw"])


# ---- classifiers: per kernel (time layer, backward?, activation layer or None); per input the
# ---- weight class ("frozen", "adapter", "moment", or "data" for a0)

LAYERED = re.compile(r"^L(-?\d{1,9})\.d0\.(bw\.)?(.+)$")


def classify_layered(path, verts):
    kern, inp, L = {}, {}, 0
    for vid in verts:
        m = LAYERED.match(vid)
        if not m:
            die("%s: vertex '%s' is not named L<i>.d0.<name> (turnip gen layered)" % (path, vid))
        L = max(L, int(m.group(1)))
    if L > len(verts):
        die("%s: layer %d with only %d vertices" % (path, L, len(verts)))
    if L < 1:  # layer 0 alone, or inputs alone: no layer before the loss layer L
        die("%s: no layers: kernels in L0.d0.* .. L<n-1>.d0.* and the loss layer L<n>.d0.* (turnip gen layered --backward)" % path)
    for vid, v in verts.items():
        m = LAYERED.match(vid)
        li, bw, short = int(m.group(1)), m.group(2) is not None, m.group(3)
        if v["kind"] == "input":
            inp[vid] = "frozen" if li >= 0 and short.startswith("w") else "data"
        elif li < 0:
            die("%s: kernel '%s' in layer %d" % (path, vid, li))
        else:
            kern[vid] = (min(li, L - 1), bw, li if li < L else None)  # the loss layer L: time only
    return L, kern, inp


TRAIN_FWD = re.compile(r"^L(\d{1,9})\.s\d+\.(r\.|g\.)?")
TRAIN_ADAPTER = re.compile(r"^base_model\.model\.model\.layers\.(\d{1,9})\.")
TRAIN_HEAD = re.compile(r"^s\d+\.(embed|final_norm|logits|lse|loss|dlogits|dfinal|dfinal_norm)(\.|$)")
TRAIN_DATA = re.compile(r"^(input_ids\.s\d+|labels\.s\d+|hyper)$")


def classify_train(path, verts):
    kern, inp, L = {}, {}, 0
    for vid, v in verts.items():
        m = TRAIN_FWD.match(vid) or TRAIN_ADAPTER.match(vid)
        if m:
            L = max(L, int(m.group(1)) + 1)
    if L > len(verts):
        die("%s: layer %d with only %d vertices" % (path, L - 1, len(verts)))
    if L < 1:
        die("%s: no layer vertices L<i>.sS.* (turnip train --taskgraph-out)" % path)
    for vid, v in verts.items():
        if v["kind"] == "input":
            if TRAIN_DATA.match(vid):
                inp[vid] = "data"
            elif TRAIN_ADAPTER.match(vid):
                inp[vid] = "moment" if vid.endswith((".exp_avg", ".exp_avg_sq")) else "adapter"
            elif vid.startswith(("model.", "lm_head.")):
                inp[vid] = "frozen"
            else:
                die("%s: input '%s' is none of the training step's (turnip train)" % (path, vid))
            continue
        m, h = TRAIN_FWD.match(vid), TRAIN_HEAD.match(vid)
        if m:
            li, bw = int(m.group(1)), m.group(2) is not None
        elif TRAIN_ADAPTER.match(vid):
            li, bw = int(TRAIN_ADAPTER.match(vid).group(1)), True  # the layer's optimizer step
        elif h:
            li = 0 if h.group(1) == "embed" else L - 1
            bw = h.group(1) in ("dlogits", "dfinal", "dfinal_norm")
        elif vid == "loss":
            li, bw = L - 1, False
        else:
            die("%s: kernel '%s' is none of the training step's (turnip train)" % (path, vid))
        kern[vid] = (li, bw, li)
    return L, kern, inp


def main(argv):
    args, opts, i = [], {}, 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if a in ("--profile", "--mgpu", "--mem-frac", "--beta", "--weights", "-o"):
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
    mode = opts.get("--weights", "all")
    if mode not in ("all", "adapters", "frozen"):
        die("--weights: all, adapters or frozen")
    path = args[0]
    if not os.path.isfile(path):
        die("%s: not a regular file" % path)
    prof = load_profile(opts["--profile"])
    g = read_json(path)
    if not isinstance(g, dict) or g.get("format") != "turnip.taskgraph/1" or g.get("devices") != 1:
        die("%s: a turnip.taskgraph/1 graph on one device (gen layered --devices 1, train --devices 1)" % path)
    verts = check_vertices(path, g)
    lora = "hyper" in verts
    if mode != "all" and not lora:
        die("--weights %s is for a turnip train graph" % mode)
    nl, kern, inp = (classify_train if lora else classify_layered)(path, verts)
    size = {vid: nbytes(path, v) for vid, v in verts.items()}

    def root(vid):  # the buffer an in-place output shares with the input it overwrote
        seen = set()
        while verts[vid]["kind"] == "kernel" and "inplace" in verts[vid]:
            if vid in seen:
                die("%s: vertex '%s' is its own in-place input (a cycle)" % (path, vid))
            seen.add(vid)
            vid = verts[vid]["inputs"][verts[vid]["inplace"]]
        return vid

    uf, ub, w, a = [0.0] * nl, [0.0] * nl, [0] * nl, [0] * nl
    wl = {}  # weight input -> the one layer whose kernels read it
    kept = set()  # buffers a backward kernel reads
    split = {"frozen": 0, "adapter": 0, "moment": 0}
    for vid, (li, bw, _) in kern.items():
        v = verts[vid]
        t = kernel_time(prof, v, size.__getitem__)
        if bw:
            ub[li] += t
        else:
            uf[li] += t
        for x in v.get("inputs", []):
            if bw:
                kept.add(root(x))
            if inp.get(x, "data") != "data":
                if wl.setdefault(x, li) != li:
                    die("%s: weight '%s' is read by layers %d and %d (tied embeddings?): a chain layer owns its weights"
                        % (path, x, wl[x], li))
    a0 = 0
    for vid, cls in inp.items():
        if cls == "data":
            a0 += size[vid]
            continue
        if vid not in wl:
            die("%s: weight '%s' is read by no kernel" % (path, vid))
        split[cls] += size[vid]
        if mode == "adapters" and cls == "frozen":
            a0 += size[vid]  # pinned on the GPU for the whole iteration
        elif mode == "frozen" and cls != "frozen":
            a0 += size[vid] * (2 if cls == "adapter" else 1)  # resident, an adapter with its gradient
        else:
            w[wl[vid]] += size[vid]
    for r in kept:
        if r in kern and not kern[r][1] and kern[r][2] is not None:
            a[kern[r][2]] += size[r]
    # equation 1: M_F_i = w_i + sum_{k<=i} a^k, M_B_i = 2 w_i + sum_{k<=i} a^k (a^0 = a0); a
    # frozen layer's B holds no gradient
    lo, hi, acc, ws = 0, 0, a0, sum(w)
    grad = 0 if mode == "frozen" else 1
    for i in range(nl):
        acc += a[i]
        for m in (w[i] + acc, (1 + grad) * w[i] + acc):
            lo = max(lo, m)
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
        beta = float(opts["--beta"]) if "--beta" in opts else prof["h2d_bw"]
    except ValueError:
        die("--mgpu, --mem-frac and --beta take numbers")
    if not 1 <= beta <= 1e18:  # the range turnip.chain/1 accepts; false for NaN
        die("--beta must be bytes per second in [1, 1e18]")
    chain = {"format": "turnip.chain/1", "mgpu": mgpu, "beta": beta, "a0": a0,
             "layers": [dict({"uf": uf[i], "ub": ub[i], "w": w[i], "a": a[i]}, **({"frozen": True} if mode == "frozen" else {}))
                        for i in range(nl)]}
    text = json.dumps(chain, indent=1) + "\n"
    out = opts.get("-o")
    if out:
        write_atomic(out, lambda f: f.write(text))
    else:
        sys.stdout.write(text)
    print("chain: %d layers, compute sum %.6g s, weights %d bytes, mgpu %d (least %d, all %d), beta %g"
          % (nl, sum(uf) + sum(ub), ws, mgpu, lo, hi, beta), file=sys.stderr)
    if lora:
        print("lora: frozen %d, adapters %d, moments %d bytes; weights %s" % (split["frozen"], split["adapter"], split["moment"],
              {"all": "all in w (the frozen part charged as trained)", "adapters": "adapters and moments in w, frozen in a0",
               "frozen": "frozen in w (marked frozen), adapters (twice: their gradients) and moments in a0"}[mode]),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
