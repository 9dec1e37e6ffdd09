#!/bin/bash
# The cross stage (bounded, run by tools/run-tests.sh every time): full meson cross builds for
# aarch64 (the NEON kernel set) and i386 (32-bit x86), every target program run under qemu
# user emulation through the cross files' exe_wrapper (tools/cross/*.txt), and the tests that
# differ by architecture:
#   - every conformance vector under every kernel set the target has (aarch64: reference, c,
#     neon; i386: reference, and c on WAI_CROSS_I386_C_VECTORS, see below), each to the hashes
#     pinned in vectors/manifest.txt (x86-64's);
#   - the model generator and wai-mkvectors rewrite the pinned model and every vector byte for
#     byte (vectors-regenerate);
#   - checkasm (every set against the reference) with WAI_CROSS_ITERS iterations (default 20;
#     the x86 stage runs 60);
#   - the unit tests of the integer code: common rans model ops graph payload stream api, the
#     public headers, the stream and model fuzz seeds (i386: api only natively, see below).
# Where the kernel runs 32-bit programs natively (here, once libc6:i386 is installed), i386
# also runs test_api and decodes every vector under both sets natively (seconds).
# Wall time here (2 vCPUs shared with other jobs, load 3-6): ~6 min for both targets
# (docs/research/cross.md).
# Not here (x86-64 covers them, and under qemu they cost minutes): samples (the trained
# model: ~500 s), encoder and cli-encode, cli, fuzz-corpus-decode (the vectors again),
# vectors with automatic kernels and threads. `meson test -C build-cross-ARCH` runs those too.
#
#   tools/cross-check.sh                  the stage; ends "cross: N passed, M failed"
#   tools/cross-check.sh --planted NAME   build aarch64 with -Dplanted_fault=NAME and run
#                                         checkasm on the NEON set under qemu; exit 0 = caught
#                                         (tools/planted-faults.sh runs it for neon_* faults)
# Environment: WAI_CROSS_ARCHES (default "aarch64 i386"), WAI_CROSS_ITERS (default 20),
# WAI_CROSS_I386_C_VECTORS (vector names, or "all").
# Needs gcc-aarch64-linux-gnu, gcc-12-multilib, qemu-user-static and the arm64/i386 zlib,
# nettle and libpng dev packages (tools/install-deps.sh installs them unless WAI_SKIP_CROSS=1).
set -u
cd "$(dirname "$0")/.." || exit 2
opts=(-Dgstreamer=disabled -Dvulkan=disabled)
logs=test-logs
mkdir -p $logs

have_tools() {   # ARCH
    case $1 in
        aarch64) command -v aarch64-linux-gnu-gcc && command -v qemu-aarch64-static &&
                 [ -e /usr/lib/aarch64-linux-gnu/pkgconfig/zlib.pc ] ;;
        i386) command -v gcc-12 && command -v qemu-i386-static &&
              [ -e /usr/lib/i386-linux-gnu/pkgconfig/zlib.pc ] ;;
        *) false ;;
    esac > /dev/null
}

setup_build() {   # DIR ARCH [meson options...]: configure (once) and build everything
    local dir=$1 arch=$2; shift 2
    if [ ! -e "$dir/build.ninja" ]; then
        rm -rf "$dir"
        meson setup --cross-file "tools/cross/$arch.txt" "${opts[@]}" "$@" "$dir" > "$logs/$dir-setup.log" 2>&1 ||
            { tail -20 "$logs/$dir-setup.log"; return 1; }
    fi
    return 0
}

if [ "${1:-}" = --planted ]; then
    name=${2:?usage: cross-check.sh --planted NAME}
    have_tools aarch64 || { echo "cross planted $name: aarch64 cross tools missing"; exit 2; }
    dir=build-cross-aarch64-planted
    setup_build $dir aarch64 || { echo "FAIL $name: cannot configure"; exit 2; }
    meson configure $dir -Dplanted_fault="$name" > /dev/null || exit 2
    if ! ninja -C $dir tests/checkasm > $logs/$dir-build.log 2>&1; then
        tail -20 $logs/$dir-build.log; echo "FAIL $name: does not build"; exit 2
    fi
    # the fault is in the NEON set; a few iterations reach every tile edge
    if meson test -C $dir --no-rebuild checkasm --test-args '--set neon --iters 4' \
            > $logs/$dir-test.log 2>&1; then
        echo "FAIL $name: NOT caught by checkasm (neon, qemu-aarch64)"; exit 1
    fi
    grep -E '^ *neon .*FAILED' $dir/meson-logs/testlog.txt | head -5
    echo "PASS $name: caught by checkasm (neon, qemu-aarch64)"
    exit 0
fi

iters=${WAI_CROSS_ITERS:-20}
passed=0; failed=0
common="common rans model ops graph payload stream api public-header public-header-encoder
  fuzz-corpus-stream fuzz-corpus-model vectors-reference vectors-regenerate"
