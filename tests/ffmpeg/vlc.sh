#!/bin/sh
# Play every conformance vector in Debian's VLC 3.0 with the vlc-wai plugin, headless, and
# check the decoded bytes.
#
#   tests/ffmpeg/vlc.sh
#
# Builds vlc-wai/ against libwai-core installed in WAI_PREFIX (tests/ffmpeg/run.sh installs
# it there), then per vector runs, as user nobody (VLC refuses root):
#   cvlc --intf dummy --vout yuv --yuv-chroma RV24 --yuv-file OUT FILE vlc://quit
# The yuv vout writes a YUV4MPEG2-like file ("FRAME\n" + RGB24 per shown picture; VLC may
# show a picture more than once, so consecutive repeats are merged). Checks: the decoder
# module reports "decoded <frames> frames, 0 errors", the merged frames have the pinned
# SHA-256 and the header the vector's size; a vector with a damaged first payload plays the
# rest and reports 1 error, without a crash. A vector shorter than VLC's buffering (v20) is
# checked through VLC's transcoder instead (--sout "#transcode{vcodec=RV24}:std{mux=raw}"): the
# same modules, every picture, no clock. Then every stream of the real-content corpus
# (vectors/corpus/manifest.txt) plays to its pinned SHA-256. Prints "vlc: N passed, M failed".
#
# Environment: WAI_EXT_BUILD, WAI_BUILD, WAI_PREFIX, FFMPEG_WORK, VECTORS as for run.sh;
# VLC_BUILD (default $WAI_EXT_BUILD/vlc, i.e. <repo>/build-ext/vlc; tests/ffmpeg/dirs.sh) for
# the plugin; KEEP=1 keeps the temporary directory;
# PLANTED_FAULT=vlc_row_tail builds the plugin with that planted fault (must fail).
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/ffmpeg/dirs.sh"    # WAI_BUILD, WAI_PREFIX, VLC_BUILD, FFMPEG_WORK
# VLC runs on the patched FFmpeg libraries when tests/ffmpeg/run.sh built them (same sonames as
# Debian's, so VLC's avcodec/avformat modules load them from the library path)
FFLIBS=""
[ -f "$FFMPEG_WORK/install/lib/libavcodec.so.59" ] && FFLIBS="$FFMPEG_WORK/install/lib"
VECTORS=${VECTORS:-$ROOT/vectors}
TMP=$(mktemp -d /tmp/wai-vlc-test.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$TMP"' EXIT
chmod 755 "$TMP"

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() {
    echo "vlc: $pass passed, $fail failed"
    [ "$fail" -eq 0 ] && exit 0
    exit 1
}

# VLC refuses to run as root: drop to nobody when root.
as_user() {
    if [ "$(id -u)" = 0 ]; then
        setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
    else
        "$@"
    fi
}

# --- VLC and the plugin --------------------------------------------------------------------
if ! command -v cvlc >/dev/null 2>&1 || ! pkg-config --exists vlc-plugin; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y --no-install-recommends vlc-bin vlc-plugin-base libvlccore-dev \
            >"$TMP/apt.log" 2>&1 || { bad "installing VLC: $(tail -n 3 "$TMP/apt.log")"; finish; }
    else
        bad "needs cvlc and libvlccore-dev (apt-get install vlc-bin vlc-plugin-base libvlccore-dev)"
        finish
    fi
fi
for d in "$WAI_PREFIX"/lib/*/pkgconfig "$WAI_PREFIX"/lib/pkgconfig; do
    [ -d "$d" ] && PKG_CONFIG_PATH=$d${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
done
export PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-}
mkdir -p "$VLC_BUILD"
# PLANTED_FAULT=<name> builds the plugin with WAI_PLANTED_FAULT_<NAME> (tests/planted-faults.txt)
extra=
[ -n "${PLANTED_FAULT:-}" ] && extra="-DWAI_PLANTED_FAULT_$(echo "$PLANTED_FAULT" | tr a-z A-Z)"
if (cd "$VLC_BUILD" && rm -f libwai_plugin.so && make -f "$ROOT/vlc-wai/Makefile" EXTRA_CFLAGS="$extra") >"$TMP/make.log" 2>&1; then
    ok "vlc-wai builds"
else
    bad "vlc-wai build: $(tail -n 20 "$TMP/make.log")"; finish
fi
# plugin dir readable by nobody
mkdir -p "$TMP/plugins"
cp "$VLC_BUILD/libwai_plugin.so" "$TMP/plugins/"
chmod -R a+rX "$TMP/plugins"

export WAI_MODEL_PATH="$WAI_PREFIX/share/wai/models:$WAI_BUILD/tools${WAI_MODEL_PATH:+:$WAI_MODEL_PATH}"
# What VLC loads must be readable by the user it runs as: nobody, when we are root, may not
# reach the builds (by default in the checkout, which may lie in a private directory such as
# /root, mode 700). Then libwai (the plugin's dependency), the patched FFmpeg libraries and
# the models of the two model directories above are copied into $TMP for it.
reachable() { as_user test -r "$1" -a -x "$1"; }
WAI_LIBDIR=$(pkg-config --variable=libdir wai)
VLC_LIBS=$FFLIBS
if ! reachable "$WAI_LIBDIR" || { [ -n "$FFLIBS" ] && ! reachable "$FFLIBS"; }; then
    mkdir -p "$TMP/lib"
    cp -P "$WAI_LIBDIR"/libwai.so* "$TMP/lib/"
    [ -z "$FFLIBS" ] || cp -P "$FFLIBS"/*.so* "$TMP/lib/"
    chmod -R a+rX "$TMP/lib"
    VLC_LIBS=$TMP/lib
    echo "note: $(id -un) runs VLC as nobody, who cannot read $WAI_LIBDIR${FFLIBS:+ or $FFLIBS}: using copies in $TMP/lib"
fi
VLC_MODEL_PATH=""
i=0
for d in "$WAI_PREFIX/share/wai/models" "$WAI_BUILD/tools"; do
    i=$((i + 1))
    if [ -d "$d" ] && ! reachable "$d"; then
        mkdir -p "$TMP/models$i"
        cp "$d"/*.whm "$d"/*.ana "$TMP/models$i/" 2>/dev/null
        chmod -R a+rX "$TMP/models$i"
        d=$TMP/models$i
    fi
    VLC_MODEL_PATH=$VLC_MODEL_PATH$d:
done
VLC_MODEL_PATH=${VLC_MODEL_PATH%:}${WAI_MODEL_PATH#"$WAI_PREFIX/share/wai/models:$WAI_BUILD/tools"}
MANIFEST=$VECTORS/manifest.txt
if [ ! -f "$MANIFEST" ]; then
    "$WAI_BUILD/tools/wai-mkvectors" --model "$WAI_BUILD/tools/wai-tiny-n64m96.whm" \
        --out-dir "$TMP/vectors" --manifest "$TMP/vectors/manifest.txt" >/dev/null 2>&1 ||
        { bad "no vectors ($MANIFEST) and wai-mkvectors failed"; finish; }
    echo "note: no $MANIFEST; using vectors generated by wai-mkvectors"
    VECTORS=$TMP/vectors; MANIFEST=$VECTORS/manifest.txt
fi
mkdir -p "$TMP/in" "$TMP/out" "$TMP/home"
chmod 777 "$TMP/out" "$TMP/home"

# run_vlc LOG OPTIONS...: cvlc as the user VLC runs as, with the plugin, models and libraries
run_vlc() {
    local log=$1
    shift
    as_user env HOME="$TMP/home" VLC_PLUGIN_PATH="$TMP/plugins" WAI_MODEL_PATH="$VLC_MODEL_PATH" \
        ${VLC_LIBS:+LD_LIBRARY_PATH="$VLC_LIBS"} \
        timeout 120 cvlc -vv --intf dummy --aout dummy "$@" vlc://quit >"$log" 2>&1
}
# play IN OUT LOG [VLC OPTIONS...]; a still picture is shown IMAGE_DURATION s (default 0.3)
play() {
    local in=$1 out=$2 log=$3
    shift 3
    run_vlc "$log" --no-video-title-show --no-osd --no-spu \
        --no-drop-late-frames --no-skip-frames --vout yuv --yuv-chroma RV24 --yuv-file "$out" \
        --image-duration "${IMAGE_DURATION:-0.3}" "$@" "$in"
}
# distinct frames of a yuv vout file (or, with --raw WxH first, of a raw RGB24 file):
# "SHA256 WxH COUNT"
y4m_sum() { python3 "$ROOT/tests/ffmpeg/yuv-sum.py" "$@"; }
# transcode IN OUT LOG: VLC decodes IN (the same demuxer and decoder modules) and writes every
# picture, as RGB24 without framing, through its transcoder, with no video output or clock
transcode() {
    run_vlc "$3" --no-sout-audio --no-sout-spu \
        --sout "#transcode{vcodec=RV24}:std{access=file,mux=raw,dst=$2}" "$1"
}
damage() {
    cp "$1" "$3"
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$3" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# play_check DIR FILE HASH FRAMES DIMS [transcode]: DIR/FILE plays to the pinned bytes (with
# "transcode": through VLC's transcoder instead of its video output)
play_check() {
    local n=${2%.wai} rc rep got out how=${6:-play}
    cp "$1/$2" "$TMP/in/"; chmod 644 "$TMP/in/$2"
    if [ "$how" = transcode ]; then
        out=$TMP/out/$n.raw
        transcode "$TMP/in/$2" "$out" "$TMP/$n.log"; rc=$?
    else
        out=$TMP/out/$n.y4m
        play "$TMP/in/$2" "$out" "$TMP/$n.log"; rc=$?
    fi
    rep=$(grep -o 'wai: decoded [0-9]* frames, [0-9]* errors' "$TMP/$n.log" | tail -n 1)
    if [ $rc -eq 0 ] && [ "$rep" = "wai: decoded $4 frames, 0 errors" ] && [ -s "$out" ]; then
        if [ "$how" = transcode ]; then got=$(y4m_sum --raw "$5" "$out" 2>&1)
        else got=$(y4m_sum "$out" 2>&1); fi
        if [ "$got" = "$3 $5 $4" ]; then
            ok "$n vlc${6:+ $6} ($4 frames $5, sha256 matches)"
        else
            bad "$n vlc${6:+ $6}: output '$got', want '$3 $5 $4'"
        fi
    else
        bad "$n vlc${6:+ $6}: rc=$rc, '$rep'; $(grep -i 'error' "$TMP/$n.log" | grep -iv 'dbus\|interface\|hotkeys' | head -n 3)"
    fi
    rm -f "$out"
}

while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
    case "$file" in ''|'#'*) continue ;; esac
    n=${file%.wai}
    # v20 (8x1, four frames at 25 fps) is shorter than VLC's buffering: the stream ends while
    # VLC buffers, it starts its clock 160 ms in the past, and its video output may replace the
    # first picture by the second before showing it (5 of 30 plays here, the decoder's log
    # "decoded 4 frames, 0 errors" every time). So its pictures are checked through VLC's
    # transcoder, which takes every picture the decoder module gives.
    case "$file" in
    v20-*) play_check "$VECTORS" "$file" "$hash" "$frames" "$dims" transcode ;;
    *) play_check "$VECTORS" "$file" "$hash" "$frames" "$dims" ;;
    esac

    # the first payload damaged: one error, the other frames still decode, no crash
    hdr=$(od -An -tu4 -j 8 -N4 "$VECTORS/$file" | tr -d ' ')
    damage "$VECTORS/$file" $((hdr + 40)) "$TMP/in/bad-$file"; chmod 644 "$TMP/in/bad-$file"
    play "$TMP/in/bad-$file" "$TMP/out/bad-$n.y4m" "$TMP/bad-$n.log"; rc=$?
    rep=$(grep -o 'wai: decoded [0-9]* frames, [0-9]* errors' "$TMP/bad-$n.log" | tail -n 1)
    if [ $rc -lt 128 ] && [ "$rep" = "wai: decoded $((frames - 1)) frames, 1 errors" ]; then
        ok "$n vlc damaged payload (rc=$rc, '$rep')"
    else
        bad "$n vlc damaged payload: rc=$rc, '$rep'"
    fi
done <"$MANIFEST"

# A still picture (frame_count 1) is shown as VLC shows a PNG (modules/demux/image.c): repeated at
# --image-fps for --image-duration, so VLC's decoder owner gets a second picture and does not log
# "buffer deadlock prevented" (it did for every one-picture vector); the picture is decoded once.
while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
    case "$file" in ''|'#'*) continue ;; esac
    if grep -q 'buffer deadlock prevented' "$TMP/${file%.wai}.log"; then
        bad "${file%.wai} vlc: 'buffer deadlock prevented' in the log"
    fi
done <"$MANIFEST"
still=v01-64x64.wai
if [ -f "$VECTORS/$still" ]; then
    cp "$VECTORS/$still" "$TMP/in/still.wai"; chmod 644 "$TMP/in/still.wai"
    IMAGE_DURATION=1
    play "$TMP/in/still.wai" "$TMP/out/still.y4m" "$TMP/still.log"; rc=$?
    IMAGE_DURATION=
    # (pictures written: the size after the header line over FRAME\n + 64x64 RGB)
    shown=$(( ($(wc -c < "$TMP/out/still.y4m") - $(head -n 1 "$TMP/out/still.y4m" | wc -c)) / (6 + 64 * 64 * 3) ))
    rep=$(grep -o 'wai: decoded [0-9]* frames, [0-9]* errors' "$TMP/still.log" | tail -n 1)
    got=$(y4m_sum "$TMP/out/still.y4m" 2>&1)
    want=$(awk -v f="$still" '$1 == f { print $2, $4, 1 }' "$MANIFEST")
    if [ $rc -eq 0 ] && [ "${shown:-0}" -ge 5 ] && [ "$rep" = "wai: decoded 1 frames, 0 errors" ] &&
        [ "$got" = "$want" ] && ! grep -q 'buffer deadlock prevented' "$TMP/still.log"; then
        ok "still picture shown $shown times over --image-duration 1, decoded once"
    else
        bad "still picture: rc=$rc, shown ${shown:-0} times, '$rep', '$got' (want '$want')"
    fi
fi

# --start-time: the demuxer seeks (every frame is a key frame) to the frame shown at that time;
# the frames from there are decoded and shown, none lost (it was not seekable: VLC's failed seek
# flushed the decoder and lost frame 0, "29 of 30 frames").
clip=v09-video-3x64x48.wai
if [ -f "$VECTORS/$clip" ] && [ -x "$WAI_BUILD/tools/wai" ]; then
    cp "$VECTORS/$clip" "$TMP/in/clip.wai"; chmod 644 "$TMP/in/clip.wai"
    "$WAI_BUILD/tools/wai" decode "$VECTORS/$clip" -o "$TMP/clip.rgb" 2>"$TMP/clip.err"
    fsize=$((64 * 48 * 3))
    for c in "0:3:0" "0.04:2:1" "0.07:1:2"; do   # start time : frames decoded : first frame
        st=${c%%:*} nf=${c#*:}; nf=${nf%%:*} first=${c##*:}
        play "$TMP/in/clip.wai" "$TMP/out/clip.y4m" "$TMP/clip.log" --start-time="$st"; rc=$?
        rep=$(grep -o 'wai: decoded [0-9]* frames, [0-9]* errors' "$TMP/clip.log" | tail -n 1)
        want="$(tail -c +$((first * fsize + 1)) "$TMP/clip.rgb" | sha256sum | cut -d' ' -f1) 64x48 $nf"
        # (VLC processes the start time's seek in its input thread after the demuxer's first
        # call, so frame 0 may reach the decoder before the seek's flush: decoded, and on a
        # loaded machine sometimes shown before the seek lands; VLC's own order, as for any
        # demuxer. Accepted: frame 0 then exactly the frames from the seek's target.)
        want0="$({ head -c "$fsize" "$TMP/clip.rgb"; tail -c +$((first * fsize + 1)) "$TMP/clip.rgb"; } |
            sha256sum | cut -d' ' -f1) 64x48 $((nf + 1))"
        got=$(y4m_sum "$TMP/out/clip.y4m" 2>&1)
        if [ $rc -eq 0 ] && { [ "$rep" = "wai: decoded $nf frames, 0 errors" ] ||
                [ "$rep" = "wai: decoded $((nf + 1)) frames, 0 errors" ]; } &&
            { [ "$got" = "$want" ] || { [ "$first" -gt 0 ] && [ "$got" = "$want0" ]; }; }; then
            note=; [ "$got" = "$want" ] || note="; frame 0 shown before the seek"
            ok "--start-time=$st: frames $first.. decoded and shown ($rep$note)"
        else
            bad "--start-time=$st: rc=$rc, '$rep', '$got' (want '$want')"
        fi
    done
fi

# A stream whose model is missing: the decoder says so, once, and VLC does not add
# "Codec `WAI1' ... is not supported" (it did, after a failed decoder open).
if [ -f "$VECTORS/$still" ]; then
    python3 - "$VECTORS/$still" "$TMP/in/nomodel.wai" <<'PYEOF'
import struct, sys, zlib
v = bytearray(open(sys.argv[1], 'rb').read())
v[60] ^= 0xff                               # another model: found nowhere
v[92:96] = struct.pack('<I', zlib.crc32(bytes(v[:92])) & 0xffffffff)
open(sys.argv[2], 'wb').write(bytes(v))
PYEOF
    chmod 644 "$TMP/in/nomodel.wai"
    play "$TMP/in/nomodel.wai" "$TMP/out/nomodel.y4m" "$TMP/nomodel.log"; rc=$?
    if [ $rc -eq 0 ] && grep -q 'wai decoder error: the WAI model this stream needs was not found' "$TMP/nomodel.log" &&
        ! grep -q 'is not supported\|Codec not supported' "$TMP/nomodel.log"; then
        ok "model missing: the decoder's error, no 'Codec not supported'"
    else
        bad "model missing: rc=$rc; $(grep -i 'error' "$TMP/nomodel.log" | grep -iv 'dbus\|interface\|hotkeys' | head -n 4)"
    fi
fi

# The real-content corpus (vectors/corpus/, issue 13 part 4; CORPUS=DIR, default
# <repo>/vectors/corpus): photographs coded with the frozen conformance model, up to 1920x1080
# and a 60-frame clip; each plays to its pinned SHA-256 with the model found through
# WAI_MODEL_PATH=CORPUS alone (a copy where nobody cannot read the folder).
CORPUS=${CORPUS:-$ROOT/vectors/corpus}
if [ -f "$CORPUS/manifest.txt" ]; then
    VLC_MODEL_PATH=$CORPUS
    if ! reachable "$CORPUS"; then
        mkdir -p "$TMP/corpus-model"
        cp "$CORPUS"/*.whm "$TMP/corpus-model/"
        chmod -R a+rX "$TMP/corpus-model"
        VLC_MODEL_PATH=$TMP/corpus-model
    fi
    while read -r file hash frames dims rest || [ -n "${file:-}" ]; do
        case "$file" in ''|'#'*) continue ;; esac
        play_check "$CORPUS" "$file" "$hash" "$frames" "$dims"
    done <"$CORPUS/manifest.txt"
else
    echo "note: no $CORPUS/manifest.txt: the real-content corpus is not played"
fi

finish
