#!/bin/bash
# Build the libFuzzer targets (clang, ASan + UBSan) and run each for a bounded time on its seed
# corpus. Any crash, leak or sanitizer report fails. Prints executions per target and ends with
# "fuzz: N passed, M failed". Targets: tests/fuzz/fuzz_* (libwai-core, and the GStreamer plugin
# where GStreamer is installed), then FFmpeg's target_dem_wai_fuzzer and target_dec_libwai_fuzzer
# on the 5.1 series and on the 7.1 one (named target_dem_wai_fuzzer-7.1, ...)
# (tests/fuzz/ffmpeg/build.sh; WAI_SKIP_FFMPEG=1 skips all four, WAI_SKIP_FFMPEG71=1 the 7.1
# ones; WAI_EXT_BUILD/FFMPEG_WORK/FFMPEG71_WORK/FUZZ_WORK/FUZZ71_WORK as there: by default in
# build-ext/ of the checkout).
#   tools/fuzz.sh [SECONDS_PER_TARGET]     (default 60)
set -u
cd "$(dirname "$0")/.."
secs=${1:-60}
bdir=build-fuzz
# GStreamer is on where it is installed (fuzz_gstparse); libgstreamer itself is not
# instrumented, the plugin's sources are (they are compiled into the target).
if [ ! -d $bdir ]; then
    CC=clang meson setup $bdir -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Dgstreamer=auto -Dc_args=-fno-sanitize-recover=all >/dev/null || exit 1
else
    meson configure $bdir -Dgstreamer=auto >/dev/null || exit 1   # older dirs had it disabled
fi
targets="decode stream model rans ana"
ninja -C $bdir -t targets all 2>/dev/null | grep -q '^tests/fuzz/fuzz_gstparse:' && targets="$targets gstparse"
# WAI_FUZZ_SEED=N fixes libFuzzer's seed (the CI stage does, so that its mutations are the
# same on every run; by default each run draws a new seed and explores further)
# WAI_FUZZ_TARGETS="decode ana ..." runs only those of the libwai/GStreamer targets
[ -n "${WAI_FUZZ_TARGETS:-}" ] && targets=$(for t in $targets; do case " $WAI_FUZZ_TARGETS " in *" $t "*) echo $t ;; esac; done)
ninja -C $bdir $(for t in $targets; do echo tests/fuzz/fuzz_$t; done) \
    tools/wai-tiny-n64m96.whm tools/wai-micro-n8m8.whm tools/wai-rule-rates.whm tools/wai-mkvectors \
    >/dev/null || exit 1
export WAI_MODEL_PATH=$PWD/$bdir/tools
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
work=$(mktemp -d); trap '[ -z "${ff71_pid:-}" ] || wait "$ff71_pid"; rm -rf "$work"' EXIT
# The FFmpeg 7.1 targets' build (tests/fuzz/ffmpeg/build.sh, minutes from nothing, more than
# half of it configure, one process at a time) starts now in the background with one make job
# (WAI_FUZZ_FF71_JOBS): each libFuzzer run below uses one core, so on two cores the build takes
# the other one and its time is mostly hidden behind the libwai, GStreamer and 5.1 targets.
ff71_pid=
if [ "${WAI_SKIP_FFMPEG:-0}" != 1 ] && [ "${WAI_SKIP_FFMPEG71:-0}" != 1 ]; then
    ( FFMPEG_SERIES=7.1 WAI_FUZZ_BUILD=$PWD/$bdir JOBS=${WAI_FUZZ_FF71_JOBS:-1} timeout 3600 \
          tests/fuzz/ffmpeg/build.sh > "$work/ff71.paths" 2> "$work/ffbuild-7.1.log"
      echo $? > "$work/ff71.rc" ) &
    ff71_pid=$!
fi
# WAI_FUZZ_CORPUS=DIR keeps the corpora (DIR/<target>/, seeds added to what is there) and the
# logs (DIR/logs/), for longer campaigns and tools/fuzz-coverage.sh; by default both are temporary
corp=${WAI_FUZZ_CORPUS:-$work}
mkdir -p "$corp" && corp=$(cd "$corp" && pwd)
mkdir -p "$corp"/{decode,stream,model,rans,ana,gstparse}
# decode seeds: the vector set remade with the micro model (same structure, ~1000x cheaper to
# decode than the tiny model, so the fuzzer gets far more executions per second)
# (and v20, WIH2 frames of the variable-rate model rule-rates, spec 1.1)
$bdir/tools/wai-mkvectors --model $bdir/tools/wai-micro-n8m8.whm --model $bdir/tools/wai-rule-rates.whm \
    --out-dir "$corp/decode" > /dev/null || { echo "fuzz: the decode seeds (wai-mkvectors) failed" >&2; exit 1; }
