#!/bin/sh
# Regenerate every reading of docs/research/{determinism-cost,reproducibility,classic-codecs}.md
# (docs/research/data/*.tsv), then re-render the three records from them.
#
#   tools/eval/run-all.sh [--qualities LIST] [BUILD_DIR]   (default build; needs build/tools/wai)
#
# --qualities 8 (a comma list): a model replaced while the other qualities' checkpoints are not
# at hand. Only those qualities are measured (determinism.py, repro_int.py --qualities); their
# rows replace theirs, the other readings and the classic codecs' are kept; machine.tsv keeps
# the full run's keys and gains merged_* keys for this one (the records say which qualities were
# re-measured when and where); inputs.tsv keeps the hashes of checkpoints not in this checkout.
#
# Needs /usr/bin/python3 with torch, numpy, PIL (Debian python3-torch, python3-numpy,
# python3-pil), cjpeg/djpeg (libjpeg-turbo-progs), cwebp/dwebp (webp), avifenc/avifdec
# (libavif-bin), Mesa's lavapipe for --device vulkan (mesa-vulkan-drivers), and the training
# checkpoints of the committed models: tools/train/checkpoints/qN.pt of a pair wai-qN.whm + .ana,
# NAME.pt of a variable-rate model NAME that quality files wai-qN.rate name (the ladder of
# models/, tools/eval/waiformat.py --ladder). About 25 minutes on a loaded 2-core machine. Work
# files go to $WAI_EVAL_WORK (default build/eval-work).
set -eu
cd "$(dirname "$0")/../.."
QUALS=
if [ "${1:-}" = --qualities ]; then
    QUALS=${2:?--qualities needs a list}
    case $QUALS in *[!0-9,]*|'') echo "run-all: bad --qualities '$QUALS'" >&2; exit 2 ;; esac
    shift 2
