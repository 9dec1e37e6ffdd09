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
# Back here: tar -xf FILES_AT/finetune-<k>.tar (each holds two weights-only checkpoints
#   q<N>.pt, the first also every log) into tools/train/, then export-all.sh.
#
# Each quality q starts from tools/train/checkpoints/BASE.pt with its own lambda
# (model.LAMBDAS), trains on CUDA for SECONDS after its data is loaded (--stop-after; an
# "Ns:" entry of --lr-schedule counts seconds of the run, since the iteration rate is not known
# in advance), and is shrunk to its weights (compact-checkpoint.py --weights-only, 7.1 MB for
# N=64/M=96): a fine-tune is an end product, exported, not resumed. The device returns at most
# 8 files of 16 MiB, hence two checkpoints per tar. One process per quality keeps the GPU busy
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
pids=()
for q in ${qualities//,/ }; do
    PYTHONUNBUFFERED=1 "$PY" tools/train/train.py --qualities "$q" --out "$work" \
        --init-from "tools/train/checkpoints/$base.pt" --device "$device" --data-pack .trainpack \
        --stop-after "$seconds" --threads "$threads" --save-every 1e9 "$@" \
        > "$work/logs/stdout-q$q.txt" 2>&1 &
    pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
(nvidia-smi 2>/dev/null || true) > "$work/logs/nvidia-smi.txt"
for q in ${qualities//,/ }; do
    [ -f "$work/checkpoints/q$q.pt" ] && "$PY" tools/train/compact-checkpoint.py --weights-only "$work/checkpoints/q$q.pt"
    tail -2 "$work/logs/q$q.log" 2>/dev/null
done
# Two checkpoints per tar (under the 16 MiB a returned file may have); the logs with the first.
set -- ${qualities//,/ }
k=0
while [ $# -gt 0 ]; do
    files=()
    for q in "$1" "${2:-}"; do
        [ -n "$q" ] && [ -f "$work/checkpoints/q$q.pt" ] && files+=("checkpoints/q$q.pt")
    done
    [ $k = 0 ] && files+=(logs)
    [ ${#files[@]} -gt 0 ] && tar -C "$work" -cf "$out/finetune-$k.tar" "${files[@]}"
    k=$((k + 1)); shift; [ $# -gt 0 ] && shift
done
ls -la "$out"
exit $status
