#!/bin/sh
# Check the FULL FFmpeg 5.1 build (FFMPEG_FULL=1 ffmpeg-patches/build.sh, Debian 12's configure
# options plus WAI) as a drop-in replacement for Debian 12's FFmpeg libraries: with its
# install/lib first in the library path (its bin/with-wai-ffmpeg wrapper), Debian's own programs
# keep working and gain WAI. Not part of tools/run-tests.sh (the build takes hours of CPU).
#
#   FFMPEG_FULL=1 WAI_PREFIX=$PWD/build-ext/libwai-prefix ffmpeg-patches/build.sh build-ext/ffmpeg-full
#   tests/ffmpeg/full-check.sh
#
# Checks (each one PASS/FAIL line; "full-check: N passed, M failed" at the end, exit 1 on a
# failure). "Debian's libs": the system's; "replacement": the full build's, through the wrapper.
#   - clips made by Debian's ffmpeg on Debian's libs: H.264+AAC .mp4, VP9+Opus .webm,
#     HEVC+FLAC .mkv (2 s, 320x240, 25 fps, 48 kHz tone); their video frames' MD5s on Debian's libs
#     are the references below
#   - Debian's /usr/bin/ffmpeg on the replacement: loads its libavcodec (LD_DEBUG=libs), lists
#     the libwai decoder and encoder; decodes each clip (video: the same frame MD5s as on Debian's
#     libs; audio: decodes); makes an H.264+AAC mp4 itself (libx264) that both it and Debian's
#     ffmpeg on Debian's libs decode to the same 50 frames; decodes a .wai vector to its pinned
#     SHA-256
#   - the patched ffmpeg (the build's own): `ffmpeg -i clip.wai -c:v libx264 clip.mp4` (the first
#     vector of 3+ frames), which Debian's ffprobe and ffmpeg on Debian's libs read as H.264 with
#     the vector's frame count
#   - ldd -r with the replacement on the library path: Debian's ffmpeg, ffprobe, ffplay, mpv and
#     VLC's avcodec/avformat/swscale plugins resolve libavcodec.so.59 ... to the build, with no
#     "undefined symbol" that Debian's own libraries do not also give
#   - Debian's ffprobe on the replacement: codec names of the mp4 (h264, aac) and of a .wai (wai)
#   - Debian's ffplay on the replacement, headless (SDL dummy video and audio drivers): plays
#     the mp4 (-autoexit), loading the build's libavcodec
#   - mpv on the replacement (as tests/ffmpeg/mpv.sh, encoding mode --o, headless): each clip's
#     video to rgb24 is the same bytes as on Debian's libs (50 frames), each clip's audio plays
#     (--ao=null), and a .wai vector plays to its pinned SHA-256
#   - VLC on the replacement (as tests/ffmpeg/vlc.sh: cvlc --intf dummy --vout yuv, as nobody
#     when root): each clip's pictures are the same as on Debian's libs (45 or more distinct
#     ones: VLC may merge a picture, 49 of the mkv's 50 on Debian's libs when written),
#     VLC's avcodec module loading the build's libavcodec; the mp4's audio to a WAV (--aout afile)
#
# Environment: WAI_EXT_BUILD, WAI_BUILD, WAI_PREFIX as for run.sh (tests/ffmpeg/dirs.sh);
# FFMPEG_FULL_WORK (default $WAI_EXT_BUILD/ffmpeg-full) the full build's work dir; VECTORS;
# KEEP=1 keeps the temporary directory. As root it installs what is missing of Debian's ffmpeg
# (ffmpeg, ffprobe, ffplay), mpv and VLC (vlc-bin vlc-plugin-base).
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/ffmpeg/dirs.sh"    # WAI_BUILD, WAI_PREFIX, FFMPEG_FULL_WORK
VECTORS=${VECTORS:-$ROOT/vectors}
WORK=$FFMPEG_FULL_WORK
LIB=$WORK/install/lib
WRAP=$WORK/bin/with-wai-ffmpeg
TMP=$(mktemp -d /tmp/wai-full-check.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$TMP"' EXIT
chmod 755 "$TMP"

pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "PASS $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() {
    echo "full-check: $pass passed, $fail failed"
    [ "$fail" -eq 0 ] && exit 0
    exit 1
}
sha() { sha256sum | cut -d' ' -f1; }

# --- what it needs ---------------------------------------------------------------------------
if [ ! -f "$LIB/libavcodec.so.59" ] || [ ! -x "$WRAP" ] || [ "$(cat "$WORK/.mode" 2>/dev/null)" != full ]; then
    bad "no full FFmpeg 5.1 build in $WORK (FFMPEG_FULL=1 ffmpeg-patches/build.sh $WORK)"; finish
