#!/bin/bash
# The whole WAI test suite, as CI runs it:
#   1. normal build (gcc): unit tests, vectors, GStreamer tests
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer (clang)
#   3. the FFmpeg patch series: apply, build, test (skip with WAI_SKIP_FFMPEG=1)
# Ends with the line "tests: N passed, M failed" and exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
root=$PWD
tools/install-deps.sh || { echo "tests: 0 passed, 1 failed"; exit 1; }

passed=0; failed=0; failures=""
# meson test prints "Ok: N" / "Fail: N" / "Unexpected Pass" / "Timeout" summary lines.
count_meson() {   # $1 = label, $2 = log
    local ok fail to
    ok=$(sed -n 's/^Ok: *\([0-9]*\)/\1/p' "$2" | tail -1)
    fail=$(sed -n 's/^Fail: *\([0-9]*\)/\1/p' "$2" | tail -1)
    to=$(sed -n 's/^Timeout: *\([0-9]*\)/\1/p' "$2" | tail -1)
    ok=${ok:-0}; fail=$(( ${fail:-0} + ${to:-0} ))
    passed=$((passed + ok)); failed=$((failed + fail))
    echo "== $1: $ok passed, $fail failed"
}
stage_fail() { failed=$((failed + 1)); failures="$failures $1"; echo "== $1: FAILED"; }

mkdir -p test-logs

# 1. normal build
if meson setup --reconfigure build-test >/dev/null 2>&1 || meson setup build-test > test-logs/setup.log 2>&1; then
    if ninja -C build-test > test-logs/build.log 2>&1; then
        meson test -C build-test --print-errorlogs --num-processes 2 > test-logs/test.log 2>&1
        rc=$?; cat test-logs/test.log | tail -40
        count_meson "build (gcc)" test-logs/test.log
        [ $rc -eq 0 ] || failures="$failures meson-test"
    else tail -30 test-logs/build.log; stage_fail "build (gcc)"; fi
else tail -30 test-logs/setup.log; stage_fail "setup (gcc)"; fi

# 2. sanitizers (clang, ASan + UBSan: any report fails the test)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ ! -d build-asan ]; then
    CC=clang meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args=-fno-sanitize-recover=all > test-logs/setup-asan.log 2>&1 || stage_fail "setup (asan)"
fi
if [ -d build-asan ]; then
    if ninja -C build-asan > test-logs/build-asan.log 2>&1; then
        meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 4 \
            --suite unit --suite vectors > test-logs/test-asan.log 2>&1
        rc=$?; tail -30 test-logs/test-asan.log
        count_meson "sanitizers (clang asan+ubsan)" test-logs/test-asan.log
        [ $rc -eq 0 ] || failures="$failures asan-test"
    else tail -30 test-logs/build-asan.log; stage_fail "build (asan)"; fi
fi

# 3. FFmpeg series
if [ -x ffmpeg-patches/build.sh ] && [ -x tests/ffmpeg/run.sh ] && [ "${WAI_SKIP_FFMPEG:-0}" != 1 ]; then
    if tests/ffmpeg/run.sh "$root/build-test" > test-logs/ffmpeg.log 2>&1; then rc=0; else rc=$?; fi
    tail -30 test-logs/ffmpeg.log
    line=$(grep -E '^ffmpeg: [0-9]+ passed, [0-9]+ failed' test-logs/ffmpeg.log | tail -1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed 's/^ffmpeg: \([0-9]*\) passed.*/\1/'); f=$(echo "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
        passed=$((passed + p)); failed=$((failed + f))
    fi
    [ $rc -eq 0 ] || { [ -n "$line" ] && [ "$f" != 0 ] || stage_fail "ffmpeg"; failures="$failures ffmpeg"; }
fi

[ -z "$failures" ] || echo "failing stages:$failures (logs in test-logs/)"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ -z "$failures" ]
