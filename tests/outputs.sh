#!/bin/bash
# Outputs a user can lose (docs/reliability.md "Outputs"), each against what the shell sees:
# 1. -o /dev/stdout with standard output redirected to a file appends to it (the file's earlier
#    lines stay, and the MemGraph follows them), as -o - does; it used to replace the file.
# 2. plan -o - --stats: the MemGraph alone on standard output (JSON), the statistics on stderr.
# 3. ulimit -f: the write fails with "File too large", exit 2, the old file intact and no
#    temporary file left (SIGXFSZ used to kill the process and leave one).
# 4. "-" where standard output carries the report (run --out/--trace, sim --trace) and for
#    gen inputs: exit 2 before any work, no file named "-".
# 5. an output that is a directory: exit 2 before the run, the other output untouched.
# 6. a report lost on the way out (> /dev/full): exit 2, not 0.
# 7. offload-plan on a FIFO: refused at once (it used to wait for a writer).
# 8. a read-only existing output (mode 0444) is not replaced, and -o /dev/stdout as in 1 works
#    (as a user other than root, who cannot write into /dev).
# 9. train --out replaces its two files together: when adapter_config.json cannot be written,
#    adapter_model.safetensors is not replaced either (it used to be, beside the old config).
# 10. train --out NEW interrupted (SIGINT while it trains) leaves no NEW directory: it is made
#    when the adapters are written (it used to be made at the start, and left empty).
# 11. a sweep ended by SIGTERM while gnuplot runs (a stand-in gnuplot that sleeps, first on PATH)
#    leaves no scratch directory in TMPDIR (it left turnip-plot-XXXXXX with data.csv).
# 12. an output name of 250 bytes is written (its temporary name, the name plus a suffix, used to
#    pass NAME_MAX and fail with "File name too long").
# 13. an output that is a symlink to nothing: exit 2, the link stays and nothing is made where it
#    points (the link used to be replaced by a regular file).
# 14. an output that is the command's own input (plan g.json -o g.json, run --trace on --inputs,
#    convert P P, gen inputs onto its TaskGraph, llama --out onto the checkpoint's weights, a
#    symlink to the input): exit 2 before any work, the input unchanged (plan used to replace
#    the TaskGraph with its MemGraph).
# usage: outputs.sh TURNIP SOURCE_DIR
set -euo pipefail
T=$(realpath "$1")
S=$(realpath "$2")
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cd "$D"
fail() { echo "FAIL: $*"; exit 1; }
"$T" gen layered --layers 4 -o g.json
# 1
printf 'earlier line\n' > log.txt
"$T" plan g.json --device-mem 64MiB -o /dev/stdout >> log.txt
[ "$(head -1 log.txt)" = "earlier line" ] || fail "-o /dev/stdout replaced the file stdout goes to"
tail -n +2 log.txt | /usr/bin/python3 -c 'import json,sys; assert json.load(sys.stdin)["format"] == "turnip.memgraph/1"' \
    || fail "-o /dev/stdout: no MemGraph after the earlier line"