cp vectors/*.wai "$corp/stream/"
[ -d tests/fuzz/corpus-model ] && cp tests/fuzz/corpus-model/* "$corp/model/" 2>/dev/null
cp $bdir/tools/wai-micro-n8m8.whm "$corp/model/"
cp $bdir/tools/wai-rule-rates.whm "$corp/model/"     # a RATES model (flags bit 0, rate table)
# ana: a small .ana (float analysis weights) for the micro model
python3 tests/fuzz/mkana.py $bdir/tools/wai-micro-n8m8.whm "$corp/ana/micro.ana" || exit 1
python3 tests/fuzz/mkana.py $bdir/tools/wai-micro-n8m8.whm "$corp/ana/micro-f16.ana" --f16 || exit 1
# gstparse: the micro vectors as they are (every mode on each), and some with a control prefix
# (byte 0: mode and options, byte 1: chunking seed; tests/fuzz/fuzz_gstparse.c)
cp "$corp"/decode/v*.wai "$corp/gstparse/"
for v in "$corp"/decode/v0[19]*.wai "$corp"/decode/v10*.wai; do
    [ -f "$v" ] || continue
    for c in 0100 0103 0205 0307 0412 1331 2609; do
        { printf "\\x${c:0:2}\\x${c:2:2}"; cat "$v"; } > "$corp/gstparse/$c-$(basename "$v")"
    done
done
passed=0; failed=0
# run_target NAME BINARY CORPUS MAXLEN: fuzz for $secs seconds, PASS/FAIL line
run_target() {
    local log=$work/$1.log rc execs
    "$2" -max_total_time="$secs" ${WAI_FUZZ_SEED:+-seed=$WAI_FUZZ_SEED} -max_len="$4" -rss_limit_mb=2048 -timeout=30 \
        -dict=tests/fuzz/wai.dict -print_final_stats=1 "$3" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    [ -n "${WAI_FUZZ_CORPUS:-}" ] && mkdir -p "$corp/logs" && cp "$log" "$corp/logs/"
    if [ $rc -eq 0 ]; then
        echo "PASS $1: ${execs:-?} executions in ${secs}s, no findings"; passed=$((passed + 1))
    else
        echo "FAIL $1 (rc $rc):"; grep -E "ERROR|SUMMARY|runtime error|^fuzz_[a-z]+:" "$log" | head -5
        mkdir -p fuzz-findings; cp "$log" fuzz-findings/; cp crash-* leak-* timeout-* oom-* fuzz-findings/ 2>/dev/null
        failed=$((failed + 1))
    fi
}
[ -z "${WAI_FUZZ_TARGETS:-}" ] && [ "$targets" = "${targets% gstparse}" ] && echo "SKIP fuzz_gstparse: not built (no GStreamer / gstreamer-check-1.0)"
for t in $targets; do
    case $t in model) maxlen=4194304 ;; ana) maxlen=1048576 ;; *) maxlen=262144 ;; esac
    run_target fuzz_$t $bdir/tests/fuzz/fuzz_$t "$corp/$t" $maxlen
done

# FFmpeg's own fuzz targets (tools/target_dem_fuzzer.c, tools/target_dec_fuzzer.c) on the
# patched FFmpeg, linked with this build's libwai (tests/fuzz/ffmpeg/build.sh; the source is
# the one the FFmpeg test stage fetched): the 5.1 series, then the 7.1 one. Skipped with
# WAI_SKIP_FFMPEG=1 (both) or WAI_SKIP_FFMPEG71=1 (7.1 only), like those stages.
# run_ffmpeg SERIES SUFFIX CORPUS: build the two targets of SERIES (7.1: wait for the build
# started above) and fuzz each
run_ffmpeg() {
    local ffz f t c ok=1
    if [ "$1" = 7.1 ]; then
        wait "$ff71_pid"; ff71_pid=
        ffz=$(cat "$work/ff71.paths"); [ "$(cat "$work/ff71.rc" 2>/dev/null)" = 0 ] || ok=0
    else
        ffz=$(FFMPEG_SERIES=$1 WAI_FUZZ_BUILD=$PWD/$bdir timeout 3600 tests/fuzz/ffmpeg/build.sh \
            2> "$work/ffbuild$2.log") || ok=0
    fi
    if [ $ok = 0 ]; then
        echo "FAIL ffmpeg $1 fuzz targets do not build:"; tail -5 "$work/ffbuild$2.log"
        mkdir -p fuzz-findings; cp "$work/ffbuild$2.log" fuzz-findings/
        failed=$((failed + 1))
        return
    fi
    python3 tests/fuzz/ffmpeg/mkseeds.py "$3" "$corp"/decode/v*.wai || exit 1
    for f in $ffz; do
        t=$(basename "$f")
        case $t in target_dem_*) c=dem ;; *) c=dec ;; esac
        run_target "$t$2" "$f" "$3/$c" 262144
    done
}
if [ "${WAI_SKIP_FFMPEG:-0}" = 1 ]; then
    echo "SKIP ffmpeg fuzz targets (WAI_SKIP_FFMPEG=1)"
else
    run_ffmpeg 5.1 "" "$corp/ff"
    if [ "${WAI_SKIP_FFMPEG71:-0}" = 1 ]; then
        echo "SKIP ffmpeg 7.1 fuzz targets (WAI_SKIP_FFMPEG71=1)"
    else
        run_ffmpeg 7.1 -7.1 "$corp/ff71"
    fi
fi
rm -f crash-* leak-* timeout-* oom-*
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