fi
need=
[ -x /usr/bin/ffmpeg ] && [ -x /usr/bin/ffprobe ] && [ -x /usr/bin/ffplay ] || need="$need ffmpeg"
command -v mpv >/dev/null 2>&1 || need="$need mpv"
command -v cvlc >/dev/null 2>&1 || need="$need vlc-bin vlc-plugin-base"
if [ -n "$need" ]; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need \
            >"$TMP/apt.log" 2>&1 || { bad "installing$need: $(tail -n 3 "$TMP/apt.log")"; finish; }
    else
        bad "needs$need (apt-get install$need)"; finish
    fi
fi
WAI_MODEL_PATH="$WAI_PREFIX/share/wai/models:$WAI_BUILD/tools"
export WAI_MODEL_PATH
DEB_FF="/usr/bin/ffmpeg -nostdin -hide_banner -v error"
FF="$WRAP $DEB_FF"                                  # Debian's ffmpeg on the replacement
# the first single-frame vector and the first of 3+ frames, with their pinned hashes
V1=; V1_HASH=; V3=; V3_FRAMES=
while read -r file hash frames _ || [ -n "${file:-}" ]; do
    case "$file" in ''|'#'*) continue ;; esac
    [ -z "$V1" ] && [ "$frames" -eq 1 ] && { V1=$VECTORS/$file; V1_HASH=$hash; }
    [ -z "$V3" ] && [ "$frames" -ge 3 ] && { V3=$VECTORS/$file; V3_FRAMES=$frames; }
done <"$VECTORS/manifest.txt"
[ -n "$V1" ] && [ -n "$V3" ] || { bad "no vectors in $VECTORS/manifest.txt"; finish; }
echo "== full build $WORK; $(/usr/bin/ffmpeg -hide_banner -version 2>/dev/null | head -n 1)"
$WRAP /usr/bin/ffmpeg -hide_banner -version 2>/dev/null | grep '^libav' | sed 's/^/   replacement: /'

# loads LOG: the program whose LD_DEBUG=libs output is LOG initialised the build's libavcodec
loads() { grep -q "calling init: $LIB/libavcodec.so.59" "$1"; }

# --- clips, made by Debian's ffmpeg on Debian's libs -------------------------------------------
SRC="-f lavfi -i testsrc2=size=320x240:rate=25 -f lavfi -i sine=frequency=440:sample_rate=48000 -t 2"
CLIPS="mp4 webm mkv"
for c in $CLIPS; do
    case $c in
        mp4)  enc="-c:v libx264 -pix_fmt yuv420p -c:a aac" ;;
        webm) enc="-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -pix_fmt yuv420p -c:a libopus" ;;
        mkv)  enc="-c:v libx265 -preset ultrafast -x265-params log-level=error -pix_fmt yuv420p -c:a flac" ;;
    esac
    # shellcheck disable=SC2086
    if $DEB_FF $SRC $enc "$TMP/clip.$c" 2>"$TMP/err" &&
       $DEB_FF -i "$TMP/clip.$c" -map 0:v -f framemd5 - 2>>"$TMP/err" | grep -v '^#' >"$TMP/ref.$c.md5" &&
       [ "$(grep -c . "$TMP/ref.$c.md5")" -eq 50 ]; then
        ok "clip.$c made by Debian's ffmpeg on Debian's libs (50 frames)"
    else
        bad "clip.$c on Debian's libs: $(head -c 300 "$TMP/err")"
    fi
done

# --- Debian's ffmpeg on the replacement --------------------------------------------------------
LD_DEBUG=libs $WRAP /usr/bin/ffmpeg -hide_banner -decoders >"$TMP/dec" 2>"$TMP/ld"
$WRAP /usr/bin/ffmpeg -hide_banner -encoders >"$TMP/enc" 2>/dev/null
if loads "$TMP/ld" && grep -q ' libwai ' "$TMP/dec" && grep -q ' libwai ' "$TMP/enc" && grep -q ' h264 ' "$TMP/dec"; then
    ok "Debian's ffmpeg loads the build's libavcodec and lists libwai (decoder, encoder) and h264"
else
    bad "Debian's ffmpeg on the replacement: $(grep 'libavcodec' "$TMP/ld" | head -n 2); libwai: $(grep -c ' libwai ' "$TMP/dec" "$TMP/enc" | tr '\n' ' ')"
