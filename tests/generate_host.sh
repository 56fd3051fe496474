#!/bin/bash
# turnip generate's host memory (src/app/generate.c prefill_host): the session's host block
# holds the weights' and the KV cache's host copies and the embedding table once, and past them
# the plans' own host memory, the prefill's counted from its plan before the session is made.
# 1. With every tensor resident (100%) the prefill reads every weight where the cache keeps it
#    (whole tensors, lm_head's row chunks, the embedding table, a down/o projection as all its
#    columns) and offloads nothing: the block is at most the weights (+10%: the printed figures
#    are rounded) + the KV cache twice (its host copies and the decode plans' K/V rows) + the
#    embedding + 4 x step work (the decode plans' room) + 64 KiB. Holding the model twice, as
#    before, reads ~1.6x that.
# 2. On every shape (1-3 devices, a plan per layer, other vocabulary chunks, caps under which
#    the prefill offloads), TURNIP_CHECK_PLAN_REUSE=1 makes the run fail unless the prefill's
#    plan uses exactly the host memory counted before the session; the tokens must not change
#    with the cap.
# usage: generate_host.sh TURNIP
set -euo pipefail
export TURNIP_CHECK_PLAN_REUSE=1
T=$1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
"$T" generate --preset tiny --seq-len 64 --max-new-tokens 3 --quiet --device-mem 100% > "$D/full.txt"
/usr/bin/python3 - "$D/full.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
unit = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
def size(s):
    n, u = s.split()
    return float(n) * unit[u]
m = re.search(r"hidden (\d+).*vocab (\d+), (\w+) weights", t)
hidden, vocab, dt = int(m.group(1)), int(m.group(2)), m.group(3)
embed = hidden * vocab * {"f32": 4, "f16": 2, "bf16": 2}[dt]
m = re.search(r"memory: weights ([\d.]+ \w+), KV cache ([\d.]+ \w+), step work ([\d.]+ \w+)", t)
w, kv, work = (size(m.group(i)) for i in (1, 2, 3))
host = size(re.search(r"host memory: ([\d.]+ \w+)", t).group(1))
limit = 1.1 * w + 2 * kv + embed + 4 * work + 65536  # figures printed to 0.1: 10% on the weights
print("host %.0f, weights %.0f, KV %.0f, embedding %d, work %.0f: limit %.0f" % (host, w, kv, embed, work, limit))
assert host <= limit, "the host block holds more than one copy of the model"
PY
want=$(grep '^tokens' "$D/full.txt")
for flags in "--device-mem 40%" "--device-mem 25% --devices 2" "--device-mem 30% --devices 3 --plans layer" \
             "--device-mem 1536KiB --vocab-chunks 3" "--device-mem 1MiB --plans layer"; do
    # shellcheck disable=SC2086
    "$T" generate --preset tiny --seq-len 64 --max-new-tokens 3 --quiet $flags > "$D/o.txt" || { echo "failed: $flags"; exit 1; }
    [ "$(grep '^tokens' "$D/o.txt")" = "$want" ] || { echo "$flags: tokens differ"; exit 1; }
done
# a prefill that offloads (a long prompt under a small cap), its count exact
"$T" generate --preset tiny --seq-len 1024 --max-new-tokens 2 --quiet --device-mem 2MiB > "$D/o.txt"
echo "ok"