# 2
"$T" plan g.json --device-mem 64MiB -o - --stats > p.out 2> p.err
/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' p.out || fail "plan -o - --stats: standard output is not the MemGraph alone"
grep -q "peak" p.err || fail "plan -o - --stats: no statistics on standard error"
# 3
"$T" gen layered --layers 64 -o big.json
cp big.json big.out
set +e
(ulimit -f 16; "$T" plan big.json --device-mem 64MiB -o big.out) > f.out 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "ulimit -f: exit $rc, wanted 2: $(cat f.out)"
grep -q "File too large" f.out || fail "ulimit -f: no reason given: $(cat f.out)"
cmp -s big.json big.out || fail "ulimit -f: the old file changed"
if ls -a | grep -q '\.tmp-'; then fail "ulimit -f: a temporary file was left: $(ls -a)"; fi
# 4
"$T" gen inputs "$S/examples/mlp.json" -o in.st
expect2() { # what, then the command
    local what=$1
    shift
    set +e
    "$@" > e.out 2>&1
    local rc=$?
    set -e
    [ "$rc" = 2 ] || fail "$what: exit $rc, wanted 2: $(cat e.out)"
}
expect2 "run --out -" "$T" run "$S/examples/mlp.json" --device-mem 1MiB --inputs in.st --out -
expect2 "run --trace -" "$T" run "$S/examples/mlp.json" --device-mem 1MiB --inputs in.st --trace -
expect2 "sim --trace -" "$T" sim g.json --device-mem 64MiB --machine a100x8 --trace -
expect2 "gen inputs -o -" "$T" gen inputs "$S/examples/mlp.json" -o -
[ ! -e ./- ] || fail "a file named - was written"
grep -q "name a file" e.out || fail "gen inputs -o -: $(cat e.out)"
# 5
mkdir adir
echo keep > tr.json
expect2 "run --out DIR" "$T" run "$S/examples/mlp.json" --device-mem 1MiB --inputs in.st --out adir --trace tr.json
grep -q "is a directory" e.out || fail "run --out DIR: $(cat e.out)"
[ "$(cat tr.json)" = keep ] || fail "run --out DIR: the trace was written before the refusal"
# 6
set +e
"$T" verify g.json > /dev/full 2> v.err
rc=$?
set -e
[ "$rc" != 0 ] || fail "verify > /dev/full: exit 0 with its report lost"
# 7
mkfifo chain.fifo
set +e
timeout 10 "$T" offload-plan chain.fifo > o.out 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "offload-plan FIFO: exit $rc, wanted 2: $(cat o.out)"
grep -q "not a regular file" o.out || fail "offload-plan FIFO: $(cat o.out)"
# 8
if [ "$(id -u)" = 0 ] && command -v runuser > /dev/null && runuser -u nobody -- "$T" --version > /dev/null 2>&1; then
    chmod 777 "$D"
    echo PRECIOUS > ro.json
    chmod 444 ro.json
    set +e
    runuser -u nobody -- "$T" gen layered --layers 2 -o "$D/ro.json" > r.out 2>&1
    rc=$?
    set -e
    [ "$rc" = 2 ] || fail "read-only output: exit $rc: $(cat r.out)"
    [ "$(cat ro.json)" = PRECIOUS ] || fail "read-only output replaced"
    grep -q "read-only" r.out || fail "read-only output: $(cat r.out)"
    # as in 1, but by a user who cannot write into /dev: the file standard output goes to is
    # written through it (it was refused, "cannot write into /dev", by a check of /dev/stdout's
    # directory that only root passed)
    chmod 644 g.json
    printf 'earlier line\n' > nb.log
    chmod 666 nb.log
    set +e
    runuser -u nobody -- sh -c '"$1" plan "$2" --device-mem 64MiB -o /dev/stdout >> "$3"' sh "$T" "$D/g.json" "$D/nb.log" > r.out 2>&1
    rc=$?
    set -e
    [ "$rc" = 0 ] || fail "-o /dev/stdout as nobody: exit $rc: $(cat r.out)"
    [ "$(head -1 nb.log)" = "earlier line" ] && grep -q '"format": *"turnip.memgraph/1"' nb.log \
        || fail "-o /dev/stdout as nobody: no MemGraph after the earlier line"
else
    echo "read-only output and /dev/stdout as another user: not checked (needs root, runuser, and a build the user nobody can run)"
