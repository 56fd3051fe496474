#!/bin/bash
# Command-line behaviour: exit codes (0 ok, 1 failed check, 2 unusable input or infeasible),
# one-line errors that name the file, vertex and problem, --help everywhere, and no crash
# (exit >= 128) on damaged input.
# usage: cli_errors.sh TURNIP SOURCE_DIR
set -u
T=$1
SRC=$2
EXPECT_TIMEOUT=600 # as before: no limit that matters
. "$(dirname "$0")/expect.sh"

EX=$SRC/examples/figure3.json
expect 0 "usage: turnip plan" "$T" plan --help
expect 0 "usage: turnip verify" "$T" verify --help
expect 0 "usage: turnip dot" "$T" dot --help
expect 0 "commands:" "$T" --help
expect 0 "turnip 0" "$T" --version
expect 2 "unknown command" "$T" frobnicate
expect 2 "--device-mem is required" "$T" plan "$EX"
expect 2 "no TaskGraph given" "$T" plan --device-mem 1MiB
expect 2 "not a size" "$T" plan "$EX" --device-mem 12XB
expect 2 "lists 2 sizes" "$T" plan "$EX" --device-mem 1MiB,1MiB
expect 2 "unknown option" "$T" plan "$EX" --device-mem 1MiB --frob
expect 2 "order must be" "$T" plan "$EX" --device-mem 1MiB --order sideways
expect 2 "cannot open" "$T" plan "$D/missing.json" --device-mem 1MiB
expect 2 "vertex '3': needs 4.0 KiB of inputs and output on device 0, capacity is 3.0 KiB" \
    "$T" plan "$EX" --device-mem 3KiB
expect 2 "host memory too small" "$T" plan "$EX" --device-mem 4KiB --host-mem 1KiB
expect 0 "" "$T" plan "$EX" --device-mem 4KiB,4KiB,4KiB -o "$D/mg.json" --stats
expect 0 "valid" "$T" verify "$D/mg.json" --taskgraph "$EX"
expect 2 "--evict-budget and --exact-windows: give one" "$T" plan "$EX" --device-mem 4KiB --evict-budget 8 --exact-windows
# On a small graph whose windows are scanned (the default finishes each search by the scan
# within its credit, as --exact-windows does), the keyed search finishing every search by itself
# (a budget larger than the blocks: a separate code path) gives the same plan; a small budget,
# which evicts the furthest next use instead, does not (so the comparison can tell them apart).
expect 0 "" "$T" gen layered --heads 16 --chunks 8 --seq 4096 --backward --layers 8 -o "$D/tr8.json"
expect 0 "eviction windows: [1-9][0-9]* searched by the full scan, 0 furthest" \
    "$T" plan "$D/tr8.json" --device-mem 1GiB --order topo --stats -o "$D/tr8-default.json"
expect 0 "" "$T" plan "$D/tr8.json" --device-mem 1GiB --order topo --exact-windows -o "$D/tr8-exact.json"
expect 0 "" cmp "$D/tr8-default.json" "$D/tr8-exact.json"
expect 0 "" "$T" plan "$D/tr8.json" --device-mem 1GiB --order topo --evict-budget 1000000 -o "$D/tr8-keyed.json"
expect 0 "" cmp "$D/tr8-default.json" "$D/tr8-keyed.json"
expect 0 "" "$T" plan "$D/tr8.json" --device-mem 1GiB --order topo --evict-budget 4 -o "$D/tr8-b4.json"
expect 1 "differ" cmp "$D/tr8-default.json" "$D/tr8-b4.json"
expect 0 "digraph" "$T" dot "$D/mg.json"
expect 2 "taskgraph is required" "$T" verify "$D/mg.json"

# malformed TaskGraphs: file, place and problem in one line
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [\n{"id": "x",' >"$D/trunc.json"
expect 2 "trunc.json:2:.*not valid JSON" "$T" plan "$D/trunc.json" --device-mem 1MiB
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "x", "kind": "input", "device": 0, "bytes": 4}, {"id": "y", "kind": "kernel", "device": 0, "inputs": ["q"], "bytes": 4}]}' >"$D/unk.json"
expect 2 "unk.json: vertices\[1\] (id 'y'): input 'q' is not a vertex id" "$T" plan "$D/unk.json" --device-mem 1MiB
# a MemGraph for another TaskGraph fails the check (exit 1)
printf '{"format": "turnip.taskgraph/1", "devices": 3, "vertices": [{"id": "A", "kind": "input", "device": 0, "bytes": 1024}]}' >"$D/other.json"
expect 1 "INVALID" "$T" verify "$D/mg.json" --taskgraph "$D/other.json"

