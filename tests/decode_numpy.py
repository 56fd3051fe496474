#!/usr/bin/python3
"""One LLaMA decode step with a KV cache (tp_llama_decode_layer and tp_llama_decode_head, issue
12) against an independent numpy implementation of Hugging Face LLaMA semantics written here.

For small random configs (multi-head, grouped and single-KV-head attention; B = 1 and 3; f32,
f16 and bf16 weights; pos 0, inside the cache and at its last position; tied embeddings and
lm_head in row chunks) `turnip gen decode` writes the layer and head TaskGraphs and `turnip run`
runs them with inputs made here: "x.out", "k_new", "v_new" and "logits" must match the
reference at the tolerances of tests/llama_torch.py. Cache positions from pos on hold NaN, so
reading past the new token (or an append at the wrong place) shows. The plan must honour the
cache appends in place (one row per head, not a copy of the cache). With BACKEND cuda the runs
are on the GPU.
usage: decode_numpy.py TURNIP [cpu|cuda|cuda-fast]"""
import json, os, sys, tempfile
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tputil import store, write_st, read_st, run, need_backend, backend_flags

turnip = sys.argv[1]
backend = sys.argv[2] if len(sys.argv) > 2 else "cpu"
need_backend(turnip, backend)
bflags, fast = backend_flags(backend)
tmp = tempfile.mkdtemp(prefix="tp-decode-")
TORCH_DT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
# tests/llama_torch.py's tolerances, relative to the largest reference value
TOL = {"f32": 1e-2 if fast else 1e-3, "f16": 3e-2 if fast else 1e-3, "bf16": 3e-2 if fast else 1e-3}
failures = checks = 0


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, pos, theta):
    """Hugging Face rotate-half at position pos for x [..., hd]: f32 inverse frequencies and
    f32 angles (as Hugging Face computes them), the rest in float64"""
    hd = x.shape[-1]
    inv = (1.0 / theta ** (np.arange(0, hd, 2, dtype=np.int64).astype(np.float32) / hd)).astype(np.float32)
    ang = (np.float32(pos) * inv).astype(np.float64)
    emb = np.concatenate([ang, ang])
    rot = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)
    return x * np.cos(emb) + rot * np.sin(emb)


