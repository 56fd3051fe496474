#!/usr/bin/python3
"""Every op of docs/ops.md against numpy on random data, with f32, f16 or bf16 storage.

One TaskGraph per dtype holds one case per op (some on device 1, reached by transfers), run
by `turnip run` under a cap that forces offloads; a second holds larger cases (long softmax
rows, wide norms, a sum of 20 inputs, mixed-dtype matmul) under a roomy cap. Each output is
compared with a numpy reference computed in float64 from the storage-rounded inputs. With
BACKEND cuda both graphs also run on the cpu backend and every output must agree with it.
usage: ops_numpy.py TURNIP DTYPE [cpu|cuda|cuda-fast] (cuda-fast: the cuda backend's default tensor-core
matmuls, checked at 16-bit tolerance)"""
import json, math, os, sys, tempfile
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tputil import store, write_st, read_st, run, need_backend, backend_flags

turnip, dtype = sys.argv[1], sys.argv[2]
backend = sys.argv[3] if len(sys.argv) > 3 else "cpu"
need_backend(turnip, backend)
bflags, fast = backend_flags(backend)
rng = np.random.default_rng({"f32": 1, "f16": 2, "bf16": 3}[dtype])
tmp = tempfile.mkdtemp(prefix="tp-ops-")
V, inputs, refs = [], {}, {}
erf = np.vectorize(math.erf)


def inp(name, shape, dev=0, scale=1.0, dt=None):
    dt = dt or dtype
    raw, val = store(rng.standard_normal(shape) * scale, dt)
    V.append({"id": name, "kind": "input", "device": dev, "dtype": dt, "shape": list(shape)})
    inputs[name] = (dt, shape, raw)
    return name, val.astype(np.float64)


def kern(name, op, ins, shape, ref, dev=0, attrs=None, dt=None):
    v = {"id": name, "kind": "kernel", "device": dev, "op": op, "inputs": ins, "dtype": dt or dtype, "shape": list(shape)}
    if attrs:
        v["attrs"] = attrs
    V.append(v)
    refs[name] = ref
    return name


def xfer(name, src, dev):
    V.append({"id": name, "kind": "transfer", "device": dev, "inputs": [src]})
    return name


# matmul: plain, transposed, batched, batched with shared 2-D B, alpha
a, A = inp("mm.a", (6, 10)); b, B = inp("mm.b", (10, 7))
kern("matmul", "matmul", [a, b], (6, 7), A @ B)
a, A = inp("mmt.a", (10, 6)); b, B = inp("mmt.b", (7, 10))
kern("matmul_tt", "matmul", [a, b], (6, 7), 0.5 * (A.T @ B.T), attrs={"trans_a": True, "trans_b": True, "alpha": 0.5})
a, A = inp("bmm.a", (3, 4, 5)); b, B = inp("bmm.b", (3, 5, 6))
kern("matmul_batched", "matmul", [a, b], (3, 4, 6), A @ B)
b2, B2 = inp("bmm.b2", (5, 6))
kern("matmul_shared", "matmul", [a, b2], (3, 4, 6), A @ B2)
# elementwise with broadcast (b a suffix of a), on device 1 through transfers
x, X = inp("ew.x", (4, 3, 8)); y, Y = inp("ew.y", (3, 8)); z, Z = inp("ew.z", (4, 3, 8))
x1, y1, z1 = xfer("ew.x@1", x, 1), xfer("ew.y@1", y, 1), xfer("ew.z@1", z, 1)
kern("add", "add", [x1, y1], (4, 3, 8), X + Y, dev=1)
kern("sub", "sub", [x1, z1], (4, 3, 8), X - Z, dev=1)
kern("mul", "mul", [x1, y1], (4, 3, 8), X * Y, dev=1)
kern("scale", "scale", [x], (4, 3, 8), X * -1.5, attrs={"alpha": -1.5})
kern("silu", "silu", [x], (4, 3, 8), X / (1 + np.exp(-X)))
kern("gelu", "gelu", [x], (4, 3, 8), 0.5 * X * (1 + erf(X / math.sqrt(2))))
kern("exp", "exp", [x], (4, 3, 8), np.exp(X))
kern("relu", "relu", [x], (4, 3, 8), np.maximum(X, 0))
# softmax: plain with scale; causal with a row offset over [heads, rows, cols]
s, S = inp("sm.s", (2, 5, 9), scale=3.0)


