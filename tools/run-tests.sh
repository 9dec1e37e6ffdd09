#!/bin/bash
# The whole WAI test suite, as CI runs it:
#   1. normal build (gcc): unit tests, vectors, the real-content corpus, CLI, checkasm, Vulkan on
#      lavapipe, GStreamer
#   2. the same unit and vector tests under ASan + UBSan (clang), then under TSan (clang)
#   3. the FFmpeg patch series (5.1, then 7.1), VLC and mpv: apply, build, test
#                                       (WAI_SKIP_FFMPEG=1 skips; WAI_SKIP_FFMPEG71=1 only 7.1)
#   4. libFuzzer targets for a bounded time each  (WAI_FUZZ_SECONDS, default 30; WAI_FUZZ_SEED, default 1;
#      FFmpeg's fuzzers of both series, skipped as in 3.)
#   5. cross builds under qemu: aarch64 (NEON) and i386, bounded  (WAI_SKIP_CROSS=1 skips)
#   5b. the browser decoder: libwai in WebAssembly (kernel tests and vectors under Node), the
#      viewer page in headless Chromium (vectors, corpus, samples, damaged streams)
#                                                                 (WAI_SKIP_WEB=1 skips)
#   6. planted faults: each must be caught by its test            (WAI_SKIP_PLANTED=1 skips)
#   7. Debian packages: build, lintian, install, check, purge      (WAI_SKIP_DEBIAN=1 skips)
# Ends with the line "tests: N passed, M failed" and exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
root=$PWD
# exit 3: everything but the cross stage's packages is installed (a Debian mirror mid-sync can
# hold a foreign architecture's index behind the native one's); that stage is then skipped and
# says so, rather than failing the run on the mirror's state
cross_note=""
tools/install-deps.sh; deps_rc=$?
if [ $deps_rc -eq 3 ]; then
    export WAI_SKIP_CROSS=1
    cross_note="cross (qemu) SKIPPED: its packages could not be installed from the Debian mirror (install-deps above)"
    echo "== $cross_note"
elif [ $deps_rc -ne 0 ]; then
    echo "tests: 0 passed, 1 failed"; exit 1
fi

passed=0; failed=0; failures=""
mkdir -p test-logs
# seconds per stage (issue 27: CI must stay well under its 90 minutes; test-logs/stage-times.txt)
stage_t0=$SECONDS; run_t0=$SECONDS; : > test-logs/stage-times.txt
stage_start() { stage_t0=$SECONDS; }
stage_time() { local s=$((SECONDS - stage_t0)); printf '%5d s  %s\n' $s "$1" >> test-logs/stage-times.txt; echo "   ($1: ${s} s)"; }
stage_fail() { failed=$((failed + 1)); failures="$failures $1"; echo "== $1: FAILED (see test-logs/)"; }

# meson test prints "Ok: N" / "Fail: N" / "Timeout: N" summary lines
count_meson() {   # LABEL LOG RC
    local ok fail to
    ok=$(sed -n 's/^Ok: *\([0-9]*\)/\1/p' "$2" | tail -1)
    fail=$(sed -n 's/^Fail: *\([0-9]*\)/\1/p' "$2" | tail -1)
    to=$(sed -n 's/^Timeout: *\([0-9]*\)/\1/p' "$2" | tail -1)
    ok=${ok:-0}; fail=$(( ${fail:-0} + ${to:-0} ))
    passed=$((passed + ok)); failed=$((failed + fail))
    echo "== $1: $ok passed, $fail failed"
    [ "$3" -eq 0 ] || [ "$fail" -gt 0 ] || stage_fail "$1"
}

# a script that ends with "<word>: N passed, M failed"
run_counted() {   # LABEL LOG COMMAND...
    local label=$1 log=$2; shift 2
    stage_start
    "$@" > "$log" 2>&1; local rc=$?
    stage_time "$label"
    # FAIL and SKIP lines, each FAIL with the (up to 6) detail lines its script printed after it
    awk '/^(PASS|SKIP|FAIL)/ { d = 0 } /^SKIP/ { print } /^FAIL/ { print; d = 6; next }
         d > 0 && !/^[a-z-]+: [0-9]+ passed/ { print "    " $0; d-- }' "$log" | head -40
    local line p f
    line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -z "$line" ]; then tail -20 "$log"; stage_fail "$label"; return; fi
    p=$(echo "$line" | sed 's/^[a-z-]*: \([0-9]*\) passed.*/\1/'); f=$(echo "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
    passed=$((passed + p)); failed=$((failed + f))
    echo "== $label: $p passed, $f failed"
    [ $rc -eq 0 ] || [ "$f" -gt 0 ] || stage_fail "$label"
}

# 1. normal build
stage_start
opts="-Dgstreamer=enabled -Dvulkan=enabled"
if [ -d build-test ]; then meson setup --reconfigure build-test $opts > test-logs/setup.log 2>&1
else meson setup build-test $opts > test-logs/setup.log 2>&1; fi
if [ $? -ne 0 ]; then tail -30 test-logs/setup.log; stage_fail "setup (gcc)"
elif ! ninja -C build-test > test-logs/build.log 2>&1; then tail -30 test-logs/build.log; stage_fail "build (gcc)"
else
    meson test -C build-test --print-errorlogs --num-processes 2 > test-logs/test.log 2>&1
    rc=$?; grep -E '^ *[0-9]+/[0-9]+ ' test-logs/test.log
    count_meson "meson test (gcc)" test-logs/test.log $rc
