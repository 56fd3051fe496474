#!/bin/bash
# turnip generate at the smallest cap it accepts (the "a step at least" it prints) gives the
# tokens and the logits of an unconstrained run (everything streams), and one KiB less is
# refused with exit 2 before anything runs.
# usage: generate_mincap.sh TURNIP [generate flags, e.g. --plans layer]
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
/usr/bin/python3 "$(dirname "$0")/st_close.py" "$D/full.st" smallest="$D/low.st"
less=$((bytes - 2048))
if "$T" generate "${args[@]}" --device-mem "${less}B" >"$D/out" 2>&1; then echo "a cap of $less B below the smallest step was accepted"; exit 1; fi
grep -q "below the .* a decode step needs" "$D/out" || { cat "$D/out"; exit 1; }
echo "ok: smallest cap $bytes B runs, $less B refused"