fi
for c in $CLIPS; do
    [ -s "$TMP/ref.$c.md5" ] || continue
    $FF -i "$TMP/clip.$c" -map 0:v -f framemd5 - 2>"$TMP/err" | grep -v '^#' >"$TMP/got.$c.md5"
    $FF -i "$TMP/clip.$c" -map 0:a -f null - 2>>"$TMP/err"; rc=$?
    if cmp -s "$TMP/ref.$c.md5" "$TMP/got.$c.md5" && [ $rc -eq 0 ]; then
        ok "Debian's ffmpeg on the replacement decodes clip.$c (the same 50 frames; audio decodes)"
    else
        bad "Debian's ffmpeg on the replacement, clip.$c: $(grep -c . "$TMP/got.$c.md5") frames, $(cmp "$TMP/ref.$c.md5" "$TMP/got.$c.md5" 2>&1 | head -n 1), audio rc=$rc; $(head -c 300 "$TMP/err")"
    fi
done
# shellcheck disable=SC2086
if $FF $SRC -c:v libx264 -pix_fmt yuv420p -c:a aac "$TMP/own.mp4" 2>"$TMP/err" &&
   $FF -i "$TMP/own.mp4" -map 0:v -f framemd5 - 2>>"$TMP/err" | grep -v '^#' >"$TMP/own.a" &&
   $DEB_FF -i "$TMP/own.mp4" -map 0:v -f framemd5 - 2>>"$TMP/err" | grep -v '^#' >"$TMP/own.b" &&
   [ "$(grep -c . "$TMP/own.a")" -eq 50 ] && cmp -s "$TMP/own.a" "$TMP/own.b"; then
    ok "Debian's ffmpeg on the replacement makes an H.264 mp4 (libx264) and decodes it (50 frames, the same as on Debian's libs)"
else
    bad "Debian's ffmpeg on the replacement, own H.264 mp4: $(grep -c . "$TMP/own.a" 2>/dev/null) frames; $(head -c 300 "$TMP/err")"
fi
got=$($FF -i "$V1" -f rawvideo -pix_fmt rgb24 - 2>"$TMP/err" | sha)
[ "$got" = "$V1_HASH" ] && ok "Debian's ffmpeg on the replacement decodes $(basename "$V1") to its pinned SHA-256" ||
    bad "Debian's ffmpeg on the replacement, $(basename "$V1"): $got, want $V1_HASH; $(head -c 300 "$TMP/err")"

# --- the patched ffmpeg: .wai to H.264 ---------------------------------------------------------
mkdir -p "$TMP/wai"
cp "$V3" "$TMP/wai/clip.wai"
if (cd "$TMP/wai" && "$WORK/bin/ffmpeg-wai" -nostdin -hide_banner -v error -i clip.wai -c:v libx264 clip.mp4) 2>"$TMP/err"; then
    probe=$(/usr/bin/ffprobe -v error -select_streams v -count_frames \
        -show_entries stream=codec_name,nb_read_frames -of csv=p=0 "$TMP/wai/clip.mp4" 2>&1)
    n=$($DEB_FF -i "$TMP/wai/clip.mp4" -f framemd5 - 2>/dev/null | grep -vc '^#')
    if [ "$probe" = "h264,$V3_FRAMES" ] && [ "$n" -eq "$V3_FRAMES" ]; then
        ok "ffmpeg -i clip.wai -c:v libx264 clip.mp4 ($(basename "$V3")): H.264, $V3_FRAMES frames, read by Debian's ffprobe and ffmpeg on Debian's libs"
    else
        bad "clip.wai to clip.mp4: Debian's ffprobe says '$probe', ffmpeg decodes $n frames (want h264, $V3_FRAMES)"
    fi
else
    bad "ffmpeg -i clip.wai -c:v libx264 clip.mp4: $(head -c 300 "$TMP/err")"
fi