# turnip run: inputs must match the TaskGraph (exit 2 naming the file and tensor)
MLP=$SRC/examples/mlp.json
"$T" gen inputs "$MLP" -o "$D/in.st" --seed 3 >/dev/null 2>&1
expect 0 "outputs:" "$T" run "$MLP" --device-mem 512KiB --inputs "$D/in.st" --out "$D/out.st"
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "a", "kind": "input", "device": 0, "dtype": "f32", "shape": [2, 3]}, {"id": "b", "kind": "kernel", "device": 0, "op": "relu", "inputs": ["a"], "dtype": "f32", "shape": [2, 3]}], "outputs": ["b"]}' >"$D/small.json"
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "a", "kind": "input", "device": 0, "dtype": "f16", "shape": [2, 3]}]}' >"$D/f16.json"
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "a", "kind": "input", "device": 0, "dtype": "f32", "shape": [3, 2]}]}' >"$D/shape.json"
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "z", "kind": "input", "device": 0, "dtype": "f32", "shape": [2, 3]}]}' >"$D/other_in.json"
"$T" gen inputs "$D/f16.json" -o "$D/f16.st" >/dev/null 2>&1
"$T" gen inputs "$D/shape.json" -o "$D/shape.st" >/dev/null 2>&1
"$T" gen inputs "$D/other_in.json" -o "$D/z.st" >/dev/null 2>&1
expect 2 "z.st: no tensor 'a'" "$T" run "$D/small.json" --device-mem 1KiB --inputs "$D/z.st" --out "$D/o.st"
expect 2 "f16.st: tensor 'a' is f16, the TaskGraph says f32" "$T" run "$D/small.json" --device-mem 1KiB --inputs "$D/f16.st" --out "$D/o.st"
expect 2 "shape.st: tensor 'a' has shape \[3, 2\], the TaskGraph says \[2, 3\]" "$T" run "$D/small.json" --device-mem 1KiB --inputs "$D/shape.st" --out "$D/o.st"
expect 2 "not a safetensors file" "$T" run "$D/small.json" --device-mem 1KiB --inputs "$D/small.json" --out "$D/o.st"
head -c 100 "$D/in.st" >"$D/trunc.st"
expect 2 "trunc.st" "$T" run "$MLP" --device-mem 512KiB --inputs "$D/trunc.st" --out "$D/o.st"
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "a", "kind": "input", "device": 0, "dtype": "f32", "shape": [2, 3]}, {"id": "b", "kind": "kernel", "device": 0, "op": "matmul", "inputs": ["a", "a"], "dtype": "f32", "shape": [2, 3]}], "outputs": ["b"]}' >"$D/badop.json"
expect 2 "vertex 'b' (matmul): matmul inner dimensions differ" "$T" run "$D/badop.json" --device-mem 1KiB --inputs "$D/in.st" --out "$D/o.st"
expect 2 "vertex 60 (.*) failed: injected fault" "$T" run "$MLP" --device-mem 512KiB --inputs "$D/in.st" --out "$D/o.st" --fail-vertex 60
expect 2 "not a vertex that runs" "$T" run "$MLP" --device-mem 512KiB --inputs "$D/in.st" --out "$D/o.st" --fail-vertex 0
expect 0 "usage: turnip run" "$T" run --help

# simulation
expect 0 "makespan / bound" "$T" sim "$SRC/examples/transformer.json" --machine a100x8 --device-mem 2MiB
expect 0 "makespan / bound" "$T" llama --preset tiny --seq-len 64 --devices 2 --backend sim --machine p100x4
expect 2 "machine profile" "$T" sim "$SRC/examples/transformer.json" --machine nosuchmachine
expect 2 "machine 'h100' has 1 device, the graph uses" "$T" sim "$SRC/examples/transformer.json" --machine h100
check "sim: a graph the machine cannot hold is refused before planning" sh -c "! grep -q 'planned in' '$D/.out'"
expect 0 "wrote" "$T" llama --preset tiny --devices 2 --backend sim --machine a100x8 --sweep-seq 32,64 --csv "$D/s.csv"
expect 0 "tiny,a100x8,2,64" cat "$D/s.csv"
expect 0 "OOM" "$T" llama --preset tiny --devices 1 --backend sim --machine a100x8 --sweep-seq 64 --sweep-mem 64KiB --csv "$D/s2.csv"

