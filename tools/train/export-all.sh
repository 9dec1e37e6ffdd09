#!/bin/bash
# Export every training checkpoint to the committed model pairs and remake the sample streams.
#
#   tools/train/export-all.sh [--check] [--build DIR] [QUALITY...]
#
# The quality ladder of models/ (tools/eval/waiformat.py --ladder): quality N is the pair
# wai-q<N>.whm + .ana, or, with a quality file wai-q<N>.rate ("model NAME", "rate K"), rate K of
# the variable-rate pair NAME.whm + .ana. For each checkpoint tools/train/checkpoints/q<N>.pt of
# a quality that no quality file defines, and each NAME.pt of a model NAME that quality files
# name (or only those of the qualities given; a quality of a quality file gives its model):
#   1. export it twice (tools/train/export.py) into two temporary directories and require
#      byte-identical files (the export is deterministic; NAME.pt must be variable-rate);
#   2. install wai-q<N>.whm and wai-q<N>.ana, or NAME.whm and NAME.ana, into models/.
# Then, for every quality exported (a pair's, and every quality that is a rate of a model
# exported):
#   3. encode samples/coffee-q<N>.wai with `wai encode` (DIR/tools/wai, default build/) from
#      python3-skimage's coffee.png (checked against its SHA-256), twice, and require identical
#      bytes;
#   4. rewrite samples/manifest.txt (decoded SHA-256, frames, size of every samples/*-q*.wai,
#      and the models' SHA-256) with `wai decode --sha256` and `wai info`.
# It prints the SHA-256 of every model file and the bytes/bpp of every sample, for
# models/README.md and samples/README.md.
#
# --check writes nothing into models/ or samples/: it compares what it would write with the
# files there and exits 1 on any difference (and 0 when all are equal).
# Needs: /usr/bin/python3 with torch (tools/train/README.md), a build of this tree
# (meson setup build && ninja -C build), python3-skimage for coffee.png.
# Exit: 0 ok, 1 a difference (nondeterministic export or encode; with --check, a file that
# differs), 2 usage, 3 a missing tool, checkpoint or file.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
CHECK=0
QUALITIES=()
PY=/usr/bin/python3
COFFEE=/usr/lib/python3/dist-packages/skimage/data/coffee.png
COFFEE_SHA=cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "export-all: $*" >&2; exit "${2:-3}"; }
while [ $# -gt 0 ]; do
    case $1 in
    --check) CHECK=1 ;;
    --build) [ $# -ge 2 ] || usage; BUILD=$(cd "$2" 2>/dev/null && pwd) || die "no build dir $2"; shift ;;
    --build=*) BUILD=$(cd "${1#--build=}" 2>/dev/null && pwd) || die "no build dir ${1#--build=}" ;;
    -h|--help) usage ;;
    [1-9]|[1-9][0-9]) QUALITIES+=("$1") ;;
    *) echo "export-all: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done

WAI=$BUILD/tools/wai
[ -x "$WAI" ] || die "no $WAI: build the tree first (meson setup build && ninja -C build)"
[ -x "$PY" ] || die "no $PY"
[ -f "$COFFEE" ] || die "no $COFFEE: apt-get install python3-skimage"
[ "$(sha256sum < "$COFFEE" | cut -d' ' -f1)" = "$COFFEE_SHA" ] || die "$COFFEE: unexpected SHA-256 (a different python3-skimage?)" 1
# the ladder (a quality file's pair need not be installed yet): the qualities that quality files
# define, with their model and rate
ladder=$("$PY" "$ROOT/tools/eval/waiformat.py" --ladder --unpaired "$ROOT/models") ||
    die "models/: a quality file is unusable (above)" 1