# --- ldd -r: no symbol missing ------------------------------------------------------------------
FFLIBS_RE='lib(avcodec|avformat|avfilter|avdevice|avutil|swscale|swresample|postproc)\.so'
vlcplug=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/vlc/plugins
for b in /usr/bin/ffmpeg /usr/bin/ffprobe /usr/bin/ffplay "$(command -v mpv)" \
         "$vlcplug/codec/libavcodec_plugin.so" "$vlcplug/demux/libavformat_plugin.so" \
         "$vlcplug/video_chroma/libswscale_plugin.so"; do
    [ -f "$b" ] || { bad "ldd -r: no $b"; continue; }
    ldd -r "$b" 2>&1 | grep 'undefined symbol' | sort >"$TMP/undef.deb"
    $WRAP ldd -r "$b" >"$TMP/ldd" 2>&1
    grep 'undefined symbol' "$TMP/ldd" | sort >"$TMP/undef.rep"
    new=$(comm -13 "$TMP/undef.deb" "$TMP/undef.rep" | head -n 3)
    av=$(grep -E "$FFLIBS_RE" "$TMP/ldd" | grep -v "$LIB/" | head -n 2 | tr '\n' ' ')
    if [ -z "$new" ] && grep -q "=> $LIB/libav" "$TMP/ldd" &&
       ! grep -E "$FFLIBS_RE" "$TMP/ldd" | grep '=>' | grep -vq "$LIB/"; then
        ok "ldd -r $b on the replacement: every libav*/libsw* from the build, no new undefined symbol"
    else
        bad "ldd -r $b on the replacement: $av; $new"
    fi
done

# --- Debian's ffprobe and ffplay on the replacement ----------------------------------------------
got=$($WRAP /usr/bin/ffprobe -v error -show_entries stream=codec_name -of csv=p=0 "$TMP/clip.mp4" 2>&1 | tr '\n' ' ')
got2=$($WRAP /usr/bin/ffprobe -v error -show_entries stream=codec_name -of csv=p=0 "$V1" 2>&1)
[ "$got" = "h264 aac " ] && [ "$got2" = wai ] &&
    ok "Debian's ffprobe on the replacement: mp4 streams h264, aac; .wai stream wai" ||
    bad "Debian's ffprobe on the replacement: mp4 '$got' (want h264 aac), .wai '$got2' (want wai)"
LD_DEBUG=libs SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy timeout 120 \
    $WRAP /usr/bin/ffplay -hide_banner -loglevel error -autoexit "$TMP/clip.mp4" >/dev/null 2>"$TMP/ld"; rc=$?
if [ $rc -eq 0 ] && loads "$TMP/ld"; then
    ok "Debian's ffplay on the replacement plays the mp4 headless (SDL dummy drivers), loading the build's libavcodec"
else
    bad "Debian's ffplay on the replacement: rc=$rc; $(grep -v '^ *[0-9]*:' "$TMP/ld" | head -c 300)"
fi

# --- mpv ---------------------------------------------------------------------------------------
MPV="timeout 300 mpv --no-config --msg-level=all=error"
$WRAP mpv --no-config --version 2>&1 | grep -A3 'FFmpeg library versions' | sed 's/^/   mpv on the replacement: /'
for c in $CLIPS; do
    [ -s "$TMP/clip.$c" ] || continue
    $MPV --no-audio --o="$TMP/deb.$c.rgb" --of=rawvideo --ovc=rawvideo --vf=format=rgb24 "$TMP/clip.$c" >/dev/null 2>&1
    LD_DEBUG=libs $WRAP $MPV --no-audio --o="$TMP/rep.$c.rgb" --of=rawvideo --ovc=rawvideo --vf=format=rgb24 \
        "$TMP/clip.$c" >"$TMP/err" 2>"$TMP/ld"; rc=$?
    size=$(wc -c <"$TMP/rep.$c.rgb" 2>/dev/null || echo 0)
    if [ $rc -eq 0 ] && loads "$TMP/ld" && [ "$size" -eq $((50 * 320 * 240 * 3)) ] &&
       cmp -s "$TMP/deb.$c.rgb" "$TMP/rep.$c.rgb"; then
        ok "mpv on the replacement: clip.$c video (50 frames, the same bytes as on Debian's libs)"
    else
        bad "mpv on the replacement, clip.$c video: rc=$rc, $size bytes, $(cmp "$TMP/deb.$c.rgb" "$TMP/rep.$c.rgb" 2>&1 | head -n 1); $(head -c 300 "$TMP/err")"
    fi
    $WRAP $MPV --vo=null --ao=null "$TMP/clip.$c" >"$TMP/err" 2>&1; rc=$?
    [ $rc -eq 0 ] && ok "mpv on the replacement plays clip.$c (--vo=null --ao=null)" ||
        bad "mpv on the replacement, clip.$c with audio: rc=$rc; $(head -c 300 "$TMP/err")"
    rm -f "$TMP/deb.$c.rgb" "$TMP/rep.$c.rgb"
done
$WRAP $MPV --no-audio --o="$TMP/wai.rgb" --of=rawvideo --ovc=rawvideo --vf=format=rgb24 "$V1" >"$TMP/err" 2>&1
got=$({ sha <"$TMP/wai.rgb"; } 2>/dev/null)
[ "$got" = "$V1_HASH" ] && ok "mpv on the replacement plays $(basename "$V1") to its pinned SHA-256" ||
    bad "mpv on the replacement, $(basename "$V1"): $got, want $V1_HASH; $(head -c 300 "$TMP/err")"

