#!/bin/bash
# Hostile input to the kernels and the model builders (issue 18, defects 1, 2 and 7): index
# attributes near the int64 limits, LLaMA configs with sizes out of range, and commands that
# would build graphs larger than the machine. Each must exit 2 within seconds with a one-line
# message naming the vertex and attribute, config.json and the field, or the estimate and the
# limit; no output file is written.
# usage: hostile_models.sh TURNIP SOURCE_DIR
set -u
T=$1
SRC=$2
EXPECT_TIMEOUT=60
. "$(dirname "$0")/expect.sh"
# no_file PATH: a failed command left nothing there
no_file() { absent "$1"; }

# ---- defect 1: index attributes are range-checked, without overflow, before anything runs ----
# graph NAME INPUT_VERTICES KERNEL_VERTEX: a TaskGraph with the kernel "k" as output, and its inputs
graph() {
    printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [%s, %s], "outputs": ["k"]}' "$2" "$3" >"$D/$1.json"
    "$T" gen inputs "$D/$1.json" -o "$D/$1.st" --int-max 4 >/dev/null 2>&1
}
X42='{"id": "x", "kind": "input", "device": 0, "dtype": "f32", "shape": [4, 2]}'
kern() { # op, attrs, output shape
    printf '{"id": "k", "kind": "kernel", "device": 0, "op": "%s", "inputs": ["x"], "dtype": "f32", "shape": %s, "attrs": %s}' "$1" "$3" "$2"
}
# start + length overflowed in the old range check: the slice read rows before the tensor, exit 0
graph slice_start "$X42" "$(kern slice '{"axis": 0, "start": 9223372036854775806, "length": 2}' '[2, 2]')"
expect 2 "vertex 'k' (slice): attr 'start' 9223372036854775806 is outside \[0, 4)" \
    "$T" run "$D/slice_start.json" --device-mem 1MiB --inputs "$D/slice_start.st" --out "$D/o.st"
graph slice_len "$X42" "$(kern slice '{"axis": 0, "start": 3, "length": 9223372036854775807}' '[2, 2]')"
expect 2 "vertex 'k' (slice): attr 'length' 9223372036854775807 is outside \[1, 1\]" \
    "$T" run "$D/slice_len.json" --device-mem 1MiB --inputs "$D/slice_len.st" --out "$D/o.st"
graph slice_axis "$X42" "$(kern slice '{"axis": -9223372036854775808, "start": 0, "length": 1}' '[1, 2]')"
expect 2 "vertex 'k' (slice): attr 'axis' -9223372036854775808 is not an axis" \
    "$T" run "$D/slice_axis.json" --device-mem 1MiB --inputs "$D/slice_axis.st" --out "$D/o.st"
# the offsets were signed-overflow UB in the kernels (UBSan)
graph softmax "$X42" "$(kern softmax '{"causal": true, "row_offset": 9223372036854775807}' '[4, 2]')"
expect 2 "vertex 'k' (softmax): attr 'row_offset' 9223372036854775807 is outside" \
    "$T" run "$D/softmax.json" --device-mem 1MiB --inputs "$D/softmax.st" --out "$D/o.st"
graph rope "$X42" "$(kern rope '{"pos_offset": 9223372036854775807}' '[4, 2]')"
expect 2 "vertex 'k' (rope): attr 'pos_offset' 9223372036854775807 is outside" \
    "$T" run "$D/rope.json" --device-mem 1MiB --inputs "$D/rope.st" --out "$D/o.st"
graph rope_theta "$X42" "$(kern rope '{"theta": 1e300}' '[4, 2]')"
expect 2 "vertex 'k' (rope): attr 'theta' 1e+300 must be a finite number of f32 range" \
    "$T" run "$D/rope_theta.json" --device-mem 1MiB --inputs "$D/rope_theta.st" --out "$D/o.st"
IDS='{"id": "ids", "kind": "input", "device": 0, "dtype": "i32", "shape": [3]}'
EMB='{"id": "k", "kind": "kernel", "device": 0, "op": "embedding", "inputs": ["x", "ids"], "dtype": "f32", "shape": [3, 2], "attrs": {"id_offset": -9223372036854775808}}'
graph embedding "$X42, $IDS" "$EMB"
expect 2 "vertex 'k' (embedding): attr 'id_offset' -9223372036854775808 is outside" \
    "$T" run "$D/embedding.json" --device-mem 1MiB --inputs "$D/embedding.st" --out "$D/o.st"
