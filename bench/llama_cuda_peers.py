#!/usr/bin/env python3
"""LLaMA prefill on one GPU with the weights mostly in CPU memory: the peers turnip is measured
against (bench/llama_cuda.sh runs them side by side with `turnip llama --backend cuda`).

  make DIR [--layers L]        a Llama-3-8B-shaped checkpoint (bf16, random weights drawn on
                               the GPU, seeded) in Hugging Face format: config.json +
                               model.safetensors
  prefetch DIR --seq-len T --cap BYTES [--reps N] [--out F.npy]
      a PyTorch loop: as many decoder layers resident as fit under the cap, the rest streamed
      from pinned memory one layer ahead on a side stream (two layer buffers), flash attention
      (scaled_dot_product_attention), the MLP in chunks of 4096 tokens; the cap is enforced with
      torch.cuda.set_per_process_memory_fraction
  accelerate DIR --seq-len T --cap BYTES [--reps N] [--out F.npy]
      Hugging Face transformers + accelerate: load_checkpoint_and_dispatch with device_map
      "auto" and max_memory {0: cap - activation reserve, cpu: rest}; offloaded layers are
      moved to the GPU by accelerate's hooks at each forward

The prompt is turnip's --seq-len T --seed 0 prompt. Prints one RESULT line per run set:
best and median latency of N timed runs after a warm-up, peak GPU memory, and the top
next-token ids; --out saves the last token's logits (float32) for cross-checks."""
import argparse, json, os, sys, time
import numpy as np
import torch

CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
       "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "rms_norm_eps": 1e-5,
       "rope_theta": 500000.0, "vocab_size": 128256, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
       "max_position_embeddings": 32768, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
       "head_dim": 128, "bos_token_id": 128000, "eos_token_id": 128001}


def prompt(T, d, seed=0):
    """the ids of `turnip llama --seq-len T --seed S`, asked of turnip itself (--print-prompt), so
    this script keeps no copy of its generator"""
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    turnip = os.environ.get("TURNIP", os.path.join(here, "..", "build", "turnip"))
    r = subprocess.run([turnip, "llama", "--model", d, "--seq-len", str(T), "--seed", str(seed), "--device-mem", "1TiB",
                        "--no-data", "--print-prompt"], capture_output=True, text=True, check=True)
    line = next(l for l in r.stdout.splitlines() if l.startswith("prompt ids:"))
    ids = [int(x) for x in line.split(":", 1)[1].split(",")]
    return torch.tensor(ids, dtype=torch.long)


