#!/bin/bash
# Hostile files (issue 18): no command reaches gnuplot from user strings (--png, --csv, the
# model path), shard names of a checkpoint index stay inside the model directory, gen inputs
# on an unreadable TaskGraph fails cleanly, a FIFO given to any reader fails at once instead
# of blocking, and safetensors with a tensor named twice or overlapping data are refused.
# Every failure is exit 2 with one line naming the file; every command runs under `timeout`
# so a regression that blocks fails the test instead of hanging it.
# usage: hostile_files.sh TURNIP SOURCE_DIR
set -u
T=$(realpath "$1") # absolute: the test runs in its temporary directory
SRC=$(realpath "$2")
EXPECT_TIMEOUT=10 EXPECT_ONE_LINE=1
. "$(dirname "$0")/expect.sh"

# ---- defect 3: gnuplot injection through --png, --csv and the model path ----------------------
cd "$D" || exit 1
export TMPDIR=$D/tmp # the plot's private directory goes here and must be gone after
mkdir "$TMPDIR"
EVIL="x.png'; system('touch PWNED'); set output 'y.png"
expect 0 "wrote" "$T" llama --preset tiny --devices 2 --backend sim --machine a100x8 --sweep-seq 32,64 --csv "$D/s.csv" --png "$D/$EVIL"
absent "$D/PWNED"
absent "$D/y.png"
mkdir -p "$D/c'; system('touch PWNED2'); '"
expect 0 "wrote" "$T" llama --preset tiny --backend sim --machine a100x8 --sweep-seq 32 --csv "$D/c'; system('touch PWNED2'); '/s.csv" --png "$D/p.png"
absent "$D/PWNED2"
M="$D/m'; system('touch PWNED3'); \`touch PWNED4\` @x '"
mkdir -p "$M"
printf '{"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1, "vocab_size": 100}' >"$M/config.json"
expect 0 "wrote" "$T" llama --model "$M" --backend sim --machine a100x8 --sweep-seq 32 --csv "$D/m.csv" --png "$D/m.png"
absent "$D/PWNED3"
absent "$D/PWNED4"
N="$D/new
line" # a label gp_quote cannot write: left out of the title, the plot still made
mkdir -p "$N"
cp "$M/config.json" "$N/"
expect 0 "wrote" "$T" llama --model "$N" --backend sim --machine a100x8 --sweep-seq 32 --csv "$D/n.csv" --png "$D/n.png"
if command -v gnuplot >/dev/null; then
    for f in "$D/$EVIL" "$D/p.png" "$D/m.png" "$D/n.png"; do
        if [ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = "211PNG" ]; then pass=$((pass + 1)); else echo "FAIL: no PNG at $f"; fail=$((fail + 1)); fi
    done
else
    skip "the PNG checks: no gnuplot (scripts/install-deps.sh installs gnuplot-nox)"
fi
if [ -z "$(ls -A "$TMPDIR")" ]; then pass=$((pass + 1)); else echo "FAIL: left in TMPDIR: $(ls "$TMPDIR")"; fail=$((fail + 1)); fi

# ---- defect 4: shard names outside the model directory ----------------------------------------
# a tiny LLaMA checkpoint (zeros and ones) written without numpy
mkck() { # DIR: config.json and model.safetensors
    mkdir -p "$1"
    /usr/bin/python3 - "$1" <<'EOF'
import json, os, struct, sys
d = sys.argv[1]
cfg = {"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2,
       "num_hidden_layers": 1, "vocab_size": 32, "rms_norm_eps": 1e-5, "torch_dtype": "float32"}
json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
H, F, V = 16, 32, 32
t = [("model.embed_tokens.weight", (V, H)), ("model.norm.weight", (H,)), ("lm_head.weight", (V, H))]
p = "model.layers.0."
t += [(p + "input_layernorm.weight", (H,)), (p + "post_attention_layernorm.weight", (H,))]
t += [(p + "self_attn." + n + "_proj.weight", (H, H)) for n in "qkvo"]
t += [(p + "mlp.gate_proj.weight", (F, H)), (p + "mlp.up_proj.weight", (F, H)), (p + "mlp.down_proj.weight", (H, F))]
h, off, blob = {}, 0, b""
for name, shape in t:
    n = 1
    for s in shape: n *= s
    raw = struct.pack("<%df" % n, *([1.0 if len(shape) == 1 else 0.01] * n))
    h[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + len(raw)]}
    off += len(raw)
    blob += raw
