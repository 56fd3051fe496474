#!/usr/bin/python3
"""The training ops of docs/ops.md (rmsnorm_grad, rope_grad, softmax_grad, silu_grad, logsumexp,
xent, xent_grad, adam_moment, adamw) against PyTorch autograd and torch.optim.AdamW, with f32,
f16 or bf16 storage.

One TaskGraph per dtype holds one case (or a few) per op, run by `turnip run` under a cap that
forces offloads, with some kernels in place; a second holds larger cases (wide rows, a
logsumexp of 20 inputs, a 3000-word vocabulary in chunks) under a roomy cap. The references are
computed in float64 from the storage-rounded inputs:
- rmsnorm_grad: torch.autograd.grad of Hugging Face's RMSNorm formula w.r.t. x;
- rope_grad: autograd through Hugging Face's rotate-half rope (angles as docs/ops.md: f32);
- softmax_grad: autograd of softmax(scale x a) under a causal mask (y = that softmax, rounded);
- silu_grad: autograd of F.silu;
- logsumexp: torch.logsumexp over the concatenated inputs;
- xent / xent_grad over vocabulary chunks (lse from logsumexp per chunk, then over the chunks;
  ids in several chunks and some -1): the chunks' xent summed with `sum` vs
  F.cross_entropy(reduction='none', ignore_index=-1) x scale, the chunks' xent_grad concatenated
  vs autograd of that loss summed;
- adam_moment + adamw: one torch.optim.AdamW step from zero state (step 1) and from a set state
  (step 3), m, v and p compared.
Tolerances (relative to max |reference|, so small outputs are checked as closely as large): f32 1e-5 (f32 arithmetic), f16 1e-3 and bf16
8e-3 (half an ulp of the 16-bit output, plus f32 arithmetic); softmax_grad's y is a rounded
softmax, whose error the 16-bit tolerances hold. In f32 the AdamW step's update (p' - p) must
also match PyTorch's to 5e-4 of its largest magnitude (a wrong bias correction is ~10% off).
The graphs also run on the sim backend (`turnip sim`), which must accept them.
usage: grads_torch.py TURNIP DTYPE [cpu|cuda] (cuda: also run on the cpu backend, outputs must agree)"""
import json, math, os, sys, tempfile
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tputil import store, write_st, read_st, run, need_backend, backend_flags, need_torch

turnip, dtype = sys.argv[1], sys.argv[2]
backend = sys.argv[3] if len(sys.argv) > 3 else "cpu"
need_backend(turnip, backend)
bflags, _ = backend_flags(backend)
torch = need_torch()
F = torch.nn.functional
rng = np.random.default_rng({"f32": 11, "f16": 12, "bf16": 13}[dtype])
tmp = tempfile.mkdtemp(prefix="tp-grads-")
V, inputs, refs = [], {}, {}
tol = {"f32": 1e-5, "f16": 1e-3, "bf16": 8e-3}
failures = checks = 0
D64 = torch.float64


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=D64)


def inp_val(name, val, dev=0, dt=None):
    """an input vertex holding val rounded to its storage dtype; returns (name, rounded float64 tensor)"""
    dt = dt or dtype
    raw, stored = store(val, dt)
    shape = np.shape(val)
    V.append({"id": name, "kind": "input", "device": dev, "dtype": dt, "shape": list(shape)})
    inputs[name] = (dt, shape, raw)
    return name, t64(stored)


def inp(name, shape, dev=0, scale=1.0, dt=None):
    return inp_val(name, rng.standard_normal(shape) * scale, dev, dt)


def ids_inp(name, ids, dev=0):
    ids = np.asarray(ids, dtype=np.int32)
    V.append({"id": name, "kind": "input", "device": dev, "dtype": "i32", "shape": [len(ids)]})
    inputs[name] = ("i32", (len(ids),), ids.tobytes())
    return name


def kern(name, op, ins, shape, ref, dev=0, attrs=None, dt=None, inplace=None):
    """a kernel vertex; ref (a tensor) makes it an output checked against ref, None an intermediate"""
    v = {"id": name, "kind": "kernel", "device": dev, "op": op, "inputs": ins, "dtype": dt or dtype, "shape": list(shape)}
    if attrs:
        v["attrs"] = attrs
    if inplace is not None:
        v["inplace"] = inplace
    V.append(v)
    if ref is not None:
        refs[name] = ref.detach().numpy()
    return name


def xfer(name, src, dev):
    V.append({"id": name, "kind": "transfer", "device": dev, "inputs": [src]})
    return name


def grad(f, x, dy):
    """d(sum f(x) * dy)/dx by autograd, float64"""
    x = x.clone().requires_grad_(True)
    return torch.autograd.grad(f(x), x, dy)[0]