# one option parser: the same messages for every command
expect 2 "order must be any, fixed, random or priority: sideways" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --order sideways
expect 2 "order must be any, fixed, random or priority: sideways" "$T" sim "$SRC/examples/transformer.json" --machine a100x8 --order sideways
expect 2 "order must be any, fixed, random or priority: sideways" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --order sideways
expect 2 "plan-order must be topo, dfs or greedy: x" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --plan-order x
expect 2 "streams needs an integer in 1..64: 0" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --streams 0
expect 2 "seed needs an integer >= 0: -1" "$T" sim "$SRC/examples/transformer.json" --machine a100x8 --seed -1
expect 2 "jitter needs a number in 0..4: -1" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --jitter -1
expect 2 "host-mem: not a positive size: 0" "$T" plan "$EX" --device-mem 1MiB --host-mem 0
expect 2 "device-mem needs a value" "$T" plan "$EX" --device-mem
expect 2 "no-verify: the flag takes no value\|takes no value" "$T" run "$MLP" --no-verify=1
expect 2 "more than one TaskGraph given" "$T" plan "$EX" "$EX" --device-mem 1MiB
expect 2 "unknown option: --frob" "$T" llama --preset tiny --frob
expect 2 "devices needs an integer in 1..64: 0" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --devices 0
expect 2 "devices needs an integer in 1..64: 0" "$T" gen layered --devices 0
expect 2 "name a model: layered" "$T" gen --layers 1
expect 2 "unknown argument: stacked" "$T" gen stacked
expect 2 "item 2, '1000', is not a token id in \[0, 1000)" "$T" llama --preset tiny --prompt-ids 1,1000 --device-mem 1MiB
expect 2 "item 2, 'x', is not a token count" "$T" llama --preset tiny --backend sim --sweep-seq 32,x --csv "$D/x.csv"
expect 2 "--csv needs --sweep-seq" "$T" llama --preset tiny --seq-len 8 --device-mem 1GiB --csv "$D/x.csv"
expect 2 "--png needs --sweep-seq" "$T" llama --preset tiny --seq-len 8 --device-mem 1GiB --png "$D/x.png"
expect 2 "--sweep-mem needs --sweep-seq" "$T" llama --preset tiny --seq-len 8 --device-mem 1GiB --sweep-mem 1GiB
expect 2 "sweep-seq needs --backend sim" "$T" llama --preset tiny --sweep-seq 32 --csv "$D/x.csv"
expect 2 "cannot write" "$T" plan "$EX" --device-mem 4KiB,4KiB,4KiB -o "$D/no/such/dir.json"
# write errors are I/O errors: exit 2, as the library's status says
if [ -w /dev/full ]; then
    expect 2 "writing /dev/full failed" "$T" plan "$EX" --device-mem 4KiB,4KiB,4KiB -o /dev/full
    expect 2 "writing /dev/full failed" "$T" gen layered -o /dev/full
else
    skip "the write-error cases: no writable /dev/full"