fi
# 9
"$T" train --preset tiny --seq-len 16 --steps 1 --device-mem 100% --out ad --lora-rank 4 --quiet > /dev/null
cp ad/adapter_model.safetensors old.st
rm ad/adapter_config.json
mkdir ad/adapter_config.json
expect2 "train --out, config unwritable" "$T" train --preset tiny --seq-len 16 --steps 1 --device-mem 100% --out ad --lora-rank 8 --quiet
cmp -s old.st ad/adapter_model.safetensors || fail "train --out: the weights were replaced though the config could not be"
if ls -a ad | grep -q '\.tmp-'; then fail "train --out: a temporary file was left: $(ls -a ad)"; fi
# 10
set +e
timeout -s INT 0.5 "$T" train --preset tiny --seq-len 64 --steps 200 --device-mem 100% --out newdir --quiet > /dev/null 2>&1
set -e
[ ! -e newdir ] || fail "train --out NEW, interrupted: NEW was left: $(ls -a newdir)"
# 11
mkdir fakebin tmpd
printf '#!/bin/sh\necho $$ > "%s/gp.pid"\nexec sleep 30\n' "$D" > fakebin/gnuplot
chmod +x fakebin/gnuplot
PATH="$D/fakebin:$PATH" TMPDIR="$D/tmpd" "$T" llama --preset tiny --backend sim --sweep-seq 64,128 \
    --csv sw.csv --png sw.png > /dev/null 2>&1 &
tp=$!
for _ in $(seq 600); do [ -s gp.pid ] && break; sleep 0.1; done # gnuplot started: the scratch exists
[ -s gp.pid ] || fail "sweep: the stand-in gnuplot never ran"
kill -TERM "$tp" # (SIGINT: ignored by a background job of a script)
wait "$tp" || true
kill "$(cat gp.pid)" 2> /dev/null || true
[ -z "$(ls -A tmpd)" ] || fail "sweep interrupted in gnuplot: scratch left in TMPDIR: $(ls -A tmpd)"
# 12
long=$(printf 'p%.0s' $(seq 245)).json
"$T" plan g.json --device-mem 64MiB -o "$long" > l.out 2>&1 || fail "a 250-byte output name: $(cat l.out)"
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["format"] == "turnip.memgraph/1"' "$long" \
    || fail "a 250-byte output name: no MemGraph written"
# 13
ln -s nowhere/target.json dangling.json
expect2 "a symlink to nothing" "$T" plan g.json --device-mem 64MiB -o dangling.json
grep -q "symbolic link to a file that does not exist" e.out || fail "a symlink to nothing: no reason given: $(cat e.out)"
[ -L dangling.json ] || fail "a symlink to nothing was replaced"
[ ! -e nowhere ] || fail "a symlink to nothing was followed"
# 14
cp g.json g.orig
"$T" plan g.json --device-mem 64MiB -o p14.json
cp p14.json p14.orig
"$T" gen inputs g.json -o in14.st
cp in14.st in14.orig
ln -s g.json g-link.json
/usr/bin/python3 "$S/scripts/make_tiny_llama.py" m14 > /dev/null
cp m14/model.safetensors m14.orig
same() { # what, then the command
    local what=$1
    expect2 "$what" "${@:2}"
    grep -q "is this command's input" e.out || fail "$what: no reason given: $(cat e.out)"
}
same "plan onto its TaskGraph" "$T" plan g.json --device-mem 64MiB -o g.json
same "plan onto a symlink to its TaskGraph" "$T" plan g.json --device-mem 64MiB -o g-link.json
same "convert onto its input" "$T" convert p14.json p14.json
same "gen inputs onto its TaskGraph" "$T" gen inputs g.json -o g.json
same "run --trace onto --inputs" "$T" run g.json --inputs in14.st --device-mem 64MiB --trace in14.st
same "run --out onto --plan" "$T" run g.json --zero-inputs --plan p14.json --device-mem 64MiB --out p14.json
same "llama --out onto the weights" "$T" llama --model m14 --seq-len 4 --device-mem 1GiB --out m14/model.safetensors
cmp -s g.json g.orig && cmp -s p14.json p14.orig && cmp -s in14.st in14.orig && cmp -s m14/model.safetensors m14.orig \
    || fail "an input was changed by a command that named it as an output"
[ -L g-link.json ] || fail "the symlink to the input was replaced"
echo ok
