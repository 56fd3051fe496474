#!/bin/bash
# turnip offload-plan (issue 14): bad chains exit 2 with one line naming the file and the
# field; a good chain plans with each algorithm, and --schedule writes JSON that Debian's
# python3 reads back with the makespan printed. A failing run writes no schedule.
# usage: offload_cli.sh TURNIP SOURCE_DIR
set -u
T=$1
SRC=$2
. "$(dirname "$0")/expect.sh"

L='{"uf": 1, "ub": 1, "w": 100, "a": 0}'
good='{"format": "turnip.chain/1", "mgpu": 350, "beta": 100, "a0": 0, "layers": [{"uf": 1, "ub": 1, "w": 0, "a": 150}, {"uf": 1, "ub": 1, "w": 100, "a": 0}, {"uf": 2, "ub": 1, "w": 0, "a": 150}]}'
echo "$good" >"$D/good.json"
expect 0 "usage: turnip offload-plan" "$T" offload-plan --help
for a in greedy greedy-star l2l milp; do
    expect 0 "makespan" "$T" offload-plan "$D/good.json" --algo "$a" --schedule "$D/s-$a.json"
    check "$a schedule is JSON with the printed makespan" /usr/bin/python3 -c "
import json, sys
s = json.load(open('$D/s-$a.json'))
assert s['format'] == 'turnip.offload-schedule/1' and s['layers'] == 3
assert len([o for o in s['ops'] if o['op'] in ('F', 'B')]) == 6
mk = max(o['end'] for o in s['ops'])
assert abs(mk - s['makespan']) < 1e-9, (mk, s['makespan'])
"
done
expect 0 "makespan 8 s" "$T" offload-plan "$D/good.json"
expect 0 "makespan 9 s" "$T" offload-plan "$D/good.json" --algo greedy-star
# milp: Algorithm 2 on the MILP's selection, printed with the bound it came from
expect 0 "makespan 8 s" "$T" offload-plan "$D/good.json" --algo milp

EXPECT_ONE_LINE=1
bad() { # NAME TEXT PATTERN
    printf '%s' "$2" >"$D/$1.json"
    expect 2 "$D/$1.json: $3" "$T" offload-plan "$D/$1.json" --schedule "$D/out-$1.json"
    absent "$D/out-$1.json"
}
bad notjson '{"format": ' "line 1: not JSON"
bad format '{"format": "x", "mgpu": 1, "beta": 1, "a0": 0, "layers": ['"$L"']}' "format"
bad unknown '{"format": "turnip.chain/1", "mgpu": 1, "beta": 1, "a0": 0, "zzz": 0, "layers": ['"$L"']}' '(top): unknown key "zzz"'
bad negmem '{"format": "turnip.chain/1", "mgpu": -5, "beta": 1, "a0": 0, "layers": ['"$L"']}' "mgpu: negative"
bad beta '{"format": "turnip.chain/1", "mgpu": 1, "beta": 0, "a0": 0, "layers": ['"$L"']}' "beta"
bad layerw '{"format": "turnip.chain/1", "mgpu": 1, "beta": 1, "a0": 0, "layers": [{"uf": 1, "ub": 1, "w": "big", "a": 0}]}' 'layers\[0\].w'
bad empty '{"format": "turnip.chain/1", "mgpu": 1, "beta": 1, "a0": 0, "layers": []}' "layers"
# valid, but B_0 needs 2 w_0 = 200 bytes > mgpu: no schedule fits
bad infeasible '{"format": "turnip.chain/1", "mgpu": 150, "beta": 1, "a0": 0, "layers": ['"$L"']}' "offload"
/usr/bin/python3 -c "import sys; sys.stdout.write('{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [' + ', '.join(['$L'] * 513) + ']}')" >"$D/toomany.json"
expect 2 "$D/toomany.json: offload: 513 layers, the algorithms take 1..512" "$T" offload-plan "$D/toomany.json"
expect 2 "cannot open" "$T" offload-plan "$D/missing.json"
EXPECT_ONE_LINE=0
expect 2 "no chain given" "$T" offload-plan
expect 2 "--algo must be" "$T" offload-plan "$D/good.json" --algo bogus
# the MILP bound (GLPK): at least the compute sum (7 s), at most what Greedy reaches (8 s); with
# --bound each strategy is printed over it
expect 0 "bound 7 s (proved optimal)" "$T" offload-plan "$D/good.json" --algo milp
expect 0 "makespan/bound 1.285714" "$T" offload-plan "$D/good.json" --algo greedy-star --bound --time-limit 10
expect 0 "makespan/bound 1.142857" "$T" offload-plan "$D/good.json" --algo milp --time-limit 10
expect 2 "--time-limit" "$T" offload-plan "$D/good.json" --bound --time-limit 0
# a bound stopped before any incumbent says so (not "incumbent inf s")
expect 0 "incumbent none" "$T" offload-plan "$SRC/examples/chains/bert-144-b16.json" --algo greedy --bound --time-limit 0.01
finish offload_cli
