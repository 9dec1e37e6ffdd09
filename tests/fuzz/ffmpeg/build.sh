#!/bin/sh
# FFmpeg's own libFuzzer targets on the WAI patch series: tools/target_dem_fuzzer.c for the wai
# demuxer (target_dem_wai_fuzzer, which also probes and decodes through libwai) and
# tools/target_dec_fuzzer.c for the libwai decoder wrapper (target_dec_libwai_fuzzer, with the
# wai parser when the input's flags ask for it), on a minimal static clang ASan+UBSan build.
# Either series: Debian 12's FFmpeg 5.1 with ffmpeg-patches/00*.patch (the default), or
# Debian 13's FFmpeg 7.1 with ffmpeg-patches/7.1/00*.patch (FFMPEG_SERIES=7.1).
#
#   tests/fuzz/ffmpeg/build.sh
#   FFMPEG_SERIES=7.1 tests/fuzz/ffmpeg/build.sh
#
# Prints the two fuzzer paths on success. Environment (all optional):
#   FFMPEG_SERIES   5.1 (default) or 7.1, as for ffmpeg-patches/build.sh
#   FFMPEG_WORK     ffmpeg-patches/build.sh work dir whose src/ (Debian's FFmpeg 5.1 + the
#                   series) is reused; fetched and patched here with FETCH_ONLY=1 if needed
#                   (default $WAI_EXT_BUILD/ffmpeg, what tests/ffmpeg/run.sh uses)
#   FFMPEG71_WORK   the same for the 7.1 series (default $WAI_EXT_BUILD/ffmpeg-7.1; a missing
#                   7.1 source is fetched as the 7.1 test stage does: ffmpeg-patches/build.sh
#                   adds a trixie deb-src entry when apt has none)
#   FUZZ_WORK       where the 5.1 configuration is built (default $WAI_EXT_BUILD/ffmpeg-fuzz)
#   FUZZ71_WORK     where the 7.1 configuration is built (default $WAI_EXT_BUILD/ffmpeg71-fuzz)
#   WAI_EXT_BUILD   the folder of the FFmpeg builds     (default <repo>/build-ext, git ignores
#                   it; tests/ffmpeg/dirs.sh)
#   WAI_FUZZ_BUILD  the libwai fuzz build (tools/fuzz.sh's, clang ASan+UBSan, instrumented)
#                   whose libwai.so the fuzzers link   (default <repo>/build-fuzz)
#   JOBS            make -j (default 2)
#   COVERAGE=1      no sanitizers: clang source-based coverage (-fprofile-instr-generate
#                   -fcoverage-mapping) for tools/fuzz-coverage.sh, linked with a static libwai
#                   from WAI_FUZZ_BUILD (then tools/fuzz-coverage.sh's build-cov); FUZZ_WORK
#                   defaults to $WAI_EXT_BUILD/ffmpeg-cov, FUZZ71_WORK to
#                   $WAI_EXT_BUILD/ffmpeg71-cov
set -eu
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
. "$ROOT/tests/ffmpeg/dirs.sh"    # WAI_EXT_BUILD, FFMPEG_WORK, FFMPEG71_WORK
COVERAGE=${COVERAGE:-0}
SERIES=${FFMPEG_SERIES:-5.1}
case $SERIES in
5.1) SRC_WORK=$FFMPEG_WORK
     if [ "$COVERAGE" = 1 ]; then FUZZ_WORK=${FUZZ_WORK:-$WAI_EXT_BUILD/ffmpeg-cov}; else FUZZ_WORK=${FUZZ_WORK:-$WAI_EXT_BUILD/ffmpeg-fuzz}; fi
     # Workaround 3 (Debian 5.1.9): Debian's security update backported a limit for
     # AV_CODEC_ID_RTV1 into tools/target_dec_fuzzer.c, but that codec id only exists in later
     # FFmpeg, so the fuzzer does not compile; the name is defined to a value no codec has.
     FIXES=-DAV_CODEC_ID_RTV1=0x7ffffff0 ;;
7.1) SRC_WORK=$FFMPEG71_WORK
     if [ "$COVERAGE" = 1 ]; then FUZZ_WORK=${FUZZ71_WORK:-$WAI_EXT_BUILD/ffmpeg71-cov}; else FUZZ_WORK=${FUZZ71_WORK:-$WAI_EXT_BUILD/ffmpeg71-fuzz}; fi
     # 7.1 has AV_CODEC_ID_RTV1 (a -D of it would break the codec id enum): no workaround 3
     FIXES= ;;
*) echo "tests/fuzz/ffmpeg/build.sh: FFMPEG_SERIES must be 5.1 or 7.1, not '$SERIES'" >&2; exit 1 ;;
esac
FUZZ_WORK=$(wai_abs_dir "$FUZZ_WORK")
WAI_FUZZ_BUILD=${WAI_FUZZ_BUILD:-$ROOT/build-fuzz}
JOBS=${JOBS:-2}
mkdir -p "$FUZZ_WORK/build" "$FUZZ_WORK/pkgconfig"
LOG=$FUZZ_WORK/build.log
: >"$LOG"
die() { echo "tests/fuzz/ffmpeg/build.sh: $* (log: $LOG)" >&2; tail -n 20 "$LOG" >&2; exit 1; }

