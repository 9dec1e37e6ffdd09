#!/bin/sh
# Pipeline-level tests of the WAI GStreamer plugin, run by meson (suite 'gstreamer').
#
#   gst-tests.sh MODE TESTTOOL LAUNCHER DATADIR
#
# MODE: pipelines   filesrc ! waidec / decodebin / playbin / pngenc give the pinned RGB
#       discoverer  gst-discoverer-1.0 reports video/x-wai (an image/x-wai image for one
#                   picture), the size and the duration
#       inspect     gst-inspect-1.0 shows the elements cleanly
#       corrupt     damaged, truncated, model-less and garbage input: errors, never crashes
#       encode      waienc (model pair in $WAI_SOURCE_ROOT/models): filesink output is a valid
#                   stream ($WAI_CLI info/decode), decodes back through waidec, errors
#       lateloop    errors of waiparse/waidec while the application's main loop is not running
#                   yet (gst-wai-lateloop, $GST_WAI_LATELOOP): every run ends with the error
#       damaged     hundreds of damaged copies of the streams through the real gst-launch-1.0
#                   (filesrc ! waidec ! fakesink, and playbin), several runs each, and playbin
#                   with its main loop late (gst-wai-lateloop): every run ends (a hang after an
#                   error of ours is a failure), never a crash, the same outcome in every run
# The streams: DATADIR/gst-*.wai (from gst-wai-mkstream; their expected RGB comes from the
# library's own decode, TESTTOOL decode) and, when present, the conformance vectors listed in
# $WAI_SOURCE_ROOT/vectors/manifest.txt with their pinned SHA-256.
# LAUNCHER (gst-wai-launch) runs most pipelines: it reports every message and ends at the
# first error, deterministically. gst-launch-1.0 itself is run where its behaviour is the
# point (the documented command, errors on bad input, and the damaged-stream mode).
# GST_PLUGIN_PATH, GST_REGISTRY and WAI_MODEL_PATH come from meson.
set -u

mode=$1
tool=$2
launcher=$3
data=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
checks=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { checks=$((checks + 1)); }
sha() { sha256sum < "$1" | cut -d' ' -f1; }

# An exit status of 128+N is a crash (signal N); the launcher reports errors as 1, a
# pipeline that never ends as 3.
crashed() { [ "$1" -gt 128 ] || [ "$1" -eq 3 ]; }

# Lines "<path> <sha256> <frames> <W> <H>" for every stream to check.
list_streams() {
    out=$("$tool" decode "$data/gst-multi.wai" "$tmp/multi.rgb") || { fail "reference decode"; return; }
    set -- $out
    wh=$2
    echo "$data/gst-multi.wai $(sha "$tmp/multi.rgb") $1 ${wh%x*} ${wh#*x}"
    vdir=${WAI_SOURCE_ROOT:-}/vectors
    if [ -f "$vdir/manifest.txt" ]; then
        grep -v '^#' "$vdir/manifest.txt" | while read -r f h n wh; do
            [ -f "$vdir/$f" ] && echo "$vdir/$f $h $n ${wh%x*} ${wh#*x}"
        done
    else
        echo "note: no $vdir/manifest.txt yet; only the plugin's own test stream" >&2
    fi
}

# decode FILE W H OUT PIPELINE-PART...: RGB24 of every frame, padding removed, into OUT.
decode() {
    local f w h out
    f=$1 w=$2 h=$3 out=$4
    shift 4
    rm -f "$tmp/raw"
    if ! "$launcher" filesrc location="$f" ! "$@" ! videoconvert ! \
            video/x-raw,format=RGB ! filesink location="$tmp/raw" > "$tmp/log" 2>&1; then
        cat "$tmp/log" >&2
        return 1
    fi
    "$tool" strip "$w" "$h" "$tmp/raw" "$out"
}

check_hash() { # FILE HASH W H LABEL PIPELINE-PART...
    local f hash w h label got
    f=$1 hash=$2 w=$3 h=$4 label=$5
    shift 5
    if ! decode "$f" "$w" "$h" "$tmp/out.rgb" "$@"; then
        fail "$label: pipeline failed for $f"
        return
    fi
    got=$(sha "$tmp/out.rgb")
    if [ "$got" = "$hash" ]; then ok; else fail "$label: $f decodes to $got, expected $hash"; fi
}