# The C set on i386 is x87 code, which qemu emulates in software: ~7 CPU-s per frame whatever
# its size, ~11 min for all vectors on a loaded machine. The stage decodes these with it
# ("all": every vector); docs/research/cross.md records a run over all of them.
i386_c=${WAI_CROSS_I386_C_VECTORS:-v02-1x1 v05-tall-17x300 v06-window-96x80}
for arch in ${WAI_CROSS_ARCHES:-aarch64 i386}; do
    t0=$(date +%s)
    dir=build-cross-$arch
    tests=$common
    [ "$arch" = aarch64 ] && tests="$tests vectors-c vectors-neon"
    [ "$arch" = i386 ] && [ "$i386_c" = all ] && tests="$tests vectors-c"
    # test_api on i386 decodes with the C set whatever WAI_KERNELS says: > 5 min under qemu;
    # it runs natively below where the kernel can
    [ "$arch" = i386 ] && [ "$i386_c" != all ] && tests=${tests/ api / }
    if ! have_tools "$arch"; then
        echo "FAIL $arch: cross compiler, qemu or the $arch dev packages missing (tools/install-deps.sh)"
        failed=$((failed + 1)); continue
    fi
    if ! setup_build "$dir" "$arch" || ! ninja -C "$dir" > "$logs/$dir-build.log" 2>&1; then
        tail -20 "$logs/$dir-build.log" 2>/dev/null; echo "FAIL $arch: build"
        failed=$((failed + 1)); continue
    fi
    for run in "tests" "checkasm"; do
        if [ $run = tests ]; then
            # i386 under qemu: automatic kernels mean the reference set in these tests (the C
            # set's x87 code runs ~75x slower emulated; test_api alone took > 120 s);
            # checkasm and vectors-c below check the C set
            kenv=(); [ "$arch" = i386 ] && kenv=(WAI_KERNELS=reference)
            # shellcheck disable=SC2086
            env "${kenv[@]}" meson test -C "$dir" --no-rebuild --num-processes 2 \
                --timeout-multiplier 4 $tests > "$logs/$dir-test.log" 2>&1
        else
            meson test -C "$dir" --no-rebuild --timeout-multiplier 4 checkasm \
                --test-args "--iters $iters" > "$logs/$dir-checkasm.log" 2>&1
        fi
        log=$logs/$dir-$([ $run = tests ] && echo test || echo checkasm).log
        sed -n 's/^ *[0-9]*\/[0-9]* wai:[a-z]* \/ \([^ ]*\) *\([A-Z]*\) .*/\2 \1/p' "$log" |
            while read -r res t; do
                case $res in OK) echo "PASS $arch $t" ;; SKIP) echo "SKIP $arch $t" ;; *) echo "FAIL $arch $t ($res)" ;; esac
            done
        ok=$(sed -n 's/^Ok: *\([0-9]*\)/\1/p' "$log" | tail -1)
        bad=$(( $(sed -n 's/^Fail: *\([0-9]*\)/\1/p' "$log" | tail -1 | grep . || echo 0) +
                $(sed -n 's/^Timeout: *\([0-9]*\)/\1/p' "$log" | tail -1 | grep . || echo 0) ))
        if [ -z "$ok" ]; then echo "FAIL $arch $run: meson test did not run"; tail -5 "$log"; bad=$((bad + 1)); ok=0; fi
        passed=$((passed + ok)); failed=$((failed + bad))
    done
    if [ "$arch" = i386 ] && [ "$i386_c" != all ]; then
        # vectors.sh (as meson's vectors-c) on a manifest of the chosen vectors
        sub=$dir/vectors-subset
        rm -rf "$sub"; mkdir -p "$sub"
        grep '^#' vectors/manifest.txt > "$sub/manifest.txt"
        for v in v02-1x1 $i386_c; do   # vectors.sh probes the set with v02-1x1
            [ -e "$sub/$v.wai" ] && continue
            ln -s "$PWD/vectors/$v.wai" "$sub/$v.wai"
            grep "^$v.wai " vectors/manifest.txt >> "$sub/manifest.txt"
        done
        if WAI_MODEL_PATH=$PWD/$dir/tools tests/vectors.sh "$dir/tests/wai-wrapped" "$sub/manifest.txt" \
                --kernels c --threads 2 > "$logs/$dir-vectors-c.log" 2>&1; then
            echo "PASS $arch vectors-c ($(grep -c '^PASS' "$logs/$dir-vectors-c.log") vectors)"; passed=$((passed + 1))
        else
            echo "FAIL $arch vectors-c (see $logs/$dir-vectors-c.log)"; failed=$((failed + 1))
        fi
    fi
    if [ "$arch" = i386 ] && [ "$i386_c" != all ] && "$dir/tests/test_common" > /dev/null 2>&1; then
        # this kernel runs 32-bit programs itself (seconds, not qemu's minutes): every vector
        # under both sets on the real CPU's x87
        if WAI_MODEL_PATH=$PWD/$dir/tools WAI_SOURCE_ROOT=$PWD WAI_BUILD_ROOT=$PWD/$dir \
                "$dir/tests/test_api" > "$logs/$dir-native-api.log" 2>&1; then
            echo "PASS $arch api-native"; passed=$((passed + 1))
        else
            echo "FAIL $arch api-native (see $logs/$dir-native-api.log)"; failed=$((failed + 1))
        fi
        for k in c reference; do
            if WAI_MODEL_PATH=$PWD/$dir/tools tests/vectors.sh "$dir/tools/wai" vectors/manifest.txt \
                    --kernels $k --threads 2 > "$logs/$dir-native-$k.log" 2>&1; then
                echo "PASS $arch vectors-$k-native"; passed=$((passed + 1))
            else
                echo "FAIL $arch vectors-$k-native (see $logs/$dir-native-$k.log)"; failed=$((failed + 1))
            fi
        done
    fi
    echo "$arch: $(( $(date +%s) - t0 )) s (logs: $logs/$dir-*.log, $dir/meson-logs/testlog.txt)"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cross: $passed passed, $failed failed"
[ $failed -eq 0 ]
