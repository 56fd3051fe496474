# expect.sh - what the command-line test scripts share (sourced, after T and SRC are set): a
# scratch directory $D removed at exit, pass/fail counters and the checks.
#   expect CODE PATTERN CMD...  exit code CODE and PATTERN in stdout+stderr, within
#                               $EXPECT_TIMEOUT s (default 60); with EXPECT_ONE_LINE=1 a
#                               failure (CODE 2) must also be exactly one line on stderr
#   check NAME CMD...           CMD succeeds
#   absent PATH                 nothing there (a command that failed wrote no file)
#   skip WHAT                   a part not run (a tool missing): finish then exits 77, which
#                               CTest shows as skipped, unless a check failed
#   finish [NAME]               prints "N passed, M failed" and returns the verdict: 1 on a
#                               failure, else 77 when a part was skipped, else 0
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
pass=0
fail=0
skipped=""
EXPECT_TIMEOUT=${EXPECT_TIMEOUT:-60}
EXPECT_ONE_LINE=${EXPECT_ONE_LINE:-0}

expect() {
    local code=$1 pat=$2
    shift 2
    timeout "$EXPECT_TIMEOUT" "$@" >"$D/.out" 2>"$D/.err"
    local got=$?
    if [ "$got" -ne "$code" ] || { [ -n "$pat" ] && ! cat "$D/.out" "$D/.err" | grep -q -- "$pat"; } ||
        { [ "$EXPECT_ONE_LINE" = 1 ] && [ "$code" -eq 2 ] && [ "$(wc -l <"$D/.err")" -ne 1 ]; }; then
        echo "FAIL: $* -> exit $got (wanted $code), output: $(cat "$D/.out" "$D/.err")"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
}

check() {
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else
        echo "FAIL: $name"
        fail=$((fail + 1))
    fi
}

absent() {
    if [ -e "$1" ] || [ -L "$1" ]; then
        echo "FAIL: $1 exists"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
}

skip() {
    echo "SKIPPED: $1"
    skipped="$skipped${skipped:+; }$1"
}

finish() {
    echo "${1:+$1: }$pass passed, $fail failed${skipped:+; skipped: $skipped}"
    [ "$fail" -eq 0 ] || return 1
    [ -z "$skipped" ] || return 77
}
