#!/bin/bash
# turnip generate's two decode shapes, told apart by what they do (issue 12): on the tiny
# preset at 50% with LRU, a plan per step (the default) pins the same tensors every step, so
# its cache evicts nothing after the first step, while a plan per layer evicts (LRU's cyclic
# misses); each prints its shape; and every shape, with 1 or 3 devices and with --lookahead 1
# (per layer), gives the tokens and, within 1e-4, the logits of the unconstrained run
# (tests/st_close.py). The evictions tell the shapes apart with one device only: with 3, a
# plan per layer evicts nothing either at this size (the 3-device run guards a plan per step).
# A plan per step is made once per run of positions that attend to the same positions
# (tp_llama_decode_opts.attend) and reused by the other steps of the run: every run here sets
# TURNIP_CHECK_PLAN_REUSE=1, so each reused plan is also made afresh and must be the same
# MemGraph, and a longer run over three such runs must say it reused plans.
# usage: generate_plans.sh TURNIP
set -euo pipefail
export TURNIP_CHECK_PLAN_REUSE=1
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
run traced --trace "$D/trace.json" --plan-out "$D/plan.json"
# --trace and --plan-out: the last step's plan and its trace agree (every slice a vertex of the
# plan, of its kind and task), the plan streams, and bench/decode_gaps.py's split of the lane's
# time adds up to the run
/usr/bin/python3 - "$D/trace.json" "$D/plan.json" "$(dirname "$0")/../bench" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import decode_gaps
plan = json.load(open(sys.argv[2]))
assert plan["format"] == "turnip.memgraph/1", plan.get("format")
verts = {v["id"]: v for v in plan["vertices"]}
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
assert ev, "an empty trace"
for e in ev:
    v = verts[e["args"]["vertex"]]
    assert e["name"] == "%s %s" % (v["kind"], v["task"]), (e["name"], v["kind"], v["task"])
ran = {e["args"]["vertex"] for e in ev}
engine = [v for v in plan["vertices"] if v["kind"] in ("kernel", "reload", "offload", "transfer")]
assert all(v["id"] in ran for v in engine), "a vertex of the plan has no slice"
assert any(v["kind"] == "reload" and v["task"].startswith("model.") for v in plan["vertices"]), "nothing streamed at 50%"
r = decode_gaps.analyse(sys.argv[1], sys.argv[2])
parts = r["busy"] + r["dep"] + r["launch"] + r["tail"]
assert abs(parts - r["run"]) < 1e-6 * max(1.0, r["run"]), (parts, r)
assert 0 <= r["dep_kernel"] <= r["dep"] + 1e-9, r
print("trace and plan: %d slices, %d copies on the lane, busy %.1f%% of the run" % (len(ev), r["copies"], 100 * r["busy"] / r["run"]))
PY
# positions 6..45 attend to 16, 32 and 47 (max_len): one plan for the first step (the cache
# starts empty), one per run of positions, the rest reused
"$T" generate --preset tiny --seq-len 6 --batch 2 --max-new-tokens 41 --quiet --device-mem 25% --devices 3 > "$D/long.txt"
made=$(sed -n 's/^decode plans: \([0-9]*\) made, \([0-9]*\) steps reused.*/\1/p' "$D/long.txt")
reused=$(sed -n 's/^decode plans: \([0-9]*\) made, \([0-9]*\) steps reused.*/\2/p' "$D/long.txt")
[ -n "$made" ] && [ "$made" -le 5 ] && [ "$reused" -ge 35 ] && [ $((made + reused)) = 40 ] ||
    { echo "plans made / reused over 40 steps: '$made' / '$reused'"; cat "$D/long.txt"; exit 1; }
grep -q "a plan per decode step" "$D/token.txt" || { echo "the default does not say it plans per step"; cat "$D/token.txt"; exit 1; }
grep -q "a plan per layer" "$D/layer.txt" || { echo "--plans layer does not say it plans per layer"; cat "$D/layer.txt"; exit 1; }
ev() { sed -n 's/.* \([0-9]*\) evictions .*/\1/p' "$D/$1.txt"; }
[ "$(ev token)" = 0 ] && [ "$(ev token3)" = 0 ] || { echo "a plan per step evicted: $(ev token), $(ev token3)"; exit 1; }
[ "$(ev layer)" -gt 0 ] || { echo "a plan per layer with LRU at 50% evicted nothing"; cat "$D/layer.txt"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/st_close.py" "$D/full.st" token="$D/token.st" token3="$D/token3.st" layer="$D/layer.st" \
    layer3la="$D/layer3la.st"
echo "ok: a plan per step evicts nothing (LRU, 50%), a plan per layer evicts $(ev layer); $made plans made and $reused reused over 40 steps"
