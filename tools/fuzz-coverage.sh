#!/bin/bash
# Source-based line and branch coverage (clang -fprofile-instr-generate -fcoverage-mapping,
# llvm-profdata, llvm-cov) that fuzz corpora reach in libwai-core, gst-wai and FFmpeg's WAI
# files. A tool, not a CI stage.
#   tools/fuzz-coverage.sh CORPUS_DIR
# CORPUS_DIR is what `WAI_FUZZ_CORPUS=CORPUS_DIR tools/fuzz.sh` keeps: decode/ stream/ model/
# rans/ gstparse/ and ff/dem, ff/dec. Builds build-cov/ (clang, coverage, static libwai, no
# sanitizers; the fuzz targets linked with the replay driver tests/fuzz/main.c) and, unless
# WAI_SKIP_FFMPEG=1, FFmpeg's fuzzers with coverage (tests/fuzz/ffmpeg/build.sh COVERAGE=1,
# replayed with -runs=0). Prints one line per part; the merged profile and llvm-cov's per-file
# table stay in build-cov/coverage/.
set -u
cd "$(dirname "$0")/.."
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: tools/fuzz-coverage.sh CORPUS_DIR" >&2; exit 2; }
corp=$(cd "$1" && pwd)
bdir=build-cov
flags="-fprofile-instr-generate -fcoverage-mapping"
# the build runs instrumented generators (wai-mkmodel ...): their profiles are not wanted
export LLVM_PROFILE_FILE=/dev/null
if [ ! -d $bdir ]; then
    CC=clang meson setup $bdir -Ddefault_library=static -Dgstreamer=auto -Dvulkan=disabled \
        -Dc_args="$flags" -Dc_link_args="$flags" >/dev/null || exit 1
fi
targets="decode stream model rans ana"
ninja -C $bdir -t targets all 2>/dev/null | grep -q '^tests/fuzz/fuzz_gstparse:' && targets="$targets gstparse"
ninja -C $bdir $(for t in $targets; do echo tests/fuzz/fuzz_$t; done) \
    tools/wai-micro-n8m8.whm tools/wai-tiny-n64m96.whm >/dev/null || exit 1
out=$PWD/$bdir/coverage
rm -rf "$out"; mkdir -p "$out/raw"
export WAI_MODEL_PATH=$PWD/$bdir/tools
objs=()
for t in $targets; do
    [ -d "$corp/$t" ] || { echo "no corpus $corp/$t" >&2; continue; }
    n=$(ls "$corp/$t" | wc -l)
    LLVM_PROFILE_FILE="$out/raw/$t-%p.profraw" timeout 3600 $bdir/tests/fuzz/fuzz_$t "$corp/$t" >/dev/null 2>&1 ||
        echo "note: fuzz_$t exited non-zero on its corpus" >&2
    echo "replayed fuzz_$t: $n inputs"
    objs+=("$bdir/tests/fuzz/fuzz_$t")
done
if [ "${WAI_SKIP_FFMPEG:-0}" != 1 ]; then
    if ffz=$(COVERAGE=1 WAI_FUZZ_BUILD=$PWD/$bdir timeout 3600 tests/fuzz/ffmpeg/build.sh); then
        for f in $ffz; do
            t=$(basename "$f"); case $t in target_dem_*) c=dem ;; *) c=dec ;; esac
            [ -d "$corp/ff/$c" ] || continue
            LLVM_PROFILE_FILE="$out/raw/$t-%p.profraw" timeout 3600 "$f" -runs=0 "$corp/ff/$c" >/dev/null 2>&1 ||
                echo "note: $t exited non-zero on its corpus" >&2
            echo "replayed $t: $(ls "$corp/ff/$c" | wc -l) inputs"
            objs+=("$f")
        done
    else
        echo "note: the FFmpeg coverage build failed; FFmpeg's files are not reported" >&2
    fi
fi
llvm-profdata-14 merge -sparse "$out"/raw/*.profraw -o "$out/merged.profdata" || exit 1
args=("${objs[0]}"); for o in "${objs[@]:1}"; do args+=(-object "$o"); done
llvm-cov-14 report "${args[@]}" -instr-profile="$out/merged.profdata" > "$out/report.txt"
llvm-cov-14 export "${args[@]}" -instr-profile="$out/merged.profdata" -summary-only > "$out/summary.json" || exit 1
python3 - "$out/summary.json" <<'PY'
import json, sys
files = json.load(open(sys.argv[1]))['data'][0]['files']
parts = [('libwai-core', lambda f: '/libwai-core/src/' in f),
         ('libwai-core less encoder.c', lambda f: '/libwai-core/src/' in f and not f.endswith('/encoder.c')),
         ('gst-wai', lambda f: '/gst-wai/' in f and '/tests/' not in f),
         ('FFmpeg wai files', lambda f: f.endswith(('libavformat/waidec.c', 'libavcodec/libwai.c',
                                                    'libavcodec/wai_parser.c')))]
for name, sel in parts:
    fs = [f for f in files if sel(f['filename'])]
    if not fs:
        print(f'{name}: no files in the profile'); continue
    s = lambda k, v: sum(f['summary'][k][v] for f in fs)
    lc, lt, bc, bt = s('lines', 'covered'), s('lines', 'count'), s('branches', 'covered'), s('branches', 'count')
    print(f'{name}: lines {lc}/{lt} ({100*lc/max(lt,1):.1f}%), branches {bc}/{bt} ({100*bc/max(bt,1):.1f}%), {len(fs)} files')
PY
echo "per-file table: $out/report.txt"
