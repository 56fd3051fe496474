#!/bin/bash
# A chain derived from turnip's own LoRA training step (`turnip train --taskgraph-out`, then
# scripts/chain_from_taskgraph.py; issue 14, part 4), checked against independent references:
# - its compute sum is `turnip sim --no-sum-into`'s kernel busy time for the same graph and profile
#   (the simulator times the kernels itself, sharing no code with the script);
# - each layer's weight bytes, the activations and a0 equal closed forms from the model's config
#   written below (hidden H, intermediate F, heads, KV heads, vocab V, rank r, batch B x T tokens):
#   frozen per layer 4 (2 H^2 + 2 H kvd + 3 H F + 2 H) (kvd = KV heads x head dim), adapters
#   4 r sum(in + out) over the seven projections, moments twice that, the embedding in the first
#   layer, the final norm and lm_head in the last; a = one checkpoint 4 B T H per middle layer, two
#   in the first (the embedding's output and the layer's), in the last what its backward reads
#   (listed below); a0 = input ids, labels and hyper;
#   with --weights adapters every frozen byte moves from w to a0; with --weights frozen w keeps
#   the frozen bytes alone, every layer is marked frozen, and a0 takes the adapters twice (with
#   their gradients) and the moments;
# - every strategy plans it at or above the MILP bound, at the tightest memory, half way and all
#   resident, at the profile's bandwidth and at 0.1 GB/s (where the bound exceeds the compute sum).
# Also: tied embeddings (one weight in two layers), a two-device graph and bad flags are refused.
# usage: offload_chain_lora.sh TURNIP SOURCE_DIR
set -u
T=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/expect.sh"
S="$SRC/scripts/chain_from_taskgraph.py"

mkdir -p "$D/m"
cat >"$D/m/config.json" <<'EOF'
{"hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
 "num_hidden_layers": 4, "vocab_size": 500, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "torch_dtype": "float32"}
EOF
TRAIN=(train --model "$D/m" --seq-len 32 --batch 2 --blocks 2 --vocab-chunks 2 --lora-rank 4 --steps 1 --backend sim --quiet)
expect 0 "wrote $D/g.json" "$T" "${TRAIN[@]}" --taskgraph-out "$D/g.json"
busy=$("$T" sim "$D/g.json" --machine a100x8 --no-sum-into 2>&1 | sed -n 's/^totals:.*kernel busy \([0-9.e+-]*\) s.*/\1/p')
check "sim printed the kernel busy time ($busy)" test -n "$busy"

for wm in all adapters frozen; do
    for f in 0 0.5 1; do
        c="$D/c-$wm-$f.json"
        expect 0 "chain: 4 layers" /usr/bin/python3 "$S" "$D/g.json" --profile a100x8 --weights "$wm" --mem-frac "$f" -o "$c"
        check "$wm $f: compute sum = sim busy, w, a, a0 = the config's closed forms" /usr/bin/python3 - "$c" "$busy" "$wm" "$f" <<'PY'