graph concat "$X42" "$(kern concat '{"axis": 9223372036854775807}' '[4, 2]')"
expect 2 "vertex 'k' (concat): attr 'axis' 9223372036854775807 is not an axis" \
    "$T" run "$D/concat.json" --device-mem 1MiB --inputs "$D/concat.st" --out "$D/o.st"
graph transpose "$X42" "$(kern transpose '{"perm": [1, 9223372036854775807]}' '[2, 4]')"
expect 2 "vertex 'k' (transpose): transpose 'perm' must be a permutation" \
    "$T" run "$D/transpose.json" --device-mem 1MiB --inputs "$D/transpose.st" --out "$D/o.st"
no_file "$D/o.st"
# the same attributes in range still run
graph ok "$X42" "$(kern slice '{"axis": 0, "start": 2, "length": 2}' '[2, 2]')"
expect 0 "outputs:" "$T" run "$D/ok.json" --device-mem 1MiB --inputs "$D/ok.st" --out "$D/ok_out.st"

# ---- defect 2: every config.json field range-checked, sizes checked against 64-bit overflow ----
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    M=$D/tiny
    /usr/bin/python3 "$SRC/scripts/make_tiny_llama.py" "$M" --layers 1 >/dev/null
    cp "$M/config.json" "$D/config.orig"
    # cfg KEY VALUE [KEY VALUE...]: the valid config.json with fields set (VALUE as JSON; null
    # removes the field)
    cfg() {
        /usr/bin/python3 - "$D/config.orig" "$M/config.json" "$@" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
for k, v in zip(sys.argv[3::2], sys.argv[4::2]):
    v = json.loads(v)
    if v is None: c.pop(k, None)
    else: c[k] = v
json.dump(c, open(sys.argv[2], "w"))
EOF
    }
    L=("$T" llama --model "$M" --prompt-ids 1,2 --device-mem 1MiB --no-data)
    cfg num_attention_heads 4294967298 # was truncated to int: the builder wrote past its arrays
    expect 2 "config.json: config field 'num_attention_heads' 4294967298 is outside \[1, 2147483647\]" "${L[@]}"
    cfg num_attention_heads 2147483647
    expect 2 "config.json: .*num_attention_heads 2147483647" "${L[@]}"
    cfg num_key_value_heads 4294967300
    expect 2 "config.json: config field 'num_key_value_heads' 4294967300 is outside" "${L[@]}"
    cfg num_hidden_layers 9223372036854775807
    expect 2 "config.json: config field 'num_hidden_layers' 9223372036854775807 is outside" "${L[@]}"
    cfg hidden_size -256
    expect 2 "config.json: config field 'hidden_size' -256 is outside" "${L[@]}"
    cfg intermediate_size 1e3
    expect 2 "config.json: config field 'intermediate_size' must be an integer" "${L[@]}"
    cfg vocab_size 4294967296
    expect 2 "config.json: config field 'vocab_size' 4294967296 is outside \[1, 2147483648\]" "${L[@]}"
    cfg vocab_size 2147483648 # 2^31 rows of 256 f32: fits 64 bits, refused by the memory estimate
    expect 2 "vertex 'embed.v0' needs .* of inputs and output on device 0" "${L[@]}"
    # each field in range, their product not: hidden x vocab x 4 bytes overflows 64 bits
    cfg hidden_size 2147483646 num_attention_heads 1073741823 num_key_value_heads 1073741823 vocab_size 2147483648
    expect 2 "config.json: hidden_size x vocab_size .* overflows 64 bits" "${L[@]}"
    cfg head_dim 64
    expect 2 "config.json: config field 'head_dim' 64 differs from hidden_size / num_attention_heads (32)" "${L[@]}"
    cfg head_dim 32
    expect 0 "TaskGraph:" "${L[@]}"
    cfg rms_norm_eps 1e308
    expect 2 "config.json: config field 'rms_norm_eps' 1e+308 is outside (0, 1\]" "${L[@]}"
    cfg rms_norm_eps '"x"'
    expect 2 "config.json: config field 'rms_norm_eps' must be a number" "${L[@]}"
    cfg rope_theta 1e300
    expect 2 "config.json: config field 'rope_theta' 1e+300 is outside (0, 3.4" "${L[@]}"
    cfg rope_theta -1
    expect 2 "config.json: config field 'rope_theta' -1 is outside" "${L[@]}"
    cfg rope_scaling '{"rope_type": "llama3", "factor": 8.0}'
    expect 2 "config.json: config field 'rope_scaling' is not supported" "${L[@]}"
    cfg rope_scaling 'null'
    expect 0 "TaskGraph:" "${L[@]}"
    cfg hidden_act '"gelu"'
    expect 2 "config.json: config field 'hidden_act' must be \"silu\"" "${L[@]}"
    cfg torch_dtype '"float64"'
    expect 2 "config.json: config field 'torch_dtype' must be float32, float16 or bfloat16" "${L[@]}"
    cfg tie_word_embeddings 1
    expect 2 "config.json: config field 'tie_word_embeddings' must be true or false" "${L[@]}"
    cp "$D/config.orig" "$M/config.json"
    expect 0 "TaskGraph:" "${L[@]}"
