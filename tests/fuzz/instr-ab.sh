#!/bin/bash
# What coverage instrumentation of libwai-core costs in executions: fuzz_stream and fuzz_decode
# from the fuzz build (tools/fuzz.sh's build-fuzz, library instrumented) against the same
# targets from a build with -Dfuzz_lib_coverage=false (only the harnesses instrumented), 30 s
# each, same seeds and -seed=1, alternating, ROUNDS rounds. Prints one line per run.
#   tests/fuzz/instr-ab.sh [ROUNDS]      (default 2; needs build-fuzz, makes build-fuzz-nolib)
set -u
cd "$(dirname "$0")/../.."
rounds=${1:-2}
[ -d build-fuzz-nolib ] || CC=clang meson setup build-fuzz-nolib -Dfuzzing=true -Dfuzz_lib_coverage=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dgstreamer=disabled -Dvulkan=disabled \
    -Dc_args=-fno-sanitize-recover=all >/dev/null || exit 1
ninja -C build-fuzz-nolib tests/fuzz/fuzz_stream tests/fuzz/fuzz_decode >/dev/null || exit 1
ninja -C build-fuzz tests/fuzz/fuzz_stream tests/fuzz/fuzz_decode tools/wai-micro-n8m8.whm tools/wai-mkvectors >/dev/null || exit 1
export WAI_MODEL_PATH=$PWD/build-fuzz/tools ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/micro"
build-fuzz/tools/wai-mkvectors --model build-fuzz/tools/wai-micro-n8m8.whm --out-dir "$work/micro" >/dev/null 2>&1
for round in $(seq 1 "$rounds"); do
    for t in stream decode; do
        for b in build-fuzz build-fuzz-nolib; do
            rm -rf "$work/c"; mkdir -p "$work/c"
            if [ $t = stream ]; then cp vectors/*.wai "$work/c/"; else cp "$work"/micro/*.wai "$work/c/"; fi
            out=$($b/tests/fuzz/fuzz_$t -max_total_time=30 -max_len=262144 -seed=1 \
                -dict=tests/fuzz/wai.dict -print_final_stats=1 "$work/c" 2>&1)
            n=$(echo "$out" | sed -n 's/^stat::number_of_executed_units: *//p')
            echo "round $round fuzz_$t $b: $n executions in 30 s (load $(cut -d' ' -f1 /proc/loadavg))"
        done
    done
done
