# Shared helpers of the shell tests (sourced). Sets $tmp (removed at exit) and counts
# pass/fail; each test script ends with `finish NAME`.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
expect() {  # expect RC DESCRIPTION -- command...   (stdout in $tmp/out, stderr in $tmp/err)
    local want=$1 what=$2; shift 3
    "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
    if [ "$rc" -eq "$want" ]; then pass=$((pass + 1)); echo "PASS $what (rc $rc)"
    else fail=$((fail + 1)); echo "FAIL $what: rc $rc, expected $want"; sed 's/^/  | /' "$tmp/err" | head -5; fi
}
check() {   # check DESCRIPTION -- test-expression...
    local what=$1; shift 2
    if "$@"; then pass=$((pass + 1)); echo "PASS $what"; else fail=$((fail + 1)); echo "FAIL $what"; fi
}
finish() {  # finish NAME: the closing line the test runners read, and the exit code
    echo "$1: $pass passed, $fail failed"
    [ $fail -eq 0 ]
}