def hf_rmsnorm(w, eps):
    return lambda x: w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def hf_rope(T, D, theta, off):
    """Hugging Face rotate-half with docs/ops.md's angles (f32 inverse frequencies x f32 positions)"""
    inv = (1.0 / theta ** (np.arange(0, D, 2) / D)).astype(np.float32)
    ang = (np.arange(off, off + T, dtype=np.float32)[:, None] * inv[None, :]).astype(np.float64)
    emb = t64(np.concatenate([ang, ang], -1))
    cos, sin = torch.cos(emb), torch.sin(emb)

    def f(q):
        c, s = (cos[:, None, :], sin[:, None, :]) if q.dim() == 3 else (cos, sin)
        rot = torch.cat([-q[..., D // 2:], q[..., :D // 2]], -1)
        return q * c + rot * s
    return f


def causal_softmax(scale, off):
    def f(a):
        R, C = a.shape[-2], a.shape[-1]
        mask = torch.arange(C)[None, :] > torch.arange(R)[:, None] + off
        return torch.softmax((scale * a).masked_fill(mask, float("-inf")), -1)
    return f


def chunked_xent(tag, T, sizes, ids, scale, dev=0, lscale=3.0):
    """logits in chunks of `sizes` words; lse per chunk then over the chunks (f32); each chunk's xent
    summed with `sum` and its xent_grad concatenated, vs F.cross_entropy and its autograd"""
    Vt = sum(sizes)
    L, lse_c, xs, gs, off = [], [], [], [], 0
    ids_name = ids_inp(f"{tag}.ids", ids, dev)
    for k, vc in enumerate(sizes):
        n, l = inp(f"{tag}.logits{k}", (T, vc), dev, scale=lscale)
        L.append((n, l, off))
        lse_c.append(kern(f"{tag}.lse{k}", "logsumexp", [n], (T, 1), None, dev, dt="f32"))
        off += vc
    full = torch.cat([l for _, l, _ in L], -1)
    lse = kern(f"{tag}.lse", "logsumexp", lse_c, (T, 1), torch.logsumexp(full, -1, keepdim=True), dev, dt="f32")
    for k, (n, l, o) in enumerate(L):
        a = {"id_offset": o, "scale": scale}
        xs.append(kern(f"{tag}.xent{k}", "xent", [n, lse, ids_name], (T, 1), None, dev, attrs=a))
        gs.append(kern(f"{tag}.xgrad{k}", "xent_grad", [n, lse, ids_name], (T, sizes[k]), None, dev, attrs=a))
    tid = torch.tensor(np.asarray(ids, dtype=np.int64))
    loss = lambda z: F.cross_entropy(z, tid, reduction="none", ignore_index=-1) * scale
    kern(f"{tag}.loss", "sum", xs, (T, 1), loss(full)[:, None], dev)
    kern(f"{tag}.dlogits", "concat", gs, (T, Vt), grad(lambda z: loss(z).sum(), full, torch.tensor(1.0, dtype=D64)), dev,
         attrs={"axis": 1})
    assert Vt == off


def adam_case(tag, shape, lr, betas, eps, wd, step, inplace, dev=0):
    """adam_moment (m, v) then adamw (p) vs one torch.optim.AdamW step `step`; the state of step - 1
    set explicitly (zero at step 1)"""
    p, P = inp(f"{tag}.p", shape, dev)
    g, G = inp(f"{tag}.g", shape, dev, scale=0.5)
    if step == 1:
        m, M = inp_val(f"{tag}.m", np.zeros(shape), dev)
        v, Vv = inp_val(f"{tag}.v", np.zeros(shape), dev)
    else:
        m, M = inp(f"{tag}.m", shape, dev, scale=0.1)
        v, Vv = inp_val(f"{tag}.v", (rng.standard_normal(shape) * 0.3) ** 2, dev)
    hyper = [lr, 1 - betas[0] ** step, 1 - betas[1] ** step]  # what the host computes for step t
    h, _ = inp_val(f"{tag}.hyper", np.array(hyper), dev, dt="f32")
    # PyTorch: the parameter and state of step - 1 (float64), one step
    prm = torch.nn.Parameter(P.clone())
    opt = torch.optim.AdamW([prm], lr=lr, betas=betas, eps=eps, weight_decay=wd)
    if step > 1:
        opt.state[prm] = {"step": torch.tensor(float(step - 1)), "exp_avg": M.clone(), "exp_avg_sq": Vv.clone()}
    prm.grad = G.clone()
    opt.step()
    st = opt.state[prm]
    ip = 0 if inplace else None
    m1 = kern(f"{tag}.m1", "adam_moment", [m, g], shape, st["exp_avg"], dev, attrs={"beta": betas[0]}, inplace=ip)
    v1 = kern(f"{tag}.v1", "adam_moment", [v, g], shape, st["exp_avg_sq"], dev, attrs={"beta": betas[1], "square": True},
              inplace=ip)
    kern(f"{tag}.p1", "adamw", [p, m1, v1, h], shape, prm.data, dev, attrs={"eps": eps, "weight_decay": wd}, inplace=ip)
    deltas[f"{tag}.p1"] = (P.numpy(), (prm.data - P).numpy())


deltas = {}  # adamw output -> (p before, PyTorch's update)


def check_all(tag, outs):
    global failures, checks
    vals = outs[backend]
    for name, ref in refs.items():
        got = vals[name].astype(np.float64)
        odt = next(v["dtype"] for v in V if v["id"] == name)
        scale = float(np.abs(ref).max()) or 1.0
        allowed = tol[odt] * scale  # inputs rounded to storage: the error is the output dtype's
        err = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
        ok = err <= allowed
        line = f"{backend} {dtype:4s} {name:22s} max abs err vs torch {err:.3e} (allowed {allowed:.1e})"
        if name in deltas and dtype == "f32":  # the update itself, not only p' (whose scale hides it)
            p0, d = deltas[name]
            derr = float(np.abs((got - p0) - d).max())
            dallowed = 5e-4 * float(np.abs(d).max())
            ok = ok and derr <= dallowed
            line += f"; update err {derr:.2e} (allowed {dallowed:.1e})"
        if backend != "cpu":
            c = outs["cpu"][name].astype(np.float64)
            cerr = float(np.abs(got - c).max()) if got.shape == c.shape else float("inf")
            ok = ok and cerr <= allowed
            line += f"; vs cpu backend {cerr:.3e}"
        print(("ok   " if ok else "FAIL ") + line)
        failures += not ok
        checks += 1


def run_graph(tag, cap, extra):
    """runs the graph built so far on `backend` (and the cpu backend for cuda) and on the sim backend"""
    global V, inputs, refs, deltas
    tg = {"format": "turnip.taskgraph/1", "devices": 2, "vertices": V, "outputs": list(refs)}
    gp, ip = os.path.join(tmp, f"{tag}.json"), os.path.join(tmp, f"{tag}.in.st")
    json.dump(tg, open(gp, "w"))
    write_st(ip, inputs)
    outs, r = {}, None
    for be in sorted({backend, "cpu"}):
        op = os.path.join(tmp, f"{tag}.{be}.st")
        rr = run(turnip, ["run", gp, "--device-mem", cap, "--inputs", ip, "--out", op] +
                 (bflags if be == backend else ["--backend", be]) + extra)
        r = rr if be == backend else r
        outs[be] = read_st(op)[0]
    check_all(tag, outs)
    run(turnip, ["sim", gp, "--machine", "a100x8", "--device-mem", cap])  # the sim backend accepts the ops
    V, inputs, refs, deltas = [], {}, {}, {}
    return r


# ---- small cases, under a cap that forces offloads ----
# rmsnorm_grad: leading batch dims, and plain rows
x, X = inp("rms.x", (2, 5, 16)); w, W = inp("rms.w", (16,)); dy, DY = inp("rms.dy", (2, 5, 16))
kern("rmsnorm_grad", "rmsnorm_grad", [x, w, dy], (2, 5, 16), grad(hf_rmsnorm(W, 1e-5), X, DY), attrs={"eps": 1e-5})
x, X = inp("rms2.x", (3, 24), scale=4.0); w, W = inp("rms2.w", (24,)); dy, DY = inp("rms2.dy", (3, 24))
kern("rmsnorm_grad_2d", "rmsnorm_grad", [x, w, dy], (3, 24), grad(hf_rmsnorm(W, 1e-6), X, DY))
# rope_grad: heads, and one head with an offset and LLaMA 3's theta
dy, DY = inp("rope.dy", (6, 2, 8))
kern("rope_grad", "rope_grad", [dy], (6, 2, 8), grad(hf_rope(6, 8, 10000.0, 0), torch.zeros(6, 2, 8, dtype=D64), DY))
dy, DY = inp("rope1.dy", (5, 8))
kern("rope_grad_offset", "rope_grad", [dy], (5, 8), grad(hf_rope(5, 8, 500000.0, 7), torch.zeros(5, 8, dtype=D64), DY),
     attrs={"theta": 500000.0, "pos_offset": 7})
# softmax_grad: y = causal softmax(scale a) over [heads, rows, cols] (on device 1), a row offset
for nm, sc, off, shp in (("softmax_grad", 0.7, 0, (2, 5, 9)), ("softmax_grad_offset", 1.0, 3, (3, 4, 7))):
    A = t64(rng.standard_normal(shp) * 2.0)
    y, _ = inp_val(f"{nm}.y", causal_softmax(sc, off)(A).numpy())
    dy, DY = inp(f"{nm}.dy", shp)
    kern(nm, "softmax_grad", [xfer(f"{nm}.y@1", y, 1), xfer(f"{nm}.dy@1", dy, 1)], shp, grad(causal_softmax(sc, off), A, DY),
         dev=1, attrs={"scale": sc})
# silu_grad, and in place over dy
a, A = inp("silu.a", (4, 3, 8), scale=3.0); dy, DY = inp("silu.dy", (4, 3, 8))
kern("silu_grad", "silu_grad", [a, dy], (4, 3, 8), grad(F.silu, A, DY))
dy2, DY2 = inp("silu.dy2", (4, 3, 8))
kern("silu_grad_inplace", "silu_grad", [a, dy2], (4, 3, 8), grad(F.silu, A, DY2), inplace=1)
# logsumexp over three inputs with leading dims, one of width 1
parts = [inp(f"lse.a{k}", (2, 3, c), scale=3.0) for k, c in enumerate((5, 7, 1))]
kern("logsumexp", "logsumexp", [n for n, _ in parts], (2, 3, 1), torch.logsumexp(torch.cat([t for _, t in parts], -1), -1, True))
# xent / xent_grad: 30 words in chunks of 10, 12, 8; targets in every chunk, two ignored
chunked_xent("xent", 12, (10, 12, 8), [3, 15, 29, -1, 10, 22, 0, 9, -1, 21, 12, 25], scale=1.0 / 10)
# AdamW: step 1 from zero state; step 3 from a set state, in place
lr = 1e-3 if dtype == "f32" else 1e-2
adam_case("adam1", (5, 7), lr, (0.9, 0.999), 1e-8, 0.01, 1, False)
adam_case("adam3", (4, 6), lr, (0.9, 0.95), 1e-6, 0.1, 3, True)

# a cap of 4 KiB per device (2 KiB for 16-bit storage) forces offloads of these small tensors
r = run_graph("small", "4KiB" if dtype == "f32" else "2KiB", ["--order", "random", "--seed", "7"])
plan_rows = r.stdout.split("capacity", 1)[1].split("host:", 1)[0].splitlines()[1:]
offl = sum(int(line.split()[11]) for line in plan_rows)
print(f"plan offloads: {offl}")
if offl == 0:
    print("FAIL: the cap did not force any offload")
    failures += 1

# ---- larger cases: many threads per row, logsumexp over more than 16 inputs, a real-ish vocabulary ----
x, X = inp("big.rms.x", (2, 4, 1500)); w, W = inp("big.rms.w", (1500,)); dy, DY = inp("big.rms.dy", (2, 4, 1500))
kern("big_rmsnorm_grad", "rmsnorm_grad", [x, w, dy], (2, 4, 1500), grad(hf_rmsnorm(W, 1e-5), X, DY), attrs={"eps": 1e-5})
A = t64(rng.standard_normal((2, 40, 1100)) * 3.0)
y, _ = inp_val("big.sm.y", causal_softmax(0.1, 1000)(A).numpy())
dy, DY = inp("big.sm.dy", (2, 40, 1100))
kern("big_softmax_grad", "softmax_grad", [y, dy], (2, 40, 1100), grad(causal_softmax(0.1, 1000), A, DY), attrs={"scale": 0.1})
dy, DY = inp("big.rope.dy", (30, 4, 128))
kern("big_rope_grad", "rope_grad", [dy], (30, 4, 128), grad(hf_rope(30, 128, 500000.0, 3000), torch.zeros(30, 4, 128, dtype=D64), DY),
     attrs={"theta": 500000.0, "pos_offset": 3000})
parts = [inp(f"big.lse.a{k}", (9, 37 + k), scale=4.0) for k in range(20)]
kern("big_logsumexp20", "logsumexp", [n for n, _ in parts], (9, 1), torch.logsumexp(torch.cat([t for _, t in parts], -1), -1, True))
ids = rng.integers(0, 3000, 16)
ids[[2, 9]] = -1
chunked_xent("bigxent", 16, (1000, 1200, 800), ids, scale=1.0 / 14, lscale=2.0)
a, A = inp("big.silu.a", (64, 300), scale=3.0); dy, DY = inp("big.silu.dy", (64, 300))
kern("big_silu_grad", "silu_grad", [a, dy], (64, 300), grad(F.silu, A, DY))
adam_case("bigadam", (70, 300), lr, (0.9, 0.999), 1e-8, 0.0, 2, False)
run_graph("big", "64MiB", [])
print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
