#!/bin/bash
# Camera-size benchmark (issue 24; record: docs/research/camera-size.md): WAI's striped
# decode (automatic stripe height), the same decode in one stripe (the whole picture at once,
# as before striping) and libavif's avifdec, interleaved in one run on the same pictures, with
# the two WAI decodes' output hashes checked equal; and the encoders: `wai encode` at quality
# ENC_Q (default 5; 2 threads) and avifenc, timed in the same repetitions, the WAI streams
# checked equal from run to run; and, as before issue 24, `wai encode --stripe-rows 16777216
# --threads 1` (the same stream, checked). Prints per case the median wall time with min-max and the
# median peak RSS (GNU time's maxrss), and the machine and its load.
#
#   tools/bench-camera.sh BUILD_DIR [REPS] [QUALITIES] > log
#
# REPS (default 3) interleaved repetitions; QUALITIES (default "1 5 8") of the shipped models.
# Pictures: centre crops, 4032x3024, 1920x1080 and 768x512, of Dragonfly_by_Bolly.jpg
# (4224x3168) from Debian's lomiri-wallpapers-16.04 (CC-BY-SA-4.0, "Bolly" 2018); only made
# here, never committed. AVIF: avifenc -s 6 -j 2 -y 420 --min 26 --max 26 (quantizer 26, as issue 24), decoded with avifdec -j 2 to
# Y4M. Threads: 2 everywhere. BASE_BUILD=DIR adds DIR's `wai encode` (2 threads), checked to
# give the same stream (BASE_STREAM=differs: a change to the float analysis, which codes
# otherwise; each build's stream is then checked equal from run to run, and both sizes are
# printed), and DIR's striped `wai decode`, checked to give the same bytes: a
# change's before and after in one run. ENCODE=0 leaves out the encoder runs (decode only),
# WHOLE=0 the one-stripe decodes, ENC_WHOLE=0 the one-stripe encode (the N=128 model's
# analysis of a whole 12 MP picture needs more than the default 4 GiB budget); SIZES
# (default "4032x3024 1920x1080 768x512") picks the pictures (for issue 23's decode cost of
# every quality:
# ENCODE=0 WHOLE=0 SIZES="1920x1080 768x512" tools/bench-camera.sh build 5 "1 2 3 4 5 6 7 8 9").
set -eu
B=$(cd "${1:?usage: bench-camera.sh BUILD_DIR [REPS] [QUALITIES]}" && pwd)
REPS=${2:-3}
QUALITIES=${3:-1 5 8}
SIZES=${SIZES:-4032x3024 1920x1080 768x512}
SRC=$(cd "$(dirname "$0")/.." && pwd)
PHOTO=/usr/share/backgrounds/Dragonfly_by_Bolly.jpg
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -f "$PHOTO" ] || { echo "bench-camera: $PHOTO missing (apt-get install lomiri-wallpapers-16.04)" >&2; exit 2; }
for t in avifenc avifdec; do command -v $t > /dev/null || { echo "bench-camera: $t missing (apt-get install libavif-bin)" >&2; exit 2; }; done

echo "== machine"
lscpu | grep -E "Model name|^CPU\(s\)" || true
echo "git: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "load before: $(cat /proc/loadavg)"

/usr/bin/python3 - "$PHOTO" "$W" $SIZES <<'EOF'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
for w, h in (tuple(int(v) for v in s.split("x")) for s in sys.argv[3:]):
    x, y = (im.width - w) // 2, (im.height - h) // 2
    im.crop((x, y, x + w, y + h)).save(f"{sys.argv[2]}/p{w}x{h}.png")
EOF