def make(d, layers):
    from safetensors.torch import save_file
    os.makedirs(d, exist_ok=True)
    cfg = dict(CFG, num_hidden_layers=layers)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
    from make_tiny_llama import llama_tensors
    g = torch.Generator(device="cuda").manual_seed(1234)
    std = {"embed": 0.5, "w": 0.02}

    def draw(shape, kind):
        r = torch.randn(*shape, generator=g, device="cuda")
        return ((1.0 + 0.1 * r) if kind == "norm" else r * std[kind]).to(torch.bfloat16).cpu()

    t = {name: draw(shape, kind) for name, shape, kind in llama_tensors(cfg)}
    save_file(t, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {d}: {sum(x.numel() for x in t.values()) / 1e9:.2f} B parameters")


def timed(fn, reps):
    fn()  # warm-up
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return out, ts


def report(system, a, ts, logits, extra=""):
    peak = torch.cuda.max_memory_allocated() / 2 ** 30
    top = torch.topk(logits.float(), 5).indices.tolist()
    print(f"RESULT system={system} T={a.seq_len} cap_GiB={a.cap / 2 ** 30:.2f} best_s={min(ts):.4f} "
          f"median_s={sorted(ts)[len(ts) // 2]:.4f} max_s={max(ts):.4f} peak_GiB={peak:.2f} top5={top} {extra}", flush=True)
    if a.out:
        np.save(a.out, logits.float().cpu().numpy())


def prefetch(a):
    from safetensors import safe_open
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    L, H, NH, NKV = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps, theta, T = H // NH, cfg["rms_norm_eps"], cfg["rope_theta"], a.seq_len
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, a.cap / total))
    names = ["input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
             "self_attn.o_proj.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
             "mlp.down_proj.weight"]
    f = safe_open(os.path.join(a.dir, "model.safetensors"), framework="pt")
    t0 = time.perf_counter()
    host = [{k: f.get_tensor(f"model.layers.{l}.{k}").pin_memory() for k in names} for l in range(L)]
    embed = f.get_tensor("model.embed_tokens.weight")
    head = f.get_tensor("lm_head.weight").pin_memory()
    norm = f.get_tensor("model.norm.weight").cuda()
    layer_bytes = sum(x.numel() * x.element_size() for x in host[0].values())
    chunk = 4096
    # activations: x, residual branch, q/k/v/o and attention output, RMSNorm's three f32
    # temporaries, one MLP chunk's three [chunk, F] tensors, with room for the allocator's rounding
    act = T * H * 2 * 8 + T * H * 4 * 3 + chunk * cfg["intermediate_size"] * 2 * 4 + (256 << 20)
    resident = max(0, min(L, int((a.cap - 2 * layer_bytes - head.numel() * 2 - act) // layer_bytes)))
    dev = [{k: v.cuda() for k, v in host[l].items()} if l < resident else None for l in range(L)]
    bufs = [{k: torch.empty_like(v, device="cuda") for k, v in host[0].items()} for _ in range(2)]
    head_gpu = torch.empty_like(head, device="cuda")
    print(f"prefetch loop: {resident} of {L} layers resident ({layer_bytes / 2 ** 20:.0f} MiB each), the rest streamed; "
          f"set up in {time.perf_counter() - t0:.1f} s", flush=True)
    copy = torch.cuda.Stream()
    ids = prompt(T, a.dir)
    inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.outer(torch.arange(T, dtype=torch.float32), inv)
    cos = torch.cat([ang, ang], -1).cos().cuda().to(torch.bfloat16)[:, None, :]
    sin = torch.cat([ang, ang], -1).sin().cuda().to(torch.bfloat16)[:, None, :]

    def rms(x, w):
        xf = x.float()
        return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(torch.bfloat16)

    def rope(x):
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def forward():
        cur = torch.cuda.current_stream()
        ready = [torch.cuda.Event() for _ in range(2)]
        free = [torch.cuda.Event() for _ in range(2)]
        head_ready = torch.cuda.Event()

        def fetch(l):  # layer l into buffer l % 2 (or the head when l == L)
            with torch.cuda.stream(copy):
                if l == L:
                    head_gpu.copy_(head, non_blocking=True)
                    head_ready.record()
                    return
                b = (l - resident) % 2
                copy.wait_event(free[b])
                for k in names:
                    bufs[b][k].copy_(host[l][k], non_blocking=True)
                ready[b].record()

        streamed = list(range(resident, L)) + [L]
        for b in range(2):
            free[b].record(cur)
        for l in streamed[:2]:
            fetch(l)
        nxt = 2
        x = embed[ids].pin_memory().cuda(non_blocking=True)
        for l in range(L):
            if l < resident:
                W = dev[l]
            else:
                b = (l - resident) % 2
                cur.wait_event(ready[b])
                W = bufs[b]
            h = rms(x, W["input_layernorm.weight"])
            q = rope((h @ W["self_attn.q_proj.weight"].T).view(T, NH, hd)).transpose(0, 1)
            k = rope((h @ W["self_attn.k_proj.weight"].T).view(T, NKV, hd)).transpose(0, 1)
            v = (h @ W["self_attn.v_proj.weight"].T).view(T, NKV, hd).transpose(0, 1)
            o = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True, enable_gqa=True)
            x = x + o[0].transpose(0, 1).reshape(T, H) @ W["self_attn.o_proj.weight"].T
            h = rms(x, W["post_attention_layernorm.weight"])
            for c0 in range(0, T, chunk):
                hc = h[c0:c0 + chunk]
                g = hc @ W["mlp.gate_proj.weight"].T
                g = torch.nn.functional.silu(g) * (hc @ W["mlp.up_proj.weight"].T)
                x[c0:c0 + chunk] += g @ W["mlp.down_proj.weight"].T
            if l >= resident:
                free[(l - resident) % 2].record(cur)
                if nxt < len(streamed):
                    fetch(streamed[nxt])
                    nxt += 1
        cur.wait_event(head_ready)
        return (rms(x[-1:], norm) @ head_gpu.T)[0]

    with torch.no_grad():
        logits, ts = timed(forward, a.reps)
    report("prefetch", a, ts, logits, f"resident_layers={resident}")


def accelerate_run(a):
    from accelerate import init_empty_weights, load_checkpoint_and_dispatch
    from transformers import AutoConfig, LlamaForCausalLM
    cfg = AutoConfig.from_pretrained(a.dir)
    T = a.seq_len
    reserve = T * cfg.hidden_size * 2 * 10 + T * cfg.intermediate_size * 2 * 3 + (512 << 20)
    budget = max(1 << 30, a.cap - reserve)
    t0 = time.perf_counter()
    with init_empty_weights():
        model = LlamaForCausalLM(cfg)
    model = load_checkpoint_and_dispatch(model, checkpoint=a.dir, device_map="auto",
                                         max_memory={0: budget, "cpu": 120 << 30},
                                         no_split_module_classes=["LlamaDecoderLayer"], dtype=torch.bfloat16)
    model.eval()
    on_gpu = sum(1 for k, v in model.hf_device_map.items() if v == 0 and ".layers." in f".{k}.")
    print(f"accelerate: device map puts {on_gpu} decoder layers on the GPU (weight budget {budget / 2 ** 30:.2f} GiB); "
          f"loaded in {time.perf_counter() - t0:.1f} s", flush=True)
    ids = prompt(T, a.dir)[None].cuda()
    with torch.no_grad():
        out, ts = timed(lambda: model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[0, -1], a.reps)
    report("accelerate", a, ts, out, f"gpu_layers={on_gpu}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["make", "prefetch", "accelerate"])
    ap.add_argument("dir")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--cap", type=float, default=8e9, help="GPU memory cap in bytes")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    a.cap = int(a.cap)
    if a.what == "make":
        make(a.dir, a.layers)
    elif a.what == "prefetch":
        prefetch(a)
    else:
        try:
            accelerate_run(a)
        except torch.cuda.OutOfMemoryError as e:
            print(f"RESULT system=accelerate T={a.seq_len} cap_GiB={a.cap / 2 ** 30:.2f} OOM ({str(e).splitlines()[0]})")
            sys.exit(0)
