#!/bin/bash
# The main job: install, build, write a random tiny LLaMA checkpoint in Hugging Face format
# (scripts/make_tiny_llama.py: 2 layers, hidden 256, 8 heads, 4 KV heads, vocab 1000), and run
# its prefill on 128 tokens split over two emulated GPUs capped at 1 MiB each, which forces
# offloads and reloads over a link throttled to 8 GB/s; prints plan statistics, the run
# summary and the top-5 next tokens. tests/llama_torch.py checks these logits against PyTorch.
# Then generation (issue 12): 3 sequences, 16 new tokens each, with the weights and the KV
# cache in a tensor cache of half of what they need, on the same throttled link; prints the
# tokens, time to first token, decode tokens/s and bytes moved per decode step (3 tokens) against the bound.
# tests/generate_torch.py checks generate's logits and tokens against PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
mkdir -p out
/usr/bin/python3 scripts/make_tiny_llama.py out/tiny-llama
echo "== turnip llama --model out/tiny-llama --seq-len 128 --devices 2 --device-mem 1MiB"
build/turnip llama --model out/tiny-llama --seq-len 128 --devices 2 --device-mem 1MiB --link-bandwidth 8 \
    --out out/tiny-llama.logits.safetensors --trace out/tiny-llama.trace.json
echo "logits: out/tiny-llama.logits.safetensors; trace: out/tiny-llama.trace.json (open in https://ui.perfetto.dev)"
echo "== turnip generate --model out/tiny-llama --seq-len 32 --batch 3 --max-new-tokens 16 --device-mem 50%"
build/turnip generate --model out/tiny-llama --seq-len 32 --batch 3 --max-new-tokens 16 --device-mem 50% --link-bandwidth 8 \
    --out out/tiny-llama.generate.safetensors
echo "tokens and the logits of every step: out/tiny-llama.generate.safetensors"
