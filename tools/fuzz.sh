#!/bin/bash
# Build the libFuzzer targets (clang, ASan + UBSan) and run each for a bounded time on its seed
# corpus. Any crash, leak or sanitizer report fails. Prints executions per target and ends with
# "fuzz: N passed, M failed".
#   tools/fuzz.sh [SECONDS_PER_TARGET]     (default 60)
set -u
cd "$(dirname "$0")/.."
secs=${1:-60}
bdir=build-fuzz
if [ ! -d $bdir ]; then
    CC=clang meson setup $bdir -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Dgstreamer=disabled -Dc_args=-fno-sanitize-recover=all >/dev/null || exit 1
fi
ninja -C $bdir tests/fuzz/fuzz_decode tests/fuzz/fuzz_stream tests/fuzz/fuzz_model \
    tests/fuzz/fuzz_rans tools/wai-tiny-n64m96.whm tools/wai-micro-n8m8.whm tools/wai-mkvectors >/dev/null || exit 1
export WAI_MODEL_PATH=$PWD/$bdir/tools
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{decode,stream,model,rans}
# decode seeds: the vector set remade with the micro model (same structure, ~1000x cheaper to
# decode than the tiny model, so the fuzzer gets far more executions per second)
$bdir/tools/wai-mkvectors --model $bdir/tools/wai-micro-n8m8.whm --out-dir "$work/decode" 2>/dev/null > /dev/null
cp vectors/*.wai "$work/stream/"
[ -d tests/fuzz/corpus-model ] && cp tests/fuzz/corpus-model/* "$work/model/" 2>/dev/null
cp $bdir/tools/wai-micro-n8m8.whm "$work/model/"
passed=0; failed=0
for t in decode stream model rans; do
    case $t in model) maxlen=4194304 ;; *) maxlen=262144 ;; esac
    log=$work/$t.log
    $bdir/tests/fuzz/fuzz_$t -max_total_time="$secs" -max_len=$maxlen -rss_limit_mb=2048 \
        -timeout=30 -dict=tests/fuzz/wai.dict -print_final_stats=1 "$work/$t" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    if [ $rc -eq 0 ]; then
        echo "PASS fuzz_$t: ${execs:-?} executions in ${secs}s, no findings"; passed=$((passed + 1))
    else
        echo "FAIL fuzz_$t (rc $rc):"; grep -E "ERROR|SUMMARY|runtime error" "$log" | head -5
        mkdir -p fuzz-findings; cp "$log" fuzz-findings/; cp crash-* leak-* timeout-* oom-* fuzz-findings/ 2>/dev/null
        failed=$((failed + 1))
    fi
done
rm -f crash-* leak-* timeout-* oom-*
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