import json, sys
c, busy, mode, frac = json.load(open(sys.argv[1])), float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
H, F, NH, KV, V, L, r, B, T = 128, 256, 4, 2, 500, 4, 4, 2, 32
kvd = KV * (H // NH)
frozen = 4 * (2 * H * H + 2 * H * kvd + 3 * H * F + 2 * H)
dims = [(H, H), (H, kvd), (H, kvd), (H, H), (H, F), (H, F), (F, H)]  # (in, out): q k v o gate up down
adapters = 4 * r * sum(i + o for i, o in dims)
ckpt, data = 4 * B * T * H, 4 * B * T * 2 + 4 * 3
emb, head = 4 * V * H, 4 * V * H + 4 * H
want_w = [frozen + 3 * adapters] * L
want_w[0] += emb
want_w[-1] += head
want_a0 = data
if mode == "adapters":
    want_a0 += sum(want_w) - 3 * adapters * L
    want_w = [3 * adapters] * L
if mode == "frozen":
    want_a0 += 4 * adapters * L
    want_w = [x - 3 * adapters for x in want_w]
ls = c["layers"]
if [l.get("frozen", False) for l in ls] != [mode == "frozen"] * L:
    errs_frozen = "frozen flags %s" % [l.get("frozen") for l in ls]
else:
    errs_frozen = None
comp = sum(l["uf"] + l["ub"] for l in ls)
errs = [errs_frozen] if errs_frozen else []
# sim prints 6 decimals of seconds; every kernel takes at least the launch, 5 us, so a kernel
# missed or counted twice is ten times this tolerance
if abs(comp - busy) > 5.01e-7:
    errs.append("compute %.9g != busy %.9g" % (comp, busy))
if [l["w"] for l in ls] != want_w:
    errs.append("w %s != %s" % ([l["w"] for l in ls], want_w))
if c["a0"] != want_a0:
    errs.append("a0 %d != %d" % (c["a0"], want_a0))
# the last layer (not recomputed) keeps per sequence what its backward reads: the inputs of the
# projections (attn_norm, heads, mlp_norm, swiglu), the residual sum and the output (the final
# norm's input): 6 T H; gate, up, silu(gate), swiglu: 4 T F; each adapter's x A^T: 7 T r; keys
# and values: 2 T kvd; queries: T H (counted above); probabilities: NH T^2; and the head its
# logits and logsumexp: T V + T. Views and in-place outputs share their input's buffer.
last = B * 4 * (6 * T * H + 4 * T * F + 7 * T * r + 2 * T * kvd + NH * T * T + T * V + T)
if [l["a"] for l in ls] != [2 * ckpt, ckpt, ckpt, last]:
    errs.append("a %s != %s" % ([l["a"] for l in ls], [2 * ckpt, ckpt, ckpt, last]))
# at mem-frac 0 mgpu is the least any schedule needs: the largest M_o of equation 1 (B: the
# weight and its gradient, one weight where frozen), from the chain's own numbers
if frac == 0:
    acc, lo = c["a0"], 0
    for l in ls:
        acc += l["a"]
        lo = max(lo, (1 if l.get("frozen") else 2) * l["w"] + acc)
    if c["mgpu"] != lo:
        errs.append("mgpu %d != least %d" % (c["mgpu"], lo))
if any(l["uf"] <= 0 or l["ub"] <= l["uf"] for l in ls):  # the backward recomputes the forward, and more
    errs.append("times %s" % [(l["uf"], l["ub"]) for l in ls])
if errs:
    print("\n".join(errs))
sys.exit(1 if errs else 0)
PY
        for beta in "" 1e8; do
            [ -n "$beta" ] && [ "$f" = 1 ] && continue
            cb=$c
            if [ -n "$beta" ]; then
                cb="$D/c-$wm-$f-slow.json"
                expect 0 "beta 1e+08" /usr/bin/python3 "$S" "$D/g.json" --profile a100x8 --weights "$wm" --mem-frac "$f" --beta "$beta" -o "$cb"
            fi
            # the bound once per chain (proved optimal), then every strategy at or above it
            "$T" offload-plan "$cb" --algo milp --time-limit 20 >"$D/b.txt" 2>&1
            check "$wm mem-frac $f beta ${beta:-25e9}: the bound proved optimal" grep -q "^bound .*(proved optimal)" "$D/b.txt"
            b=$(sed -n 's/^bound \([0-9.e+-]*\) s.*/\1/p' "$D/b.txt")
            for a in greedy greedy-star l2l; do
                "$T" offload-plan "$cb" --algo "$a" >"$D/o.txt" 2>&1
                m=$(sed -n 's/^makespan \([0-9.e+-]*\) s$/\1/p' "$D/o.txt")
                check "$wm mem-frac $f beta ${beta:-25e9} $a: makespan ($m) >= bound ($b)" \
                    /usr/bin/python3 -c "import sys; sys.exit(0 if float('${m:-0}') >= float('${b:-inf}') * (1 - 1e-6) else 1)"
            done
        done
    done
done
# at 0.1 GB/s and the tightest memory the transfers cannot all hide: the bound is above the compute sum
"$T" offload-plan "$D/c-all-0-slow.json" --algo milp --time-limit 20 >"$D/o.txt" 2>&1
check "the slow link's bound exceeds the compute sum ($(grep bound/compute "$D/o.txt"))" \
    /usr/bin/python3 -c "import sys; sys.exit(0 if float('$(sed -n 's/^bound\/compute \([0-9.]*\)$/\1/p' "$D/o.txt")' or 0) > 1.01 else 1)"

# refusals
sed 's/"torch_dtype"/"tie_word_embeddings": true, "torch_dtype"/' "$D/m/config.json" >"$D/tied.json"
mkdir -p "$D/tied" && mv "$D/tied.json" "$D/tied/config.json"
expect 0 "" "$T" train --model "$D/tied" --seq-len 32 --steps 1 --backend sim --quiet --taskgraph-out "$D/gt.json"
expect 2 "read by layers 0 and 3" /usr/bin/python3 "$S" "$D/gt.json" --profile a100x8
expect 0 "" "$T" train --model "$D/m" --seq-len 32 --batch 2 --devices 2 --steps 1 --backend sim --quiet --taskgraph-out "$D/g2.json"
expect 2 "on one device" /usr/bin/python3 "$S" "$D/g2.json" --profile a100x8
expect 2 "all, adapters or frozen" /usr/bin/python3 "$S" "$D/g.json" --profile a100x8 --weights base
"$T" gen layered --devices 1 --layers 2 --backward -o "$D/lay.json" >/dev/null 2>&1
expect 2 "for a turnip train graph" /usr/bin/python3 "$S" "$D/lay.json" --profile a100x8 --weights adapters
expect 2 "for a turnip train graph" /usr/bin/python3 "$S" "$D/lay.json" --profile a100x8 --weights frozen
# a frozen chain is planned (deletes, no write-backs), and planned inside turnip: its TaskGraph
# (no U_k; F_k reads w_k) with the greedy selection as directed evictions, verified, simulated
expect 0 "frozen 4 of 4 layers" "$T" offload-plan "$D/c-frozen-0.json" --schedule "$D/fz.s.json"
check "the frozen chain's schedule sends nothing to the host, and moves weights" /usr/bin/python3 -c "import json, sys
ops = [o['op'] for o in json.load(open(sys.argv[1]))['ops']]
sys.exit(0 if 'offload' not in ops and 'upload' not in ops and 'prefetch' in ops and 'delete' in ops else 1)" "$D/fz.s.json"
expect 0 "frozen 4 of 4 layers" "$T" offload-plan "$D/c-frozen-0.json" --taskgraph "$D/fz.g.json" --sim-profile "$D/fz.p.json"
check "the frozen chain's TaskGraph has no U_k, and F_k reads w_k" /usr/bin/python3 -c "import json, sys
v = {x['id']: x for x in json.load(open(sys.argv[1]))['vertices']}
sys.exit(0 if not any(k.startswith('U') for k in v) and all('w%d' % k in v['F%d' % k]['inputs'] for k in range(1, 5)) else 1)" "$D/fz.g.json"
mem=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device_mem"])' "$D/fz.p.json")
expect 0 "directed evictions" "$T" plan "$D/fz.g.json" --device-mem "$mem" --weight-offload greedy --stats -o "$D/fz.m.json"
expect 0 "" "$T" verify "$D/fz.m.json" --taskgraph "$D/fz.g.json"
expect 0 "totals: makespan" "$T" sim "$D/fz.g.json" --machine "$D/fz.p.json" --plan-order topo --order fixed --weight-offload greedy
# a layer number of 5,000 digits: one line, not a traceback from int()
/usr/bin/python3 -c 'import json, sys; i = "L" + "9" * 5000 + ".d0.x"
json.dump({"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": i, "kind": "input", "device": 0, "bytes": 4}],
           "outputs": [i]}, open(sys.argv[1], "w"))' "$D/bigl.json"
EXPECT_ONE_LINE=1 expect 2 "is not named L<i>.d0.<name>" /usr/bin/python3 "$S" "$D/bigl.json" --profile a100x8
EXPECT_ONE_LINE=1 expect 2 "taskgraph-out" "$T" train --model "$D/m" --seq-len 32 --steps 1 --backend sim --taskgraph-out "$D/no/such/dir/g.json"
absent "$D/no"
finish offload_chain_lora
