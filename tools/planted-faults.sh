#!/bin/bash
# Build the suite once per planted fault (meson option -Dplanted_fault=NAME, never set in a
# normal build) and run the test that must catch it. A fault is "caught" when that test fails.
# Lists every fault and ends with "planted: N passed, M failed" (passed = caught).
#   tools/planted-faults.sh [NAME...]      (default: every line of tests/planted-faults.txt)
set -u
cd "$(dirname "$0")/.."
list=tests/planted-faults.txt
bdir=${WAI_PLANTED_BUILD:-build-planted}   # another build directory (set up here if missing)
[ -d "$bdir" ] || meson setup "$bdir" -Dgstreamer=enabled > /dev/null || exit 1
caught=0; missed=0; skipped=0
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(awk '!/^#/ && NF { print $1 }' "$list")
for name in "${names[@]}"; do
    t=$(awk -v n="$name" '$1 == n { print $2 }' "$list")
    case "$t" in
        test_*) mtest=${t#test_} ;;
        tests/ffmpeg/*)
            # needs the FFmpeg stage's installed libwai-core (tools/run-tests.sh runs it first)
            # (its libwai-core prefix, as tests/ffmpeg/dirs.sh names it: default build-ext/libwai-prefix)
            if [ ! -d "$(ROOT=$PWD; . tests/ffmpeg/dirs.sh; echo "$WAI_PREFIX")" ] || [ "${WAI_SKIP_FFMPEG:-0}" = 1 ]; then
                echo "SKIP $name: needs the FFmpeg stage (tests/ffmpeg/run.sh) first"; skipped=$((skipped + 1)); continue
            fi
            if PLANTED_FAULT=$name "$t" > "$bdir/planted-$name-test.log" 2>&1; then
                echo "FAIL $name: NOT caught by $t"; missed=$((missed + 1))
            else
                echo "PASS $name: caught by $t"; caught=$((caught + 1))
            fi
            continue ;;
        asan:*)
            # a leak: an ASan+UBSan clang build with the fault (build-planted-asan), the test run
            # as tools/run-tests.sh's sanitizer stage runs it (Vulkan drivers preloaded)
            mtest=${t#asan:}; adir=${WAI_PLANTED_ASAN_BUILD:-build-planted-asan}
            . tools/asan-env.sh
            if [ ! -d "$adir" ] && ! CC=clang meson setup "$adir" -Db_lundef=false \
                    "${asan_meson_opts[@]}" > "$bdir/planted-$name.log" 2>&1; then
                echo "FAIL $name: ASan build does not set up"; missed=$((missed + 1)); continue
            fi
            meson configure "$adir" -Dplanted_fault="$name" > /dev/null
            if ! ninja -C "$adir" >> "$bdir/planted-$name.log" 2>&1; then
                echo "FAIL $name: does not build"; missed=$((missed + 1)); continue
            fi
            if asan_env meson test -C "$adir" --no-rebuild --timeout-multiplier 4 "$mtest" \
                    > "$bdir/planted-$name-test.log" 2>&1; then
                echo "FAIL $name: NOT caught by $mtest under ASan"; missed=$((missed + 1))
            elif grep -q "LeakSanitizer: detected memory leaks" "$adir/meson-logs/testlog.txt"; then
                echo "PASS $name: caught by $mtest under ASan (LeakSanitizer)"; caught=$((caught + 1))
            else
                echo "FAIL $name: $mtest failed under ASan, but not by a leak report"; missed=$((missed + 1))
            fi
            meson configure "$adir" -Dplanted_fault= > /dev/null
            continue ;;
        tests/web.sh)
            # a fault in the WebAssembly set: a wasm build with the fault, checkasm under Node
            if ! command -v emcc > /dev/null || ! command -v node > /dev/null; then
                echo "SKIP $name: needs emscripten and node (tools/install-deps.sh)"; skipped=$((skipped + 1)); continue
            fi
            if tests/web.sh --planted "$name" > "$bdir/planted-$name-test.log" 2>&1; then
                echo "PASS $name: caught by checkasm under Node (simd128)"; caught=$((caught + 1))
            else
                echo "FAIL $name: NOT caught (see $bdir/planted-$name-test.log)"; missed=$((missed + 1))
            fi
            continue ;;
        tools/cross-check.sh)
            # a fault in a set x86-64 does not build (NEON): an aarch64 cross build with the
            # fault, checkasm under qemu (about 40 s; WAI_SKIP_CROSS=1 skips it)
            if [ "${WAI_SKIP_CROSS:-0}" = 1 ] || ! command -v aarch64-linux-gnu-gcc > /dev/null; then
                echo "SKIP $name: needs the cross tools (WAI_SKIP_CROSS=1 or not installed)"; skipped=$((skipped + 1)); continue
            fi
            if tools/cross-check.sh --planted "$name" > "$bdir/planted-$name-test.log" 2>&1; then
                echo "PASS $name: caught by checkasm under qemu-aarch64"; caught=$((caught + 1))
            else
                echo "FAIL $name: NOT caught (see $bdir/planted-$name-test.log)"; missed=$((missed + 1))
            fi
            continue ;;
        *) mtest=$t ;;
    esac
    meson configure $bdir -Dplanted_fault="$name" > /dev/null
    if ! ninja -C $bdir > "$bdir/planted-$name.log" 2>&1; then
        echo "FAIL $name: does not build"; missed=$((missed + 1)); continue
    fi
    if meson test -C $bdir --no-rebuild "$mtest" > "$bdir/planted-$name-test.log" 2>&1; then
        echo "FAIL $name: NOT caught by $mtest"; missed=$((missed + 1))
    else
        echo "PASS $name: caught by $mtest"; caught=$((caught + 1))
    fi
done
meson configure $bdir -Dplanted_fault= > /dev/null
echo "planted: $caught passed, $missed failed ($skipped skipped)"
[ $missed -eq 0 ]