# the patched source (no FFmpeg build of its own)
FFMPEG_SERIES=$SERIES FETCH_ONLY=1 "$ROOT/ffmpeg-patches/build.sh" "$SRC_WORK" >>"$LOG" 2>&1 ||
    die "fetching the FFmpeg $SERIES source failed"
SRC=$SRC_WORK/src

# libwai: the instrumented shared library of the fuzz build, through a pkg-config file
[ -f "$WAI_FUZZ_BUILD/build.ninja" ] || die "no libwai fuzz build in $WAI_FUZZ_BUILD (tools/fuzz.sh makes it)"
ver=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$ROOT/meson.build" | head -n 1)
lib=libwai-core/libwai.so.$ver
[ "$COVERAGE" = 1 ] && lib=libwai-core/libwai.a
ninja -C "$WAI_FUZZ_BUILD" "$lib" tools/wai-micro-n8m8.whm tools/wai-tiny-n64m96.whm \
    >>"$LOG" 2>&1 || die "building libwai failed"
LIBDIR=$(cd "$WAI_FUZZ_BUILD/libwai-core" && pwd)
cat >"$FUZZ_WORK/pkgconfig/wai.pc" <<PC
Name: wai
Description: WAI decoder (fuzz build)
Version: $ver
Libs: -L$LIBDIR -lwai -Wl,-rpath,$LIBDIR -lnettle -lz -lpthread -lm
Cflags: -I$ROOT/libwai-core/include -I$LIBDIR/include
PC
export PKG_CONFIG_PATH=$FUZZ_WORK/pkgconfig

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
INSTR="-fsanitize=fuzzer-no-link"
if [ "$COVERAGE" = 1 ]; then SAN="-fprofile-instr-generate -fcoverage-mapping"; INSTR=; fi
# Not --enable-ossfuzz: its test for -fsanitize= in CFLAGS does not see --extra-cflags, so it
# adds -fsanitize-coverage=trace-pc-guard, which clang 14's libFuzzer refuses at start. The
# fuzzer make targets need only --libfuzzer.
# Workaround 4 (FFmpeg 5.1, 7.1): target_dec_fuzzer.c's `#if FFMPEG_DECODER == tiff || ... tdsc`
# compares undefined identifiers, which the preprocessor takes as 0 == 0, so for every decoder
# it links ff_mjpeg_decoder into codec_list[1]: the mjpeg decoder is enabled (it also keeps
# codec_list NULL-terminated: libwai, mjpeg, NULL).
# (Workaround 3, 5.1 only, is $FIXES: see above.) The fuzzer sources of 7.1 need workarounds 1,
# 2 and 4 as well: its target_dec_fuzzer.c still writes codec_list[0] and codec_list[1] and has
# the same #if, and its target_dem_fuzzer.c takes the demuxer as an FFInputFormat, which the
# 7.1 series' ff_wai_demuxer is.
set -- \
    --cc=clang --cxx=clang++ --ld=clang \
    --optflags=-O1 \
    --extra-cflags="$SAN $INSTR -g $FIXES" \
    --extra-ldflags="$SAN" \
    --libfuzzer=-fsanitize=fuzzer \
    --enable-static --disable-shared \
    --disable-programs --disable-doc --disable-autodetect --disable-everything \
    --disable-avdevice --disable-avfilter --disable-swscale --disable-swresample --disable-postproc \
    --disable-x86asm --disable-inline-asm \
    --enable-pthreads \
    --enable-libwai \
    --enable-decoder=libwai,mjpeg --enable-parser=wai --enable-demuxer=wai --enable-protocol=file
# configure records the pkg-config flags (libwai's directory): a new checkout reconfigures
args="$* $(cd "$SRC" && git rev-parse HEAD) $LIBDIR"
cd "$FUZZ_WORK/build"
if [ "$(cat .configure-args 2>/dev/null || true)" != "$args" ] || [ ! -f config.h ]; then
    "$SRC/configure" "$@" >>"$LOG" 2>&1 || { tail -n 30 ffbuild/config.log >>"$LOG" 2>/dev/null; die "configure failed"; }
    printf '%s' "$args" >.configure-args
fi
grep -q '^#define CONFIG_LIBWAI_DECODER 1' config_components.h || die "libwai decoder not enabled"

# Workaround 1 (FFmpeg 5.1, 7.1): target_dec_fuzzer.c declares `extern const FFCodec *codec_list[]`
# and stores the decoder under test into codec_list[0], but configure generates
# libavcodec/codec_list.c (included by allcodecs.c) as `static const FFCodec * const`, so the
# fuzzer does not link. oss-fuzz builds patch the same; here the generated list is made an
# external, writable array (configure rewrites it only when the component list changes).
sed -i 's/^static const FFCodec \* const codec_list\[\]/const FFCodec * codec_list[]/' libavcodec/codec_list.c

# Workaround 2: in an out-of-tree build nothing creates tools/ before the fuzzer objects are
# compiled into it (the normal tools depend on the directory, the fuzzers do not).
mkdir -p tools
make -j"$JOBS" tools/target_dec_libwai_fuzzer tools/target_dem_wai_fuzzer >>"$LOG" 2>&1 || die "make failed"
echo "$FUZZ_WORK/build/tools/target_dec_libwai_fuzzer"
echo "$FUZZ_WORK/build/tools/target_dem_wai_fuzzer"