mode_pipelines() {
    list_streams > "$tmp/streams"
    [ -s "$tmp/streams" ] || { fail "no streams"; return; }
    # the command as the README gives it, with gst-launch-1.0 itself
    read -r f hash n w h < "$tmp/streams"
    if timeout 120 gst-launch-1.0 -q filesrc location="$f" ! waidec ! videoconvert ! \
            video/x-raw,format=RGB ! filesink location="$tmp/raw" > "$tmp/log" 2>&1 &&
        "$tool" strip "$w" "$h" "$tmp/raw" "$tmp/out.rgb" &&
        [ "$(sha "$tmp/out.rgb")" = "$hash" ]; then
        ok
    else
        cat "$tmp/log" >&2
        fail "gst-launch-1.0 filesrc ! waidec ! ... ! filesink: wrong output or failure"
    fi
    # a still picture is shown as GStreamer shows a PNG: gst-play-1.0 (a player with a bus
    # watch) plays a still and a video to their end (it closes at EOS, --wait-on-eos keeps the
    # picture), and imagefreeze repeats the decoded picture behind decodebin
    still=$(awk '$3 == 1 { print; exit }' "$tmp/streams")
    if [ -n "$still" ]; then
        set -- $still
        if command -v gst-play-1.0 > /dev/null 2>&1; then
            if timeout 60 gst-play-1.0 --videosink=fakesink --audiosink=fakesink "$1" \
                    "$data/gst-multi.wai" < /dev/null > "$tmp/log" 2>&1 &&
                grep -q 'Reached end of play list' "$tmp/log"; then
                ok
            else
                cat "$tmp/log" >&2
                fail "gst-play-1.0 on a still ($1) and a video: did not play to the end"
            fi
        fi
        if decode "$1" "$4" "$5" "$tmp/frozen.rgb" decodebin ! imagefreeze num-buffers=3; then
            frame=$(($4 * $5 * 3))
            head -c "$frame" "$tmp/frozen.rgb" > "$tmp/f1.rgb"
            if [ "$(wc -c < "$tmp/frozen.rgb")" -eq $((3 * frame)) ] &&
                [ "$(sha "$tmp/f1.rgb")" = "$2" ] &&
                cat "$tmp/f1.rgb" "$tmp/f1.rgb" "$tmp/f1.rgb" | cmp -s - "$tmp/frozen.rgb"; then
                ok
            else
                fail "decodebin ! imagefreeze num-buffers=3 on $1: not three copies of the picture"
            fi
        else
            fail "decodebin ! imagefreeze on $1: pipeline failed"
        fi
    fi
    while read -r f hash n w h; do
        echo "checking $f ($n frames, ${w}x$h)"
        check_hash "$f" "$hash" "$w" "$h" "waidec" waidec
        check_hash "$f" "$hash" "$w" "$h" "waiparse ! waidec" waiparse ! waidec
        check_hash "$f" "$hash" "$w" "$h" "decodebin" decodebin
        # the first frame through pngenc, read back with pngdec
        decode "$f" "$w" "$h" "$tmp/all.rgb" waidec || { fail "waidec: $f"; continue; }
        rm -f "$tmp/a.png"
        if "$launcher" filesrc location="$f" ! waidec ! videoconvert ! \
                pngenc snapshot=true ! filesink location="$tmp/a.png" > "$tmp/log" 2>&1 &&
            decode "$tmp/a.png" "$w" "$h" "$tmp/png.rgb" pngdec; then
            # (snapshot stops the stream, but a second frame may already be in the file)
            head -c $((w * h * 3)) "$tmp/all.rgb" > "$tmp/first.rgb"
            head -c $((w * h * 3)) "$tmp/png.rgb" > "$tmp/png1.rgb"
            if [ -s "$tmp/png1.rgb" ] && cmp -s "$tmp/first.rgb" "$tmp/png1.rgb"; then
                ok
            else
                fail "pngenc: $f first frame differs"
            fi
        else
            cat "$tmp/log" >&2
            fail "pngenc: pipeline failed for $f"
        fi
        # playbin autoplugs the same chain (typefind, waiparse, waidec)
        rm -f "$tmp/raw"
        if "$launcher" playbin uri="file://$f" flags=video \
                video-sink="videoconvert ! video/x-raw,format=RGB ! filesink location=$tmp/raw" \
                > "$tmp/log" 2>&1 && "$tool" strip "$w" "$h" "$tmp/raw" "$tmp/pb.rgb"; then
            if [ "$(sha "$tmp/pb.rgb")" = "$hash" ]; then ok; else fail "playbin: $f differs"; fi
        else
            cat "$tmp/log" >&2
            fail "playbin: pipeline failed for $f"
        fi
    done < "$tmp/streams"
}

