#!/bin/sh
# Pipeline-level tests of the WAI GStreamer plugin, run by meson (suite 'gstreamer').
#
#   gst-tests.sh MODE TESTTOOL LAUNCHER DATADIR
#
# MODE: pipelines   filesrc ! waidec / decodebin / playbin / pngenc give the pinned RGB
#       discoverer  gst-discoverer-1.0 reports video/x-wai, the size and the duration
#       inspect     gst-inspect-1.0 shows the elements cleanly
#       corrupt     damaged, truncated, model-less and garbage input: errors, never crashes
#       encode      waienc (model pair in $WAI_SOURCE_ROOT/models): filesink output is a valid
#                   stream ($WAI_CLI info/decode), decodes back through waidec, errors
#       damaged     hundreds of damaged copies of the streams through the real gst-launch-1.0
#                   (filesrc ! waidec ! fakesink, and playbin), several runs each: every run
#                   ends (a hang is a failure), never a crash, the same outcome in every run
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

# A run longer than this is a hang (a run takes about 0.1 s).
HANG_S=${GST_WAI_HANG_S:-20}
lost_quits=0

# launch_status LABEL CMD...: run the real gst-launch-1.0 under the hang timeout; sets st to
# ok, error, hang or crash (a failure is counted for the last two).
#
# gst-launch-1.0 (1.22 and later) quits its main loop from a bus sync handler, right after it
# prints an error; an error posted before the main thread has entered g_main_loop_run() is
# printed, but that quit is lost (g_main_loop_run() sets the loop running again) and nothing
# else ends the run, since a bin that saw an error never completes its preroll. No element can
# tell when an application starts its loop. waidec checks the start of a file (empty, not WAI,
# damaged header) while it starts, so such errors fail the state change instead and are never
# lost; for the errors that remain (found by the streaming thread, after typefinding or the
# model load, in a few milliseconds) the window is small but not closed. Such a run, which
# printed its error (so gst-launch-1.0 called g_main_loop_quit()) and then did not exit, is
# that race of gst-launch-1.0 and counted apart (lost_quits); any other hang is a failure, a
# hang after the loop ended ("Setting pipeline to NULL", a teardown deadlock) included. (So
# the runs are not -q.)
launch_status() {
    local label rc
    label=$1
    shift
    timeout -k 5 "$HANG_S" "$@" > "$tmp/log" 2>&1
    rc=$?
    case $rc in
        0) st=ok ;;
        1|255) st=error ;;      # 255: a state change failed (gst-launch prints why)
        124|137)
            if grep -q '^ERROR: from element' "$tmp/log" &&
                ! grep -q '^Setting pipeline to NULL' "$tmp/log"; then
                echo "note: $label: gst-launch-1.0 printed the error below, then lost its quit" \
                    "(no end within $HANG_S s):" >&2
                cat "$tmp/log" >&2
                lost_quits=$((lost_quits + 1))
                st=error
            else
                cat "$tmp/log" >&2
                fail "$label: no end within ${HANG_S} s and no error printed (hang)"
                st=hang
            fi ;;
        *) cat "$tmp/log" >&2; fail "$label: status $rc (crash?)"; st=crash ;;
    esac
}

mode_damaged() {
    local n runs pbruns count i k f src at label first launch_ok launch_err pb_ok pb_err pb_changed
    local t0 t1
    n=${GST_WAI_DAMAGED_STREAMS:-200}
    runs=${GST_WAI_DAMAGED_RUNS:-3}
    pbruns=${GST_WAI_DAMAGED_PLAYBIN_RUNS:-2}
    list_streams | cut -d' ' -f1 > "$tmp/sources"
    count=$(wc -l < "$tmp/sources")
    [ "$count" -gt 0 ] || { fail "no streams"; return; }
    launch_ok=0 launch_err=0 pb_ok=0 pb_err=0 pb_changed=0
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
            # (not a failure: in about one playbin run in a hundred on such a stream, an error
            # that waiparse posts at the end (a header but no intact frame) is seen in the
            # debug log but never reaches the application; the run then ends with EOS and
            # the warning only. Counted and shown.)
            if [ "$st" != "$first" ]; then
                echo "note: $label: playbin gave $first, then $st" >&2
                pb_changed=$((pb_changed + 1))
            fi
            k=$((k + 1))
        done
        rm -f "$f"
        i=$((i + 1))
    done
    t1=$(date +%s)
    echo "damaged: $n streams in $((t1 - t0)) s; gst-launch-1.0 filesrc ! waidec ! fakesink:" \
        "$((launch_ok + launch_err)) runs ($launch_ok ended with EOS, $launch_err with an error);" \
        "playbin: $((pb_ok + pb_err)) runs ($pb_ok EOS, $pb_err error, $pb_changed outcomes" \
        "unlike the stream's first run); hangs and crashes: $failures; runs where" \
        "gst-launch-1.0 lost its quit after printing an error: $lost_quits"
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
    *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
echo "$mode: $checks checks passed, $failures failures"
[ "$failures" -eq 0 ]
