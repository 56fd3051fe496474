#!/bin/bash
# Under an address-space limit (ulimit -v) a run either fits or exits 2 before any work, naming
# the limit: OpenBLAS retries a buffer it cannot map forever, so a run that started short of
# address space used to hang (in sgemm). Not run in sanitizer builds (their shadow memory needs
# terabytes of address space).
# usage: address_limit.sh TURNIP SOURCE_DIR
set -u
T=$1
SRC=$2
. "$(dirname "$0")/expect.sh"
EXPECT_TIMEOUT=60
"$T" gen inputs "$SRC/examples/mlp.json" -o "$D/in.st" >/dev/null
for kb in 250000 300000 400000; do
    expect 2 "under the address-space limit (ulimit -v)" bash -c 'ulimit -v "$0" && exec "$@"' $kb "$T" run "$SRC/examples/mlp.json" --device-mem 1MiB --inputs "$D/in.st"
    expect 2 "under the address-space limit (ulimit -v)" bash -c 'ulimit -v "$0" && exec "$@"' $kb "$T" generate --preset tiny --seq-len 8 --max-new-tokens 2 --device-mem 150MiB
    expect 2 "under the address-space limit (ulimit -v)" bash -c 'ulimit -v "$0" && exec "$@"' $kb "$T" llama --preset tiny --seq-len 16 --devices 3 --device-mem 8MiB
done
# with room, the same commands run
expect 0 "outputs:" bash -c 'ulimit -v "$0" && exec "$@"' 2000000 "$T" run "$SRC/examples/mlp.json" --device-mem 1MiB --inputs "$D/in.st"
expect 0 "decode" bash -c 'ulimit -v "$0" && exec "$@"' 2000000 "$T" generate --preset tiny --seq-len 8 --max-new-tokens 2 --device-mem 150MiB
expect 0 "next token" bash -c 'ulimit -v "$0" && exec "$@"' 2000000 "$T" llama --preset tiny --seq-len 16 --devices 3 --device-mem 8MiB
finish address_limit