def softmax_ref(S, scale, causal, off):
    R, C = S.shape[-2], S.shape[-1]
    out = np.zeros_like(S)
    for idx in np.ndindex(S.shape[:-1]):
        i = idx[-1]
        lim = min(C - 1, i + off) if causal else C - 1
        if lim < 0:
            continue
        row = S[idx][:lim + 1] * scale
        e = np.exp(row - row.max())
        out[idx][:lim + 1] = e / e.sum()
    return out


kern("softmax", "softmax", [s], (2, 5, 9), softmax_ref(S, 0.7, False, 0), attrs={"scale": 0.7})
kern("softmax_causal", "softmax", [s], (2, 5, 9), softmax_ref(S, 1.0, True, 3), attrs={"causal": True, "row_offset": 3})
kern("softmax_masked_rows", "softmax", [s], (2, 5, 9), softmax_ref(S, 1.0, True, -2), attrs={"causal": True, "row_offset": -2})
# attention: softmax(scale q k^T, causal from row_offset) v, one kernel; k in f32 beside 16-bit q and v
q, Q = inp("att.q", (5, 8)); k, Kt = inp("att.k", (9, 8), dt="f32"); v, Vt = inp("att.v", (9, 6))
kern("attention", "attention", [q, k, v], (5, 6), softmax_ref(0.3 * Q @ Kt.T, 1.0, False, 0) @ Vt, attrs={"scale": 0.3})
kern("attention_causal", "attention", [q, k, v], (5, 6), softmax_ref(Q @ Kt.T, 1.0, True, 3) @ Vt,
     attrs={"causal": True, "row_offset": 3})
kern("attention_masked_rows", "attention", [q, k, v], (5, 6), softmax_ref(Q @ Kt.T, 1.0, True, -2) @ Vt,
     attrs={"causal": True, "row_offset": -2})
# rmsnorm
x, X = inp("rms.x", (5, 16)); w, W = inp("rms.w", (16,))
kern("rmsnorm", "rmsnorm", [x, w], (5, 16), X / np.sqrt((X * X).mean(-1, keepdims=True) + 1e-5) * W, attrs={"eps": 1e-5})
# rope, Hugging Face rotate-half convention
q, Q = inp("rope.x", (6, 2, 8))


