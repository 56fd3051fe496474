"""An independent PyTorch implementation of Hugging Face LLaMA prefill semantics (eager
attention, float32), the reference of tests/llama_torch.py and tests/llama_devices.py; shares
no code with turnip."""
import os
import numpy as np
from tputil import read_st


def load_weights(torch, d, cfg):
    vals = {}
    files = [f for f in os.listdir(d) if f.endswith(".safetensors")]
    for f in files:
        v, _ = read_st(os.path.join(d, f))
        vals.update(v)
    return {k: torch.tensor(np.asarray(v, dtype=np.float32)) for k, v in vals.items()}


def reference(torch, W, cfg, ids, kv=None):
    """Hugging Face LlamaForCausalLM forward (eager attention), in float32; with a list kv,
    appends per layer (keys after RoPE, values), each [NKV, T, hd]: what the KV cache holds."""
    H, NH, NKV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps, theta = H // NH, cfg["rms_norm_eps"], cfg["rope_theta"]
    T = len(ids)

    def rms(x, w):
        var = x.pow(2).mean(-1, keepdim=True)
        return w * (x * torch.rsqrt(var + eps))

    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    rot = lambda x: torch.cat((-x[..., hd // 2:], x[..., :hd // 2]), dim=-1)
    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, W[p + "input_layernorm.weight"])
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(T, NH, hd).transpose(0, 1)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(T, NKV, hd).transpose(0, 1)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(T, NKV, hd).transpose(0, 1)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        if kv is not None:
            kv.append((k.numpy().copy(), v.numpy().copy()))
        k, v = k.repeat_interleave(NH // NKV, 0), v.repeat_interleave(NH // NKV, 0)
        att = torch.softmax(q @ k.transpose(1, 2) / hd ** 0.5 + mask, dim=-1, dtype=torch.float32)
        o = (att @ v).transpose(0, 1).reshape(T, H)
        x = x + o @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ W[p + "mlp.down_proj.weight"].T
    x = rms(x, W["model.norm.weight"])
    return (x @ W["lm_head.weight"].T).numpy()
