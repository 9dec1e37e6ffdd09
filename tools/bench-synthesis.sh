#!/bin/bash
# The whole synthesis (g_s in the decoder's stripes, to RGB8) of every quality at one size, on
# each quality's own stream, 1 and 2 threads, for one or two builds interleaved (issue 24's
# target "the whole synthesis of every shipped model >= 60 GMAC/s per core at 1920x1088";
# record: docs/research/camera-size.md). `wai-bench --stream F --cases synthesis` times the
# synthesis alone (its y_hat is the stream's: real latents) and prints the output hash, which
# this script requires equal across the builds.
#
#   tools/bench-synthesis.sh BUILD_DIR [BASE_BUILD_DIR] [ROUNDS] [QUALITIES] > log
#
# ROUNDS (default 3) interleaved rounds, each `--reps 3` per build (wai-bench's own median);
# QUALITIES default: every quality of models/ (tools/eval/waiformat.py --ladder). The picture:
# the 1920x1080 centre crop of Dragonfly_by_Bolly.jpg, as tools/bench-camera.sh (SIZE=WxH
# picks another), coded once by BUILD_DIR's `wai encode` at each quality. Prints one line per
# (round, quality, build, threads): the median, min and max wall ms and GMAC/s per core, then
# a summary: per quality and build the median over the rounds.
set -eu
B=$(cd "${1:?usage: bench-synthesis.sh BUILD_DIR [BASE_BUILD_DIR] [ROUNDS] [QUALITIES]}" && pwd)
BASE=${2:-}
[ -z "$BASE" ] || BASE=$(cd "$BASE" && pwd)
ROUNDS=${3:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
QUALITIES=${4:-$(/usr/bin/python3 "$SRC/tools/eval/waiformat.py" --ladder "$SRC/models" | awk '{print $1}' | tr '\n' ' ')}
SIZE=${SIZE:-1920x1080}
PHOTO=/usr/share/backgrounds/Dragonfly_by_Bolly.jpg
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -f "$PHOTO" ] || { echo "bench-synthesis: $PHOTO missing (apt-get install lomiri-wallpapers-16.04)" >&2; exit 2; }
echo "== machine"
lscpu | grep -E "Model name|^CPU\(s\)" || true
echo "git: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown); builds: $B ${BASE:-}"
echo "load before: $(cat /proc/loadavg)"
/usr/bin/python3 - "$PHOTO" "$W/p.png" "$SIZE" <<'EOF'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
w, h = (int(v) for v in sys.argv[3].split("x"))
x, y = (im.width - w) // 2, (im.height - h) // 2
im.crop((x, y, x + w, y + h)).save(sys.argv[2])
EOF
# the model of a quality: its pair wai-qN, or the variable-rate model its quality file names
model_of() {
    local q=$1 f=$SRC/models/wai-q$1.rate
    if [ -f "$f" ]; then echo "$SRC/models/$(awk '$1 == "model" { print $2 }' "$f").whm"
    else echo "$SRC/models/wai-q$q.whm"; fi
}
for q in $QUALITIES; do
    "$B/tools/wai" encode "$W/p.png" -o "$W/q$q.wai" --quality "$q" --model-dir "$SRC/models" > /dev/null 2>&1
done
for r in $(seq "$ROUNDS"); do
    for q in $QUALITIES; do
        hash=""
        for b in "$B" $BASE; do
            out=$("$b/tools/wai-bench" --model "$(model_of "$q")" --stream "$W/q$q.wai" --cases synthesis \
                  --reps 3 --policies auto/1,auto/2 2>&1)
            h=$(echo "$out" | grep -o 'output hash [0-9a-f]*' | head -1 | awk '{print $3}')
            [ -n "$h" ] || { echo "bench-synthesis: no output hash for q$q ($b):"; echo "$out"; exit 1; } >&2
            [ -z "$hash" ] || [ "$h" = "$hash" ] || { echo "bench-synthesis: q$q: hash $h differs from $hash" >&2; exit 1; }
            hash=$h
            # "  auto/1  wall median  X ms (min  Y, max  Z)  cpu median ...  G GMAC/s wall, ..."
            echo "$out" | sed -n 's/^  \(auto\/[12]\) *wall median *\([0-9.]*\) ms (min *\([0-9.]*\), max *\([0-9.]*\)).* \([0-9.]*\) GMAC\/s wall.*/\1 \2 \3 \4 \5/p' |
                while read -r pol med mn mx g; do
                    threads=${pol#auto/}
                    echo "round $r q$q $b threads $threads median_ms $med min $mn max $mx GMAC_per_core $(awk -v g="$g" -v t="$threads" 'BEGIN { printf "%.1f", g / t }') hash $h"
                done
        done
    done
done > "$W/lines"
cat "$W/lines"
echo "load after: $(cat /proc/loadavg)"
echo "== summary: median over the rounds of each round's median wall ms [min-max over the rounds], GMAC/s per core"
/usr/bin/python3 - "$W/lines" <<'EOF'
import collections, statistics, sys
ms, gm = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    key = (f[2], f[3], f[5])
    ms[key].append(float(f[7]))
    gm[key].append(float(f[13]))
for key in sorted(ms, key=lambda k: (int(k[0][1:]), k[1], k[2])):
    v = ms[key]
    print(f"{key[0]:4} {key[1]} {key[2]} thread(s): {statistics.median(v):8.1f} ms "
          f"[{min(v):.1f}-{max(v):.1f}]  {statistics.median(gm[key]):5.1f} GMAC/s per core")
EOF