# --- VLC ---------------------------------------------------------------------------------------
as_user() {
    if [ "$(id -u)" = 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi
}
# nobody (VLC refuses root) may not reach the build: copies of its libraries and libwai then
VLC_LIBS=$LIB:$(pkg-config --variable=libdir wai 2>/dev/null || echo "$WAI_PREFIX/lib")
if ! as_user test -r "$LIB/libavcodec.so.59"; then
    mkdir -p "$TMP/lib"
    cp -P "$LIB"/*.so* "$TMP/lib/"
    for d in "$WAI_PREFIX"/lib/*/ "$WAI_PREFIX"/lib/; do cp -P "$d"libwai.so* "$TMP/lib/" 2>/dev/null; done
    chmod -R a+rX "$TMP/lib"
    VLC_LIBS=$TMP/lib
fi
mkdir -p "$TMP/in" "$TMP/out" "$TMP/home"
chmod 777 "$TMP/out" "$TMP/home"
# vlc IN LOG LIBS [OPTIONS...]: play IN headless as nobody (when root), LIBS first in the
# library path ("": Debian's libs), the loader's LD_DEBUG=libs output in LOG
vlc() {
    in=$1 log=$2 libs=$3
    shift 3
    as_user env HOME="$TMP/home" ${libs:+LD_LIBRARY_PATH="$libs"} LD_DEBUG=libs \
        timeout 120 cvlc -vv --intf dummy --no-video-title-show --no-osd --no-spu \
        --no-drop-late-frames --no-skip-frames "$@" "$in" vlc://quit >"$log" 2>&1
}
# distinct frames of a yuv vout file: "SHA256 WxH COUNT"
yuv_sum() { python3 "$ROOT/tests/ffmpeg/yuv-sum.py" "$1"; }
for c in $CLIPS; do
    [ -s "$TMP/clip.$c" ] || continue
    cp "$TMP/clip.$c" "$TMP/in/"; chmod 644 "$TMP/in/clip.$c"
    vlc "$TMP/in/clip.$c" "$TMP/vlc-deb.log" "" --aout dummy --vout yuv --yuv-chroma RV24 --yuv-file "$TMP/out/deb.$c.yuv"
    vlc "$TMP/in/clip.$c" "$TMP/vlc-rep.log" "$VLC_LIBS" --aout dummy --vout yuv --yuv-chroma RV24 --yuv-file "$TMP/out/rep.$c.yuv"; rc=$?
    want=$(yuv_sum "$TMP/out/deb.$c.yuv" 2>&1); got=$(yuv_sum "$TMP/out/rep.$c.yuv" 2>&1)
    if [ $rc -eq 0 ] && grep -q "calling init: .*/libavcodec.so.59" "$TMP/vlc-rep.log" &&
       ! grep "calling init: .*/libavcodec.so.59" "$TMP/vlc-rep.log" | grep -q ' /usr/lib/' &&
       [ "$got" = "$want" ] && [ "${got##* }" -ge 45 ]; then
        ok "VLC on the replacement: clip.$c (${got##* } distinct pictures, the same as on Debian's libs; the build's libavcodec)"
    else
        bad "VLC on the replacement, clip.$c: rc=$rc, '$got', want '$want' (45 or more); $(grep 'calling init: .*libavcodec' "$TMP/vlc-rep.log" | head -n 1)"
    fi
    rm -f "$TMP/out/deb.$c.yuv" "$TMP/out/rep.$c.yuv"
done
if [ -s "$TMP/in/clip.mp4" ]; then
    vlc "$TMP/in/clip.mp4" "$TMP/vlc-a.log" "$VLC_LIBS" --vout dummy --aout afile --audiofile-file "$TMP/out/a.wav"; rc=$?
    size=$(wc -c <"$TMP/out/a.wav" 2>/dev/null || echo 0)
    # 2 s of 48 kHz audio: at least 1.5 s as 16-bit mono
    [ $rc -eq 0 ] && [ "$size" -gt 144000 ] && ok "VLC on the replacement: the mp4's AAC audio to a WAV ($size bytes)" ||
        bad "VLC on the replacement, mp4 audio: rc=$rc, $size bytes; $(grep -i 'error' "$TMP/vlc-a.log" | grep -iv 'dbus\|interface\|hotkeys' | head -n 3)"
fi
finish
