#!/bin/bash
# The real-content conformance corpus (vectors/corpus/, issue 13 part 4) through the CLI and
# GStreamer, against the SHA-256 pinned in vectors/corpus/manifest.txt. Run by meson (suite
# 'corpus'); FFmpeg, VLC and mpv play it in tests/ffmpeg/{run,vlc,mpv}.sh.
#
#   corpus.sh model  WAI_CLI CORPUS [MODELS_DIR]
#       the frozen model: the manifest's model SHA-256 is wai-conformance-1.whm's, every stream
#       names it in its sequence header, and no shipped model (MODELS_DIR/*.whm) has it
#   corpus.sh verify WAI_CLI CORPUS [--only STEM,STEM...] [wai verify options...]
#       `wai verify CORPUS/manifest.txt --model-path CORPUS` with the options (--kernels K,
#       --threads N, --device D); --only restricts it to the streams named (file stems) unless
#       WAI_CORPUS_FULL=1. A kernel set this CPU lacks is a skip (exit 77).
#   corpus.sh decode WAI_CLI CORPUS
#       `wai decode FILE --sha256` (automatic kernels and threads) and `wai decode - --sha256`
#       from a pipe, with WAI_MODEL_PATH=CORPUS, give the pinned hashes
#   corpus.sh memory WAI_CLI CORPUS [gst]
#       each stream of at least 8 megapixels (the camera-size c07) decoded by `wai decode` (and,
#       with gst, by gst-launch-1.0 filesrc ! waidec ! fakesink) within 256 MiB peak RSS (issue
#       24: the striped synthesis), and, so that the check can fail, the same decode in one
#       stripe (WAI_STRIPE_ROWS=16777216) above it
#   corpus.sh gst    WAI_CLI CORPUS TESTTOOL LAUNCHER
#       every stream through gst-launch-1.0 filesrc ! waidec model-path=CORPUS, and with
#       WAI_MODEL_PATH=CORPUS through decodebin and playbin (LAUNCHER: gst-wai-launch), to raw
#       RGB (GStreamer's 4-byte row padding removed by TESTTOOL strip), hashed
#
# The model search sees the corpus folder only (--model-path, the model-path property or
# WAI_MODEL_PATH=CORPUS; otherwise WAI_MODEL_PATH is an empty directory), so a stream that
# named a shipped model (models/wai-qN.whm) would fail with "model not found".
set -u
mode=$1 wai=$2 corpus=$(cd "$3" && pwd) || exit 2
shift 3
. "$(dirname "$0")/lib.sh"
manifest=$corpus/manifest.txt
mkdir -p "$tmp/no-models"
export WAI_MODEL_PATH=$tmp/no-models
sha() { sha256sum < "$1" | cut -d' ' -f1; }
secs() { local d=$(( ($(date +%s%N) - $1) / 10000000 )); printf '%d.%02d' $((d / 100)) $((d % 100)); }
entries() { grep -v '^#' "$manifest" | grep -v '^ *$'; }   # <file> <sha256> <frames> <W>x<H>