hb = json.dumps(h).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
open(os.path.join(d, "model.safetensors"), "wb").write(struct.pack("<Q", len(hb)) + hb + blob)
json.dump({"metadata": {}, "weight_map": {name: "model.safetensors" for name, _ in t}}, open(os.path.join(d, "index.json.in"), "w"))
EOF
}
# index DIR SHARD: model.safetensors.index.json naming SHARD for every tensor, no model.safetensors
index() {
    sed "s#\"model.safetensors\"#\"$2\"#g" "$1/index.json.in" >"$1/model.safetensors.index.json"
    rm -f "$1/model.safetensors"
}
L="llama --seq-len 8 --device-mem 4MiB --backend cpu --model"
mkck "$D/ok"
expect 0 "" $T $L "$D/ok"
mkck "$D/other"
mkck "$D/up"
index "$D/up" "../other/model.safetensors"
expect 2 "up: .*'\.\.' component" $T $L "$D/up"
mkck "$D/abs"
index "$D/abs" "/etc/passwd"
expect 2 "abs: .*absolute path" $T $L "$D/abs"
expect 2 "" $T $L "$D/abs"
if grep -q "root" <<<"$(timeout 10 $T $L "$D/abs" 2>&1)"; then echo "FAIL: /etc/passwd quoted"; fail=$((fail + 1)); fi
mkck "$D/link"
index "$D/link" "shard.safetensors"
ln -s "$D/other/model.safetensors" "$D/link/shard.safetensors"
expect 2 "link/shard.safetensors: a link to a file outside the checkpoint directory" $T $L "$D/link"
mkck "$D/link1" # model.safetensors itself a link out of the directory
rm "$D/link1/model.safetensors"
ln -s "$D/other/model.safetensors" "$D/link1/model.safetensors"
expect 2 "link1/model.safetensors: a link to a file outside" $T $L "$D/link1"
mkck "$D/linkidx" # the index a link out of the directory
cp "$D/other/index.json.in" "$D/other/model.safetensors.index.json"
ln -s "$D/other/model.safetensors.index.json" "$D/linkidx/model.safetensors.index.json"
expect 2 "a link to a file outside" $T $L "$D/linkidx"
mkck "$D/inlink" # a link inside the directory is followed
mkdir "$D/inlink/sub"
mv "$D/inlink/model.safetensors" "$D/inlink/sub/real.safetensors"
index "$D/inlink" "shard.safetensors"
ln -s sub/real.safetensors "$D/inlink/shard.safetensors"
expect 0 "" $T $L "$D/inlink"
# the Hugging Face hub cache: snapshots/REV/* are links to ../../blobs/*
mkck "$D/hub/models--t/snapshots/rev"
mkdir -p "$D/hub/models--t/blobs"
mv "$D/hub/models--t/snapshots/rev/model.safetensors" "$D/hub/models--t/blobs/0123abcd"
ln -s ../../blobs/0123abcd "$D/hub/models--t/snapshots/rev/model.safetensors"
expect 0 "" $T $L "$D/hub/models--t/snapshots/rev"

# ---- defect 5: gen inputs on a TaskGraph it cannot read ----------------------------------------
expect 2 "missing.json: cannot open" "$T" gen inputs "$D/missing.json" -o "$D/g.st"
printf '{' >"$D/trunc.json"
expect 2 "trunc.json" "$T" gen inputs "$D/trunc.json" -o "$D/g.st"
absent "$D/g.st"