mode_discoverer() {
    list_streams > "$tmp/streams"
    while read -r f hash n w h; do
        if ! gst-discoverer-1.0 -v "$f" > "$tmp/disc" 2>&1; then
            cat "$tmp/disc" >&2
            fail "gst-discoverer-1.0 failed on $f"
            continue
        fi
        grep -q "Width: $w\$" "$tmp/disc" || fail "$f: discoverer width is not $w"
        grep -q "Height: $h\$" "$tmp/disc" || fail "$f: discoverer height is not $h"
        dur=$(sed -n 's/^ *Duration: //p' "$tmp/disc" | head -n 1)
        if [ "$n" -eq 1 ]; then
            # one picture: an image, as gst-discoverer-1.0 shows a PNG ("video(image) #0:
            # image/png"): image/x-wai caps, framerate 0/1, no duration
            grep -q '^  video(image) #0: image/x-wai, parsed=(boolean)true' "$tmp/disc" ||
                fail "$f: one picture, but discoverer does not report an image/x-wai image stream"
            [ "$dur" = 0:00:00.000000000 ] || fail "$f: one picture, but duration $dur"
            grep -q 'Frame rate: 0/1$' "$tmp/disc" || fail "$f: one picture, but not framerate 0/1"
        else
            grep -q '^  video #0: video/x-wai, parsed=(boolean)true' "$tmp/disc" ||
                fail "$f: $n frames, but discoverer does not report a video/x-wai video stream"
            grep -q 'image' "$tmp/disc" && fail "$f: $n frames, but discoverer mentions an image"
            case $dur in
                ''|0:00:00.000000000|99:99:99*) fail "$f: no duration ($dur)" ;;
            esac
        fi
        grep -q 'Seekable: yes' "$tmp/disc" || fail "$f: not seekable"
        ok
    done < "$tmp/streams"
    # the same through the GstDiscoverer API's image flag, without -v: the one-picture vector
    # is an image, the 5-frame stream is not
    if [ -f "${WAI_SOURCE_ROOT:-}/vectors/v01-64x64.wai" ]; then
        gst-discoverer-1.0 "$WAI_SOURCE_ROOT/vectors/v01-64x64.wai" > "$tmp/disc" 2>&1
        grep -q '^  video(image) #0: image/x-wai$' "$tmp/disc" ||
            { cat "$tmp/disc" >&2; fail "v01 (one picture): gst-discoverer-1.0 does not say image"; }
    fi
    gst-discoverer-1.0 "$data/gst-multi.wai" > "$tmp/disc" 2>&1
    grep -q '^  video #0: video/x-wai$' "$tmp/disc" ||
        { cat "$tmp/disc" >&2; fail "gst-multi.wai (5 frames): gst-discoverer-1.0 does not say video"; }
    # 5 frames at 25/1 fps: exactly 0.2 s
    gst-discoverer-1.0 "$data/gst-multi.wai" 2>&1 | grep -q 'Duration: 0:00:00.200000000' ||
        fail "gst-multi.wai: duration is not 0:00:00.200000000"
    ok
}

mode_inspect() {
    for e in waidec waiparse waienc wai; do
        GST_DEBUG='*:2' GST_DEBUG_NO_COLOR=1 gst-inspect-1.0 "$e" > "$tmp/out" 2> "$tmp/err"
        rc=$?
        [ "$rc" -eq 0 ] || fail "gst-inspect-1.0 $e exits with $rc"
        # no GLib criticals/warnings at all, no GStreamer warnings about our plugin
        if grep -E -i 'CRITICAL|GLib.*WARNING|wai' "$tmp/err" > "$tmp/bad"; then
            cat "$tmp/bad" >&2
            fail "gst-inspect-1.0 $e printed warnings"
        fi
        grep -q '(null)' "$tmp/out" && fail "gst-inspect-1.0 $e shows (null)"
        ok
    done
    gst-inspect-1.0 waidec > "$tmp/out" 2>&1
    for want in 'Codec/Decoder/Video' 'primary (256)' 'video/x-wai' 'format: RGB' \
            'model-path' 'threads' 'kernels' 'reference' 'avx512' 'device' 'vulkan' \
            'max-memory' 'max-errors' 'License                  BSD'; do
        grep -q -- "$want" "$tmp/out" || fail "gst-inspect-1.0 waidec lacks '$want'"
    done
    gst-inspect-1.0 waiparse > "$tmp/out" 2>&1
    for want in 'Codec/Parser/Video' 'primary (256)' 'parsed: true'; do
        grep -q -- "$want" "$tmp/out" || fail "gst-inspect-1.0 waiparse lacks '$want'"
    done
    gst-inspect-1.0 wai > "$tmp/out" 2>&1
    for want in 'waidec' 'waiparse' 'video/x-wai: wai'; do
        grep -q -- "$want" "$tmp/out" || fail "gst-inspect-1.0 wai lacks '$want'"
    done
    ok
}

# run_bad LABEL EXPECT(error|ok) FILE PIPELINE-PART...: status and crash checks
run_bad() {
    local label expect f rc
    label=$1 expect=$2 f=$3
    shift 3
    "$launcher" filesrc location="$f" ! "$@" ! videoconvert ! video/x-raw,format=RGB ! \
        filesink location="$tmp/raw" > "$tmp/log" 2>&1
    rc=$?
    if crashed "$rc"; then
        cat "$tmp/log" >&2
        fail "$label: gst-launch-1.0 crashed (status $rc)"
        return 1
    fi
    if [ "$expect" = error ] && [ "$rc" -eq 0 ]; then fail "$label: no error reported"; return 1; fi
    if [ "$expect" = ok ] && [ "$rc" -ne 0 ]; then cat "$tmp/log" >&2; fail "$label: failed"; return 1; fi
    ok
}

frames_of() { # RAWFILE W H: frames in a padded RGB dump
    local size stride
    size=$(wc -c < "$1")
    stride=$(( ($2 * 3 + 3) / 4 * 4 ))
    echo $((size / (stride * $3)))
}