fi
# the random prompt is the library's: a function of the seed, shown by --print-prompt
p1=$("$T" llama --preset tiny --seq-len 16 --seed 5 --device-mem 1MiB --no-data --print-prompt | grep '^prompt ids: ')
p2=$("$T" llama --preset tiny --seq-len 16 --seed 5 --device-mem 1MiB --no-data --print-prompt | grep '^prompt ids: ')
p3=$("$T" llama --preset tiny --seq-len 16 --seed 6 --device-mem 1MiB --no-data --print-prompt | grep '^prompt ids: ')
if [ -n "$p1" ] && [ "$p1" = "$p2" ] && [ "$p1" != "$p3" ] && [ "$(tr ',' '\n' <<<"${p1#prompt ids: }" | wc -l)" -eq 16 ]; then
    pass=$((pass + 1))
else
    echo "FAIL: --print-prompt: '$p1' '$p2' '$p3'"
    fail=$((fail + 1))
fi
expect 0 "next token, top 5" "$T" llama --preset tiny --seq-len 8 --seed 2 --device-mem 1MiB --devices 2
expect 0 "prompt ids: 3,1,4" "$T" llama --preset tiny --prompt-ids 3,1,4 --device-mem 1MiB --no-data --print-prompt

# damaged files never crash: every prefix of a TaskGraph, and byte flips of a MemGraph
size=$(wc -c <"$EX")
crash=0
for cut in $(seq 0 37 "$size"); do
    head -c "$cut" "$EX" >"$D/cut.json"
    "$T" plan "$D/cut.json" --device-mem 4KiB >/dev/null 2>&1
    rc=$?
    [ $rc -ge 128 ] && crash=$((crash + 1)) && echo "crash on prefix $cut"
done
msize=$(wc -c <"$D/mg.json")
flipped=0 # flips that changed exactly one byte (one may write the byte already there)
for i in $(seq 1 60); do
    cp "$D/mg.json" "$D/flip.json"
    pos=$(((i * 7919) % msize))
    printf '%b' "\\x$(printf %02x $(((i * 31) % 94 + 33)))" | dd of="$D/flip.json" bs=1 seek="$pos" conv=notrunc status=none
    [ "$(cmp -l "$D/mg.json" "$D/flip.json" | wc -l)" = 1 ] && flipped=$((flipped + 1))
    "$T" verify "$D/flip.json" --taskgraph "$EX" >/dev/null 2>&1
    rc=$?
    [ $rc -ge 128 ] && crash=$((crash + 1)) && echo "crash on flip at $pos"
done
[ $flipped -ge 50 ] || { echo "only $flipped of 60 flips changed one byte"; crash=$((crash + 1)); }
if [ $crash -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi

# backends: --version lists them; a missing cuda backend or GPU is a clear exit 2 before any work
MLP=$SRC/examples/mlp.json
expect 2 "is not built in" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --backend tpu
expect 2 "--jitter is for --backend cpu or sim" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --backend cuda --jitter 1
expect 2 "--completion is for --backend cuda" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --completion poll
expect 2 "--matmul is for --backend cuda" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --matmul exact
expect 2 "--matmul is for --backend cuda" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --matmul fast
expect 2 "matmul must be fast or exact" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --backend cuda --matmul tf32
# turnip generate (issue 12): refusals before any work, and a run that works
expect 0 "usage: turnip generate" "$T" generate --help
expect 2 "give one of --model DIR and --preset NAME" "$T" generate --seq-len 4 --max-new-tokens 2 --device-mem 1MiB
expect 2 "give one of --prompt-ids and --seq-len" "$T" generate --preset tiny --max-new-tokens 2 --device-mem 1MiB
expect 2 "--max-new-tokens is required" "$T" generate --preset tiny --seq-len 4 --device-mem 1MiB
expect 2 "--device-mem is required" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2
expect 2 "a size or a percentage" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 0%
expect 2 "--device-mem: a size" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 12XB
expect 2 "below the .* a decode step needs" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 1KiB
expect 2 "the prompts differ in length" "$T" generate --preset tiny --prompt-ids "1,2;3" --max-new-tokens 2 --device-mem 50%
expect 2 "item 2, 'x', is not a token id" "$T" generate --preset tiny --prompt-ids "1,x" --max-new-tokens 2 --device-mem 50%
expect 2 "item 2, '99999999', is not a token id" "$T" generate --preset tiny --prompt-ids "1,99999999" --max-new-tokens 2 --device-mem 50%
expect 2 "--batch 2, but 3 prompts" "$T" generate --preset tiny --prompt-ids "1;2;3" --batch 2 --max-new-tokens 2 --device-mem 50%
expect 2 "--policy: one of" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --policy mru
expect 2 "layers and a head" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --devices 64
expect 2 "--out needs data" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --backend sim --out "$D/g.st"
expect 2 "of host memory" "$T" generate --preset tiny --seq-len 4 --batch 1000000 --max-new-tokens 1000000 --device-mem 50% --out "$D/g.st"
expect 2 "of host memory" "$T" generate --preset 65b --seq-len 4 --max-new-tokens 2 --device-mem 50%
expect 2 "cannot write into" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --out "$D/nodir/g.st"
expect 2 "--trace .*cannot write into" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --trace "$D/nodir/t.json"
expect 2 "--plan-out .*cannot write into" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --plan-out "$D/nodir/p.json"
expect 2 "--prefetch" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --prefetch 3
expect 2 "--plans must be" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --plans step
expect 2 "it needs --plans layer" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --lookahead 1
expect 2 "it needs --plans layer" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --prefetch 2
expect 0 "steady state" "$T" generate --preset tiny --seq-len 8 --max-new-tokens 3 --backend sim --machine h100 --device-mem 40%
expect 0 "tokens\[1\]:" "$T" generate --preset tiny --seq-len 4 --batch 2 --max-new-tokens 3 --device-mem 30% --policy lru --out "$D/g.st"
# turnip train (issue 13): bad flags, data, caps and host memory refused before the work (exit 2)
TR="train --preset tiny --seq-len 8 --steps 1"
expect 0 "usage: turnip train" "$T" train --help
expect 2 "give one of --model DIR and --preset NAME" "$T" train --seq-len 8 --steps 1 --device-mem 1MiB
expect 2 "--seq-len is required" "$T" train --preset tiny --steps 1 --device-mem 1MiB
expect 2 "--steps is required" "$T" train --preset tiny --seq-len 8 --device-mem 1MiB
expect 2 "seq-len needs an integer in 2" "$T" train --preset tiny --seq-len 1 --steps 1 --device-mem 1MiB
expect 2 "--device-mem is required" "$T" $TR
expect 2 "a size or a percentage" "$T" $TR --device-mem 0%
expect 2 "--device-mem: a size" "$T" $TR --device-mem 12XB
expect 2 "--devices: at most --batch" "$T" $TR --device-mem 50% --devices 2
expect 2 "LoRA target 'qq' is none of" "$T" $TR --device-mem 50% --lora-targets q,qq
expect 2 "lora-rank needs an integer" "$T" $TR --device-mem 50% --lora-rank 0
expect 2 "lora-init must be" "$T" $TR --device-mem 50% --lora-init zero
expect 2 "below the smallest feasible cap, .* (the largest kernel" "$T" $TR --device-mem 64KiB
expect 2 "--machine is for --backend sim" "$T" $TR --device-mem 50% --machine a100x8
expect 2 "need data: not with --backend sim" "$T" $TR --backend sim --out "$D/tr"
expect 2 "cannot write into" "$T" $TR --device-mem 50% --dump-grads "$D/nodir/g.st"
expect 2 "of host memory" "$T" train --preset 65b --seq-len 8 --steps 1 --device-mem 4TiB
expect 2 "not a regular file" "$T" $TR --device-mem 50% --data "$D"
printf '1 2 3\n4, 1000 5\n' >"$D/ids_range.txt"
expect 2 "ids_range.txt:2: token 4 is outside the vocabulary \[0, 1000)" "$T" $TR --device-mem 50% --data "$D/ids_range.txt"
printf '1 2 x3\n' >"$D/ids_bad.txt"
expect 2 "ids_bad.txt:1: token 2 is not a decimal id" "$T" $TR --device-mem 50% --data "$D/ids_bad.txt"
printf '1 -2\n' >"$D/ids_neg.txt"
expect 2 "token 1 is not a decimal id" "$T" $TR --device-mem 50% --data "$D/ids_neg.txt"
printf '1 99999999999999999999\n' >"$D/ids_big.txt"
expect 2 "token 1 is outside the vocabulary" "$T" $TR --device-mem 50% --data "$D/ids_big.txt"
printf '1 2 3 4 5 6 7\n' >"$D/ids_short.txt"
expect 2 "7 ids, a batch of 1 x 8 needs 8" "$T" $TR --device-mem 50% --data "$D/ids_short.txt"
printf ' \n' >"$D/ids_empty.txt"
expect 2 "no token ids" "$T" $TR --device-mem 50% --data "$D/ids_empty.txt"
# a small preset trains a step on the simulator, with no data; and on the cpu with --out
expect 0 "simulated step time" "$T" train --preset tiny --seq-len 64 --batch 2 --devices 2 --backend sim --machine p100x4 --steps 1
expect 0 "wrote .*adapter_config.json" "$T" $TR --batch 2 --devices 2 --device-mem 50% --steps 2 --out "$D/tr"
check "train --out wrote PEFT's two files" test -s "$D/tr/adapter_model.safetensors" -a -s "$D/tr/adapter_config.json"

backends=$("$T" --version | grep '^backends:')
case "$backends" in
*"cuda (no usable GPU"*)
    expect 2 "cuda backend: no usable GPU" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --backend cuda
    expect 2 "cuda backend: no usable GPU" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --backend cuda ;;
*"cuda ("*)
    expect 2 "completion must be callback or poll" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --backend cuda --completion x ;;
*)
    expect 2 "cuda backend: not built in" "$T" run "$MLP" --device-mem 1MiB --inputs x --out y --backend cuda ;;
