#!/bin/sh
# End-to-end tests of the FFmpeg WAI patch series (ffmpeg-patches/) on the conformance vectors.
#
#   tests/ffmpeg/run.sh                      the FFmpeg 5.1 series (Debian 12's FFmpeg)
#   FFMPEG_SERIES=7.1 tests/ffmpeg/run.sh    the FFmpeg 7.1 series (Debian 13's FFmpeg)
#
# Builds libwai-core (meson, into a prefix), builds the patched FFmpeg with
# ffmpeg-patches/build.sh (FFMPEG_SERIES 5.1 or 7.1), then for every vector of vectors/manifest.txt
# (lines "<file> <sha256 of decoded RGB24> <frames> <W>x<H>") checks:
#   decode    ffmpeg -i V -f rawvideo -pix_fmt rgb24 -  has the pinned SHA-256 and size
#   pipe      the same from a pipe (probe without a file name, no index)
#   probe     ffprobe: codec wai, width, height, frame rate (from the header), nb_frames
#   png       single-frame vectors: ffmpeg -i V a.png, and the PNG decodes to the pinned hash
#   mkv       -c copy to Matroska and back decodes to the pinned hash
#   seek      vectors of 3+ frames: -ss 1.5 frame durations gives the frames from #2 on
#   corrupt   damaged header / payload / truncation: an error exit (1..127), never a crash
#             (payload damage: with -xerror; without it the other frames decode unchanged)
#   no model  a vector whose model is nowhere: an error exit, libwai's "model not found" logged
#             once (not twice, not as "Invalid sequence header")
# then encoding (libwai encoder, wai muxer; models/wai-q3.*): a PNG and raw RGB24 of 1, 3 and
# 21 frames to .wai, each decoded by the tree's CLI (wai decode --sha256) and by ffmpeg to the
# same bytes; header frame_count/size/rate; pipe output; -c copy; missing models fail cleanly;
# the muxer refuses a non-WAI stream;
# then the parser test, the scope of the build (tests/ffmpeg/env-check.sh: the wrappers
# ffmpeg-wai, ffprobe-wai, with-wai-ffmpeg work and leave the calling shell alone; env.sh says
# what the minimal build has, lacks and shadows, in words that agree with the build) and the
# FATE tests (make fate-libwai).
# Prints "ffmpeg: N passed, M failed"; exits 1 on any failure.
#
# Environment (all optional):
#   WAI_EXT_BUILD where the builds go               (default <repo>/build-ext, git ignores it)
#   WAI_BUILD     meson build dir of libwai-core   (default $WAI_EXT_BUILD/libwai)
#   WAI_PREFIX    where libwai-core is installed    (default $WAI_EXT_BUILD/libwai-prefix)
#   FFMPEG_SERIES 5.1 (default) or 7.1: which series (ffmpeg-patches/ or ffmpeg-patches/7.1/)
#   FFMPEG_WORK   ffmpeg-patches/build.sh work dir  (default $WAI_EXT_BUILD/ffmpeg)
#                 of the 5.1 series; FFMPEG71_WORK that of the 7.1 one ($WAI_EXT_BUILD/ffmpeg-7.1)
#                 (tests/ffmpeg/dirs.sh sets these defaults, for every script that uses them)
#   VECTORS       directory with manifest.txt       (default <repo>/vectors)
#   SKIP_BUILD=1  use the existing builds as they are
#   KEEP=1        keep the temporary directory
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/ffmpeg/dirs.sh"    # WAI_BUILD, WAI_PREFIX, FFMPEG_WORK, FFMPEG71_WORK
FFMPEG_SERIES=${FFMPEG_SERIES:-5.1}
case $FFMPEG_SERIES in
    5.1) ;;
    7.1) FFMPEG_WORK=$FFMPEG71_WORK ;;
    *) echo "FAIL FFMPEG_SERIES must be 5.1 or 7.1, not '$FFMPEG_SERIES'"; echo "ffmpeg: 0 passed, 1 failed"; exit 1 ;;