mode_corrupt() {
    w=35 h=21
    for part in waidec "waiparse ! waidec" decodebin; do
        # shellcheck disable=SC2086
        run_bad "garbage via $part" error "$data/gst-garbage.bin" $part
        # shellcheck disable=SC2086
        if run_bad "missing model via $part" error "$data/gst-nomodel.wai" $part; then
            grep -q -i 'model' "$tmp/log" || fail "missing model via $part: message lacks 'model'"
        fi
        # shellcheck disable=SC2086
        if run_bad "damaged frame via $part" ok "$data/gst-corrupt.wai" $part; then
            [ "$(frames_of "$tmp/raw" $w $h)" -eq 4 ] || fail "damaged frame via $part: not 4 frames"
            grep -q 'WARNING' "$tmp/log" || fail "damaged frame via $part: no warning"
        fi
        # shellcheck disable=SC2086
        if run_bad "truncated via $part" ok "$data/gst-truncated.wai" $part; then
            [ "$(frames_of "$tmp/raw" $w $h)" -eq 4 ] || fail "truncated via $part: not 4 frames"
        fi
    done
    run_bad "damaged frame, max-errors=0" error "$data/gst-corrupt.wai" waidec max-errors=0

    # what is wrong with the start of a stream, in words (waidec, waiparse, decodebin), and
    # with the real gst-launch-1.0: an empty file, a PNG, a damaged (CRC) or cut header
    : > "$tmp/empty.wai"
    printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\000\000\001\000\000\000\001\010\002\000\000\000' \
        > "$tmp/png.wai"
    cp "$data/gst-multi.wai" "$tmp/crc.wai"
    printf '\377' | dd of="$tmp/crc.wai" bs=1 seek=20 conv=notrunc 2> /dev/null
    head -c 50 "$data/gst-multi.wai" > "$tmp/cut.wai"
    for c in "empty.wai:The stream contains no data" \
            "png.wai:This is not a WAI stream: it does not start with a sequence header" \
            "crc.wai:The WAI sequence header is damaged (CRC mismatch)" \
            "cut.wai:The stream ends inside its WAI sequence header (50 of 96 bytes)"; do
        f=$tmp/${c%%:*} want=${c#*:}
        parts="waidec"
        # (typefind names the empty file and the PNG itself)
        case $f in *crc.wai|*cut.wai) parts="waidec|waiparse ! waidec|decodebin" ;; esac
        echo "$parts" | tr '|' '\n' > "$tmp/parts"
        while read -r part; do
            # shellcheck disable=SC2086
            if run_bad "${c%%:*} via $part" error "$f" $part; then
                grep -qF "$want" "$tmp/log" || { cat "$tmp/log" >&2; fail "${c%%:*} via $part: message lacks '$want'"; }
            fi
        done < "$tmp/parts"
        timeout 60 gst-launch-1.0 filesrc location="$f" ! waidec ! fakesink > "$tmp/log" 2>&1
        rc=$?
        if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] ||
                ! grep -qF "$want" "$tmp/log"; then
            cat "$tmp/log" >&2
            fail "gst-launch-1.0 filesrc location=${c%%:*} ! waidec: status $rc, want an error '$want'"
        else
            ok
        fi
    done
    # the same from a source that cannot be read at random (a pipe: no check at start)
    for c in "empty.wai:The stream contains no data" "crc.wai:(CRC mismatch)"; do
        f=$tmp/${c%%:*} want=${c#*:}
        cat "$f" | "$launcher" fdsrc ! waidec ! fakesink > "$tmp/log" 2>&1
        rc=$?
        if [ "$rc" -ne 1 ] || ! grep -qF "$want" "$tmp/log"; then
            cat "$tmp/log" >&2
            fail "fdsrc (pipe) ! waidec, ${c%%:*}: status $rc, want an error '$want'"
        else
            ok
        fi
    done
    # every single-byte flip in the header and the first frame: no crash (errors are fine)
    size=$(wc -c < "$data/gst-multi.wai")
    i=0
    while [ $i -lt 140 ] && [ $i -lt "$size" ]; do
        cp "$data/gst-multi.wai" "$tmp/flip.wai"
        printf '\377' | dd of="$tmp/flip.wai" bs=1 seek=$i conv=notrunc 2> /dev/null
        "$launcher" filesrc location="$tmp/flip.wai" ! decodebin ! fakesink > "$tmp/log" 2>&1
        rc=$?
        crashed "$rc" && fail "byte $i set to 0xff: crash (status $rc)"
        i=$((i + 7))
    done
    ok
}