esac

# outputs that cannot be written, or have nothing to hold, are refused before any work (exit 2,
# no file); --seq-len 0 names its range
expect 2 "--out needs data: not with --backend sim" "$T" llama --preset tiny --seq-len 8 --backend sim --out "$D/l.st"
expect 2 "--out needs data: not with --no-data" "$T" llama --preset tiny --seq-len 8 --device-mem 1MiB --no-data --out "$D/l.st"
absent "$D/l.st"
expect 2 "--out $D/no/l.st: cannot write into $D/no" "$T" llama --preset tiny --seq-len 8 --device-mem 1MiB --out "$D/no/l.st"
expect 2 "--seq-len needs an integer >= 1: 0" "$T" llama --preset tiny --seq-len 0 --prompt-ids 1,2 --device-mem 1MiB
expect 2 "--out $D/no/o.st: cannot write into $D/no" "$T" run "$SRC/examples/mlp.json" --device-mem 1MiB --zero-inputs --out "$D/no/o.st"
expect 2 "--trace $D/no/t.json: cannot write into $D/no" "$T" run "$SRC/examples/mlp.json" --device-mem 1MiB --zero-inputs --trace "$D/no/t.json"
expect 2 "--png $D/no/p.png: cannot write into $D/no" "$T" llama --preset tiny --backend sim --sweep-seq 8 --csv "$D/sweep_unwritten.csv" --png "$D/no/p.png"
absent "$D/sweep_unwritten.csv"

