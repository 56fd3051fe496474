#!/bin/bash
# turnip generate at the smallest cap it accepts (the "a step at least" it prints) gives the
# tokens and the logits of an unconstrained run (everything streams), and one KiB less is
# refused with exit 2 before anything runs.
# usage: generate_mincap.sh TURNIP [generate flags, e.g. --plans token]
set -euo pipefail
T=$1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
args=(--preset tiny --seq-len 12 --batch 2 --max-new-tokens 6 --quiet "${@:2}")
full=$("$T" generate "${args[@]}" --device-mem 100% --out "$D/full.st")
min=$(echo "$full" | sed -n 's/.*a step at least \([0-9.]*\) \([KMG]i\)B.*/\1\2B/p')
[ -n "$min" ] || { echo "no 'a step at least' in: $full"; exit 1; }
bytes=$(python3 -c "import sys; v,u=sys.argv[1][:-3],sys.argv[1][-3:]; print(int(float(v)*{'KiB':1024,'MiB':2**20,'GiB':2**30}[u]) + 1024)" "$min")
low=$("$T" generate "${args[@]}" --device-mem "${bytes}B" --out "$D/low.st")
if [ "$(echo "$full" | grep '^tokens')" != "$(echo "$low" | grep '^tokens')" ]; then
    echo "tokens differ at the smallest cap (${bytes} B):"; echo "$full" | grep '^tokens'; echo "$low" | grep '^tokens'; exit 1
fi
python3 - "$D/full.st" "$D/low.st" <<'PY'
import json, struct, sys
def read(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); d = b[8 + n:]
    return {k: d[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in h.items() if k != "__metadata__"}
a, b = read(sys.argv[1]), read(sys.argv[2])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
import array
worst = 0.0
for k in a:
    if not k.startswith("logits"): continue
    x, y = array.array("f", a[k]), array.array("f", b[k])
    worst = max(worst, max(abs(p - q) for p, q in zip(x, y)))
print("smallest cap: same tokens, logits within %.3g of the unconstrained run" % worst)
assert worst < 1e-4, worst
PY
less=$((bytes - 2048))
if "$T" generate "${args[@]}" --device-mem "${less}B" >"$D/out" 2>&1; then echo "a cap of $less B below the smallest step was accepted"; exit 1; fi
grep -q "below the .* a decode step needs" "$D/out" || { cat "$D/out"; exit 1; }
echo "ok: smallest cap $bytes B runs, $less B refused"