mode_encode() {
    local m wai src want got
    m=$WAI_SOURCE_ROOT/models
    wai=$WAI_CLI
    src="videotestsrc num-buffers=3 pattern=smpte ! video/x-raw,width=96,height=80"
    # the README's command, with gst-launch-1.0 itself
    # shellcheck disable=SC2086
    if ! timeout 300 gst-launch-1.0 -q $src ! videoconvert ! waienc model-dir="$m" ! \
            filesink location="$tmp/a.wai" > "$tmp/log" 2>&1; then
        cat "$tmp/log" >&2
        fail "videotestsrc ! waienc ! filesink failed"
        return
    fi
    ok
    "$wai" info "$tmp/a.wai" --model-path "$m" > "$tmp/info" 2>&1 || fail "wai info failed"
    grep -q '^  coded size     96x80$' "$tmp/info" || fail "wai info: not 96x80"
    grep -q '^  decodable      yes' "$tmp/info" || fail "wai info: not decodable"
    [ "$(grep -c '^frame [0-9]* at .*CRC ok, 96x80' "$tmp/info")" -eq 3 ] ||
        { cat "$tmp/info" >&2; fail "wai info: not 3 frames of 96x80"; }
    grep -q 'summary: 1 sequence header, 3 frames, 0 damaged regions' "$tmp/info" ||
        fail "wai info: summary"
    want=$("$wai" decode "$tmp/a.wai" --sha256 --model-path "$m" 2> "$tmp/log") ||
        { cat "$tmp/log" >&2; fail "wai decode --sha256 failed"; }
    "$wai" decode "$tmp/a.wai" -o "$tmp/ref.rgb" --model-path "$m" 2> /dev/null ||
        fail "wai decode failed"
    [ "$(wc -c < "$tmp/ref.rgb")" -eq $((3 * 96 * 80 * 3)) ] || fail "wai decode: not 3 frames"
    [ "$want" = "$(sha "$tmp/ref.rgb")" ] || fail "wai decode --sha256 differs from -o"
    ok
    # back through GStreamer: raw, parsed, and straight from the encoder (packetized)
    check_hash "$tmp/a.wai" "$want" 96 80 "filesrc ! waidec" waidec model-path="$m"
    check_hash "$tmp/a.wai" "$want" 96 80 "waiparse ! waidec" waiparse ! waidec model-path="$m"
    rm -f "$tmp/raw"
    # shellcheck disable=SC2086
    if "$launcher" $src ! videoconvert ! waienc model-dir="$m" ! waidec model-path="$m" ! \
            videoconvert ! video/x-raw,format=RGB ! filesink location="$tmp/raw" \
            > "$tmp/log" 2>&1 && "$tool" strip 96 80 "$tmp/raw" "$tmp/direct.rgb"; then
        got=$(sha "$tmp/direct.rgb")
        [ "$got" = "$want" ] || fail "waienc ! waidec decodes to $got, expected $want"
        ok
    else
        cat "$tmp/log" >&2
        fail "waienc ! waidec pipeline failed"
    fi
    # bitrate (rate control, issue 25): 400 kbit/s at 25 fps is 2,000 bytes per frame (a
    # change of model from the header's counted in the frame); the file is the header and
    # frames within it, and straight into waidec it decodes as the file does
    # shellcheck disable=SC2086
    if "$launcher" $src,framerate=25/1 ! videoconvert ! waienc model-dir="$m" bitrate=400 ! \
            filesink location="$tmp/br.wai" > "$tmp/log" 2>&1; then
        [ "$(wc -c < "$tmp/br.wai")" -le $((96 + 3 * 2000)) ] ||
            fail "bitrate=400: $(wc -c < "$tmp/br.wai") bytes for 3 frames of 2,000"
        want=$("$wai" decode "$tmp/br.wai" --sha256 --model-path "$m" 2> /dev/null)
        rm -f "$tmp/raw"
        # shellcheck disable=SC2086
        "$launcher" $src,framerate=25/1 ! videoconvert ! waienc model-dir="$m" bitrate=400 ! \
            waidec model-path="$m" ! videoconvert ! video/x-raw,format=RGB ! \
            filesink location="$tmp/raw" > "$tmp/log" 2>&1 &&
            "$tool" strip 96 80 "$tmp/raw" "$tmp/br.rgb"
        [ "$(sha "$tmp/br.rgb")" = "$want" ] || fail "waienc bitrate=400 ! waidec differs from the file's decode"
        ok
    else
        cat "$tmp/log" >&2
        fail "waienc bitrate=400 failed"
    fi
    # a file whose model changes mid-stream (wai encode --target-size over a smooth, a noisy
    # and a smooth picture, PNGs from videotestsrc): filesrc ! waidec decodes it as wai decode does
    if gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,width=96,height=80 ! \
            videoconvert ! pngenc ! filesink location="$tmp/sm.png" > /dev/null 2>&1 &&
       gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=snow ! video/x-raw,width=96,height=80 ! \
            videoconvert ! pngenc ! filesink location="$tmp/bz.png" > /dev/null 2>&1; then
        "$wai" encode -q "$tmp/sm.png" --quality 8 --model-dir "$m" -o "$tmp/sm8.wai" &&
            "$wai" encode -q "$tmp/sm.png" "$tmp/bz.png" "$tmp/sm.png" --model-dir "$m" -o "$tmp/sw.wai" \
                --target-size $((3 * $(wc -c < "$tmp/sm8.wai"))) || fail "wai encode --target-size failed"
        [ "$("$wai" info "$tmp/sw.wai" --model-path "$m" | grep -c '^sequence header')" -ge 2 ] ||
            fail "the --target-size stream has no second sequence header"
        want=$("$wai" decode "$tmp/sw.wai" --sha256 --model-path "$m" 2> /dev/null)
        check_hash "$tmp/sw.wai" "$want" 96 80 "filesrc ! waidec, the model changing mid-stream" waidec model-path="$m"
        check_hash "$tmp/sw.wai" "$want" 96 80 "waiparse ! waidec, the model changing mid-stream" waiparse ! waidec model-path="$m"
    else
        fail "videotestsrc ! pngenc failed"
    fi
    # deterministic: the same input gives the same bytes
    # shellcheck disable=SC2086
    "$launcher" $src ! videoconvert ! waienc model-dir="$m" threads=2 ! \
        filesink location="$tmp/b.wai" > "$tmp/log" 2>&1 || fail "second encode failed"
    cmp -s "$tmp/a.wai" "$tmp/b.wai" || fail "waienc output is not deterministic"
    # a missing model: an error naming the model, no crash, no output claimed
    # shellcheck disable=SC2086
    "$launcher" $src ! videoconvert ! waienc model-dir="$tmp/none" ! \
        filesink location="$tmp/c.wai" > "$tmp/log" 2>&1
    rc=$?
    if crashed "$rc"; then
        cat "$tmp/log" >&2
        fail "missing model: crash (status $rc)"
    elif [ "$rc" -eq 0 ]; then
        fail "missing model: no error"
    else
        grep -q "wai-q3.whm/.ana was not found in $tmp/none" "$tmp/log" ||
            { cat "$tmp/log" >&2; fail "missing model: message does not say so"; }
        ok
    fi
    # a quality without a pair in model-dir (a directory with pairs 1 and 3 only, so the check
    # does not depend on which qualities are committed): the same clear error
    mkdir -p "$tmp/some"
    ln -sf "$m/wai-q1.whm" "$m/wai-q1.ana" "$m/wai-q3.whm" "$m/wai-q3.ana" "$tmp/some/"
    # shellcheck disable=SC2086
    "$launcher" $src ! videoconvert ! waienc model-dir="$tmp/some" quality=8 ! fakesink \
        > "$tmp/log" 2>&1
    rc=$?
    if crashed "$rc" || [ "$rc" -eq 0 ]; then fail "quality=8: status $rc"; else
        grep -q 'wai-q8' "$tmp/log" || fail "quality=8: message lacks wai-q8"
        grep -q 'qualities with a model pair there: 1, 3\.' "$tmp/log" ||
            { cat "$tmp/log" >&2; fail "quality=8: message does not list the qualities"; }
        ok
    fi
}