# a need and a capacity that round alike are given in bytes too
expect 2 "needs 512.0 KiB (524288 B) of inputs and output on device 0, capacity is 512.0 KiB (524287 B)" "$T" plan "$SRC/examples/mlp.json" --device-mem 524287
# a failed train removes the --out directory it made (not one that was there)
expect 2 "below the smallest feasible cap" "$T" train --preset tiny --seq-len 8 --steps 1 --device-mem 1KiB --out "$D/lora_new"
absent "$D/lora_new"
mkdir "$D/lora_old"
expect 2 "below the smallest feasible cap" "$T" train --preset tiny --seq-len 8 --steps 1 --device-mem 1KiB --out "$D/lora_old"
check "a failed train keeps an --out directory that was there" test -d "$D/lora_old"
# verify and dot read JSON: a binary plan is named as one, with the command that converts it
"$T" plan "$SRC/examples/mlp.json" --device-mem 1MiB --format binary -o "$D/mg.bin" >/dev/null
expect 2 "mg.bin is a binary plan; .turnip convert" "$T" verify "$D/mg.bin" --taskgraph "$SRC/examples/mlp.json"
expect 2 "mg.bin is a binary plan; .turnip convert" "$T" dot "$D/mg.bin" -o "$D/bin.gv"
absent "$D/bin.gv"
# an output named "-" is standard output, not a file named "-"
(cd "$D" && "$T" plan "$SRC/examples/mlp.json" --device-mem 1MiB -o - >"$D/stdout.json")
check "plan -o - writes standard output" grep -q '"format": "turnip.memgraph/1"' "$D/stdout.json"
absent "$D/-"
# the prefill's embedding in vocabulary chunks sums in place: 2 MiB holds two [T, hidden]
# tensors at T 1024 (it needed three, 3 MiB, with the 2 chunks chosen by default)
expect 0 "next token" "$T" llama --preset tiny --seq-len 1024 --devices 2 --device-mem 2MiB
# generate refuses a cap its prefill cannot plan under before it starts (the prefill failed
# mid-run): batch 8 x 128 tokens of the tiny preset need 2 MiB on device 0 (the embedding's sum)
expect 2 "generate: the prefill needs 2.0 MiB of device memory on device 0" "$T" generate --preset tiny --seq-len 128 --batch 8 --max-new-tokens 2 --device-mem 1900KiB --devices 2
expect 0 "decode" "$T" generate --preset tiny --seq-len 128 --batch 8 --max-new-tokens 2 --device-mem 2MiB --devices 2
# ... except where standard output carries the command's report
expect 2 "--csv -: standard output carries this command's report" "$T" llama --preset tiny --backend sim --sweep-seq 8 --csv -
expect 2 "--taskgraph-out -: standard output carries" "$T" train --preset tiny --seq-len 8 --steps 1 --device-mem 50% --taskgraph-out -
# a new user's audit (twenty-second session): each refused before the work, or said as it is
# - an empty output name (it ran the whole job, then failed without naming the flag)
expect 2 "--dump-grads '': an empty name" "$T" train --preset tiny --seq-len 8 --steps 2 --device-mem 50% --dump-grads ''
expect 2 "--out '': an empty name" "$T" train --preset tiny --seq-len 8 --steps 2 --device-mem 50% --out ''
expect 2 "--out '': an empty name" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --out ''
expect 2 "-o '': an empty name" "$T" plan "$EX" --device-mem 4KiB -o ''
expect 2 "-o $D/adir/: names a directory" "$T" plan "$EX" --device-mem 4KiB -o "$D/adir/"
# - train --out NEW/ (a trailing slash) is made like NEW
expect 0 "wrote" "$T" train --preset tiny --seq-len 8 --steps 1 --device-mem 50% --out "$D/newad/" --quiet
check "train --out NEW/ writes the adapters into NEW" test -s "$D/newad/adapter_config.json"
# - generate on sim prints no tokens (it printed "token 0" for every step)
expect 0 "steady state" "$T" generate --preset tiny --seq-len 5 --max-new-tokens 3 --backend sim --device-mem 50%
check "generate --backend sim prints no tokens" sh -c "grep -q '^step 1: decode' '$D/.out' && ! grep -q '^step.*, token' '$D/.out'"
# - with a batch, a decode step's bytes are per step (B tokens), not per token
expect 0 "bytes moved per step (2 tokens, one per sequence)" "$T" generate --preset tiny --seq-len 4 --batch 2 --max-new-tokens 3 --device-mem 50%
# - flags that did nothing
expect 2 "--top-k samples: it needs --temperature" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --top-k 5
expect 2 "--prefetch is the latency policy's" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --plans layer --policy lru --prefetch 2
expect 2 "--trace shows a decode step: it needs --max-new-tokens 2" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 1 --device-mem 50% --trace "$D/t1.json"
expect 2 "--plan-out writes a decode step's plan" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 1 --device-mem 50% --plan-out "$D/p1.json"
expect 2 "--trace needs a run: not with --no-data" "$T" llama --preset tiny --seq-len 8 --device-mem 1GiB --no-data --trace "$D/t2.json"
expect 2 "--repeat is for a real run" "$T" llama --preset tiny --seq-len 8 --backend sim --repeat 3
expect 2 "--repeat needs an integer >= 1" "$T" llama --preset tiny --seq-len 8 --device-mem 1GiB --repeat 0
expect 2 "--out does not apply to a sweep" "$T" llama --preset tiny --backend sim --sweep-seq 16 --csv "$D/sw.csv" --out "$D/x.st"
expect 2 "--seq-len does not apply to a sweep" "$T" llama --preset tiny --backend sim --sweep-seq 16 --csv "$D/sw.csv" --seq-len 8
expect 2 "--sweep-seq takes one --device-mem" "$T" llama --preset tiny --backend sim --devices 2 --sweep-seq 16 --csv "$D/sw.csv" --device-mem 1MiB,2MiB
absent "$D/sw.csv"
# - an unknown backend before the model's memory lines (and train's TaskGraph) are written
expect 2 "--backend bogus is not built in" "$T" train --preset tiny --seq-len 8 --steps 1 --device-mem 50% --backend bogus --taskgraph-out "$D/tg.json"
absent "$D/tg.json"
check "train --backend bogus: refused before any report" sh -c "! grep -q memory '$D/.out'"
expect 2 "--backend bogus is not built in" "$T" generate --preset tiny --seq-len 4 --max-new-tokens 2 --device-mem 50% --backend bogus
check "generate --backend bogus: refused before any report" sh -c "! grep -q memory '$D/.out'"
# - run and sim: refusals before planning (they came after planning and verifying, minutes on big graphs)
expect 0 "" "$T" gen layered --devices 1 --layers 2 -o "$D/l1.json"
expect 2 "a cap gives device 0 1.0 TiB, machine 'h100' has 80.0 GiB per device" "$T" sim "$D/l1.json" --machine h100 --device-mem 1TiB
expect 2 "cpu backend: a run at these caps needs 1.0 TiB of device arenas" "$T" run "$D/l1.json" --zero-inputs --device-mem 1TiB
check "run: arenas past the machine refused before planning" sh -c "! grep -q 'planned in' '$D/.out'"
mkfifo "$D/fifo.st"
expect 2 "--inputs $D/fifo.st: cannot read: not a regular file" "$T" run "$D/l1.json" --inputs "$D/fifo.st" --device-mem 1MiB
expect 2 "--inputs $D/none.st: cannot read: No such file" "$T" run "$D/l1.json" --inputs "$D/none.st" --device-mem 1MiB
expect 2 "a simulated run is .turnip sim" "$T" run "$D/l1.json" --zero-inputs --device-mem 1MiB --backend sim
# - /dev/stdout where standard output carries the report: refused like "-"; plan's statistics
#   go to standard error when the MemGraph goes to standard output by that name
expect 2 "--trace /dev/stdout: standard output carries" "$T" run "$D/l1.json" --zero-inputs --device-mem 1MiB --trace /dev/stdout
"$T" plan "$D/l1.json" --device-mem 1MiB -o /dev/stdout --stats > "$D/l1.plan.json" 2> /dev/null
expect 0 "valid" "$T" verify "$D/l1.plan.json" --taskgraph "$D/l1.json"
# - gen inputs: inputs past the machine's memory refused before any is made (exit 3 after minutes)
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "x", "kind": "input", "device": 0, "dtype": "f32", "shape": [1048576, 1048576]}, {"id": "y", "kind": "kernel", "device": 0, "op": "scale", "inputs": ["x"], "dtype": "f32", "shape": [1048576, 1048576], "attrs": {"alpha": 1}}], "outputs": ["y"]}' > "$D/bigin.json"
expect 2 "gen inputs: the inputs need 4.0 TiB of host memory" "$T" gen inputs "$D/bigin.json" -o "$D/bigin.st"
absent "$D/bigin.st"
# - verify holds the format's rule for deps (increasing, no repeats) as run --plan and convert do;
#   it sorted them and said "valid"
/usr/bin/python3 - "$D/l1.plan.json" "$D/l1.unsorted.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
v = next(x for x in m["vertices"] if len(x["deps"]) >= 2)
v["deps"] = v["deps"][::-1] + v["deps"][:1]
json.dump(m, open(sys.argv[2], "w"))
PY
expect 2 "'deps' must be increasing vertex ids, without repeats" "$T" verify "$D/l1.unsorted.json" --taskgraph "$D/l1.json"
# - gen llama and gen decode refuse each other's flags (they were ignored)
expect 2 "--head is for gen decode, not gen llama" "$T" gen llama --preset tiny --seq 4 --head
expect 2 "--kv-out is for gen llama, not gen decode" "$T" gen decode --preset tiny --kv-out
expect 2 "give --layer L or --head, not both" "$T" gen decode --preset tiny --head --layer 1
# - a capacity of 0 is refused by the flag's parser (the planner blamed the file)
expect 2 "--device-mem: not a size above 0" "$T" plan "$EX" --device-mem 4KiB,0,4KiB
# - dot checks what it draws: a MemGraph (format), known kinds, deps and devices that exist (it drew
#   phantom vertices and exited 0)
/usr/bin/python3 - "$D/l1.plan.json" "$D" <<'PY'
import json, sys
src, d = sys.argv[1], sys.argv[2]
def mut(name, f):
    m = json.load(open(src)); f(m); json.dump(m, open("%s/%s.json" % (d, name), "w"))
mut("dot-format", lambda m: m.update(format="turnip.memgraph/2"))
mut("dot-kind", lambda m: m["vertices"][-1].update(kind="weird"))
mut("dot-dep", lambda m: m["vertices"][-1].update(deps=m["vertices"][-1]["deps"] + [999999]))
mut("dot-device", lambda m: m["vertices"][-1].update(device=7))
PY
expect 2 "not a MemGraph" "$T" dot "$D/dot-format.json" -o "$D/dot.gv"
expect 2 "unknown kind 'weird'" "$T" dot "$D/dot-kind.json" -o "$D/dot.gv"
expect 2 "depends on vertex 999999, which does not exist" "$T" dot "$D/dot-dep.json" -o "$D/dot.gv"
expect 2 "is on device 7; the MemGraph has 1" "$T" dot "$D/dot-device.json" -o "$D/dot.gv"
absent "$D/dot.gv"
expect 0 "" "$T" dot "$D/l1.plan.json" -o "$D/dot.gv"
finish
