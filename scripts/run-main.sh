#!/bin/bash
# The main job: install, build, then plan the bundled transformer-like TaskGraph on two
# devices capped at 2 MiB each (80% of its unconstrained peak along the default order), print the plan
# statistics, and check the plan with the independent verifier.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
mkdir -p out
T=build/turnip
EX=examples/transformer.json
echo "== turnip plan $EX --device-mem 2MiB --stats"
$T plan "$EX" --device-mem 2MiB -o out/transformer.memgraph.json --stats
echo "== turnip verify"
$T verify out/transformer.memgraph.json --taskgraph "$EX"
$T dot out/transformer.memgraph.json -o out/transformer.dot
echo "MemGraph: out/transformer.memgraph.json, drawing: out/transformer.dot (dot -Tsvg out/transformer.dot > plan.svg)"