# gst-launch-1.0 quits from a bus sync handler, and loses that quit when an error comes before
# its main thread has entered g_main_loop_run() (gstwaicommon.h); waiparse and waidec hold a fatal
# error until the application reads its bus. LATELOOP (gst-wai-lateloop) runs a pipeline as
# gst-launch-1.0 does but sleeps DELAY ms before entering the loop, so each of these errors comes
# in that gap: every run must end (a hang is the lost quit), with the error, and the element that
# posts it must be ours. Deterministic: without the hold every run here hangs.
mode_lateloop() {
    local ll delay f want part rc off1 label
    ll=$GST_WAI_LATELOOP
    delay=${GST_WAI_LATELOOP_MS:-300}
    off1=$("$WAI_CLI" info "$data/gst-multi.wai" | awk '$1 == "frame" && $2 == 1 { print $4 }' | tr -d :)
    [ -n "$off1" ] || { fail "no frame 1 in gst-multi.wai"; return; }
    cp "$data/gst-multi.wai" "$tmp/crc.wai"
    printf '\377' | dd of="$tmp/crc.wai" bs=1 seek=20 conv=notrunc 2> /dev/null
    head -c 96 "$data/gst-multi.wai" > "$tmp/hdronly.wai"
    # the header and frame 0, damaged
    head -c "$off1" "$data/gst-multi.wai" > "$tmp/nointact.wai"
    printf '\377' | dd of="$tmp/nointact.wai" bs=1 seek=140 conv=notrunc 2> /dev/null
    # frame 0 damaged, the others intact
    cp "$data/gst-multi.wai" "$tmp/frame0.wai"
    printf '\377' | dd of="$tmp/frame0.wai" bs=1 seek=140 conv=notrunc 2> /dev/null
    # FILE|EXPECTED ERROR TEXT|PIPELINE ('%' = the file; '@' = a stream of the build's test
    # data; waidec max-errors=0 on a stream whose first frame is damaged: the error comes from
    # waidec's streaming thread before the sink prerolls)
    cat > "$tmp/cases" <<'CASES'
crc.wai|The WAI sequence header is damaged (CRC mismatch)|playbin uri=file://% video-sink=fakesink audio-sink=fakesink
crc.wai|The WAI sequence header is damaged (CRC mismatch)|filesrc location=% ! decodebin ! fakesink
crc.wai|The WAI sequence header is damaged (CRC mismatch)|filesrc location=% ! waiparse ! waidec ! fakesink
hdronly.wai|No valid frames found before end of stream|playbin uri=file://% video-sink=fakesink audio-sink=fakesink
hdronly.wai|No valid frames found before end of stream|filesrc location=% ! waiparse ! waidec ! fakesink
nointact.wai|No valid frames found before end of stream|playbin uri=file://% video-sink=fakesink audio-sink=fakesink
nointact.wai|No valid frames found before end of stream|filesrc location=% ! decodebin ! fakesink
@gst-nomodel.wai|model this stream needs was not found|playbin uri=file://% video-sink=fakesink audio-sink=fakesink
@gst-nomodel.wai|model this stream needs was not found|filesrc location=% ! waiparse ! waidec ! fakesink
frame0.wai|Could not decode a WAI frame|filesrc location=% ! waidec max-errors=0 ! fakesink
CASES
    while IFS='|' read -r f want part; do
        case $f in @*) f=$data/${f#@} ;; *) f=$tmp/$f ;; esac
        part=$(printf '%s\n' "$part" | sed "s|%|$f|")
        label="$(basename "$f"): $part (main loop $delay ms late)"
        # shellcheck disable=SC2086
        timeout -k 5 10 "$ll" "$delay" $part > "$tmp/log" 2>&1
        rc=$?
        case $rc in
            1)  if grep -q "^ERROR: wai\(parse\|dec\)[0-9]*: .*$want" "$tmp/log"; then
                    ok
                else
                    cat "$tmp/log" >&2
                    fail "$label: the error is not waiparse's or waidec's '$want'"
                fi ;;
            124|137)
                cat "$tmp/log" >&2
                fail "$label: no end within 10 s (the error's quit was lost: a hang)" ;;
            *)  cat "$tmp/log" >&2; fail "$label: status $rc, want 1 (an error)" ;;
        esac
    done < "$tmp/cases"
}

