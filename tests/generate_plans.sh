#!/bin/bash
# turnip generate's two decode shapes, told apart by what they do (issue 12): on the tiny
# preset at 50% with LRU, a plan per step (the default) pins the same tensors every step, so
# its cache evicts nothing after the first step, while a plan per layer evicts (LRU's cyclic
# misses); each prints its shape; and every shape, with 1 or 3 devices and with --lookahead 1
# (per layer), gives the tokens and, within 1e-4, the logits of the unconstrained run
# (tests/st_close.py). The evictions tell the shapes apart with one device only: with 3, a
# plan per layer evicts nothing either at this size (the 3-device run guards a plan per step).
# usage: generate_plans.sh TURNIP
set -euo pipefail
T=$1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
args=(--preset tiny --seq-len 6 --batch 2 --max-new-tokens 6 --quiet)
"$T" generate "${args[@]}" --device-mem 100% --out "$D/full.st" > "$D/full.txt"
run() { # name, then flags
    local n=$1
    shift
    "$T" generate "${args[@]}" --device-mem 50% --policy lru --out "$D/$n.st" "$@" > "$D/$n.txt"
    if [ "$(grep '^tokens' "$D/full.txt")" != "$(grep '^tokens' "$D/$n.txt")" ]; then
        echo "$n: tokens differ from the unconstrained run"; grep '^tokens' "$D/full.txt" "$D/$n.txt"; exit 1
    fi
}
run token
run token3 --devices 3
run layer --plans layer
run layer3la --plans layer --devices 3 --lookahead 1
grep -q "a plan per decode step" "$D/token.txt" || { echo "the default does not say it plans per step"; cat "$D/token.txt"; exit 1; }
grep -q "a plan per layer" "$D/layer.txt" || { echo "--plans layer does not say it plans per layer"; cat "$D/layer.txt"; exit 1; }
ev() { sed -n 's/.* \([0-9]*\) evictions .*/\1/p' "$D/$1.txt"; }
[ "$(ev token)" = 0 ] && [ "$(ev token3)" = 0 ] || { echo "a plan per step evicted: $(ev token), $(ev token3)"; exit 1; }
[ "$(ev layer)" -gt 0 ] || { echo "a plan per layer with LRU at 50% evicted nothing"; cat "$D/layer.txt"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/st_close.py" "$D/full.st" token="$D/token.st" token3="$D/token3.st" layer="$D/layer.st" \
    layer3la="$D/layer3la.st"
echo "ok: a plan per step evicts nothing (LRU, 50%), a plan per layer evicts $(ev layer)"
