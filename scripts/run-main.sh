#!/bin/bash
# The main job: install, build, then run a two-device MLP (examples/mlp.json, bf16, real
# kernels) on the cpu backend with each device capped at 512 KiB — its smallest feasible
# capacity, below its 704 KiB unconstrained peak, so weights and activations are offloaded
# and reloaded over a link throttled to 8 GB/s — and check that its output is bit-identical
# to an unconstrained run. Also plans the transformer-like example and verifies the plan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
mkdir -p out
T=build/turnip
$T gen inputs examples/mlp.json -o out/mlp.inputs.safetensors --seed 1
echo "== turnip run examples/mlp.json --device-mem 512KiB --link-bandwidth 8 --jitter 0.3"
$T run examples/mlp.json --device-mem 512KiB --link-bandwidth 8 --jitter 0.3 \
    --inputs out/mlp.inputs.safetensors --out out/mlp.capped.safetensors --trace out/mlp.trace.json
$T run examples/mlp.json --device-mem 64MiB --inputs out/mlp.inputs.safetensors --out out/mlp.free.safetensors >/dev/null
cmp out/mlp.capped.safetensors out/mlp.free.safetensors
echo "output identical to the unconstrained run; trace: out/mlp.trace.json (open in https://ui.perfetto.dev)"
echo
echo "== turnip plan examples/transformer.json --device-mem 2MiB --stats"
$T plan examples/transformer.json --device-mem 2MiB -o out/transformer.memgraph.json --stats
$T verify out/transformer.memgraph.json --taskgraph examples/transformer.json
