#!/bin/bash
# Hostile flags and outputs (issue 18, defects 6, 8, 9, 11): numbers out of range or not finite
# are refused with the range (no hang), nothing is truncated silently, write errors exit 2
# with a message, outputs are atomic (an existing file survives a failing command
# byte-identical, no temporary file is left), and arenas the machine cannot back are refused
# before they are touched. Every case must finish in seconds: each runs under `timeout`.
# usage: hostile_flags.sh TURNIP SOURCE_DIR
set -u
T=$1
SRC=$2
EXPECT_TIMEOUT=20
. "$(dirname "$0")/expect.sh"

# no_temp DIR: no temporary output file left in DIR
no_temp() {
    ! ls -A "$1" | grep -q '\.tmp-'
}

EX=$SRC/examples/figure3.json
"$T" gen inputs "$EX" -o "$D/in.st" >/dev/null || { echo "FAIL: gen inputs"; exit 1; }
RUN=("$T" run "$EX" --device-mem 4KiB --inputs "$D/in.st" --out "$D/o.st")

# 6: numeric flags finite and in a stated range (these used to run forever)
expect 2 "jitter needs a number in 0..4: inf" "${RUN[@]}" --jitter inf
expect 2 "jitter needs a number in 0..4: 1e300" "${RUN[@]}" --jitter 1e300
expect 2 "jitter needs a number in 0..4: nan" "${RUN[@]}" --jitter nan
expect 2 "link-latency needs a number in 0..1e+06: inf" "${RUN[@]}" --link-latency inf
expect 2 "link-latency needs a number in 0..1e+06: 1e9" "${RUN[@]}" --link-latency 1e9
expect 2 "link-bandwidth needs a number in 0.001..1e+06: 1e-300" "${RUN[@]}" --link-bandwidth 1e-300
expect 2 "link-bandwidth needs a number in 0.001..1e+06: 0" "${RUN[@]}" --link-bandwidth 0
expect 2 "jitter needs a number in 0..10: 1e10" "$T" sim "$EX" --machine a100x8 --jitter 1e10
expect 2 "jitter needs a number in 0..10: inf" "$T" sim "$EX" --machine a100x8 --jitter inf
expect 0 "makespan" "$T" sim "$EX" --machine a100x8 --jitter 10
expect 2 "link-bandwidth needs a number in 0.001..1e+06: 1e-300" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --link-bandwidth 1e-300
# the cpu backend's own range, for what the llama flag (shared with sim) lets through
expect 2 "cpu backend: jitter must be a number in \[0, 4\], not '5'" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --jitter 5
expect 0 "makespan" "${RUN[@]}" --jitter 4 --link-latency 10 --link-bandwidth 0.001