# A run longer than this is a hang (a run takes about 0.1 s).
HANG_S=${GST_WAI_HANG_S:-20}
lost_quits=0
late_runs=0

# launch_status LABEL CMD...: run CMD (the real gst-launch-1.0, or gst-wai-lateloop) under the
# hang timeout; sets st to ok, error, hang or crash (a failure is counted for the last two).
#
# gst-launch-1.0 (1.22 and later) quits its main loop from a bus sync handler, right after it
# prints an error; an error posted before the main thread has entered g_main_loop_run() is
# printed, but that quit is lost (g_main_loop_run() sets the loop running again) and nothing
# else ends the run, since a bin that saw an error never completes its preroll (gstwaicommon.h).
# waiparse and waidec hold their errors until the application reads its bus, so the error of a
# run that hangs after printing it must come from another element: GStreamer's own (typefind
# "Could not determine type of stream", decodebin's missing plug-in) on a copy whose "WAIS"
# start the damage destroyed, which is no longer a WAI stream. Such a run is counted apart
# (lost_quits) as gst-launch-1.0's race; a hang after an error of waiparse or waidec is a
# failure, and so is any other hang, one after the loop ended ("Setting pipeline to NULL", a
# teardown deadlock) included. (So the runs are not -q.)
launch_status() {
    local label rc
    label=$1
    shift
    timeout -k 5 "${hang_s:-$HANG_S}" "$@" > "$tmp/log" 2>&1
    rc=$?
    case $rc in
        0) st=ok ;;
        1|255) st=error ;;      # 255: a state change failed (gst-launch prints why)
        124|137)
            if grep -q '^ERROR: \(from element\|[a-z]\)' "$tmp/log" &&
                ! grep -q '^Setting pipeline to NULL' "$tmp/log"; then
                if sed -n '/^ERROR: /{p;q;}' "$tmp/log" | grep -q 'GstWai\|ERROR: wai'; then
                    cat "$tmp/log" >&2
                    fail "$label: printed an error of waiparse/waidec, then no end within ${hang_s:-$HANG_S} s (lost quit)"
                    st=hang
                else
                    echo "note: $label: printed an error of GStreamer's own elements, then" \
                        "lost its quit (no end within ${hang_s:-$HANG_S} s):" >&2
                    cat "$tmp/log" >&2
                    lost_quits=$((lost_quits + 1))
                    st=error
                fi
            else
                cat "$tmp/log" >&2
                fail "$label: no end within ${hang_s:-$HANG_S} s and no error printed (hang)"
                st=hang
            fi ;;
        *) cat "$tmp/log" >&2; fail "$label: status $rc (crash?)"; st=crash ;;
    esac
}