else
    skip "the config.json cases: no numpy for scripts/make_tiny_llama.py (scripts/install-deps.sh installs it)"
fi

# ---- defect 7: commands that would build more than the machine holds are refused up front ----
P=$D/cfg
mkdir -p "$P"
printf '{"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8, "num_key_value_heads": 4, "num_hidden_layers": 1000000000, "vocab_size": 1000}' >"$P/config.json"
expect 2 "llama: the TaskGraph and its plan need about .* of host memory (.* vertices, .* edges), more than the .* available" \
    "$T" llama --model "$P" --prompt-ids 1,2 --device-mem 1MiB --no-data
expect 2 "llama: vertex 'embed.v0' needs 98.2 MiB of inputs and output on device 0, more than the capacity 1.0 MiB" \
    "$T" llama --preset tiny --seq-len 100000 --device-mem 1MiB --no-data
expect 2 "llama: .*1000000000000000 tokens, at most 2147483647" \
    "$T" llama --preset tiny --seq-len 1000000000000000 --device-mem 1MiB --no-data
expect 2 "llama: .*1000000000000000 tokens, at most 2147483647" \
    "$T" llama --preset tiny --seq-len 1000000000000000 --backend sim
expect 2 "llama: .*1000000000000000 tokens, at most 2147483647" \
    "$T" llama --preset tiny --backend sim --sweep-seq 32,1000000000000000 --csv "$D/sweep.csv"
no_file "$D/sweep.csv"
expect 2 "gen: the TaskGraph needs about .* of host memory (.* vertices, .* edges), more than the .* available" \
    "$T" gen layered --layers 2147483647 -o "$D/g.json"
expect 2 "gen: the TaskGraph needs about .* of host memory" \
    "$T" gen layered --heads 2147483647 --chunks 2147483647 -o "$D/g.json"
expect 2 "layered model: sizes overflow 64 bits" \
    "$T" gen layered --seq 9223372036854775807 -o "$D/g.json"
no_file "$D/g.json"
expect 0 "" "$T" gen layered -o "$D/g.json"

# LLaMA batches and decode steps (issue 12): options out of range are refused with the numbers
expect 2 "batch needs an integer in 1..1048576: 1048577" "$T" gen llama --preset tiny --seq 4 --batch 1048577 -o "$D/b.json"
expect 2 "gen llama: llama: batch 2 of 2147483647 tokens: need 1 <= batch <= 2^20 and batch x tokens <= 2^31-1" \
    "$T" gen llama --preset tiny --seq 2147483647 --batch 2 -o "$D/b.json"
expect 2 "gen: the TaskGraph needs about .* of host memory" \
    "$T" gen llama --preset tiny --seq 1048576 --batch 1024 --blocks 1048576 -o "$D/b.json"
no_file "$D/b.json"
expect 2 "gen decode: llama decode layer: pos 5 is outside \[0, max_len 5)" "$T" gen decode --preset tiny --pos 5 --max-len 5
expect 2 "gen decode: llama decode layer: layer 2 is outside \[0, 2)" "$T" gen decode --preset tiny --layer 2
expect 2 "gen decode: llama decode layer: max_len 2147483648 is outside \[1, 2^31-1\]" \
    "$T" gen decode --preset tiny --pos 0 --max-len 2147483648
expect 2 "gen decode: llama decode layer: batch 1048576 x 64 KV heads x 2147483647 positions: the KV cache or the scores overflow 64 bits" \
    "$T" gen decode --preset 65b --batch 1048576 --max-len 2147483647 -o "$D/d.json"
expect 2 "gen decode: llama decode head: vocab_chunks 1001 is outside \[1, vocabulary 1000\]" \
    "$T" gen decode --preset tiny --head --vocab-chunks 1001 -o "$D/d.json"
expect 2 "gen decode: llama decode layer: device 1 is outside \[0, 1)" "$T" gen decode --preset tiny --device 1 -o "$D/d.json"
expect 2 "name one of --model DIR and --preset NAME" "$T" gen decode --layer 0
no_file "$D/d.json"
expect 0 "" "$T" gen decode --preset llama2-70b --batch 1048576 --pos 2047 --max-len 2048 -o "$D/d.json"

finish