# 8: integers above their range are refused, not truncated
expect 2 "devices needs an integer in 1..64: 4294967297" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --devices 4294967297 --no-data
expect 2 "devices needs an integer in 1..64: 4294967297" "$T" gen layered --devices 4294967297
expect 2 "streams needs an integer in 1..64: 4294967297" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --streams 4294967297 --no-data
expect 2 "streams needs an integer in 1..64: 4294967297" "${RUN[@]}" --streams 4294967297
expect 2 "blocks needs an integer in 0..2147483647: 4294967297" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --blocks 4294967297 --no-data
expect 2 "mlp-chunks needs an integer in 0..2147483647: 4294967297" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --mlp-chunks 4294967297 --no-data
expect 2 "layers needs an integer in 1..2147483647: 2147483648" "$T" gen layered --layers 2147483648
expect 2 "seed needs an integer >= 0: 99999999999999999999" "$T" llama --preset tiny --seq-len 8 --device-mem 1MiB --no-data --seed 99999999999999999999
expect 2 "repeat needs an integer" "$T" run "$SRC/examples/mlp.json" --device-mem 1MiB --zero-inputs --repeat 99999999999999999999
# --int-max: every value must fit an i32 input
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "ids", "kind": "input", "device": 0, "dtype": "i32", "shape": [64]}, {"id": "k", "kind": "kernel", "device": 0, "op": "copy", "inputs": ["ids"], "dtype": "i32", "shape": [64]}], "outputs": ["k"]}' >"$D/i32.json"
expect 2 "int-max needs an integer in 1..2147483648: 4294967297" "$T" gen inputs "$D/i32.json" -o "$D/i32.st" --int-max 4294967297
check "no file from a refused --int-max" test ! -e "$D/i32.st"
expect 0 "" "$T" gen inputs "$D/i32.json" -o "$D/i32.st" --int-max 2147483648
check "--int-max 2^31 writes its file" test -e "$D/i32.st"
check "--int-max 2^31 writes no negative i32" python3 - "$D/i32.st" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
lo, hi = h["ids"]["data_offsets"]
v = struct.unpack("<%di" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])
sys.exit(0 if min(v) >= 0 else 1)
EOF
# dot on a directory: exit 2 naming it (was exit 3 "out of memory")
expect 2 "$D: not a regular file" "$T" dot "$D"
# infeasible plans name the TaskGraph file as well as the vertex
expect 2 "figure3.json: vertex '3': needs 4.0 KiB" "$T" plan "$EX" --device-mem 3KiB
expect 2 "figure3.json: vertex '3': needs 4.0 KiB" "$T" run "$EX" --device-mem 3KiB --inputs "$D/in.st" --out "$D/o.st"
expect 2 "figure3.json: vertex '3': needs 4.0 KiB" "$T" sim "$EX" --device-mem 3KiB --machine a100x8
# a name holding a newline stays on one line of error
sed 's/"3"/"x\\ny"/g' "$EX" >"$D/nl.json"
out=$(timeout 20 "$T" plan "$D/nl.json" --device-mem 3KiB 2>&1)
check "newline in a vertex id escaped: $out" test "$(wc -l <<<"$out")" -eq 1 -a -n "$(grep -F "vertex 'x\\ny'" <<<"$out")"
out=$(timeout 20 "$T" plan "$D/no
such.json" --device-mem 1MiB 2>&1)
check "newline in a file name escaped: $out" test "$(wc -l <<<"$out")" -eq 1 -a -n "$(grep -F 'no\nsuch.json: cannot open' <<<"$out")"
# machine profile numbers in range (1e308 used to become "capacity is 0")
prof() { # prof FIELD VALUE: a copy of a100x8 with FIELD set
    python3 - "$SRC/profiles/a100x8.json" "$1" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
j[sys.argv[2]] = {"value": float(sys.argv[3])}
print(json.dumps(j))
EOF
}
prof device_mem 1e308 >"$D/p1.json"
expect 2 "p1.json: needs 'device_mem', a size in \[1 B, 1 EiB\] (not 1e+308)" "$T" sim "$EX" --machine "$D/p1.json"
prof h2d_bw 1e-300 >"$D/p2.json"
expect 2 "p2.json: field 'h2d_bw' must be a number in \[1, 1e+18\], not 1e-300" "$T" sim "$EX" --machine "$D/p2.json"
prof peak_flops 1e300 >"$D/p3.json"
expect 2 "field 'peak_flops' must be a number in \[1, 1e+21\], not 1e+300" "$T" sim "$EX" --machine "$D/p3.json"
prof devices 2.5 >"$D/p4.json"
expect 2 "needs 'devices', an integer in 1..64" "$T" sim "$EX" --machine "$D/p4.json"
prof launch_s -1 >"$D/p5.json"
expect 2 "field 'launch_s' must be a number in \[0, 3600\], not -1" "$T" sim "$EX" --machine "$D/p5.json"

# 8 and 9: write errors exit 2 with a message naming the file, in every command
if [ -w /dev/full ]; then
    "$T" plan "$EX" --device-mem 4KiB -o "$D/mg.json" >/dev/null
    expect 2 "writing /dev/full failed: write error: No space left" "$T" plan "$EX" --device-mem 4KiB -o /dev/full
    expect 2 "writing /dev/full failed: write error: No space left" "$T" dot "$D/mg.json" -o /dev/full
    expect 2 "writing /dev/full failed: write error: No space left" "$T" gen layered -o /dev/full
    expect 2 "writing /dev/full failed: write error: No space left" "$T" plan "$SRC/examples/mlp.json" --device-mem 1MiB -o /dev/full
    expect 2 "/dev/full: write error: No space left" "$T" gen inputs "$EX" -o /dev/full
    expect 2 "/dev/full: write error: No space left" "${RUN[@]/$D\/o.st//dev/full}"
    expect 2 "/dev/full: write error: No space left" "${RUN[@]}" --trace /dev/full
    expect 2 "/dev/full: write error: No space left" "$T" llama --preset tiny --seq-len 4 --device-mem 1MiB --out /dev/full
    expect 2 "writing /dev/full failed: write error: No space left" "$T" llama --preset tiny --backend sim --sweep-seq 8 --csv /dev/full
else
    skip "the write-error cases: no writable /dev/full"
fi

# 9: an existing output survives a failing command byte-identical, and no temporary file is left
mkdir "$D/out"
O=$D/out
for f in o.st mg.json g.json dot.gv tr.json sw.csv in.st; do printf 'old %s\n' "$f" >"$O/$f"; done
cp -r "$O" "$D/ref"
expect 2 "injected fault" "$T" run "$EX" --device-mem 4KiB --inputs "$D/in.st" --out "$O/o.st" --trace "$O/tr.json" --fail-vertex 3
expect 2 "capacity is 3.0 KiB" "$T" run "$EX" --device-mem 3KiB --inputs "$D/in.st" --out "$O/o.st"
expect 2 "capacity is 3.0 KiB" "$T" plan "$EX" --device-mem 3KiB -o "$O/mg.json"
expect 2 "not a MemGraph" "$T" dot "$EX" -o "$O/dot.gv"
expect 2 "devices needs" "$T" gen layered --devices 0 -o "$O/g.json"
expect 2 "int-max needs" "$T" gen inputs "$EX" -o "$O/in.st" --int-max 0
expect 2 "completion is for --backend cuda" "$T" llama --preset tiny --backend sim --completion poll --sweep-seq 8 --csv "$O/sw.csv"
check "outputs untouched by failing commands" diff -r "$O" "$D/ref"
check "no temporary file after failures" no_temp "$O"
# and they are replaced whole on success, keeping the old file's mode; a symlink stays one
chmod 640 "$O/o.st"
ln -s mg.json "$O/link.json"
expect 0 "outputs:" "$T" run "$EX" --device-mem 4KiB --inputs "$D/in.st" --out "$O/o.st" --trace "$O/tr.json"
expect 0 "" "$T" plan "$EX" --device-mem 4KiB -o "$O/link.json"
expect 0 "" "$T" dot "$O/mg.json" -o "$O/dot.gv"
differ() { ! cmp -s "$1" "$2"; }
check "run output replaced" differ "$O/o.st" "$D/ref/o.st"
check "mode of the replaced file kept" test "$(stat -c %a "$O/o.st")" = 640
check "symlink kept, its file replaced" test -L "$O/link.json" -a "$(head -c 1 "$O/mg.json")" = "{"
check "dot output replaced" grep -q digraph "$O/dot.gv"
check "no temporary file after success" no_temp "$O"
# an output in a directory that does not exist, or that is a directory: exit 2, nothing left
expect 2 "cannot write" "$T" plan "$EX" --device-mem 4KiB -o "$D/no/such/mg.json"
expect 2 "$O: cannot write: is a directory" "$T" plan "$EX" --device-mem 4KiB -o "$O"
expect 2 "cannot write" "${RUN[@]/$D\/o.st/$D/no/such/o.st}"

# 11: arenas the machine cannot back are refused before they are touched, naming both sizes
if [ -r /proc/meminfo ]; then
    expect 2 "cpu backend: a run at these caps needs 3.0 TiB of device arenas and 0 B of host memory, the machine has .* available" \
        "$T" run "$EX" --device-mem 1TiB --inputs "$D/in.st" --out "$D/big.st"
    check "no output from a refused run" test ! -e "$D/big.st"
else
    skip "the arena refusal: no /proc/meminfo"
fi


# verify's INVALID line is one line too, whatever the TaskGraph's ids hold
printf '{"format": "turnip.taskgraph/1", "devices": 1, "vertices": [{"id": "in\\nput", "kind": "input", "device": 0, "bytes": 64}, {"id": "k\\n1", "kind": "kernel", "device": 0, "op": "opaque", "inputs": ["in\\nput"], "bytes": 64}], "outputs": ["k\\n1"]}' >"$D/nl.json"
"$T" plan "$D/nl.json" --device-mem 1KiB -o "$D/nl_mg.json" >/dev/null
/usr/bin/python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
for v in m["vertices"]:
    if v["kind"] == "kernel": v["reads"] = []
json.dump(m, open(sys.argv[2], "w"))' "$D/nl_mg.json" "$D/nl_bad.json"
expect 1 'INVALID: vertex 2 (kernel k\\n1)' "$T" verify "$D/nl_bad.json" --taskgraph "$D/nl.json"
check "verify prints one line for an id with a newline" test "$("$T" verify "$D/nl_bad.json" --taskgraph "$D/nl.json" | wc -l)" -eq 1

finish
