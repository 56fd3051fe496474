#!/usr/bin/python3
"""PyTorch CPU generation with a KV cache, the baseline for `turnip generate` (issue 12): time per
decode step (prefill excluded) for B sequences, N new tokens (token 0 from the prefill, then
N-1 decode steps, as `turnip generate --max-new-tokens N` does), R repeats, K threads.

The model is tests/generate_torch.py's reference (Hugging Face LLaMA semantics, eager, f32
weights upcast from their storage dtype, KV cache preallocated for T + N positions, greedy
argmax included in each step), on a Hugging Face checkpoint directory, or on a random one this
script writes first (`--make-model DIR` with the sizes below; defaults: bench/llama_vs_torch.py's
model, 4 layers, hidden 1024, 16 heads (8 KV), intermediate 2816, vocab 8000, float32).

usage: bench/generate_torch.py (--model DIR | --make-model DIR [--layers L] [--hidden H] [--heads NH]
           [--kv-heads NKV] [--intermediate F] [--vocab V] [--dtype float32|float16|bfloat16] [--tie] [--seed S])
           [--prompt-len T | --prompt-ids "1,2;3,4"] [--new-tokens N] [--batch B] [--repeats R] [--threads K]
           [--prompt-seed S]
Prints min / median / max over the repeats of seconds per decode step (B tokens, one per
sequence) and the tokens/s they give (B / seconds per step), the prefill time, the torch
version, thread counts and the BLAS library torch loaded; the first sequence's tokens, to set
beside `turnip generate --prompt-ids ...` on the same checkpoint."""
import argparse, importlib.util, json, os, statistics, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], usage=__doc__.split("usage: ", 1)[1].split("\nPrints")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="DIR", help="a Hugging Face LLaMA checkpoint directory")
    src.add_argument("--make-model", metavar="DIR", help="write a random checkpoint here first, then time it")
    for k, v in [("layers", 4), ("hidden", 1024), ("heads", 16), ("kv-heads", 8), ("intermediate", 2816), ("vocab", 8000),
                 ("seed", 1)]:
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--tie", action="store_true", help="--make-model: tie_word_embeddings true")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--prompt-ids", help="prompts as `turnip generate` takes them: 1,2,3 or \"1,2;3,4\" (overrides --prompt-len)")
    ap.add_argument("--prompt-seed", type=int, default=0)
    ap.add_argument("--new-tokens", type=int, default=33)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.new_tokens < 2 or a.batch < 1 or a.repeats < 3 or a.threads < 1 or a.prompt_len < 1:
        ap.error("need --new-tokens >= 2 (at least one decode step), --batch >= 1, --repeats >= 3, --threads >= 1, "
                 "--prompt-len >= 1")
    return a


def blas_library():
    """the BLAS shared object torch has mapped (Debian's torch uses the system libblas)"""
    try:
        libs = {l.split()[-1] for l in open("/proc/self/maps") if "blas" in l.lower() and ".so" in l}
        return ", ".join(sorted(os.path.realpath(p) for p in libs)) or "(none mapped)"
    except OSError:
        return "(unknown)"


def main():
    a = parse()
    # before torch loads the BLAS library: its own thread pool at the same count
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(a.threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import numpy as np
    import torch
    spec = importlib.util.spec_from_file_location("generate_torch_reference", os.path.join(ROOT, "tests", "generate_torch.py"))
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    torch.set_num_threads(a.threads)

    if a.make_model:
        d = a.make_model
        t0 = time.perf_counter()
        ref.make_model(d, dtype=a.dtype, seed=a.seed, layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads,
                       intermediate=a.intermediate, vocab=a.vocab, tie=a.tie)
        print(f"wrote a random checkpoint to {d} in {time.perf_counter() - t0:.1f} s")
    else:
        d = a.model
    cfg = json.load(open(os.path.join(d, "config.json")))
    W = ref.load_weights(d, cfg)
    V = cfg["vocab_size"]
    if a.prompt_ids:
        rows = [[int(t) for t in p.split(",")] for p in a.prompt_ids.split(";")]
        if len({len(r) for r in rows}) != 1:
            sys.exit("--prompt-ids: every prompt must have the same length")
        if len(rows) == 1:
            rows = rows * a.batch
        elif len(rows) != a.batch and a.batch != 1:
            sys.exit(f"--prompt-ids has {len(rows)} prompts, --batch says {a.batch}")
        prompts = np.asarray(rows, dtype=np.int64)
        if prompts.min() < 0 or prompts.max() >= V:
            sys.exit(f"--prompt-ids: ids must be in [0, {V})")
    else:
        prompts = np.random.default_rng(a.prompt_seed).integers(0, V, (a.batch, a.prompt_len))
    B, T = prompts.shape
    N = a.new_tokens

    per_step, prefill, first = [], [], None
    with torch.no_grad():
        for r in range(-1, a.repeats):  # repeat -1: a warm-up, not counted (thread pools, first-touch pages)
            cache = ref.KVCache(W, cfg, B, T + N)
            t0 = time.perf_counter()
            tok = ref.greedy(cache.forward(prompts).numpy())
            t1 = time.perf_counter()
            toks = [tok]
            for S in range(1, N):
                tok = ref.greedy(cache.forward(tok.reshape(B, 1)).numpy())
                toks.append(tok)
            t2 = time.perf_counter()
            if r < 0:
                continue
            prefill.append(t1 - t0)
            per_step.append((t2 - t1) / (N - 1))
            toks = np.stack(toks, axis=1)
            if first is None:
                first = toks
            elif not np.array_equal(first, toks):
                print(f"warning: repeat {r + 1} generated other tokens than repeat 1")

    H, NH, NKV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    print(f"torch {torch.__version__}; torch threads {torch.get_num_threads()} (asked {a.threads}); "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; BLAS: {blas_library()}")
    print(f"model {d}: {cfg['num_hidden_layers']} layers, hidden {H}, {NH} heads ({NKV} KV), intermediate "
          f"{cfg['intermediate_size']}, vocab {V}, stored {cfg.get('torch_dtype', 'float32')}, computed in float32")
    print(f"batch {B}, prompt {T} tokens, {N} new tokens ({N - 1} decode steps timed, prefill excluded), "
          f"{a.repeats} repeats after one warm-up")
    s = sorted(per_step)
    med = statistics.median(s)
    print(f"prefill: median {statistics.median(prefill) * 1e3:.2f} ms")
    print(f"seconds per decode step ({B} token{'s' if B > 1 else ''}): min {s[0]:.6f}  median {med:.6f}  max {s[-1]:.6f}")
    print(f"tokens/s: {B / s[0]:.1f} (best)  {B / med:.1f} (median)  {B / s[-1]:.1f} (worst)")
    print(f"seconds per token per sequence: median {med:.6f}; tokens/s per sequence: median {1 / med:.1f}")
    print(f"tokens[0]: {' '.join(str(int(t)) for t in first[0])}")


if __name__ == "__main__":
    main()