esac
echo "== FFmpeg $FFMPEG_SERIES series, work dir $FFMPEG_WORK"
VECTORS=${VECTORS:-$ROOT/vectors}
TMP=$(mktemp -d /tmp/wai-ffmpeg-test.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$TMP"' EXIT

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() {
    # a crash in a run that no check looked at is a failure too
    if [ -s "${SIGNALS:-/nonexistent}" ]; then
        bad "ffmpeg killed by a signal: $(head -c 300 "$SIGNALS")"; : >"$SIGNALS"
    fi
    echo "ffmpeg: $pass passed, $fail failed"
    [ "$fail" -eq 0 ] && exit 0
    exit 1
}

# --- builds ------------------------------------------------------------------------
build_libwai() {
    # a build dir left by a checkout elsewhere cannot be reused (meson would regenerate it
    # from that tree, maybe gone): start it anew; the install below overwrites the prefix
    local src
    src=$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$WAI_BUILD/meson-info/meson-info.json" 2>/dev/null | head -n 1)
    if [ -e "$WAI_BUILD" ] && [ "$src" != "$ROOT" ]; then
        echo "note: $WAI_BUILD was configured for ${src:-another tree}: removing it"
        rm -rf "$WAI_BUILD"
    fi
    [ -f "$WAI_BUILD/build.ninja" ] ||
        meson setup "$WAI_BUILD" "$ROOT" --prefix="$WAI_PREFIX" -Dgstreamer=disabled \
            >"$TMP/meson-setup.log" 2>&1 || { cat "$TMP/meson-setup.log"; return 1; }
    meson configure "$WAI_BUILD" -Dprefix="$WAI_PREFIX" >/dev/null 2>&1
    # The whole project, installed; if some other part does not build yet, only the
    # library and the models, with a hand-written wai.pc (the same contents).
    if ninja -C "$WAI_BUILD" -j2 >"$TMP/ninja.log" 2>&1 &&
       meson install -C "$WAI_BUILD" --no-rebuild >"$TMP/install.log" 2>&1; then
        return 0
    fi
    echo "note: full libwai-core build/install failed; installing only the library" >&2
    tail -n 5 "$TMP/ninja.log" >&2
    ver=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$ROOT/meson.build" | head -n 1)
    ninja -C "$WAI_BUILD" -j2 "libwai-core/libwai.so.$ver" tools/wai-tiny-n64m96.whm \
        >"$TMP/ninja-lib.log" 2>&1 || { tail -n 30 "$TMP/ninja-lib.log"; return 1; }
    lib="$WAI_PREFIX/lib"
    mkdir -p "$lib/pkgconfig" "$WAI_PREFIX/include/wai" "$WAI_PREFIX/share/wai/models"
    cp -P "$WAI_BUILD"/libwai-core/libwai.so* "$lib/"
    cp "$ROOT/libwai-core/include/wai/wai.h" "$WAI_BUILD/libwai-core/include/wai/version.h" \
        "$WAI_PREFIX/include/wai/"
    cp "$WAI_BUILD"/tools/*.whm "$WAI_PREFIX/share/wai/models/" 2>/dev/null
    cat >"$lib/pkgconfig/wai.pc" <<EOF
prefix=$WAI_PREFIX
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: wai
Description: WAI integer-exact learned image/video decoder
Version: $ver
Libs: -L\${libdir} -lwai
Cflags: -I\${includedir}
EOF
}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    echo "== building libwai-core into $WAI_PREFIX"
    build_libwai || { bad "build libwai-core"; finish; }
    echo "== building FFmpeg $FFMPEG_SERIES in $FFMPEG_WORK (log: $FFMPEG_WORK/build.log)"
    FFMPEG_SERIES=$FFMPEG_SERIES WAI_PREFIX=$WAI_PREFIX "$ROOT/ffmpeg-patches/build.sh" "$FFMPEG_WORK" ||
        { bad "build ffmpeg"; finish; }
fi
[ -f "$FFMPEG_WORK/env.sh" ] || { bad "no FFmpeg build in $FFMPEG_WORK"; finish; }
. "$FFMPEG_WORK/env.sh"
# ffmpeg runs under a wrapper that tells a crash from an error exit: FFmpeg 7.x's ffmpeg exits
# with the low byte of a negative AVERROR (183 for AVERROR_INVALIDDATA, 254 for ENOENT), which
# the shell's $? cannot tell from 128 + a signal number. The wrapper passes the exit status on
# and writes the number of a signal that killed the program to $SIGNALS (see clean_fail).
SIGNALS=$TMP/signals; : >"$SIGNALS"
cat >"$TMP/nosig" <<'EOF'
#!/usr/bin/perl
my $r = system { $ARGV[0] } @ARGV;
if ($r == -1) { print STDERR "nosig: cannot run $ARGV[0]: $!\n"; exit 127; }
if ($r & 127) {
    my $f;
    print $f ($r & 127), " $ARGV[0]\n" if open($f, '>>', $ENV{WAI_TEST_SIGNALS});
    exit(128 + ($r & 127));
}
exit($r >> 8);
EOF
chmod +x "$TMP/nosig"
export WAI_TEST_SIGNALS="$SIGNALS"
FF="$TMP/nosig $FFMPEG_WORK/install/bin/ffmpeg -nostdin -hide_banner -v error"
FP="$FFMPEG_WORK/install/bin/ffprobe -hide_banner -v error"

# Models: the installed model directory and the build tree's (for vectors without an
# embedded model).
WAI_MODEL_PATH="$WAI_PREFIX/share/wai/models:$WAI_BUILD/tools${WAI_MODEL_PATH:+:$WAI_MODEL_PATH}"
export WAI_MODEL_PATH

# --- vectors ---------------------------------------------------------------------------
MANIFEST=$VECTORS/manifest.txt
if [ ! -f "$MANIFEST" ]; then
    # Not committed yet: generate them with the project's generator, if it builds.
    if ninja -C "$WAI_BUILD" -j2 tools/wai-mkvectors tools/wai-tiny-n64m96.whm >"$TMP/mkv.log" 2>&1 &&
       "$WAI_BUILD/tools/wai-mkvectors" --model "$WAI_BUILD/tools/wai-tiny-n64m96.whm" \
           --out-dir "$TMP/vectors" --manifest "$TMP/vectors/manifest.txt" >>"$TMP/mkv.log" 2>&1; then
        echo "note: no $MANIFEST; using vectors generated by wai-mkvectors"
        VECTORS=$TMP/vectors; MANIFEST=$VECTORS/manifest.txt
    else
        bad "no vectors ($MANIFEST) and wai-mkvectors failed"; finish
    fi
fi

sha() { sha256sum | cut -d' ' -f1; }
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }   # little-endian u32 at an offset
gcd() { a=$1; b=$2; while [ "$b" -ne 0 ]; do t=$((a % b)); a=$b; b=$t; done; echo "$a"; }
# no $FF run was killed by a signal since the last look ($SIGNALS, which this empties)
no_signal() { [ -s "$SIGNALS" ] || return 0; : >"$SIGNALS"; return 1; }
# rc of an $FF that must fail cleanly: nonzero, and not killed by a signal (5.1's ffmpeg exits
# with 1 or 69 here, 7.1's also with the low byte of the AVERROR: 183, ...)
clean_fail() { no_signal || return 1; [ "$1" -ne 0 ]; }
damage() {   # damage FILE OFFSET OUT: copy with one byte inverted
    cp "$1" "$3"
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$3" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
    case "$file" in ''|'#'*) continue ;; esac
    v=$VECTORS/$file
    n=${file%.wai}
    w=${dims%x*}; h=${dims#*x}
    fsize=$((w * h * 3))
    [ -f "$v" ] || { bad "$n: missing $v"; continue; }

    # decode
    $FF -i "$v" -f rawvideo -pix_fmt rgb24 - >"$TMP/$n.rgb" 2>"$TMP/$n.err"
    rc=$?
    got=$(sha <"$TMP/$n.rgb"); size=$(wc -c <"$TMP/$n.rgb")
    if [ $rc -eq 0 ] && [ "$got" = "$hash" ] && [ "$size" -eq $((frames * fsize)) ]; then
        ok "$n decode ($frames frames, sha256 matches)"
    else
        bad "$n decode: rc=$rc bytes=$size (want $((frames * fsize))) sha256=$got want $hash; $(head -c 300 "$TMP/$n.err")"
    fi

    # the same from a pipe
    got=$(cat "$v" | $FF -i - -f rawvideo -pix_fmt rgb24 - 2>"$TMP/$n.err" | sha)
    [ "$got" = "$hash" ] && ok "$n pipe" || bad "$n pipe: sha256=$got; $(head -c 300 "$TMP/$n.err")"

    # probe
    fnum=$(u32 "$v" 36); fden=$(u32 "$v" 40); g=$(gcd "$fnum" "$fden")
    want="codec_name=wai width=$w height=$h r_frame_rate=$((fnum / g))/$((fden / g)) nb_frames=$frames"
    got=$($FP -show_entries stream=codec_name,width,height,r_frame_rate,nb_frames \
          -of default=nw=1 "$v" 2>&1 | tr '\n' ' ' | sed 's/ $//')
    # ffprobe prints in its own order: compare as sets
    if [ "$(echo "$got" | tr ' ' '\n' | sort)" = "$(echo "$want" | tr ' ' '\n' | sort)" ]; then
        ok "$n probe ($want)"
    else
        bad "$n probe: got '$got', want '$want'"
    fi

    # png
    if [ "$frames" -eq 1 ]; then
        rm -f "$TMP/$n.png"
        if $FF -i "$v" "$TMP/$n.png" 2>"$TMP/$n.err" && [ -s "$TMP/$n.png" ]; then
            got=$($FF -i "$TMP/$n.png" -f rawvideo -pix_fmt rgb24 - 2>/dev/null | sha)
            [ "$got" = "$hash" ] && ok "$n png" || bad "$n png: decodes to $got"
        else
            bad "$n png: $(head -c 300 "$TMP/$n.err")"
        fi
    fi

    # Matroska round trip
    rm -f "$TMP/$n.mkv"
    if $FF -i "$v" -c copy "$TMP/$n.mkv" 2>"$TMP/$n.err"; then
        got=$($FF -i "$TMP/$n.mkv" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/$n.err" | sha)
        c=$($FP -show_entries stream=codec_name -of default=nw=1:nk=1 "$TMP/$n.mkv" 2>/dev/null)
        [ "$got" = "$hash" ] && [ "$c" = wai ] && ok "$n mkv" ||
            bad "$n mkv: codec '$c', decodes to $got; $(head -c 300 "$TMP/$n.err")"
    else
        bad "$n mkv: -c copy failed: $(head -c 300 "$TMP/$n.err")"
    fi

    # seek (uses the demuxer's index)
    if [ "$frames" -ge 3 ]; then
        ss=$(awk -v n="$fnum" -v d="$fden" 'BEGIN { printf "%.6f", 1.5 * d / n }')
        want=$(tail -c $(((frames - 2) * fsize)) "$TMP/$n.rgb" | sha)
        got=$($FF -ss "$ss" -i "$v" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/$n.err" | sha)
        [ "$got" = "$want" ] && ok "$n seek (-ss $ss: frames 2..)" || bad "$n seek: $(head -c 300 "$TMP/$n.err")"
    fi

    # damaged streams: clean error exits
    hdr=$(u32 "$v" 8)
    damage "$v" 16 "$TMP/bad-hdr.wai"                  # height byte: header CRC fails
    $FF -i "$TMP/bad-hdr.wai" -f null - >/dev/null 2>&1; rc=$?
    clean_fail $rc && ok "$n damaged header (rc=$rc)" || bad "$n damaged header: rc=$rc"

    damage "$v" $((hdr + 40)) "$TMP/bad-pay.wai"       # inside frame 0's payload
    $FF -i "$TMP/bad-pay.wai" -f null - >/dev/null 2>&1; rc1=$?
    $FF -xerror -i "$TMP/bad-pay.wai" -f null - >/dev/null 2>&1; rc2=$?
    clean_fail $rc2 && ok "$n damaged payload (rc=$rc1, -xerror rc=$rc2)" ||
        bad "$n damaged payload: rc=$rc1, -xerror rc=$rc2"

    if [ "$frames" -ge 2 ]; then   # the other frames still decode, to the same bytes
        want=$(tail -c $(((frames - 1) * fsize)) "$TMP/$n.rgb" | sha)
        got=$($FF -i "$TMP/bad-pay.wai" -f rawvideo -pix_fmt rgb24 - 2>/dev/null | sha)
        [ "$got" = "$want" ] && ok "$n damaged payload: frames 1.. intact" ||
            bad "$n damaged payload: the undamaged frames decode differently"
    fi

    total=$(wc -c <"$v")
    head -c $((total - 7)) "$v" >"$TMP/trunc.wai"      # last frame cut short
    $FF -xerror -i "$TMP/trunc.wai" -f null - >/dev/null 2>&1; rc=$?
    clean_fail $rc && ok "$n truncated (-xerror rc=$rc)" || bad "$n truncated: rc=$rc"
done <"$MANIFEST"

# Random garbage and an empty file
head -c 4096 /dev/urandom >"$TMP/garbage.wai"
$FF -f wai -i "$TMP/garbage.wai" -f null - >/dev/null 2>&1; rc=$?
clean_fail $rc && ok "garbage (rc=$rc)" || bad "garbage: rc=$rc"
: >"$TMP/empty.wai"
$FF -i "$TMP/empty.wai" -f null - >/dev/null 2>&1; rc=$?
clean_fail $rc && ok "empty file (rc=$rc)" || bad "empty file: rc=$rc"

# A stream whose model is nowhere (a vector whose model is not installed, its embedded copy
# refused, WAI_MODEL_PATH an empty dir): the open fails, and the log gives libwai's reason
# ("model not found") exactly once, not labelled an invalid sequence header. (ffmpeg opens
# the decoder twice per stream, in avformat_find_stream_info and for decoding: the wrapper
# used to log the failure of each, as "Invalid sequence header: model not found: ...".)
installed=$(for f in "$WAI_PREFIX"/share/wai/models/*.whm; do [ -f "$f" ] && sha <"$f"; done)
nomodel=
while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
    case "$file" in ''|'#'*) continue ;; esac
    msha=$(od -An -tx1 -j 52 -N 32 "$VECTORS/$file" | tr -d ' \n')
    printf '%s\n' "$installed" | grep -qx "$msha" || { nomodel=$file; break; }
done <"$MANIFEST"
if [ -z "$nomodel" ]; then
    bad "missing model: every vector's model is installed in $WAI_PREFIX/share/wai/models"
else
    mkdir -p "$TMP/no-models"
    WAI_MODEL_PATH=$TMP/no-models $FF -embedded_model 0 -i "$VECTORS/$nomodel" -f null - \
        >/dev/null 2>"$TMP/nomodel.err"; rc=$?
    n=$(grep -c "model not found" "$TMP/nomodel.err")
    if clean_fail $rc && [ "$n" -eq 1 ] && ! grep -q "Invalid sequence header" "$TMP/nomodel.err"; then
        ok "missing model ($nomodel, -embedded_model 0: rc=$rc, libwai's 'model not found' logged once)"
    else
        bad "missing model ($nomodel, -embedded_model 0): rc=$rc, 'model not found' in $n lines (want 1, no 'Invalid sequence header'): $(head -c 600 "$TMP/nomodel.err")"
    fi
fi

# --- real-content corpus (vectors/corpus/, issue 13 part 4) -------------------------------
# Photographs coded with the frozen conformance model (vectors/corpus/README.md), the model
# found through WAI_MODEL_PATH=CORPUS alone: every stream decodes to its pinned SHA-256 and
# size; ffprobe gives codec, size, frame rate and nb_frames (and, for a clip, nb_read_frames
# counted by decoding); a clip also seeks (-ss at 3/4 of frame 29 and of frame 55: the frames
# from 30 and from 56, as ffmpeg starts at the frame start nearest to -ss), decodes from a pipe
# and after -c copy to Matroska.
# CORPUS=DIR (default <repo>/vectors/corpus); a missing manifest skips this part.
CORPUS=${CORPUS:-$ROOT/vectors/corpus}
if [ -f "$CORPUS/manifest.txt" ]; then
    saved_model_path=$WAI_MODEL_PATH
    WAI_MODEL_PATH=$CORPUS
    while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
        case "$file" in ''|'#'*) continue ;; esac
        v=$CORPUS/$file
        n=corpus/${file%.wai}
        w=${dims%x*}; h=${dims#*x}
        fsize=$((w * h * 3))
        $FF -i "$v" -f rawvideo -pix_fmt rgb24 - >"$TMP/c.rgb" 2>"$TMP/c.err"; rc=$?
        got=$(sha <"$TMP/c.rgb"); size=$(wc -c <"$TMP/c.rgb")
        if [ $rc -eq 0 ] && [ "$got" = "$hash" ] && [ "$size" -eq $((frames * fsize)) ]; then
            ok "$n decode ($frames frames $dims, sha256 matches)"
        else
            bad "$n decode: rc=$rc bytes=$size (want $((frames * fsize))) sha256=$got want $hash; $(head -c 300 "$TMP/c.err")"
        fi
        if [ $((w * h)) -ge 8000000 ]; then
            # camera size (issue 24): the striped synthesis keeps the decode within 256 MiB
            kb=$(python3 "$ROOT/tests/peak-rss.py" $FF -i "$v" -f null -)
            [ "$kb" -le 262144 ] 2>/dev/null && ok "$n decode within 256 MiB (peak RSS $kb KiB)" ||
                bad "$n decode: peak RSS $kb KiB, more than 256 MiB"
        fi
        fnum=$(u32 "$v" 36); fden=$(u32 "$v" 40); g=$(gcd "$fnum" "$fden")
        want="codec_name=wai width=$w height=$h r_frame_rate=$((fnum / g))/$((fden / g)) nb_frames=$frames"
        count=""
        if [ "$frames" -gt 1 ]; then
            want="$want nb_read_frames=$frames"; count="-count_frames"
        fi
        got=$($FP $count -show_entries stream=codec_name,width,height,r_frame_rate,nb_frames${count:+,nb_read_frames} \
              -of default=nw=1 "$v" 2>&1 | tr '\n' ' ' | sed 's/ $//')
        if [ "$(echo "$got" | tr ' ' '\n' | sort)" = "$(echo "$want" | tr ' ' '\n' | sort)" ]; then
            ok "$n probe ($want)"
        else
            bad "$n probe: got '$got', want '$want'"
        fi
        [ "$frames" -ge 60 ] || continue
        for k in 29 55; do
            ss=$(awk -v n="$fnum" -v d="$fden" -v k="$k" 'BEGIN { printf "%.6f", (k + 0.75) * d / n }')
            want=$(tail -c $(((frames - k - 1) * fsize)) "$TMP/c.rgb" | sha)
            got=$($FF -ss "$ss" -i "$v" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/c.err" | sha)
            [ "$got" = "$want" ] && ok "$n seek (-ss $ss: frames $((k + 1))..$((frames - 1)))" ||
                bad "$n seek -ss $ss: $got, want $want; $(head -c 300 "$TMP/c.err")"
        done
        got=$(cat "$v" | $FF -i - -f rawvideo -pix_fmt rgb24 - 2>"$TMP/c.err" | sha)
        [ "$got" = "$hash" ] && ok "$n pipe" || bad "$n pipe: sha256=$got; $(head -c 300 "$TMP/c.err")"
        rm -f "$TMP/c.mkv"
        if $FF -i "$v" -c copy "$TMP/c.mkv" 2>"$TMP/c.err"; then
            got=$($FF -i "$TMP/c.mkv" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/c.err" | sha)
            [ "$got" = "$hash" ] && ok "$n mkv" || bad "$n mkv: decodes to $got; $(head -c 300 "$TMP/c.err")"
        else
            bad "$n mkv: -c copy failed: $(head -c 300 "$TMP/c.err")"
        fi
    done <"$CORPUS/manifest.txt"
    WAI_MODEL_PATH=$saved_model_path
else
    echo "note: no $CORPUS/manifest.txt: the real-content corpus is not played"
fi

# --- encoder (libwai) and muxer --------------------------------------------------------
# Inputs: the decoded RGB24 of the first single-frame vector (as a PNG) and of the first
# vector with 3+ frames (raw). Every .wai the encoder writes must decode with the tree's CLI
# (build/tools/wai) and through ffmpeg to the same bytes.
WAI_CLI=$WAI_BUILD/tools/wai
MODELS=$ROOT/models
WAI_MODEL_PATH="$MODELS:$WAI_MODEL_PATH"; export WAI_MODEL_PATH
pick() { awk -v c="$1" '!/^#/ && NF >= 4 && ((c == 1 && $3 == 1) || (c == 3 && $3 >= 3)) { print; exit }' "$MANIFEST"; }
cli_sha() { "$WAI_CLI" decode "$1" --sha256 2>"$TMP/cli.err"; }
ff_sha() { $FF -i "$1" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/ffdec.err" | sha; }
# enc_check NAME FILE FRAMES W H: the CLI and ffmpeg decode FILE to the same FRAMES pictures
enc_check() {
    a=$(cli_sha "$2"); b=$(ff_sha "$2")
    nb=$($FF -i "$2" -f rawvideo -pix_fmt rgb24 - 2>/dev/null | wc -c)
    if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$nb" -eq $(($3 * $4 * $5 * 3)) ]; then
        ok "$1 (wai decode = ffmpeg decode, $3 frames)"
    else
        bad "$1: wai decode '$a' ($(head -c 200 "$TMP/cli.err")), ffmpeg '$b' ($nb bytes); $(head -c 200 "$TMP/ffdec.err")"
    fi
}
if [ ! -x "$WAI_CLI" ]; then
    bad "encoder tests: no $WAI_CLI"
elif [ ! -f "$MODELS/wai-q3.whm" ] || [ ! -f "$MODELS/wai-q3.ana" ]; then
    bad "encoder tests: no $MODELS/wai-q3.whm/.ana"
else
    set -- $(pick 1); n1=${1%.wai}; d1=$4
    set -- $(pick 3); n3=${1%.wai}; f3=$3; d3=$4
    w1=${d1%x*}; h1=${d1#*x}; w3=${d3%x*}; h3=${d3#*x}

    # one picture: PNG in, explicit options
    rm -f "$TMP/src.png" "$TMP/e1.wai"
    if $FF -f rawvideo -pix_fmt rgb24 -s "$d1" -i "$TMP/$n1.rgb" "$TMP/src.png" 2>"$TMP/e.err" &&
       $FF -i "$TMP/src.png" -c:v libwai -quality 3 -model_dir "$MODELS" "$TMP/e1.wai" 2>"$TMP/e.err" &&
       [ "$(head -c 4 "$TMP/e1.wai")" = WAIS ]; then
        ok "encode png -> wai ($d1, $(wc -c <"$TMP/e1.wai") bytes)"
        enc_check "encode png decode" "$TMP/e1.wai" 1 "$w1" "$h1"
        [ "$(u32 "$TMP/e1.wai" 44)" = 1 ] && [ "$(u32 "$TMP/e1.wai" 12)x$(u32 "$TMP/e1.wai" 16)" = "$d1" ] &&
            ok "encode header (frame_count 1 written at the trailer, size $d1)" ||
            bad "encode header: frame_count $(u32 "$TMP/e1.wai" 44), size $(u32 "$TMP/e1.wai" 12)x$(u32 "$TMP/e1.wai" 16)"
        # the default encoder for .wai and the installed model dir give the same bytes
        rm -f "$TMP/e2.wai"
        $FF -i "$TMP/src.png" "$TMP/e2.wai" 2>"$TMP/e.err" && cmp -s "$TMP/e1.wai" "$TMP/e2.wai" &&
            ok "encode defaults (libwai, quality 3, installed models: same bytes)" ||
            bad "encode defaults: $(head -c 300 "$TMP/e.err")"
        # no global header: the header also rides in the first packet; the muxer drops it
        # there, and Matroska (header in CodecPrivate and in-band) decodes the same
        rm -f "$TMP/e9.wai" "$TMP/e9.mkv"
        $FF -i "$TMP/src.png" -c:v libwai -model_dir "$MODELS" -flags -global_header "$TMP/e9.wai" 2>"$TMP/e.err" &&
            $FF -i "$TMP/src.png" -c:v libwai -model_dir "$MODELS" -flags -global_header "$TMP/e9.mkv" 2>>"$TMP/e.err" &&
            cmp -s "$TMP/e1.wai" "$TMP/e9.wai" && [ "$(ff_sha "$TMP/e9.mkv")" = "$(cli_sha "$TMP/e1.wai")" ] &&
            ok "encode without global header (.wai same bytes, .mkv decodes the same)" ||
            bad "encode without global header: $(head -c 300 "$TMP/e.err")"
    else
        bad "encode png -> wai: $(head -c 300 "$TMP/e.err")"
    fi

    # several frames from raw RGB24, the frame rate into the header
    rm -f "$TMP/e3.wai"
    if $FF -f rawvideo -pix_fmt rgb24 -s "$d3" -framerate 30000/1001 -i "$TMP/$n3.rgb" \
           -c:v libwai -model_dir "$MODELS" "$TMP/e3.wai" 2>"$TMP/e.err"; then
        enc_check "encode raw $f3 frames" "$TMP/e3.wai" "$f3" "$w3" "$h3"
        got=$($FP -show_entries stream=nb_frames,r_frame_rate -of default=nw=1 "$TMP/e3.wai" 2>&1 | sort | tr '\n' ' ')
        [ "$got" = "nb_frames=$f3 r_frame_rate=30000/1001 " ] && [ "$(u32 "$TMP/e3.wai" 44)" = "$f3" ] &&
            ok "encode raw: probe ($got)" || bad "encode raw: probe '$got', frame_count $(u32 "$TMP/e3.wai" 44)"
        # to a pipe (not seekable): frame_count stays 0, the frame units are the same bytes
        hdr=$(u32 "$TMP/e3.wai" 8)
        $FF -f rawvideo -pix_fmt rgb24 -s "$d3" -framerate 30000/1001 -i "$TMP/$n3.rgb" \
            -c:v libwai -model_dir "$MODELS" -f wai - 2>"$TMP/e.err" >"$TMP/e4.wai"
        [ "$(u32 "$TMP/e4.wai" 44)" = 0 ] &&
            [ "$(tail -c +$((hdr + 1)) "$TMP/e4.wai" | sha)" = "$(tail -c +$((hdr + 1)) "$TMP/e3.wai" | sha)" ] &&
            [ "$(cli_sha "$TMP/e4.wai")" = "$(cli_sha "$TMP/e3.wai")" ] &&
            ok "encode to a pipe (frame_count 0, same frame units)" || bad "encode to a pipe: $(head -c 300 "$TMP/e.err")"
        # -c copy .wai -> .wai gives the same file
        rm -f "$TMP/e5.wai"
        $FF -i "$TMP/e3.wai" -c copy "$TMP/e5.wai" 2>"$TMP/e.err" && cmp -s "$TMP/e3.wai" "$TMP/e5.wai" &&
            ok "wai -c copy wai (same bytes)" || bad "wai -c copy wai: $(head -c 300 "$TMP/e.err")"
    else
        bad "encode raw $f3 frames: $(head -c 300 "$TMP/e.err")"
    fi

    # 21 frames: the frame_index runs on 0..20 (the demuxer's pts are the frame_index)
    for i in 1 2 3 4 5 6 7; do head -c $((3 * w3 * h3 * 3)) "$TMP/$n3.rgb"; done >"$TMP/long.rgb"
    rm -f "$TMP/e6.wai"
    if $FF -f rawvideo -pix_fmt rgb24 -s "$d3" -i "$TMP/long.rgb" -c:v libwai -model_dir "$MODELS" \
           "$TMP/e6.wai" 2>"$TMP/e.err"; then
        enc_check "encode 21 frames" "$TMP/e6.wai" 21 "$w3" "$h3"
        got=$($FP -show_entries packet=pts -of csv=p=0 "$TMP/e6.wai" 2>&1 | tr '\n' ' ')
        [ "$got" = "$(seq 0 20 | tr '\n' ' ')" ] && ok "encode 21 frames: frame_index 0..20" ||
            bad "encode 21 frames: pts '$got'"
    else
        bad "encode 21 frames: $(head -c 300 "$TMP/e.err")"
    fi

    # a missing model dir or quality: an error exit, never a crash
    $FF -i "$TMP/src.png" -c:v libwai -model_dir "$TMP/no-such-dir" "$TMP/e7.wai" >/dev/null 2>"$TMP/e.err"; rc=$?
    clean_fail $rc && grep -q "no-such-dir" "$TMP/e.err" && ok "encode missing model dir (rc=$rc)" ||
        bad "encode missing model dir: rc=$rc; $(head -c 300 "$TMP/e.err")"
    mkdir -p "$TMP/q3only"; ln -sf "$MODELS/wai-q3.whm" "$MODELS/wai-q3.ana" "$TMP/q3only/"
    $FF -i "$TMP/src.png" -c:v libwai -quality 4 -model_dir "$TMP/q3only" "$TMP/e8.wai" >/dev/null 2>"$TMP/e.err"; rc=$?
    clean_fail $rc && grep -q "Qualities with a model pair there: 3$" "$TMP/e.err" &&
        ok "encode quality 4 without its model (rc=$rc, names quality 3)" ||
        bad "encode quality 4 without its model: rc=$rc; $(head -c 300 "$TMP/e.err")"
    # rate control (issue 25): -target_frame_size with room for q5's frame and a change of
    # model from the header's quality 3 takes quality 5: the stream decodes as the CLI's q5
    # stream does; -target_psnr 999 takes the top quality; -b:v sizes frames at the frame
    # rate; two targets are an error
    top=$("$WAI_CLI" encode --list-qualities --model-dir "$MODELS" | tr -d ' ' | tr ',' '\n' | tail -n 1)
    if "$WAI_CLI" encode -q "$TMP/src.png" --quality 5 --model-dir "$MODELS" -o "$TMP/c5.wai" &&
       "$WAI_CLI" encode -q "$TMP/src.png" --quality "$top" --model-dir "$MODELS" -o "$TMP/ctop.wai"; then
        f5=$(wc -c <"$TMP/c5.wai")   # q5's frame unit + 96 bytes for the change of model
        $FF -v verbose -i "$TMP/src.png" -c:v libwai -model_dir "$MODELS" -target_frame_size "$f5" \
            "$TMP/r5.wai" 2>"$TMP/e.err"
        [ "$(cli_sha "$TMP/r5.wai")" = "$(cli_sha "$TMP/c5.wai")" ] &&
            grep -q "Rate control chose quality 5 (1 frame); 0 frames could not" "$TMP/e.err" &&
            ok "encode -target_frame_size $f5: quality 5, the CLI's q5 picture" ||
            bad "encode -target_frame_size $f5: $(grep -i 'rate control\|error' "$TMP/e.err" | head -c 300)"
        # its model changes after the header: ffmpeg decodes it, and -c copy keeps the change
        enc_check "encode -target_frame_size: a model change after the header" "$TMP/r5.wai" 1 "$w1" "$h1"
        $FF -i "$TMP/r5.wai" -c copy "$TMP/r5c.wai" 2>"$TMP/e.err" &&
            $FF -i "$TMP/r5.wai" -c copy "$TMP/r5c.mkv" 2>>"$TMP/e.err" &&
            [ "$(cli_sha "$TMP/r5c.wai")" = "$(cli_sha "$TMP/c5.wai")" ] &&
            [ "$(ff_sha "$TMP/r5c.mkv")" = "$(cli_sha "$TMP/c5.wai")" ] &&
            ok "-c copy of a stream whose model changes (.wai and .mkv decode the same)" ||
            bad "-c copy of a stream whose model changes: $(head -c 300 "$TMP/e.err")"
        $FF -v info -i "$TMP/src.png" -c:v libwai -model_dir "$MODELS" -target_psnr 999 "$TMP/rp.wai" 2>"$TMP/e.err"
        [ "$(cli_sha "$TMP/rp.wai")" = "$(cli_sha "$TMP/ctop.wai")" ] &&
            grep -q "chose quality $top (1 frame); 1 frame could not meet the target" "$TMP/e.err" &&
            ok "encode -target_psnr 999: the top quality ($top), reported" ||
            bad "encode -target_psnr 999: $(grep -i 'rate control\|error' "$TMP/e.err" | head -c 300)"
    else
        bad "encode rate control: the CLI's reference encodes failed"
    fi
    # a clip whose model changes (smooth, noise, noise, smooth, noise at a size that fits the
    # smooth picture at the top quality): ffmpeg decodes it as the CLI does, and a seek to
    # frame 2 (a noise frame whose model's header came before frame 1) gives frames 2..4: the
    # demuxer puts the header in force before the frame. Only the model pairs of $MODELS:
    # qualities that are rates of one model (quality files) change the rate, not the model,
    # so they would need no header between them
    mkdir -p "$TMP/pairs"
    for m in "$MODELS"/wai-q*.whm; do
        [ -f "${m%.whm}.ana" ] && ln -sf "$m" "${m%.whm}.ana" "$TMP/pairs/"
    done
    ptop=$("$WAI_CLI" encode --list-qualities --model-dir "$TMP/pairs" | tr -d ' ' | tr ',' '\n' | tail -n 1)
    head -c $((w1 * h1 * 3)) /dev/urandom > "$TMP/noise.rgb"
    cat "$TMP/$n1.rgb" "$TMP/noise.rgb" "$TMP/noise.rgb" "$TMP/$n1.rgb" "$TMP/noise.rgb" > "$TMP/mix.rgb"
    if "$WAI_CLI" encode -q "$TMP/src.png" --quality "$ptop" --model-dir "$TMP/pairs" -o "$TMP/cptop.wai" &&
       $FF -f rawvideo -pix_fmt rgb24 -s "$d1" -r 25 -i "$TMP/mix.rgb" -c:v libwai -model_dir "$TMP/pairs" \
           -target_frame_size "$(wc -c <"$TMP/cptop.wai")" "$TMP/mix.wai" 2>"$TMP/e.err"; then
        enc_check "encode a clip whose model changes" "$TMP/mix.wai" 5 "$w1" "$h1"
        nh=$("$WAI_CLI" info "$TMP/mix.wai" 2>/dev/null | grep -c '^sequence header')
        want=$($FF -i "$TMP/mix.wai" -f rawvideo -pix_fmt rgb24 - 2>/dev/null | tail -c $((3 * w1 * h1 * 3)) | sha)
        got=$($FF -ss 0.06 -i "$TMP/mix.wai" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/e.err" | sha)
        [ "$nh" -ge 3 ] && [ "$got" = "$want" ] &&
            ok "seek into a clip whose model changes ($nh sequence headers): frames 2..4" ||
            bad "seek into a clip whose model changes: $nh headers, $got, want $want; $(head -c 300 "$TMP/e.err")"
    else
        bad "encode a clip whose model changes: $(head -c 300 "$TMP/e.err")"
    fi
    # the same clip with every quality, at a size that fits the smooth picture at the top one:
    # where its frames take two rates of one variable-rate model (quality files) the rate
    # changes from frame to frame under one sequence header; ffmpeg decodes and seeks it as
    # the CLI decodes it
    if [ -f "$TMP/ctop.wai" ] &&
       $FF -f rawvideo -pix_fmt rgb24 -s "$d1" -r 25 -i "$TMP/mix.rgb" -c:v libwai -model_dir "$MODELS" \
           -target_frame_size "$(wc -c <"$TMP/ctop.wai")" "$TMP/mixr.wai" 2>"$TMP/e.err"; then
        enc_check "encode a clip whose quality changes at the top of the ladder" "$TMP/mixr.wai" 5 "$w1" "$h1"
        want=$($FF -i "$TMP/mixr.wai" -f rawvideo -pix_fmt rgb24 - 2>/dev/null | tail -c $((3 * w1 * h1 * 3)) | sha)
        got=$($FF -ss 0.06 -i "$TMP/mixr.wai" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/e.err" | sha)
        [ "$got" = "$want" ] && ok "seek into a clip whose quality changes at the top: frames 2..4" ||
            bad "seek into a clip whose quality changes at the top: $got, want $want; $(head -c 300 "$TMP/e.err")"
    else
        bad "encode a clip whose quality changes at the top: $(head -c 300 "$TMP/e.err")"
    fi
    # -b:v 400k at 25 fps: 2,000 bytes per frame (the header's change counted in its frame)
    if $FF -f rawvideo -pix_fmt rgb24 -s "$d3" -r 25 -i "$TMP/$n3.rgb" -c:v libwai -model_dir "$MODELS" \
           -b:v 400k "$TMP/rb.wai" 2>"$TMP/e.err"; then
        enc_check "encode -b:v 400k" "$TMP/rb.wai" "$f3" "$w3" "$h3"
        rbs=$(wc -c <"$TMP/rb.wai")
        { [ "$rbs" -le $((96 + f3 * 2000)) ] || grep -q "could not meet the target" "$TMP/e.err"; } &&
            ok "encode -b:v 400k: $rbs bytes for $f3 frames of 2,000" ||
            bad "encode -b:v 400k: $rbs bytes for $f3 frames of 2,000, target met"
    else
        bad "encode -b:v 400k: $(head -c 300 "$TMP/e.err")"
    fi
    $FF -i "$TMP/src.png" -c:v libwai -model_dir "$MODELS" -b:v 400k -target_psnr 30 "$TMP/r2.wai" \
        >/dev/null 2>"$TMP/e.err"; rc=$?
    clean_fail $rc && grep -q "Set one of -b:v, -target_frame_size and -target_psnr" "$TMP/e.err" &&
        ok "encode with two targets: an error (rc=$rc)" ||
        bad "encode with two targets: rc=$rc; $(head -c 300 "$TMP/e.err")"
    # the muxer takes one WAI video stream only (5.1: its init checks; 7.1: lavf's generic
    # check, FF_OFMT_FLAG_ONLY_DEFAULT_CODECS)
    $FF -f rawvideo -pix_fmt rgb24 -s 8x8 -i /dev/zero -frames:v 1 -c:v png -f wai "$TMP/e10.wai" \
        >/dev/null 2>"$TMP/e.err"; rc=$?
    clean_fail $rc && grep -Eq "Only one WAI video stream|supports only codec wai" "$TMP/e.err" &&
        ok "muxer refuses a PNG stream (rc=$rc)" || bad "muxer refuses a PNG stream: rc=$rc; $(head -c 300 "$TMP/e.err")"
fi

# --- parser ------------------------------------------------------------------------------
PT=$FFMPEG_WORK/wai-parser-test
if cc -O1 -o "$PT" "$ROOT/tests/ffmpeg/parser_test.c" \
      -I"$FFMPEG_WORK/install/include" -L"$FFMPEG_WORK/install/lib" \
      -Wl,-rpath,"$FFMPEG_WORK/install/lib" -lavcodec -lavutil 2>"$TMP/pt.err"; then
    while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
        case "$file" in ''|'#'*) continue ;; esac
        out=$("$PT" "$VECTORS/$file" "$frames" 2>&1) && ok "${file%.wai} parser ($out)" ||
            bad "${file%.wai} parser: $out"
    done <"$MANIFEST"
else
    bad "parser test does not build: $(head -c 300 "$TMP/pt.err")"
fi

# --- scope: the wrappers, env.sh --------------------------------------------------------------
# tests/ffmpeg/env-check.sh: WORK/bin/ffmpeg-wai, ffprobe-wai, with-wai-ffmpeg decode through
# this build and leave the calling shell's PATH and LD_LIBRARY_PATH alone; env.sh still sets
# them, and its warning (what the minimal build has, lacks and replaces) agrees with the build
first=$(awk '!/^#/ && NF >= 4 { print $1, $2; exit }' "$MANIFEST")
"$ROOT/tests/ffmpeg/env-check.sh" "$FFMPEG_WORK" "$VECTORS/${first% *}" "${first#* }" >"$TMP/env-check.log" 2>&1
rc=$?
while IFS= read -r line; do
    case $line in
        'PASS '*) ok "${line#PASS }" ;;
        'FAIL '*) bad "${line#FAIL }" ;;
        'note: '*) echo "$line" ;;
    esac
done <"$TMP/env-check.log"
grep -q '^env-check: ' "$TMP/env-check.log" && { [ $rc -eq 0 ] || grep -q '^FAIL ' "$TMP/env-check.log"; } ||
    bad "env-check.sh ended without its summary (rc=$rc): $(tail -c 300 "$TMP/env-check.log")"

# --- FATE --------------------------------------------------------------------------------
mkdir -p "$TMP/samples"
ln -s "$VECTORS" "$TMP/samples/wai"
if make -C "$FFMPEG_WORK/build" fate-libwai SAMPLES="$TMP/samples" >"$TMP/fate.log" 2>&1; then
    ok "fate-libwai ($(grep -c 'TEST ' "$TMP/fate.log") tests)"
else
    bad "fate-libwai: $(grep -v '^make' "$TMP/fate.log" | tail -n 15)"
fi

finish