def rope_ref(Q, theta, off):
    T, H, D = Q.shape
    # as Hugging Face: f32 inverse frequencies, f32 angles (the kernels' definition, docs/ops.md)
    inv = (1.0 / theta ** (np.arange(0, D, 2) / D)).astype(np.float32)
    ang = (np.arange(off, off + T, dtype=np.float32)[:, None] * inv[None, :]).astype(np.float64)
    cos, sin = np.cos(np.concatenate([ang, ang], -1))[:, None, :], np.sin(np.concatenate([ang, ang], -1))[:, None, :]
    rot = np.concatenate([-Q[..., D // 2:], Q[..., :D // 2]], -1)
    return Q * cos + rot * sin


kern("rope", "rope", [q], (6, 2, 8), rope_ref(Q, 10000.0, 0))
kern("rope_offset", "rope", [q], (6, 2, 8), rope_ref(Q, 500000.0, 7), attrs={"theta": 500000.0, "pos_offset": 7})
# embedding
t, Tb = inp("emb.table", (11, 6)); ids = np.array([3, 0, 10, 3, 7], dtype=np.int32)
V.append({"id": "emb.ids", "kind": "input", "device": 0, "dtype": "i32", "shape": [5]})
inputs["emb.ids"] = ("i32", (5,), ids.tobytes())
kern("embedding", "embedding", [t, "emb.ids"], (5, 6), Tb[ids])
# sum, slice, concat, transpose, cast
p, P = inp("sum.a", (3, 7)); r, R = inp("sum.b", (3, 7)); u, U = inp("sum.c", (3, 7))
kern("sum", "sum", [p, r, u, r], (3, 7), P + R + U + R)
x, X = inp("sl.x", (4, 6, 5))
kern("slice", "slice", [x], (4, 2, 5), X[:, 3:5, :], attrs={"axis": 1, "start": 3, "length": 2})
kern("concat", "concat", [p, r, u], (3, 21), np.concatenate([P, R, U], 1), attrs={"axis": 1})
kern("concat0", "concat", [p, r], (6, 7), np.concatenate([P, R], 0), attrs={"axis": 0})
kern("transpose", "transpose", [x], (5, 4, 6), X.transpose(2, 0, 1), attrs={"perm": [2, 0, 1]})
other = {"f32": "bf16", "f16": "f32", "bf16": "f16"}[dtype]
kern("cast", "cast", [x], (4, 6, 5), X, dt=other)
q, Q = inp("ws.part", (4, 2, 5), dt="f32")
Ref = X.copy(); Ref[:, 1:3, :] = Q
kern("write_slice", "write_slice", [x, q], (4, 6, 5), Ref, attrs={"axis": 1, "start": 1})
b, Bb = inp("ws.cache", (3, 8, 4)); q, Q = inp("ws.row", (3, 1, 4))
Ref = Bb.copy(); Ref[:, 5:6, :] = Q
kern("write_slice_inplace", "write_slice", [b, q], (3, 8, 4), Ref, attrs={"axis": 1, "start": 5})
V[-1]["inplace"] = 0  # the cache's last use: the row is written where the cache is
# pad: zeros around the input along an axis; into another dtype
Ref = np.zeros((4, 9, 5)); Ref[:, 2:8, :] = X
kern("pad", "pad", [x], (4, 9, 5), Ref, attrs={"axis": 1, "start": 2, "extent": 9})
Ref = np.zeros((7, 6, 5)); Ref[3:7] = X
kern("pad_end", "pad", [x], (7, 6, 5), Ref, attrs={"axis": 0, "start": 3, "extent": 7}, dt=other)
# a KV cache as LLaMA's fused prefill grows one: the first block's keys padded to every row,
# the next block's written in place, attention over all rows (the unwritten zeros masked)
k0, K0 = inp("kv.k0", (3, 4)); k1, K1 = inp("kv.k1", (2, 4)); v0, V0 = inp("kv.v0", (3, 4)); v1, V1 = inp("kv.v1", (2, 4))
qq, QQ = inp("kv.q", (2, 4))
V.append({"id": "kv.K0", "kind": "kernel", "device": 0, "op": "pad", "inputs": [k0], "dtype": dtype, "shape": [8, 4],
          "attrs": {"axis": 0, "start": 0, "extent": 8}})
V.append({"id": "kv.V0", "kind": "kernel", "device": 0, "op": "pad", "inputs": [v0], "dtype": dtype, "shape": [8, 4],
          "attrs": {"axis": 0, "start": 0, "extent": 8}})
V.append({"id": "kv.K1", "kind": "kernel", "device": 0, "op": "write_slice", "inputs": ["kv.K0", k1], "dtype": dtype,
          "shape": [8, 4], "attrs": {"axis": 0, "start": 3}, "inplace": 0})
V.append({"id": "kv.V1", "kind": "kernel", "device": 0, "op": "write_slice", "inputs": ["kv.V0", v1], "dtype": dtype,
          "shape": [8, 4], "attrs": {"axis": 0, "start": 3}, "inplace": 0})
Kc, Vc = np.concatenate([K0, K1]), np.concatenate([V0, V1])
kern("kv_attention", "attention", [qq, "kv.K1", "kv.V1"], (2, 4), softmax_ref(0.5 * QQ @ Kc.T, 1.0, True, 3) @ Vc,
     attrs={"scale": 0.5, "causal": True, "row_offset": 3})
kern("reshape", "reshape", [x], (8, 15), X.reshape(8, 15))
r, R = inp("rs.in", (2, 3, 4))
kern("reshape_inplace", "reshape", [r], (1, 6, 4), R.reshape(1, 6, 4))
V[-1]["inplace"] = 0  # its only reader: the same bytes, nothing moves

# relative to the output's scale: f32 compute error, or half an ulp of the 16-bit output
tol = {"f32": 1e-5, "f16": 1e-3, "bf16": 8e-3}
MM_FAST_TOL = 1e-2  # cuda-fast matmuls: an operand rounded to bf16 (2^-9 relative) or TF32 (2^-11)
failures = checks = 0


def run_graph(tag, cap, extra):
    """runs the graph built so far on `backend` (and the cpu backend for cuda) and checks it"""
    global V, inputs, refs, failures, checks
    tg = {"format": "turnip.taskgraph/1", "devices": 2, "vertices": V, "outputs": list(refs)}
    gp, ip = os.path.join(tmp, f"{tag}.json"), os.path.join(tmp, f"{tag}.in.st")
    json.dump(tg, open(gp, "w"))
    write_st(ip, inputs)
    outs = {}
    for be in sorted({backend, "cpu"}):
        op = os.path.join(tmp, f"{tag}.{be}.st")
        r = run(turnip, ["run", gp, "--device-mem", cap, "--inputs", ip, "--out", op] +
                (bflags if be == backend else ["--backend", be]) + extra)
        outs[be] = read_st(op)[0]
    vals = outs[backend]
    for name, ref in refs.items():
        got = vals[name].astype(np.float64)
        odt = next(v["dtype"] for v in V if v["id"] == name)
        scale = max(1.0, float(np.abs(ref).max()))
        allowed = max(tol[odt], tol[dtype]) * scale
        if fast and next(v["op"] for v in V if v["id"] == name) == "matmul":
            allowed = max(allowed, MM_FAST_TOL * scale)
        err = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
        ok = err <= allowed
        line = f"{'ok  ' if ok else 'FAIL'} {backend} {dtype:4s} {name:22s} max abs err vs numpy {err:.3e} (allowed {allowed:.1e})"
        if backend != "cpu":  # the same op on the cpu backend's kernels
            c = outs["cpu"][name].astype(np.float64)
            cerr = float(np.abs(got - c).max()) if got.shape == c.shape else float("inf")
            cok = cerr <= allowed
            line += f"; vs cpu backend {cerr:.3e}"
            ok = ok and cok
            line = ("ok  " if ok else "FAIL") + line[4:]
        print(line)
        failures += not ok
        checks += 1
    V, inputs, refs = [], {}, {}
    return r


# a cap of 4 KiB per device forces offloads of these small tensors (up to 1.7 KiB each)
r = run_graph("small", "4KiB", ["--order", "random", "--seed", "5"])
# device rows of the plan statistics: dev, capacity (2), peak (2), loads (3), reloads (3), offloads (3)
plan_rows = r.stdout.split("capacity", 1)[1].split("host:", 1)[0].splitlines()[1:]
offl = sum(int(line.split()[11]) for line in plan_rows)
print(f"plan offloads: {offl}")
if offl == 0:
    print("FAIL: the cap did not force any offload")
    failures += 1

# larger cases: many threads per row, grid-stride loops, chunked sums, matmul through f32
a, A = inp("big.mm.a", (130, 257)); b, B = inp("big.mm.b", (190, 257), dt="f32")
kern("big_matmul_mixed", "matmul", [a, b], (130, 190), 0.25 * (A @ B.T), attrs={"trans_b": True, "alpha": 0.25})
a, A = inp("big.bmm.a", (3, 64, 96)); b, B = inp("big.bmm.b", (96, 80))
kern("big_matmul_shared", "matmul", [a, b], (3, 64, 80), A @ B)
s, S = inp("big.sm", (2, 70, 1100), scale=3.0)
kern("big_softmax_causal", "softmax", [s], (2, 70, 1100), softmax_ref(S, 0.1, True, 900),
     attrs={"scale": 0.1, "causal": True, "row_offset": 900})
# attention over keys longer than one tile of scores (2^22 floats): tiles of 59 and of 209 query
# rows, the columns each tile computes cut by causality, a first tile with every row masked
q, Q = inp("big.att.q", (300, 64)); k, Kt = inp("big.att.k", (70000, 64)); v, Vt = inp("big.att.v", (70000, 32))
kern("big_attention_causal", "attention", [q, k, v], (300, 32), softmax_ref(0.125 * Q @ Kt.T, 1.0, True, 69700) @ Vt,
     attrs={"scale": 0.125, "causal": True, "row_offset": 69700})
q, Q = inp("big.att.q2", (300, 16)); k, Kt = inp("big.att.k2", (20000, 16)); v, Vt = inp("big.att.v2", (20000, 8))
kern("big_attention_masked_tile", "attention", [q, k, v], (300, 8), softmax_ref(Q @ Kt.T, 1.0, True, -250) @ Vt,
     attrs={"causal": True, "row_offset": -250})
x, X = inp("big.rms.x", (20, 4096)); w, W = inp("big.rms.w", (4096,))
kern("big_rmsnorm", "rmsnorm", [x, w], (20, 4096), X / np.sqrt((X ** 2).mean(-1, keepdims=True) + 1e-5) * W,
     attrs={"eps": 1e-5})
q, Q = inp("big.rope", (40, 4, 128))
kern("big_rope", "rope", [q], (40, 4, 128), rope_ref(Q, 500000.0, 3000), attrs={"theta": 500000.0, "pos_offset": 3000})
terms = [inp(f"big.sum{k}", (33, 65)) for k in range(20)]
kern("big_sum20", "sum", [t for t, _ in terms], (33, 65), sum(T for _, T in terms))
x, X = inp("big.ew.x", (64, 1000)); y, Y = inp("big.ew.y", (1000,))
kern("big_mul_bcast", "mul", [x, y], (64, 1000), X * Y)
kern("big_silu", "silu", [x], (64, 1000), X / (1 + np.exp(-X)))
kern("big_gelu", "gelu", [x], (64, 1000), 0.5 * X * (1 + erf(X / math.sqrt(2))))
x, X = inp("big.tr", (3, 40, 50, 7))
kern("big_transpose", "transpose", [x], (50, 3, 7, 40), X.transpose(2, 0, 3, 1), attrs={"perm": [2, 0, 3, 1]})
kern("big_slice", "slice", [x], (3, 40, 20, 7), X[:, :, 10:30, :], attrs={"axis": 2, "start": 10, "length": 20})
kern("big_reshape", "reshape", [x], (120, 350), X.reshape(120, 350))
t, Tb = inp("big.emb", (300, 96)); ids = np.array([5, 299, 300, 1000, 150, 0, 2000], dtype=np.int32)
V.append({"id": "big.ids", "kind": "input", "device": 0, "dtype": "i32", "shape": [7]})
inputs["big.ids"] = ("i32", (7,), ids.tobytes())
ref = np.zeros((7, 96))
for i, k in enumerate(ids):
    if 100 <= k < 400:
        ref[i] = Tb[k - 100]
kern("big_embedding_masked", "embedding", [t, "big.ids"], (7, 96), ref, attrs={"id_offset": 100, "masked": True})
run_graph("big", "64MiB", [])
print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