fi
stage_time "build and meson test (gcc)"

# 2. sanitizers: clang builds of the unit and vector tests, where any report fails the test
# san_stage NAME LABEL MESON_OPTION...: build-NAME, logs test-logs/{setup,build,test}-NAME.log;
# $SAN_WRAP, if set, is a command the tests run under
san_stage() {
    local name=$1 label=$2 dir=build-$1; shift 2
    stage_start
    if [ ! -d $dir ] && ! CC=clang meson setup $dir -Db_lundef=false "$@" \
            > test-logs/setup-$name.log 2>&1; then
        tail -30 test-logs/setup-$name.log; stage_fail "setup ($name)"
    elif ! ninja -C $dir > test-logs/build-$name.log 2>&1; then
        tail -30 test-logs/build-$name.log; stage_fail "build ($name)"
    else
        ${SAN_WRAP:-} meson test -C $dir --print-errorlogs --num-processes 2 --timeout-multiplier 4 \
            --suite unit --suite vectors > test-logs/test-$name.log 2>&1
        local rc=$?; grep -E '^ *[0-9]+/[0-9]+ ' test-logs/test-$name.log
        count_meson "meson test (clang $label)" test-logs/test-$name.log $rc
    fi
    stage_time "clang $label: build and meson test"
}
# 2a. ASan + UBSan, with the Vulkan drivers preloaded (tools/asan-env.sh, shared with the
# planted leaks of tools/planted-faults.sh)
. tools/asan-env.sh
SAN_WRAP=asan_env san_stage asan asan+ubsan "${asan_meson_opts[@]}"
# 2b. TSan: the thread pool and the threaded kernels (every vector runs at 1-3 threads); a data
# race report fails. Vulkan and GStreamer off: their drivers and libraries are not TSan builds.
# Without address randomisation: clang 14's TSan cannot map its shadow on kernels with many
# random mmap bits ("unexpected memory mapping").
TSAN_OPTIONS=halt_on_error=1 SAN_WRAP="setarch $(uname -m) -R" \
    san_stage tsan tsan -Db_sanitize=thread -Dgstreamer=disabled -Dvulkan=disabled

# 3. FFmpeg series and VLC
if [ "${WAI_SKIP_FFMPEG:-0}" != 1 ] && [ -x tests/ffmpeg/run.sh ]; then
    run_counted "ffmpeg series" test-logs/ffmpeg.log tests/ffmpeg/run.sh
    [ "${WAI_SKIP_FFMPEG71:-0}" = 1 ] ||
        run_counted "ffmpeg 7.1 series" test-logs/ffmpeg-7.1.log env FFMPEG_SERIES=7.1 tests/ffmpeg/run.sh
    [ -x tests/ffmpeg/vlc.sh ] && run_counted "vlc" test-logs/vlc.log tests/ffmpeg/vlc.sh
    # mpv (Debian's) on the patched FFmpeg 5.1 libraries: the vectors and the real-content corpus
    [ -x tests/ffmpeg/mpv.sh ] && run_counted "mpv" test-logs/mpv.log tests/ffmpeg/mpv.sh
fi

# 4. fuzzing, bounded, with a fixed seed (WAI_FUZZ_SEED, default 1) so that a run's result does
# not depend on the draw; open-ended campaigns: tools/fuzz.sh alone (docs/research/fuzzing.md)
WAI_FUZZ_SEED=${WAI_FUZZ_SEED:-1} run_counted "fuzz" test-logs/fuzz.log tools/fuzz.sh "${WAI_FUZZ_SECONDS:-30}"

# 5. cross builds (tools/cross-check.sh: vectors under every kernel set, checkasm, unit tests)
[ "${WAI_SKIP_CROSS:-0}" = 1 ] || run_counted "cross (qemu)" test-logs/cross.log tools/cross-check.sh

# 5b. the browser decoder (tests/web.sh: WebAssembly with emscripten, Node, headless Chromium)
[ "${WAI_SKIP_WEB:-0}" = 1 ] || run_counted "web (wasm, chromium)" test-logs/web.log tests/web.sh

# 6. planted faults
[ "${WAI_SKIP_PLANTED:-0}" = 1 ] || run_counted "planted faults" test-logs/planted.log tools/planted-faults.sh

# 7. Debian packages (tests/debian-packages.sh): last, because while they are installed the system
# plugin would shadow the build tree's; the script purges them again, even on failure
[ "${WAI_SKIP_DEBIAN:-0}" = 1 ] || run_counted "debian packages" test-logs/debian.log \
    env WAI_DEB_LOG_DIR="$root/test-logs" tests/debian-packages.sh

printf '%5d s  %s\n' $((SECONDS - run_t0)) "all (after install-deps)" >> test-logs/stage-times.txt
echo "== seconds per stage (test-logs/stage-times.txt):"; cat test-logs/stage-times.txt
[ -z "$cross_note" ] || echo "== $cross_note"
[ -z "$failures" ] || echo "failing stages:$failures (logs in test-logs/)"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ -z "$failures" ]