def decode_layer_ref(W, p, x, ck, cv, pos, cfg):
    """one decoder layer of one step, B sequences at position pos; the caches hold 0..pos-1"""
    H, NH, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, G, eps, B = H // NH, NH // KV, cfg["rms_norm_eps"], x.shape[0]
    h = rms(x, W[p + "input_layernorm.weight"], eps)
    q = rope((h @ W[p + "self_attn.q_proj.weight"].T).reshape(B, NH, hd), pos, cfg["rope_theta"])
    k = rope((h @ W[p + "self_attn.k_proj.weight"].T).reshape(B, KV, hd), pos, cfg["rope_theta"])
    v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(B, KV, hd)
    K, V = ck[:, :, :pos + 1].copy(), cv[:, :, :pos + 1].copy()
    K[:, :, pos], V[:, :, pos] = k, v
    o = np.zeros((B, NH, hd))
    for b in range(B):
        for hh in range(NH):  # query head hh reads KV head hh // G (Hugging Face repeat_kv)
            s = K[b, hh // G] @ q[b, hh] / np.sqrt(hd)
            e = np.exp(s - s.max())
            o[b, hh] = (e / e.sum()) @ V[b, hh // G]
    x1 = x + o.reshape(B, H) @ W[p + "self_attn.o_proj.weight"].T
    h2 = rms(x1, W[p + "post_attention_layernorm.weight"], eps)
    g, u = h2 @ W[p + "mlp.gate_proj.weight"].T, h2 @ W[p + "mlp.up_proj.weight"].T
    out = x1 + (g / (1 + np.exp(-g)) * u) @ W[p + "mlp.down_proj.weight"].T
    return out, k.reshape(B, KV, 1, hd), v.reshape(B, KV, 1, hd)


def compare(tag, name, got, ref, dt):
    global failures, checks
    scale = max(1e-30, float(np.abs(ref).max()))
    err = float(np.abs(got.astype(np.float64) - ref).max()) if got.shape == ref.shape else float("inf")
    ok = err <= TOL[dt] * scale  # NaN fails
    print(f"{'ok  ' if ok else 'FAIL'} {tag} {name:7s} max abs err {err:.2e} (allowed {TOL[dt] * scale:.2e}, shape {got.shape})")
    failures += not ok
    checks += 1


def gen(cfgdir, args, path):
    run(turnip, ["gen", "decode", "--model", cfgdir, "-o", path] + args)
    return json.load(open(path))


def in_place_appends(tg_path, layer):
    """the plan's write_slice kernels over the caches carry "inplace" (no copy of the cache)"""
    mg = os.path.join(tmp, "mg.json")
    run(turnip, ["plan", tg_path, "--device-mem", "64MiB", "-o", mg])
    vs = json.load(open(mg))["vertices"]
    want = {f"kv.{layer}.k.updated", f"kv.{layer}.v.updated"}
    return want <= {v["task"] for v in vs if v["kind"] == "kernel" and "inplace" in v}


rng = np.random.default_rng(12)
cases = []
for i, (dt, B, kvdiv) in enumerate([(dt, B, kvdiv) for dt in ("f32", "f16", "bf16") for B in (1, 3) for kvdiv in (1, 2, 0)]):
    NH = int(rng.choice([4, 8]))
    KV = NH if kvdiv == 1 else NH // 2 if kvdiv == 2 else 1
    hd = int(rng.choice([8, 16]))
    M = int(rng.integers(4, 20))
    pos = [0, int(rng.integers(1, M - 1)), M - 1][i % 3]
    cases.append(dict(dt=dt, B=B, NH=NH, KV=KV, hd=hd, M=M, pos=pos, inter=int(rng.choice([40, 72])), vocab=int(rng.integers(60, 200)),
                      tie=i % 4 == 1, vc=[1, 3, 1, 2][i % 4], layers=2, layer=i % 2, theta=[10000.0, 500000.0][i % 2],
                      devices=2 if i % 5 == 4 else 1))

for n, cs in enumerate(cases):
    dt, B, NH, KV, hd, M, pos = cs["dt"], cs["B"], cs["NH"], cs["KV"], cs["hd"], cs["M"], cs["pos"]
    H, F, Vb, L = NH * hd, cs["inter"], cs["vocab"], cs["layer"]
    cfg = {"hidden_size": H, "intermediate_size": F, "num_attention_heads": NH, "num_key_value_heads": KV,
           "num_hidden_layers": cs["layers"], "vocab_size": Vb, "rms_norm_eps": 1e-5, "rope_theta": cs["theta"],
           "torch_dtype": TORCH_DT[dt], "tie_word_embeddings": cs["tie"], "hidden_act": "silu"}
    d = os.path.join(tmp, f"case{n}")
    os.makedirs(d)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    tag = (f"{backend} {dt:4s} B={B} heads {NH}/{KV} hd {hd} pos {pos}/{M} layer {L}"
           f"{' tied' if cs['tie'] else ''} vc {cs['vc']}{' dev 1 of 2' if cs['devices'] == 2 else ''}:")
    place = ["--devices", "2", "--device", "1"] if cs["devices"] == 2 else []
    # the layer
    tg = os.path.join(d, "layer.json")
    gen(d, ["--layer", str(L), "--batch", str(B), "--pos", str(pos), "--max-len", str(M)] + place, tg)
    W, inputs = {}, {}

    def weight(name, shape, norm=False):
        a = 1 + 0.1 * rng.standard_normal(shape) if norm else rng.standard_normal(shape) / np.sqrt(shape[-1])
        raw, val = store(a, dt)
        W[name] = val.astype(np.float64)
        inputs[name] = (dt, shape, raw)

    p = f"model.layers.{L}."
    weight(p + "input_layernorm.weight", (H,), True)
    weight(p + "post_attention_layernorm.weight", (H,), True)
    weight(p + "self_attn.q_proj.weight", (NH * hd, H))
    weight(p + "self_attn.k_proj.weight", (KV * hd, H))
    weight(p + "self_attn.v_proj.weight", (KV * hd, H))
    weight(p + "self_attn.o_proj.weight", (H, NH * hd))
    weight(p + "mlp.gate_proj.weight", (F, H))
    weight(p + "mlp.up_proj.weight", (F, H))
    weight(p + "mlp.down_proj.weight", (H, F))
    x = rng.standard_normal((B, H)).astype(np.float32)
    ck = rng.standard_normal((B, KV, M, hd)).astype(np.float32)
    cv = rng.standard_normal((B, KV, M, hd)).astype(np.float32)
    ck[:, :, pos:] = np.nan  # never read (position pos is the new token's)
    cv[:, :, pos:] = np.nan
    inputs["x"] = ("f32", (B, H), x.tobytes())
    inputs[f"kv.{L}.k"] = ("f32", ck.shape, ck.tobytes())
    inputs[f"kv.{L}.v"] = ("f32", cv.shape, cv.tobytes())
    ip, op = os.path.join(d, "layer.in.st"), os.path.join(d, "layer.out.st")
    write_st(ip, inputs)
    run(turnip, ["run", tg, "--device-mem", "64MiB", "--inputs", ip, "--out", op] + bflags)
    got = read_st(op)[0]
    xo, kn, vn = decode_layer_ref(W, p, x.astype(np.float64), ck.astype(np.float64), cv.astype(np.float64), pos, cfg)
    compare(tag, "x.out", got["x.out"], xo, dt)
    compare(tag, "k_new", got["k_new"], kn, dt)
    compare(tag, "v_new", got["v_new"], vn, dt)
    if set(got) != {"x.out", "k_new", "v_new"}:
        print(f"FAIL {tag} outputs {sorted(got)}, wanted x.out, k_new, v_new")
        failures += 1
    if n < 3:  # the plan: appends in place
        ok = in_place_appends(tg, L)
        print(f"{'ok  ' if ok else 'FAIL'} {tag} the plan writes both cache appends in place")
        failures += not ok
    # the head
    tg = os.path.join(d, "head.json")
    head = gen(d, ["--head", "--batch", str(B), "--vocab-chunks", str(cs["vc"])] + place, tg)
    lm = "model.embed_tokens.weight" if cs["tie"] else "lm_head.weight"
    W, inputs = {}, {}
    weight("model.norm.weight", (H,), True)
    weight(lm, (Vb, H))
    xh = rng.standard_normal((B, H)).astype(np.float32)
    inputs["x"] = ("f32", (B, H), xh.tobytes())
    for v in head["vertices"]:  # the row chunks of lm_head, as their ids say
        if v["kind"] == "input" and v["id"].startswith(lm + "#r"):
            a, b = map(int, v["id"].split("#r")[1].split(":"))
            dtn, _, raw = inputs[lm]
            es = 4 if dt == "f32" else 2
            inputs[v["id"]] = (dtn, (b - a, H), raw[a * H * es:b * H * es])
    if cs["vc"] > 1:
        del inputs[lm]
    ip, op = os.path.join(d, "head.in.st"), os.path.join(d, "head.out.st")
    write_st(ip, inputs)
    run(turnip, ["run", tg, "--device-mem", "64MiB", "--inputs", ip, "--out", op] + bflags)
    ref = rms(xh.astype(np.float64), W["model.norm.weight"], 1e-5) @ W[lm].T
    compare(tag, "logits", read_st(op)[0]["logits"], ref, dt)

print(f"{checks - failures} of {checks} passed" if not failures else f"{failures} failed")
sys.exit(1 if failures else 0)