case $mode in
model)
    whm=$corpus/wai-conformance-1.whm
    want=$(sed -n 's/^# model \([0-9a-f]\{64\}\) .*/\1/p' "$manifest")
    check "manifest names the model of wai-conformance-1.whm ($want)" -- [ "$(sha "$whm")" = "$want" ]
    name=$(dd if="$whm" bs=1 skip=16 count=64 2>/dev/null | tr -d '\0')
    check "WHM1 name field '$name' starts with wai-conformance-1" -- [ "${name#wai-conformance-1}" != "$name" ]
    ana_sha=$(od -An -tx1 -j 96 -N 32 "$corpus/wai-conformance-1.ana" | tr -d ' \n')
    check "wai-conformance-1.ana is paired with the .whm (whm_sha256)" -- [ "$ana_sha" = "$want" ]
    while read -r f h n wh; do
        got=$(od -An -tx1 -j 52 -N 32 "$corpus/$f" | tr -d ' \n')
        check "$f names the frozen model in its sequence header" -- [ "$got" = "$want" ]
    done < <(entries)
    if [ -n "${1:-}" ]; then
        shipped=0
        for m in "$1"/*.whm; do [ -f "$m" ] && [ "$(sha "$m")" = "$want" ] && shipped=1; done
        check "no shipped model in $1 is the conformance model (the corpus does not depend on them)" -- [ $shipped -eq 0 ]
    fi
    finish corpus-model ;;

verify)
    only=""
    if [ "${1:-}" = --only ]; then only=$2; shift 2; fi
    [ "${WAI_CORPUS_FULL:-0}" = 1 ] && only=""
    k=""
    for ((i = 1; i <= $#; i++)); do [ "${!i}" = --kernels ] && { j=$((i + 1)); k=${!j}; }; done
    if [ -n "$k" ]; then    # probe with the smallest stream: is the set available here?
        small=$(entries | while read -r f h n wh; do echo "$(stat -c %s "$corpus/$f") $f"; done |
            sort -n | head -n 1 | cut -d' ' -f2)
        if "$wai" decode --kernels "$k" "$corpus/$small" --model-path "$corpus" -o /dev/null 2>&1 |
                grep -q "is not available"; then
            echo "SKIP: kernel set $k not available on this CPU"; exit 77
        fi
    fi
    m=$manifest
    if [ -n "$only" ]; then
        # a manifest of the streams named, beside links to them (verify reads files relative
        # to the manifest)
        grep '^#' "$manifest" > "$tmp/manifest.txt"
        for s in ${only//,/ }; do
            line=$(entries | grep "^$s.wai ") || { echo "FAIL --only $s: not in $manifest"; exit 1; }
            echo "$line" >> "$tmp/manifest.txt"
            ln -s "$corpus/$s.wai" "$tmp/$s.wai"
        done
        m=$tmp/manifest.txt
        echo "streams: $only (WAI_CORPUS_FULL=1: all of $manifest)"
    fi
    t0=$(date +%s%N)
    "$wai" verify "$@" --model-path "$corpus" "$m"; rc=$?
    echo "wai verify $* took $(secs "$t0") s"
    exit $rc ;;

decode)
    # what a user types: wai decode FILE --sha256 (automatic kernels and threads), and the
    # same stream read from a pipe with the model found through WAI_MODEL_PATH
    while read -r f h n wh; do
        got=$("$wai" decode "$corpus/$f" --sha256 --model-path "$corpus" 2> "$tmp/err")
        check "wai decode $f --sha256" -- [ "$got" = "$h" ]
        got=$(WAI_MODEL_PATH=$corpus "$wai" decode - --sha256 < "$corpus/$f" 2> "$tmp/err")
        check "wai decode - --sha256 < $f (WAI_MODEL_PATH)" -- [ "$got" = "$h" ]
    done < <(entries)
    finish corpus-decode ;;

memory)
    peak() { python3 "$(dirname "$0")/peak-rss.py" "$@"; }   # KiB, or "failed"
    bound=$((256 * 1024)) seen=0
    while read -r f h n wh; do
        w=${wh%x*} ht=${wh#*x}
        [ $((w * ht)) -ge 8000000 ] || continue
        seen=1
        kb=$(peak "$wai" decode "$corpus/$f" --model-path "$corpus" -o /dev/null)
        check "wai decode $f: peak RSS $kb KiB <= $bound KiB" -- [ "$kb" -le $bound ]
        kb=$(WAI_STRIPE_ROWS=16777216 peak "$wai" decode "$corpus/$f" --model-path "$corpus" -o /dev/null)
        check "wai decode $f in one stripe: peak RSS $kb KiB > $bound KiB (the check can fail)" -- [ "$kb" -gt $bound ]
        if [ "${1:-}" = gst ]; then
            kb=$(peak gst-launch-1.0 -q filesrc location="$corpus/$f" ! waidec model-path="$corpus" ! fakesink)
            check "gst-launch-1.0 filesrc ! waidec ! fakesink $f: peak RSS $kb KiB <= $bound KiB" -- [ "$kb" -le $bound ]
        fi
    done < <(entries)
    check "the corpus has a stream of at least 8 megapixels" -- [ $seen = 1 ]
    finish corpus-memory ;;

gst)
    tool=$1 launcher=$2
    while read -r f h n wh; do
        w=${wh%x*} ht=${wh#*x}
        s=$corpus/$f
        for how in waidec decodebin playbin; do
            rm -f "$tmp/raw" "$tmp/out.rgb"
            t0=$(date +%s%N)
            case $how in
            waidec)    # the README's command, with gst-launch-1.0 itself; the model-path property
                timeout 300 gst-launch-1.0 -q filesrc location="$s" ! waidec model-path="$corpus" ! videoconvert ! \
                    video/x-raw,format=RGB ! filesink location="$tmp/raw" > "$tmp/log" 2>&1 ;;
            decodebin)   # (these two find the model through WAI_MODEL_PATH)
                WAI_MODEL_PATH=$corpus "$launcher" filesrc location="$s" ! decodebin ! videoconvert ! \
                    video/x-raw,format=RGB ! filesink location="$tmp/raw" > "$tmp/log" 2>&1 ;;
            playbin)
                WAI_MODEL_PATH=$corpus "$launcher" playbin uri="file://$s" flags=video \
                    video-sink="videoconvert ! video/x-raw,format=RGB ! filesink location=$tmp/raw" \
                    > "$tmp/log" 2>&1 ;;
            esac
            rc=$?
            dt=$(secs "$t0")
            if [ $rc -ne 0 ] || ! "$tool" strip "$w" "$ht" "$tmp/raw" "$tmp/out.rgb" 2>> "$tmp/log"; then
                fail=$((fail + 1)); echo "FAIL $f $how: rc $rc"; sed 's/^/  | /' "$tmp/log" | head -4
                continue
            fi
            got=$(sha "$tmp/out.rgb") size=$(stat -c %s "$tmp/out.rgb")
            if [ "$got" = "$h" ] && [ "$size" -eq $((n * w * ht * 3)) ]; then
                pass=$((pass + 1)); echo "PASS $f $how ($n frames, sha256 matches, $dt s)"
            else
                fail=$((fail + 1)); echo "FAIL $f $how: $got ($size bytes), want $h ($((n * w * ht * 3)) bytes)"
            fi
        done
    done < <(entries)
    finish corpus-gst ;;

*) echo "usage: corpus.sh model|verify|decode|memory|gst WAI_CLI CORPUS ..." >&2; exit 2 ;;
esac
