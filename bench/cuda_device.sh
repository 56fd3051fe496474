#!/bin/bash
# Everything about the cuda backend that needs a GPU, in one command for a GPU machine
# (docs/cuda.md): build with CUDA, the GPU tests, copy bandwidth, completion modes
# (callback vs poll), a compute-sanitizer pass; with `llama`, the Llama-3-8B-shaped benchmarks.
# Writes logs under $OUT (default out/cuda).
# usage: bench/cuda_device.sh [tests|llama|all]
set -u
cd "$(dirname "$0")/.."
what=${1:-tests}
OUT=${OUT:-out/cuda}
mkdir -p "$OUT"
# the GPU machines' image has no jansson/OpenBLAS packages: .deps holds Debian's, if carried
[ -d .deps ] && export LD_LIBRARY_PATH=$PWD/.deps/lib:${LD_LIBRARY_PATH:-}
PY=$(command -v python3)
B=build-gpu
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,memory.total --format=csv | tee "$OUT/gpu.txt"
lscpu | grep -E "Model name|^CPU\(s\)" | tee -a "$OUT/gpu.txt"
t0=$(date +%s)
if ! { cmake -S . -B $B -DCMAKE_PREFIX_PATH="$PWD/.deps" -DPYTHON3="$PY" -DTP_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build $B -j"$(nproc)"; } >"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    exit 1
fi
echo "built in $(($(date +%s) - t0)) s"
$B/turnip --version | tee -a "$OUT/gpu.txt"
if [ "$what" != llama ]; then
    (cd $B && ctest -R 'cuda_|cli_errors' --output-on-failure -j4 2>&1) | tee "$OUT/ctest.log" | grep -E "tests passed|Test +#|FAIL" | head -40
    for t in cuda_ops_bf16 cuda_llama cuda_run_random; do
        (cd $B && ctest -R "^$t\$" -V 2>&1 | grep -E "^[0-9]+: (ok|FAIL|seed|plan|all|[0-9]+ passed)" | tail -12) >>"$OUT/ctest_detail.log"
    done
    echo "== copy bandwidth"
    $B/bench_cuda_copy 256 8 5 63.0 | tee "$OUT/copy.txt"
    echo "== completion modes: tiny LLaMA (small kernels), best makespan of 5 runs"
    for s in 1 4; do for m in callback poll; do
        r=$($B/turnip llama --preset tiny --seq-len 512 --device-mem 64MiB --backend cuda --streams $s --completion $m --repeat 5)
        echo "streams $s $m: $(grep -o 'best makespan.*' <<<"$r"); $(grep -o '^run: [0-9]* vertices' <<<"$r")"
    done; done | tee "$OUT/completion.txt"
    echo "== completion modes: opaque kernels only (pure dispatch + completion cost)"
    $B/turnip gen layered --devices 1 --layers 64 --heads 8 --chunks 4 --seq 64 --head-dim 16 -o /tmp/lay.json
    $B/turnip gen inputs /tmp/lay.json -o /tmp/lay.st
    for s in 1 4; do for m in callback poll; do for rep in 1 2 3; do
        r=$($B/turnip run /tmp/lay.json --device-mem 1GiB --inputs /tmp/lay.st --out /tmp/lay.out --backend cuda --streams $s --completion $m)
        echo "streams $s $m: $(grep -o '^run: .*' <<<"$r")"
    done; done; done | tee -a "$OUT/completion.txt"
    echo "== compute-sanitizer memcheck: tiny LLaMA with offloads on 2 logical devices"
    compute-sanitizer --tool memcheck --leak-check full $B/turnip llama --preset tiny --seq-len 64 --devices 2 --device-mem 1536KiB \
        --backend cuda 2>&1 | tail -4 | tee "$OUT/memcheck.txt"
fi
if [ "$what" != tests ]; then
    CK=/tmp/llama3-8b
    [ -f $CK/model.safetensors ] || "$PY" bench/llama_cuda_peers.py make $CK 2>&1 | tail -2
    h2d=$(awk '/host-to-device/ {print $3}' "$OUT/copy.txt" 2>/dev/null)
    d2h=$(awk '/device-to-host/ {print $3}' "$OUT/copy.txt" 2>/dev/null)
    [ -z "$h2d" ] && { $B/bench_cuda_copy 256 8 5 63.0 >"$OUT/copy.txt"; h2d=$(awk '/host-to-device/ {print $3}' "$OUT/copy.txt"); d2h=$(awk '/device-to-host/ {print $3}' "$OUT/copy.txt"); }
    "$PY" bench/llama_cuda.py $B/turnip $CK "$h2d" "$d2h" --csv "$OUT/llama.csv" ${LLAMA_ARGS:-} 2>"$OUT/llama.err" | tee "$OUT/llama.txt"
fi