fi
BUILD=${1:-build}
WAI=$BUILD/tools/wai
WORK=${WAI_EVAL_WORK:-$BUILD/eval-work}
DATA=docs/research/data
PY=/usr/bin/python3
[ -x "$WAI" ] || { echo "run-all: $WAI not built" >&2; exit 3; }
# the quality ladder, "N<tab>models/STEM<tab>rate or -" a line (stops on a bad quality file)
LADDER=$($PY tools/eval/waiformat.py --ladder models)
TAB=$(printf '\t')
rm -rf "$WORK"
mkdir -p "$WORK" "$DATA"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
if [ -n "$QUALS" ]; then
    $PY tools/eval/determinism.py --work "$WORK/wai" --wai "$WAI" --qualities "$QUALS"
    $PY tools/eval/waiformat.py models "$WORK"/wai/*.wai
    $PY tools/eval/repro_int.py --work "$WORK/wai" --wai "$WAI" --qualities "$QUALS"
else
    # the classic codecs (independent of WAI's models) beside the WAI readings: one core each
    $PY tools/eval/classic.py --work "$WORK/classic" > "$WORK/classic.log" 2>&1 &
    classic_pid=$!
    $PY tools/eval/determinism.py --work "$WORK/wai" --wai "$WAI"
    $PY tools/eval/waiformat.py models "$WORK"/wai/*.wai   # the numpy reading agrees with the C streams
    $PY tools/eval/repro_int.py --work "$WORK/wai" --wai "$WAI"
    wait "$classic_pid" || { cat "$WORK/classic.log" >&2; echo "run-all: classic.py failed" >&2; exit 1; }
    cat "$WORK/classic.log"
fi
t1=$(date +%s)
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# The machine and software the readings were made with.
pyv() { $PY -c "import $1; print($1.__version__)"; }
deb() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }
# this run's machine keys, each name prefixed with $1
run_keys() {
    printf '%sdate\t%s\n' "$1" "$(date -u +%Y-%m-%d)"
    printf '%scpu\t%s\n' "$1" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    printf '%scores\t%s\n' "$1" "$(nproc)"
    printf '%sload_start\t%s\n' "$1" "$load0"
    printf '%sload_end\t%s\n' "$1" "$load1"
    printf '%srun_seconds\t%s\n' "$1" "$((t1 - t0))"
    printf '%scode_commit\t%s\n' "$1" "$(git rev-parse --short=12 HEAD)"
    printf '%storch\t%s\n' "$1" "$(pyv torch)"
}
# the variable-rate models that quality files name: models/NAME a line, once each
rate_models() { printf '%s\n' "$LADDER" | awk -F'\t' '$3 != "-" && !seen[$2]++ { print $2 }'; }
# the models' WHM1 names (bytes 16..79: quality, size, base and fine-tune iterations): a pair's
# as model_name_q<N>, a variable-rate model's as model_name_<NAME>; and quality_q<N> NAME rate K
# for each quality that is a rate of one
whm_name() { dd if="$1.whm" bs=1 skip=16 count=64 2>/dev/null | tr -d '\0'; }
model_names() {
    printf '%s\n' "$LADDER" | while IFS=$TAB read -r q stem rate; do
        if [ "$rate" = - ]; then printf 'model_name_q%s\t%s\n' "$q" "$(whm_name "$stem")"; fi
    done
    for stem in $(rate_models); do
        printf 'model_name_%s\t%s\n' "${stem#models/}" "$(whm_name "$stem")"
    done
    printf '%s\n' "$LADDER" | while IFS=$TAB read -r q stem rate; do
        if [ "$rate" != - ]; then
            printf 'quality_q%s\t%s rate %s\n' "$q" "${stem#models/}" "$rate"
        fi
    done
}
# inputs.tsv: the files' SHA-256 (the pairs, quality files and the variable-rate models they
# name); the checkpoints of the ladder's qualities (qN.pt of a pair, NAME.pt of a quality
# file's model) in this checkout and, with $1 = keep, for those not here, the hash the kept
# readings were made with
write_inputs() {
    local ckpts files
    ckpts=$(printf '%s\n' "$LADDER" | while IFS=$TAB read -r q stem rate; do
                if [ "$rate" = - ]; then f=q$q; else f=${stem#models/}; fi
                f=tools/train/checkpoints/$f.pt
                if [ -f "$f" ] || [ "$1" = keep ]; then echo "$f"; fi
            done | awk '!seen[$0]++')
    files=$(for ext in whm ana rate; do ls models/wai-q*.$ext 2>/dev/null | sort -V; done
            for stem in $(rate_models); do echo "$stem.whm"; echo "$stem.ana"; done)
    {
        printf '# file\tsha256\n'
        for f in $files $ckpts samples/eval/*.png; do
            if [ -f "$f" ]; then printf '%s\t%s\n' "$f" "$(sha256sum "$f" | cut -d' ' -f1)"
            else awk -F'\t' -v f="$f" '$1 == f' "$DATA/inputs.tsv"; fi
        done
    } > "$WORK/inputs.tsv"
    mv "$WORK/inputs.tsv" "$DATA/inputs.tsv"
}
if [ -n "$QUALS" ]; then
    # the full run's keys stay (their readings stay); this run's as merged_*, the names new
    grep -v '^merged_\|^model_name_\|^quality_q' "$DATA/machine.tsv" > "$WORK/machine.tsv"
    { cat "$WORK/machine.tsv"; printf 'merged_qualities\t%s\n' "$QUALS"; run_keys merged_; model_names; } \
        > "$DATA/machine.tsv"
    write_inputs keep
    $PY tools/eval/records.py --write
    echo "run-all: qualities $QUALS re-measured, readings merged in $DATA, records rendered ($((t1 - t0)) s)"
    exit 0
fi
{
    printf '# key\tvalue\n'
    run_keys ""
    printf 'kernel\t%s\n' "$(uname -sr)"
    printf 'cc\t%s\n' "$(cc --version | head -1)"
    printf 'python\t%s\n' "$($PY -c 'import platform; print(platform.python_version())')"
    printf 'numpy\t%s\n' "$(pyv numpy)"
    printf 'pillow\t%s\n' "$(pyv PIL)"
    printf 'libjpeg-turbo-progs\t%s\n' "$(deb libjpeg-turbo-progs)"
    printf 'webp\t%s\n' "$(deb webp)"
    printf 'libavif-bin\t%s\n' "$(deb libavif-bin)"
    printf 'avifenc\t%s\n' "$(avifenc --version 2>&1 | head -1)"
    printf 'vulkan_device\t%s\n' "$(vulkaninfo --summary 2>/dev/null | sed -n 's/^[[:space:]]*deviceName[[:space:]]*=[[:space:]]*//p' | head -1)"
    printf 'vulkan_driver\t%s\n' "$(vulkaninfo --summary 2>/dev/null | sed -n 's/^[[:space:]]*driverInfo[[:space:]]*=[[:space:]]*//p' | head -1)"
    model_names
} > "$DATA/machine.tsv"
write_inputs new
$PY tools/eval/records.py --write
echo "run-all: readings in $DATA, records rendered ($((t1 - t0)) s)"
