#!/bin/sh
# Play every conformance vector and the real-content corpus in Debian's mpv on the patched
# FFmpeg libraries, headless, and check the decoded bytes.
#
#   tests/ffmpeg/mpv.sh
#
# Uses the FFmpeg 5.1 build of tests/ffmpeg/run.sh (run it first): Debian 12's mpv 0.35 links
# libavformat.so.59 / libavcodec.so.59, the sonames of that build, so run as
# `$FFMPEG_WORK/bin/with-wai-ffmpeg mpv ...` (that build's library path first, for mpv alone),
# mpv demuxes .wai with the series' wai demuxer and decodes with its libwai wrapper. Per stream of vectors/manifest.txt and vectors/corpus/manifest.txt:
#   raw    mpv --o=OUT.rgb --of=rawvideo --ovc=rawvideo --vf=format=rgb24 (mpv's encoding
#          mode: every frame once, through mpv's own decoder and filter chain): the pinned
#          SHA-256 and size
#   image  mpv --vo=image --vo-image-format=png (mpv's video output, one lossless PNG per frame
#          shown), the PNGs read back with the patched ffmpeg: the pinned SHA-256
#   seek   streams of 3 frames or more: --start half way into a frame: the frames from the next
#          one (mpv starts at the first frame at or after --start), against the tail of "raw"
# Vectors find their models in $WAI_PREFIX/share/wai/models and $WAI_BUILD/tools (or embedded),
# the corpus its frozen model through WAI_MODEL_PATH=CORPUS alone.
# Prints "mpv: N passed, M failed".
#
# Environment: WAI_EXT_BUILD, WAI_BUILD, WAI_PREFIX, FFMPEG_WORK as for run.sh
# (tests/ffmpeg/dirs.sh); VECTORS (default <repo>/vectors), CORPUS (default
# <repo>/vectors/corpus; a missing manifest skips it); KEEP=1 keeps the temporary directory.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/ffmpeg/dirs.sh"    # WAI_BUILD, WAI_PREFIX, FFMPEG_WORK
VECTORS=${VECTORS:-$ROOT/vectors}
CORPUS=${CORPUS:-$ROOT/vectors/corpus}
TMP=$(mktemp -d /tmp/wai-mpv-test.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$TMP"' EXIT

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() {
    echo "mpv: $pass passed, $fail failed"
    [ "$fail" -eq 0 ] && exit 0
    exit 1
}

if ! command -v mpv >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mpv \
            >"$TMP/apt.log" 2>&1 || { bad "installing mpv: $(tail -n 3 "$TMP/apt.log")"; finish; }
    else
        bad "needs mpv (apt-get install mpv)"; finish
    fi
fi
[ -f "$FFMPEG_WORK/env.sh" ] && [ -f "$FFMPEG_WORK/install/lib/libavformat.so.59" ] ||
    { bad "no FFmpeg 5.1 build in $FFMPEG_WORK (run tests/ffmpeg/run.sh first)"; finish; }
# mpv gets the build as the README says: through the build's wrapper with-wai-ffmpeg (the
# library path for that one command); a build older than the wrapper: its env.sh
WRAP=$FFMPEG_WORK/bin/with-wai-ffmpeg
if [ ! -x "$WRAP" ]; then
    WRAP=""
    WAI_FFMPEG_ENV_QUIET=1 . "$FFMPEG_WORK/env.sh"
fi
FF="$FFMPEG_WORK/install/bin/ffmpeg -nostdin -hide_banner -v error"
# (mpv plays .wai only on the patched libraries: Debian's libavformat has no wai demuxer)
WAI_MODEL_PATH="$WAI_PREFIX/share/wai/models:$WAI_BUILD/tools"
export WAI_MODEL_PATH
$WRAP mpv --no-config --version >"$TMP/version" 2>&1
ver=$(sed -n 's/^FFmpeg version: //p' "$TMP/version")
MPV="timeout 300 $WRAP mpv --no-config --no-audio --msg-level=all=error"

sha() { sha256sum | cut -d' ' -f1; }
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }

# check DIR MANIFEST LABEL: every stream of MANIFEST (in DIR)
check() {
    while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
        case "$file" in ''|'#'*) continue ;; esac
        v=$1/$file
        n=$3${file%.wai}
        w=${dims%x*}; h=${dims#*x}
        fsize=$((w * h * 3))
        rm -f "$TMP/raw.rgb"
        $MPV --o="$TMP/raw.rgb" --of=rawvideo --ovc=rawvideo --vf=format=rgb24 "$v" >"$TMP/err" 2>&1; rc=$?
        got=$(sha <"$TMP/raw.rgb" 2>/dev/null); size=$(wc -c <"$TMP/raw.rgb" 2>/dev/null || echo 0)
        if [ $rc -eq 0 ] && [ "$got" = "$hash" ] && [ "$size" -eq $((frames * fsize)) ]; then
            ok "$n mpv raw ($frames frames $dims, sha256 matches)"
        else
            bad "$n mpv raw: rc=$rc bytes=$size (want $((frames * fsize))) sha256=$got want $hash; $(head -c 300 "$TMP/err")"
        fi

        rm -rf "$TMP/img"; mkdir "$TMP/img"
        $MPV --vo=image --vo-image-format=png --vo-image-png-compression=0 \
            --vo-image-outdir="$TMP/img" "$v" >"$TMP/err" 2>&1; rc=$?
        shown=$(ls "$TMP/img" | wc -l)
        got=$($FF -i "$TMP/img/%08d.png" -f rawvideo -pix_fmt rgb24 - 2>>"$TMP/err" | sha)
        if [ $rc -eq 0 ] && [ "$shown" -eq "$frames" ] && [ "$got" = "$hash" ]; then
            ok "$n mpv --vo=image ($shown PNGs, sha256 matches)"
        else
            bad "$n mpv --vo=image: rc=$rc, $shown PNGs (want $frames), sha256=$got; $(head -c 300 "$TMP/err")"
        fi

        if [ "$frames" -ge 3 ] && [ -s "$TMP/raw.rgb" ]; then
            fnum=$(u32 "$v" 36); fden=$(u32 "$v" 40)
            k=$((frames / 2))
            ss=$(awk -v n="$fnum" -v d="$fden" -v k="$k" 'BEGIN { printf "%.6f", (k - 0.5) * d / n }')
            want=$(tail -c $(((frames - k) * fsize)) "$TMP/raw.rgb" | sha)
            rm -f "$TMP/seek.rgb"
            $MPV --start="$ss" --o="$TMP/seek.rgb" --of=rawvideo --ovc=rawvideo --vf=format=rgb24 "$v" \
                >"$TMP/err" 2>&1
            got=$(sha <"$TMP/seek.rgb" 2>/dev/null)
            [ "$got" = "$want" ] && ok "$n mpv seek (--start=$ss: frames $k..$((frames - 1)))" ||
                bad "$n mpv seek --start=$ss: $(($(wc -c <"$TMP/seek.rgb" 2>/dev/null || echo 0) / fsize)) frames, sha256=$got want $want; $(head -c 300 "$TMP/err")"
        fi
    done <"$2"
}

echo "== $(head -n 1 "$TMP/version"), FFmpeg $ver from $FFMPEG_WORK/install/lib${WRAP:+ (through $WRAP)}"
if [ -f "$VECTORS/manifest.txt" ]; then
    check "$VECTORS" "$VECTORS/manifest.txt" ""
else
    bad "no $VECTORS/manifest.txt"
fi
if [ -f "$CORPUS/manifest.txt" ]; then
    WAI_MODEL_PATH=$CORPUS
    check "$CORPUS" "$CORPUS/manifest.txt" "corpus/"
else
    echo "note: no $CORPUS/manifest.txt: the real-content corpus is not played"
fi
finish
