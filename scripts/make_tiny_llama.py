#!/usr/bin/python3
"""Writes a random tiny LLaMA checkpoint in Hugging Face format (config.json, and
model.safetensors or shards with model.safetensors.index.json), with numpy only.

usage: make_tiny_llama.py DIR [--dtype float32|bfloat16|float16] [--seed S] [--shards N]
       [--layers L] [--hidden H] [--heads NH] [--kv-heads NKV] [--intermediate F] [--vocab V]
Defaults: 2 layers, hidden 256, 8 heads, 4 KV heads, intermediate 512, vocab 1000."""
import argparse, json, os, struct, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import write_atomic  # noqa: E402


def bf16_bits(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_st(path, tensors):
    header, off, blobs = {}, 0, []
    for name, (dt, arr) in tensors.items():
        raw = bf16_bits(arr).tobytes() if dt == "BF16" else arr.astype({"F32": np.float32, "F16": np.float16}[dt]).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    write_atomic(path, lambda f: f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs)), "wb")


def llama_tensors(cfg):
    """(name, shape, kind) of every tensor of a Hugging Face LLaMA checkpoint, in file order;
    kind: embed, w (a projection) or norm"""
    H, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    NH, NKV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = H // NH
    out = [("model.embed_tokens.weight", (V, H), "embed")]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (H,), "norm"), (p + "self_attn.q_proj.weight", (NH * hd, H), "w"),
                (p + "self_attn.k_proj.weight", (NKV * hd, H), "w"), (p + "self_attn.v_proj.weight", (NKV * hd, H), "w"),
                (p + "self_attn.o_proj.weight", (H, NH * hd), "w"), (p + "post_attention_layernorm.weight", (H,), "norm"),
                (p + "mlp.gate_proj.weight", (F, H), "w"), (p + "mlp.up_proj.weight", (F, H), "w"),
                (p + "mlp.down_proj.weight", (H, F), "w")]
    return out + [("model.norm.weight", (H,), "norm"), ("lm_head.weight", (V, H), "w")]


def make(d, dtype="float32", seed=0, shards=1, layers=2, hidden=256, heads=8, kv_heads=4, intermediate=512, vocab=1000):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
           "intermediate_size": intermediate, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "num_hidden_layers": layers, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": vocab,
           "torch_dtype": dtype, "tie_word_embeddings": False}
    write_atomic(os.path.join(d, "config.json"), lambda f: json.dump(cfg, f, indent=1))
    st = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}[dtype]
    draw = {"embed": lambda s: rng.standard_normal(s).astype(np.float32) * 0.5,
            "w": lambda s: (rng.standard_normal(s) * 0.05).astype(np.float32),
            "norm": lambda s: (1.0 + 0.1 * rng.standard_normal(s)).astype(np.float32)}
    t = {name: (st, draw[kind](shape)) for name, shape, kind in llama_tensors(cfg)}
    names = list(t)
    if shards <= 1:
        write_st(os.path.join(d, "model.safetensors"), t)
    else:
        wm = {}
        for k in range(shards):
            fn = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
            part = {nm: t[nm] for nm in names[k::shards]}
            write_st(os.path.join(d, fn), part)
            wm.update({nm: fn for nm in part})
        write_atomic(os.path.join(d, "model.safetensors.index.json"), lambda f: json.dump({"metadata": {}, "weight_map": wm}, f))
    return cfg


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=1)
    for k, v in [("layers", 2), ("hidden", 256), ("heads", 8), ("kv-heads", 4), ("intermediate", 512), ("vocab", 1000)]:
        ap.add_argument("--" + k, type=int, default=v)
    a = ap.parse_args()
    make(a.dir, a.dtype, a.seed, a.shards, a.layers, a.hidden, a.heads, a.kv_heads, a.intermediate, a.vocab)
    print(f"wrote {a.dir}")