# run NAME CMD...: one timed run, appends "NAME wall_s maxrss_kb" to $W/times
run() {
    local name=$1; shift
    /usr/bin/time -f "$name %e %M" -a -o "$W/times" "$@" > /dev/null 2>&1 ||
        { echo "bench-camera: $name failed: $*" >&2; exit 1; }
}
export WAI_MODEL_PATH=$SRC/models
for size in $SIZES; do
    png=$W/p$size.png
    avifenc -s 6 -j 2 -y 420 --min 26 --max 26 "$png" "$W/a$size.avif" > /dev/null
    echo "== $size: avif $(stat -c %s "$W/a$size.avif") bytes"
    for q in $QUALITIES; do
        "$B/tools/wai" encode "$png" -o "$W/w$size-q$q.wai" --quality "$q" --model-dir "$SRC/models" > /dev/null 2>&1
        echo "   q$q: $(stat -c %s "$W/w$size-q$q.wai") bytes"
    done
    for r in $(seq "$REPS"); do
      if [ "${ENCODE:-1}" != 0 ]; then
        run "$size wai encode q${ENC_Q:-5}" "$B/tools/wai" encode "$png" -o "$W/e.wai" --quality "${ENC_Q:-5}" \
            --model-dir "$SRC/models" --threads 2
        if [ -f "$W/e0.wai" ]; then
            cmp -s "$W/e.wai" "$W/e0.wai" || { echo "bench-camera: $size: encodes differ between runs" >&2; exit 1; }
        else mv "$W/e.wai" "$W/e0.wai"; fi
        if [ "${ENC_WHOLE:-1}" != 0 ]; then # the encoder as before issue 24: one stripe, one thread
            run "$size wai encode q${ENC_Q:-5} one stripe, 1 thread" "$B/tools/wai" encode "$png" -o "$W/e1.wai" \
                --quality "${ENC_Q:-5}" --model-dir "$SRC/models" --threads 1 --stripe-rows 16777216
            cmp -s "$W/e1.wai" "$W/e0.wai" || { echo "bench-camera: $size: one-stripe encode differs" >&2; exit 1; }
        fi
        if [ -n "${BASE_BUILD:-}" ]; then # another build's encoder (e.g. before a change): same stream
            run "$size base encode q${ENC_Q:-5}" "$BASE_BUILD/tools/wai" encode "$png" -o "$W/e2.wai" \
                --quality "${ENC_Q:-5}" --model-dir "$SRC/models" --threads 2
            if [ "${BASE_STREAM:-same}" = same ]; then
                cmp -s "$W/e2.wai" "$W/e0.wai" || { echo "bench-camera: $size: BASE_BUILD's encode differs" >&2; exit 1; }
            elif [ -f "$W/e20.wai" ]; then
                cmp -s "$W/e2.wai" "$W/e20.wai" || { echo "bench-camera: $size: BASE_BUILD's encodes differ between runs" >&2; exit 1; }
            else
                mv "$W/e2.wai" "$W/e20.wai"
                echo "   base encode q${ENC_Q:-5}: $(stat -c %s "$W/e20.wai") bytes, this build's $(stat -c %s "$W/e0.wai")"
            fi
        fi
        run "$size avifenc" avifenc -s 6 -j 2 -y 420 --min 26 --max 26 "$png" "$W/a.avif"
      fi
        for q in $QUALITIES; do
            f=$W/w$size-q$q.wai
            run "$size q$q striped" "$B/tools/wai" decode "$f" -o "$W/s.rgb" --threads 2
            if [ "${WHOLE:-1}" != 0 ]; then
                run "$size q$q whole" "$B/tools/wai" decode "$f" -o "$W/h.rgb" --threads 2 --stripe-rows 16777216
                cmp -s "$W/s.rgb" "$W/h.rgb" || { echo "bench-camera: $size q$q: striped and whole decodes differ" >&2; exit 1; }
            fi
            if [ -f "$W/s0-$size-q$q.rgb" ]; then  # every repetition gives the same picture
                cmp -s "$W/s.rgb" "$W/s0-$size-q$q.rgb" || { echo "bench-camera: $size q$q: decodes differ between runs" >&2; exit 1; }
            else cp "$W/s.rgb" "$W/s0-$size-q$q.rgb"; fi
            if [ -n "${BASE_BUILD:-}" ]; then
                run "$size q$q base striped" "$BASE_BUILD/tools/wai" decode "$f" -o "$W/b.rgb" --threads 2
                cmp -s "$W/s.rgb" "$W/b.rgb" || { echo "bench-camera: $size q$q: BASE_BUILD's decode differs" >&2; exit 1; }
            fi
        done
        run "$size avifdec" avifdec -j 2 "$W/a$size.avif" "$W/a.y4m"
    done
    rm -f "$W/e0.wai" "$W/e20.wai"
    echo "   load: $(cat /proc/loadavg)"
done

echo "== results (wall s: median [min-max]; peak RSS MiB: median), $REPS interleaved runs, 2 threads"
/usr/bin/python3 - "$W/times" <<'EOF'
import sys, statistics, collections
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    *name, wall, rss = line.split()
    if not name or name[0].startswith("Command"):
        continue
    rows.setdefault(" ".join(name), []).append((float(wall), int(rss)))
for name, v in rows.items():
    w = [a for a, _ in v]; m = [b for _, b in v]
    print(f"{name:26s} {statistics.median(w):7.2f} [{min(w):.2f}-{max(w):.2f}]  {statistics.median(m) / 1024:8.1f}")
EOF
echo "load after: $(cat /proc/loadavg)"