# ---- defect 6: FIFOs (and other non-regular files) fail at once ------------------------------
mkfifo "$D/fifo"
EX=$SRC/examples/figure3.json
"$T" plan "$EX" --device-mem 4KiB,4KiB,4KiB -o "$D/mg.json" >/dev/null 2>&1
expect 2 "fifo: not a regular file (a FIFO)" "$T" plan "$D/fifo" --device-mem 1MiB
expect 2 "not a regular file (a directory)" "$T" plan "$D" --device-mem 1MiB
expect 2 "fifo: not a regular file" "$T" verify "$D/fifo" --taskgraph "$EX"
expect 2 "fifo: not a regular file" "$T" verify "$D/mg.json" --taskgraph "$D/fifo"
expect 2 "fifo: not a regular file" "$T" gen inputs "$D/fifo" -o "$D/g.st"
expect 2 "fifo: not a regular file" "$T" sim "$EX" --machine "$D/fifo" --device-mem 4KiB
MLP=$SRC/examples/mlp.json
expect 2 "fifo: cannot read: not a regular file" "$T" run "$MLP" --device-mem 512KiB --inputs "$D/fifo" --out "$D/o.st"
absent "$D/o.st"
mkdir "$D/fcfg"
mkfifo "$D/fcfg/config.json"
expect 2 "config.json: not a regular file" $T $L "$D/fcfg"
mkck "$D/fw"
rm "$D/fw/model.safetensors"
mkfifo "$D/fw/model.safetensors"
expect 2 "model.safetensors: not a regular file" $T $L "$D/fw"
mkck "$D/fidx"
mkfifo "$D/fidx/model.safetensors.index.json"
expect 2 "model.safetensors.index.json: not a regular file" $T $L "$D/fidx"

# ---- defect 10: safetensors with a tensor named twice or overlapping data -------------------
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "a", "kind": "input", "device": 0, "dtype": "f32", "shape": [2, 3]}, {"id": "b", "kind": "input", "device": 0, "dtype": "f32", "shape": [2, 3]}, {"id": "c", "kind": "kernel", "device": 0, "op": "add", "inputs": ["a", "b"], "dtype": "f32", "shape": [2, 3]}], "outputs": ["c"]}' >"$D/ab.json"
# st FILE HEADER_JSON DATA_BYTES: a safetensors file with that header text, as written
st() {
    /usr/bin/python3 -c 'import struct, sys
h = sys.argv[2].encode(); h += b" " * ((8 - len(h) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(int(sys.argv[3])))' "$@"
}
st "$D/good.st" '{"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "b": {"dtype": "F32", "shape": [2, 3], "data_offsets": [24, 48]}}' 48
expect 0 "outputs:" "$T" run "$D/ab.json" --device-mem 1KiB --inputs "$D/good.st" --out "$D/o.st"
st "$D/dup.st" '{"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "b": {"dtype": "F32", "shape": [2, 3], "data_offsets": [24, 48]}, "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [24, 48]}}' 48
expect 2 "dup.st: the header names \"a\" twice" "$T" run "$D/ab.json" --device-mem 1KiB --inputs "$D/dup.st" --out "$D/o2.st"
st "$D/same.st" '{"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "b": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}' 48
expect 2 "same.st: tensors 'a' and 'b' overlap" "$T" run "$D/ab.json" --device-mem 1KiB --inputs "$D/same.st" --out "$D/o2.st"
st "$D/part.st" '{"b": {"dtype": "F32", "shape": [2, 3], "data_offsets": [20, 44]}, "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}' 48
expect 2 "part.st: tensors 'a' and 'b' overlap (data_offsets \[0, 24\] and \[20, 44\])" "$T" run "$D/ab.json" --device-mem 1KiB --inputs "$D/part.st" --out "$D/o2.st"
st "$D/in.st" '{"x": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 48]}, "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [8, 32]}, "b": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]}}' 48
expect 2 "in.st: tensors 'x' and 'a' overlap" "$T" run "$D/ab.json" --device-mem 1KiB --inputs "$D/in.st" --out "$D/o2.st"
absent "$D/o2.st"
# an empty tensor occupies no bytes: it may sit anywhere
st "$D/empty.st" '{"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "b": {"dtype": "F32", "shape": [2, 3], "data_offsets": [24, 48]}, "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}}' 48
expect 0 "outputs:" "$T" run "$D/ab.json" --device-mem 1KiB --inputs "$D/empty.st" --out "$D/o3.st"

finish hostile_files
