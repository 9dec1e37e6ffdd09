#!/bin/bash
# Source-based line and branch coverage (clang -fprofile-instr-generate -fcoverage-mapping,
# llvm-profdata, llvm-cov) that fuzz corpora reach in libwai-core, gst-wai and FFmpeg's WAI
# files. A tool, not a CI stage.
#   tools/fuzz-coverage.sh CORPUS_DIR
# CORPUS_DIR is what `WAI_FUZZ_CORPUS=CORPUS_DIR tools/fuzz.sh` keeps: decode/ stream/ model/
# rans/ gstparse/, ff/dem, ff/dec (FFmpeg 5.1) and ff71/dem, ff71/dec (7.1). Builds build-cov/
# (clang, coverage, static libwai, no sanitizers; the fuzz targets linked with the replay driver
# tests/fuzz/main.c) and, unless WAI_SKIP_FFMPEG=1, FFmpeg's fuzzers with coverage
# (tests/fuzz/ffmpeg/build.sh COVERAGE=1, replayed with -runs=0): those of 5.1 where CORPUS_DIR
# has ff/, those of 7.1 where it has ff71/ (not with WAI_SKIP_FFMPEG71=1). Prints one line per
# part; the merged profile and llvm-cov's per-file table stay in build-cov/coverage/ (the 7.1
# targets' in merged-7.1.profdata and report-7.1.txt: a profile of their own).
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
# cov_ffmpeg SERIES CORPUS: FFmpeg's fuzzers of SERIES with coverage, replayed on CORPUS/{dem,dec}.
# The 7.1 profiles are kept apart (raw71/, objs71): both series' builds compile
# src/libavcodec/libwai.c etc. from their build dirs, so their functions have the same profile
# names, and one merged profile would add the two series' counts together.
objs71=()
mkdir -p "$out/raw71"
cov_ffmpeg() {
    local ffz f t c raw=$out/raw
    [ "$1" = 7.1 ] && raw=$out/raw71
    if ffz=$(FFMPEG_SERIES=$1 COVERAGE=1 WAI_FUZZ_BUILD=$PWD/$bdir timeout 3600 tests/fuzz/ffmpeg/build.sh); then
        for f in $ffz; do
            t=$(basename "$f"); case $t in target_dem_*) c=dem ;; *) c=dec ;; esac
            [ -d "$2/$c" ] || continue
            LLVM_PROFILE_FILE="$raw/$t-%p.profraw" timeout 3600 "$f" -runs=0 "$2/$c" >/dev/null 2>&1 ||
                echo "note: $t ($1) exited non-zero on its corpus" >&2
            echo "replayed $t ($1): $(ls "$2/$c" | wc -l) inputs"
            if [ "$1" = 7.1 ]; then objs71+=("$f"); else objs+=("$f"); fi
        done
    else
        echo "note: the FFmpeg $1 coverage build failed; its files are not reported" >&2
    fi
}
if [ "${WAI_SKIP_FFMPEG:-0}" != 1 ]; then
    # each series where the corpus has its targets' dirs (WAI_SKIP_FFMPEG71=1 leaves 7.1 out)
    [ ! -d "$corp/ff" ] || cov_ffmpeg 5.1 "$corp/ff"
    [ "${WAI_SKIP_FFMPEG71:-0}" = 1 ] || [ ! -d "$corp/ff71" ] || cov_ffmpeg 7.1 "$corp/ff71"
fi
# report TAG RAWDIR OBJ...: merged$TAG.profdata, report$TAG.txt, summary$TAG.json in $out
report() {
    local tag=$1 raw=$2 args; shift 2
    llvm-profdata-14 merge -sparse "$raw"/*.profraw -o "$out/merged$tag.profdata" || exit 1
    args=("$1"); shift; for o in "$@"; do args+=(-object "$o"); done
    llvm-cov-14 report "${args[@]}" -instr-profile="$out/merged$tag.profdata" > "$out/report$tag.txt"
    llvm-cov-14 export "${args[@]}" -instr-profile="$out/merged$tag.profdata" -summary-only \
        > "$out/summary$tag.json" || exit 1
}
# summary JSON PART...: one line per part (libwai-core, libwai-core-less-encoder, gst-wai, ffmpeg)
summary() {
    python3 - "$@" <<'PY'
import json, sys
files = json.load(open(sys.argv[1]))['data'][0]['files']
waifiles = ('libavformat/waidec.c', 'libavcodec/libwai.c', 'libavcodec/wai_parser.c')
parts = {'libwai-core': ('libwai-core', lambda f: '/libwai-core/src/' in f),
         'libwai-core-less-encoder': ('libwai-core less encoder.c',
             lambda f: '/libwai-core/src/' in f and not f.endswith('/encoder.c')),
         'gst-wai': ('gst-wai', lambda f: '/gst-wai/' in f and '/tests/' not in f),
         'ffmpeg': ('FFmpeg 5.1 wai files', lambda f: f.endswith(waifiles)),
         'ffmpeg71': ('FFmpeg 7.1 wai files', lambda f: f.endswith(waifiles))}
for key in sys.argv[2:]:
    name, sel = parts[key]
    fs = [f for f in files if sel(f['filename'])]
    if not fs:
        print(f'{name}: no files in the profile'); continue
    s = lambda k, v: sum(f['summary'][k][v] for f in fs)
    lc, lt, bc, bt = s('lines', 'covered'), s('lines', 'count'), s('branches', 'covered'), s('branches', 'count')
    print(f'{name}: lines {lc}/{lt} ({100*lc/max(lt,1):.1f}%), branches {bc}/{bt} ({100*bc/max(bt,1):.1f}%), {len(fs)} files')
PY
}
if [ ${#objs[@]} -gt 0 ]; then
    report "" "$out/raw" "${objs[@]}"
    summary "$out/summary.json" libwai-core libwai-core-less-encoder gst-wai ffmpeg || exit 1
    echo "per-file table: $out/report.txt"
fi
if [ ${#objs71[@]} -gt 0 ]; then
    report -7.1 "$out/raw71" "${objs71[@]}"
    summary "$out/summary-7.1.json" ffmpeg71 || exit 1
    echo "per-file table (FFmpeg 7.1 targets): $out/report-7.1.txt"
fi