declare -A MODEL_OF RATE_OF
RATED=()   # those qualities, in order
while IFS=$'\t' read -r q stem rate; do
    [ -n "$q" ] && [ "$rate" != - ] || continue
    MODEL_OF[$q]=${stem##*/}; RATE_OF[$q]=$rate; RATED+=("$q")
done <<< "$ladder"
PAIRS=()   # qualities exported as pairs
VR=()      # variable-rate models exported
add_vr() { local n; for n in "${VR[@]}"; do [ "$n" = "$1" ] && return; done; VR+=("$1"); }
if [ ${#QUALITIES[@]} -eq 0 ]; then
    for c in "$ROOT"/tools/train/checkpoints/q*.pt; do
        q=${c##*/q}; q=${q%.pt}
        [[ $q =~ ^[1-9][0-9]*$ ]] && [ -f "$c" ] || continue
        if [ -n "${MODEL_OF[$q]:-}" ]; then   # a pair would override the quality file
            echo "export-all: q$q: not exporting ${c#$ROOT/}: models/wai-q$q.rate makes q$q" \
                 "rate ${RATE_OF[$q]} of ${MODEL_OF[$q]}"
            continue
        fi
        PAIRS+=("$q")
    done
    for q in "${RATED[@]}"; do
        [ -f "$ROOT/tools/train/checkpoints/${MODEL_OF[$q]}.pt" ] && add_vr "${MODEL_OF[$q]}"
    done
else
    for q in "${QUALITIES[@]}"; do
        if [ -n "${MODEL_OF[$q]:-}" ]; then add_vr "${MODEL_OF[$q]}"; else PAIRS+=("$q"); fi
    done
fi
[ ${#PAIRS[@]} -gt 0 ] && mapfile -t PAIRS < <(printf '%s\n' "${PAIRS[@]}" | sort -nu)
[ ${#PAIRS[@]} -gt 0 ] || [ ${#VR[@]} -gt 0 ] || die "no checkpoints in tools/train/checkpoints/"
# the qualities whose samples are remade: the pairs', and every rate of a model exported
SAMPLES=("${PAIRS[@]}")
for q in "${RATED[@]}"; do
    for n in "${VR[@]}"; do [ "${MODEL_OF[$q]}" = "$n" ] && SAMPLES+=("$q"); done
done
[ ${#SAMPLES[@]} -gt 0 ] && mapfile -t SAMPLES < <(printf '%s\n' "${SAMPLES[@]}" | sort -nu)

tmp=$(mktemp -d /tmp/wai-export-all.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/a" "$tmp/b" "$tmp/models" "$tmp/samples"
differ=0
# compare NEW with the committed file OLD (--check) or install it
put() {
    local new=$1 old=$2
    if [ $CHECK = 1 ]; then
        if cmp -s "$new" "$old"; then echo "  same: ${old#$ROOT/}"
        else echo "  DIFFERS: ${old#$ROOT/}"; differ=1; fi
    else
        cp "$new" "$old" || die "cannot write $old"
        echo "  wrote ${old#$ROOT/}"
    fi
}

# 1-2. models: the pairs, then the variable-rate models
for q in "${PAIRS[@]}"; do
    ckpt=$ROOT/tools/train/checkpoints/q$q.pt
    [ -f "$ckpt" ] || die "no checkpoint $ckpt"
    echo "export-all: q$q: exporting ${ckpt#$ROOT/} twice"
    for d in a b; do
        "$PY" "$ROOT/tools/train/export.py" "$ckpt" -o "$tmp/$d/wai-q$q" --quality "$q" > "$tmp/$d/log-q$q" 2>&1 ||
            { cat "$tmp/$d/log-q$q" >&2; die "export.py failed for q$q" 1; }
    done
    for ext in whm ana; do
        cmp -s "$tmp/a/wai-q$q.$ext" "$tmp/b/wai-q$q.$ext" ||
            die "q$q: the two exports of wai-q$q.$ext differ: the export is not deterministic" 1
        cp "$tmp/a/wai-q$q.$ext" "$tmp/models/"
        put "$tmp/models/wai-q$q.$ext" "$ROOT/models/wai-q$q.$ext"
    done
done
for n in "${VR[@]}"; do
    ckpt=$ROOT/tools/train/checkpoints/$n.pt
    [ -f "$ckpt" ] || die "no checkpoint $ckpt"
    echo "export-all: $n: exporting ${ckpt#$ROOT/} twice"
    for d in a b; do
        "$PY" "$ROOT/tools/train/export.py" "$ckpt" -o "$tmp/$d/$n" > "$tmp/$d/log-$n" 2>&1 ||
            { cat "$tmp/$d/log-$n" >&2; die "export.py failed for $n" 1; }
    done
    # WHM1 flags (offset 12) bit 0: a rate table, what a quality file's rate needs
    [ "$(od -An -tu4 -j12 -N4 "$tmp/a/$n.whm" | tr -d ' ')" = 1 ] ||
        die "$n: ${ckpt#$ROOT/} is not a variable-rate checkpoint (train.py --rates)" 1
    for ext in whm ana; do
        cmp -s "$tmp/a/$n.$ext" "$tmp/b/$n.$ext" ||
            die "$n: the two exports of $n.$ext differ: the export is not deterministic" 1
        cp "$tmp/a/$n.$ext" "$tmp/models/"
        put "$tmp/models/$n.$ext" "$ROOT/models/$n.$ext"
    done
done

# 3. samples, encoded with the new models (from the temp dir, so --check works too; a quality
# file beside its model there)
for q in "${SAMPLES[@]}"; do
    [ -z "${MODEL_OF[$q]:-}" ] || cp "$ROOT/models/wai-q$q.rate" "$tmp/models/"
    echo "export-all: q$q: encoding samples/coffee-q$q.wai twice"
    for d in a b; do
        "$WAI" encode -q "$COFFEE" -o "$tmp/$d/coffee-q$q.wai" --quality "$q" --model-dir "$tmp/models" ||
            die "wai encode failed for q$q" 1
    done
    cmp -s "$tmp/a/coffee-q$q.wai" "$tmp/b/coffee-q$q.wai" || die "q$q: two encodes differ" 1
    cp "$tmp/a/coffee-q$q.wai" "$tmp/samples/"
    put "$tmp/samples/coffee-q$q.wai" "$ROOT/samples/coffee-q$q.wai"
done

# 4. the manifest: every samples/*-q<N>.wai (new ones from the temp dir), model lines first
echo "export-all: samples/manifest.txt"
mpath="$tmp/models:$ROOT/models"
streams=()
for f in "$ROOT"/samples/*-q*.wai "$tmp"/samples/*-q*.wai; do
    [[ -f $f && $f =~ -q[1-9][0-9]*\.wai$ ]] && streams+=("$(basename "$f")")
done
# in quality order, then by name
mapfile -t streams < <(printf '%s\n' "${streams[@]}" | awk '!seen[$0]++' |
    awk '{ q = $0; sub(/.*-q/, "", q); sub(/\.wai$/, "", q); print q "\t" $0 }' |
    sort -k1,1n -k2,2 | cut -f2)
{
    echo "# WAI sample streams: <file> <sha256 of decoded RGB8> <frames> <W>x<H>"
    for s in "${streams[@]}"; do q=${s##*-q}; echo "${q%.wai}"; done | awk '!seen[$0]++' |
    while read -r q; do
        if [ -n "${MODEL_OF[$q]:-}" ]; then   # a rate of a variable-rate model
            n=${MODEL_OF[$q]}
            m=$tmp/models/$n.whm; [ -f "$m" ] || m=$ROOT/models/$n.whm
            h=$(sha256sum < "$m" | cut -d' ' -f1)
            echo "# model $h (models/$n.whm rate ${RATE_OF[$q]}: q$q)"
        else
            m=$tmp/models/wai-q$q.whm; [ -f "$m" ] || m=$ROOT/models/wai-q$q.whm
            echo "# model $(sha256sum < "$m" | cut -d' ' -f1) (models/wai-q$q.whm)"
        fi
    done
    for s in "${streams[@]}"; do
        f=$tmp/samples/$s; [ -f "$f" ] || f=$ROOT/samples/$s
        h=$("$WAI" decode "$f" --sha256 --model-path "$mpath") || die "cannot decode $s" 1
        "$WAI" info "$f" --model-path "$mpath" > "$tmp/info" || die "wai info failed on $s" 1
        n=$(awk '/^  frame count/ { print $3 }' "$tmp/info")
        wh=$(awk '/^  display/ { print $2 }' "$tmp/info")
        echo "$s ${h%% *} $n $wh"
    done
} > "$tmp/manifest.txt"
put "$tmp/manifest.txt" "$ROOT/samples/manifest.txt"

# what the READMEs state
echo
echo "models (models/README.md):"
for f in "${PAIRS[@]/#/wai-q}" "${VR[@]}"; do
    for ext in whm ana; do
        echo "  $f.$ext $(sha256sum < "$tmp/models/$f.$ext" | cut -d' ' -f1)"
    done
done
echo "samples (samples/README.md; 600x400 pixels):"
for q in "${SAMPLES[@]}"; do
    b=$(stat -c %s "$tmp/samples/coffee-q$q.wai")
    src="\`models/wai-q$q\`"
    [ -z "${MODEL_OF[$q]:-}" ] || src="\`models/${MODEL_OF[$q]}\` rate ${RATE_OF[$q]}"
    echo "  | \`coffee-q$q.wai\` | $src | $b | $(awk -v b="$b" 'BEGIN { printf "%.4f", 8 * b / (600 * 400) }') |"
done
if [ $CHECK = 1 ]; then
    [ $differ = 0 ] && echo "export-all: --check: every file equals the committed one" && exit 0
    echo "export-all: --check: some files differ (above)"; exit 1
fi
echo "export-all: done; review with git diff --stat models samples"
