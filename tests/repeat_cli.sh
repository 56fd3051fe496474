#!/bin/bash
# `turnip run|llama --repeat N` (sessions, issue 11): the outputs of N runs in one session are
# bit-identical to one fresh run; each later run moves exactly the input bytes that did not
# stay resident (here: where the model fits, nothing at all; at a tight cap, at most the bound).
# usage: repeat_cli.sh TURNIP SOURCE_DIR
set -u
T=$1
SRC=$2
O=$(mktemp -d)
trap 'rm -rf "$O"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
G=$SRC/examples/mlp.json
"$T" gen inputs "$G" -o "$O/in.st" >/dev/null
for cap in 512KiB 1MiB 2MiB 6MiB; do
    "$T" run "$G" --device-mem $cap --inputs "$O/in.st" --out "$O/one.st" >/dev/null
    "$T" run "$G" --device-mem $cap --inputs "$O/in.st" --out "$O/rep.st" --repeat 3 --order random --seed 3 >"$O/rep.txt"
    check "run --repeat 3 at $cap: outputs identical to one run" 'cmp -s "$O/one.st" "$O/rep.st"'
    check "run --repeat 3 at $cap: three runs" '[ $(grep -c "^run [0-9] of 3" "$O/rep.txt") = 3 ]'
    check "run --repeat 3 at $cap: every later plan verified" '[ $(grep -c "^run [23] of 3: .*; plan verified$" "$O/rep.txt") = 2 ]'
    first=$(grep "^run 1 of" "$O/rep.txt" | sed 's/.*moved h2d \([0-9]*\) B.*/\1/')
    while read -r line; do
        m=$(sed 's/.*moved h2d \([0-9]*\) B.*/\1/' <<<"$line")
        nr=$(sed 's/.*not resident \([0-9]*\) B.*/\1/' <<<"$line")
        if [ $cap = 512KiB ]; then # the smallest feasible cap: every run also reloads what it evicts
            check "at $cap ${line%%:*}: moved $m B <= run 1's $first B" '[ "$m" -le "$first" ]'
        else
            check "at $cap ${line%%:*}: moved $m B <= not resident $nr B" '[ "$m" -le "$nr" ]'
        fi
    done < <(grep "^run [23] of" "$O/rep.txt")
done
check "where the model fits, run 2 moves nothing" 'grep -q "^run 2 of 3: .*moved h2d 0 B" "$O/rep.txt"'
# llama: logits of the last run equal a single run's
"$T" llama --preset tiny --seq-len 64 --device-mem 32MiB --all-logits --out "$O/l1.st" >/dev/null
"$T" llama --preset tiny --seq-len 64 --device-mem 32MiB --all-logits --out "$O/l3.st" --repeat 3 >"$O/l3.txt"
check "llama --repeat 3: logits identical to one run" 'cmp -s "$O/l1.st" "$O/l3.st"'
check "llama --repeat 3: run 2 moves no weight bytes" 'grep -q "^run 2 of 3: .*moved h2d 0 B" "$O/l3.txt"'
# refusals
"$T" run "$G" --device-mem 1MiB --inputs "$O/in.st" --out "$O/x.st" --repeat 0 >"$O/r0.txt" 2>&1
check "--repeat 0 is one run" '[ $? = 0 ] && [ "$(grep -c "^run: " "$O/r0.txt")" = 1 ] && ! grep -q "^run [0-9]* of" "$O/r0.txt"'
"$T" run "$G" --device-mem 1MiB --inputs "$O/in.st" --out "$O/x.st" --repeat -1 >/dev/null 2>"$O/err"
check "--repeat -1 refused with exit 2" '[ $? = 2 ] && grep -q repeat "$O/err"'
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['vertices'][0]['resident']={'offset': 0}; json.dump(d, open(sys.argv[2], 'w'))" "$G" "$O/res.json"
"$T" run "$O/res.json" --device-mem 1MiB --inputs "$O/in.st" --out "$O/x.st" --repeat 2 >/dev/null 2>"$O/err"
check "--repeat of a graph that declares resident inputs refused (run 1 starts empty)" '[ $? = 2 ] && grep -q "declares .resident." "$O/err"'
exit $fail