# Damaged copies of the streams (1 to 3 random byte edits, fixed seeds) through
#   - the real gst-launch-1.0 filesrc ! waidec ! fakesink, RUNS times, and playbin, PBRUNS times:
#     every run ends, never a crash, and each pipeline gives the same outcome (EOS or error) in
#     every run of a stream;
#   - playbin in gst-wai-lateloop with its main loop LATE ms late (as a busy machine can delay
#     gst-launch-1.0's), once per copy that still starts with "WAIS" 1: it must end as playbin
#     did, whatever error it meets (a regression of the hold is a hang here on most copies).
mode_damaged() {
    local n runs pbruns late count i k f src at label first launch_ok launch_err pb_ok pb_err
    local t0 t1 pbfirst
    n=${GST_WAI_DAMAGED_STREAMS:-200}
    runs=${GST_WAI_DAMAGED_RUNS:-3}
    pbruns=${GST_WAI_DAMAGED_PLAYBIN_RUNS:-2}
    late=${GST_WAI_DAMAGED_LATE_MS:-200}
    list_streams | cut -d' ' -f1 > "$tmp/sources"
    count=$(wc -l < "$tmp/sources")
    [ "$count" -gt 0 ] || { fail "no streams"; return; }
    launch_ok=0 launch_err=0 pb_ok=0 pb_err=0 late_hangs=0
    printf 'WAIS\001' > "$tmp/magic"
    t0=$(date +%s)
    i=0
    while [ "$i" -lt "$n" ]; do
        src=$(sed -n "$((i % count + 1))p" "$tmp/sources")
        f=$tmp/damaged-$i.wai
        at=$("$tool" damage "$src" "$f" $((i + 1))) || { fail "damage $src"; i=$((i + 1)); continue; }
        label="$(basename "$src") seed $((i + 1)) (bytes $at changed)"
        first=
        k=0
        while [ "$k" -lt "$runs" ]; do
            launch_status "$label: gst-launch-1.0 filesrc ! waidec ! fakesink" \
                gst-launch-1.0 filesrc location="$f" ! waidec ! fakesink
            case $st in ok) launch_ok=$((launch_ok + 1)) ;; error) launch_err=$((launch_err + 1)) ;; esac
            [ -z "$first" ] && first=$st
            [ "$st" = "$first" ] || fail "$label: gst-launch-1.0 gave $first, then $st"
            k=$((k + 1))
        done
        first=
        k=0
        while [ "$k" -lt "$pbruns" ]; do
            launch_status "$label: gst-launch-1.0 playbin" gst-launch-1.0 playbin \
                uri="file://$f" video-sink=fakesink audio-sink=fakesink
            case $st in ok) pb_ok=$((pb_ok + 1)) ;; error) pb_err=$((pb_err + 1)) ;; esac
            [ -z "$first" ] && first=$st
            # (an error of waiparse lost under decodebin, see gstwaiparse.c, showed here as a
            # run that ended with EOS after others that ended with the error)
            [ "$st" = "$first" ] || fail "$label: playbin gave $first, then $st"
            k=$((k + 1))
        done
        pbfirst=$first
        # (after 3 hangs here the hold is broken: the rest would only add 10 s each)
        if head -c 5 "$f" | cmp -s - "$tmp/magic" && [ "$late_hangs" -lt 3 ]; then
            hang_s=10
            launch_status "$label: playbin, main loop $late ms late" "$GST_WAI_LATELOOP" \
                "$late" playbin uri="file://$f" video-sink=fakesink audio-sink=fakesink
            hang_s=
            late_runs=$((late_runs + 1))
            if [ "$st" = hang ]; then
                late_hangs=$((late_hangs + 1))
            elif [ "$st" != "$pbfirst" ]; then
                fail "$label: playbin gave $pbfirst, with its main loop late $st"
            fi
        fi
        rm -f "$f"
        i=$((i + 1))
    done
    t1=$(date +%s)
    echo "damaged: $n streams in $((t1 - t0)) s; gst-launch-1.0 filesrc ! waidec ! fakesink:" \
        "$((launch_ok + launch_err)) runs ($launch_ok ended with EOS, $launch_err with an error);" \
        "playbin: $((pb_ok + pb_err)) runs ($pb_ok EOS, $pb_err error); playbin with its main loop" \
        "$late ms late: $late_runs runs; hangs, crashes and differing outcomes: $failures; runs where" \
        "gst-launch-1.0 lost its quit after an error of GStreamer's own elements: $lost_quits"
    [ "$launch_err" -gt 0 ] && [ "$launch_ok" -gt 0 ] ||
        fail "damaged: expected both clean ends and errors among the damaged streams"
    ok
}

case $mode in
    pipelines) mode_pipelines ;;
    discoverer) mode_discoverer ;;
    inspect) mode_inspect ;;
    corrupt) mode_corrupt ;;
    encode) mode_encode ;;
    damaged) mode_damaged ;;
    lateloop) mode_lateloop ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
echo "$mode: $checks checks passed, $failures failures"
[ "$failures" -eq 0 ]
