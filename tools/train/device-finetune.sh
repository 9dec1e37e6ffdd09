#!/bin/bash
# Fine-tune every quality from the base model on the device machine (a GPU lent to the session),
# all at once, in one command: one trainer process per quality on the same GPU.
#
# Here, before the call (the data pack is ignored by git, so it is carried):
#   /usr/bin/python3 tools/train/pack-data.py           # .trainpack/, about 20 MiB
#   tools/train/run-background.sh stop                  # if the base is training here
#   /usr/bin/python3 tools/train/compact-checkpoint.py tools/train/checkpoints/base-q5.pt
#   du -sh --exclude=.git .   # what travels (tracked + untracked files + .trainpack) <= 64 MiB
# The device call (the device tool's `run`, carry [".trainpack"], timeout_s 570):
#   tools/train/device-finetune.sh BASE SECONDS QUALITIES [train.py options]
#   e.g. tools/train/device-finetune.sh base-q5 400 1,2,3,4,5,6,7,8 --batch 16 --crop 256 \
#            --lr-schedule 0:1e-4,250s:3e-5 --warmup 100 --bf16 1
# Back here: cat FILES_AT/finetune.tar.part-* | tar -x -C tools/train (weights-only
#   checkpoints q<N>.pt in float16, and every log), then
#   /usr/bin/python3 tools/train/compact-checkpoint.py --float32 tools/train/checkpoints/q*.pt
#   and export-all.sh.
# WAI_FT_WIDE="QUALITIES" (e.g. "7,8") with WAI_FT_WIDE_NM="128 192": those qualities start from
#   the base widened to N/M by widen.py (function-preserving; on the device, seconds) and train
#   at that size; the others stay at the base's size. WAI_FT_WIDE_LIVE="1.0 0.1" starts the new
#   latent channels live instead (widen.py --live 1.0 --live-s 0.1: left silent they stay dead,
#   docs/research/widening.md); the picture changes a little at the start.
# WAI_FT_LAMBDAS="Q:LAMBDA,..." (e.g. "6:0.03,7:0.06,8:0.3") gives those qualities another
#   lambda than model.LAMBDAS' (the ladder of the larger model: tools/train/README.md).
#
# Each quality q starts from tools/train/checkpoints/BASE.pt with its own lambda
# (model.LAMBDAS, or WAI_FT_LAMBDAS), trains on CUDA for SECONDS after its data is loaded (--stop-after; an
# "Ns:" entry of --lr-schedule counts seconds of the run, since the iteration rate is not known
# in advance), and is shrunk to its weights (compact-checkpoint.py --half, 3.5 MB for
# N=64/M=96): a fine-tune is an end product, exported, not resumed. The device returns at most
# 8 files of 16 MiB, 64 MiB in all (see the end). One process per quality keeps the GPU busy
# (a single small model is bound by kernel launches); a quality that fails leaves the others.
# WAI_DEVICE_ALLOW_CPU=1 lets it run without CUDA (to try the script here on a few iterations).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
base=$1 seconds=$2 qualities=$3
shift 3
PY=${WAI_TRAIN_PYTHON:-python3}
out=${OUT:?OUT is not set (the device tool sets it; here set it to a folder)}
work=$(mktemp -d)
mkdir -p "$work/checkpoints" "$work/logs"
[ -f "tools/train/checkpoints/$base.pt" ] || { echo "device-finetune: no checkpoint $base" >&2; exit 3; }
. tools/train/device-common.sh
device_setup device-finetune
nq=$(echo "$qualities" | tr ',' '\n' | wc -l)
threads=$(( $(nproc) / nq )); [ "$threads" -ge 1 ] || threads=1
wide=",${WAI_FT_WIDE:-},"
read -r wide_n wide_m <<< "${WAI_FT_WIDE_NM:-128 192}"
live=()
if [ -n "${WAI_FT_WIDE_LIVE:-}" ]; then
    read -r live_g live_s <<< "$WAI_FT_WIDE_LIVE"
    live=(--live "$live_g" --live-s "${live_s:-0.1}" --data-pack .trainpack)
fi
if [ "$wide" != ",," ]; then
    "$PY" tools/train/widen.py "tools/train/checkpoints/$base.pt" "$work/init-wide.pt" \
        --N "$wide_n" --M "$wide_m" "${live[@]}" > "$work/logs/widen.txt" 2>&1 ||
        { cat "$work/logs/widen.txt" >&2; exit 3; }
fi
pids=()
for q in ${qualities//,/ }; do
    init=(--init-from "tools/train/checkpoints/$base.pt")
    case $wide in *",$q,"*) init=(--init-from "$work/init-wide.pt" --N "$wide_n" --M "$wide_m");; esac
    for ql in ${WAI_FT_LAMBDAS//,/ }; do
        [ "${ql%%:*}" = "$q" ] && init+=(--lambda "${ql#*:}")
    done
    PYTHONUNBUFFERED=1 "$PY" tools/train/train.py --qualities "$q" --out "$work" \
        "${init[@]}" --device "$device" --data-pack .trainpack \
        --stop-after "$seconds" --threads "$threads" --save-every 1e9 "$@" \
        > "$work/logs/stdout-q$q.txt" 2>&1 &
    pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
(nvidia-smi 2>/dev/null || true) > "$work/logs/nvidia-smi.txt"
for q in ${qualities//,/ }; do
    [ -f "$work/checkpoints/q$q.pt" ] && "$PY" tools/train/compact-checkpoint.py --half "$work/checkpoints/q$q.pt"
    tail -2 "$work/logs/q$q.log" 2>/dev/null
done
# One tar cut in 15 MiB parts: a returned file may have 16 MiB, at most 8 come back, 64 MiB in
# all: hence float16 weights (N=64/M=96 3.5 MB, a widened N=128/M=192 14 MB; 5 + 3 wide: 60 MB).
files=(logs)
for q in ${qualities//,/ }; do
    [ -f "$work/checkpoints/q$q.pt" ] && files+=("checkpoints/q$q.pt")
done
tar -C "$work" -cf - "${files[@]}" | split -b 15M -d - "$out/finetune.tar.part-"
n=$(ls "$out"/finetune.tar.part-* | wc -l)
[ "$n" -le 8 ] || { echo "device-finetune: $n parts, more than the 8 files that come back" >&2; status=1; }
total=$(cat "$out"/finetune.tar.part-* | wc -c)
[ "$total" -le $((64 << 20)) ] || { echo "device-finetune: $total bytes, over the 64 MiB that come back" >&2; status=1; }
ls -la "$out"
exit $status
