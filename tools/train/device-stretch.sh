#!/bin/bash
# One training stretch on the device machine (a GPU lent to the session), in one command.
#
# Here, before the call (the data pack is ignored by git, so it is carried):
#   /usr/bin/python3 tools/train/pack-data.py           # .trainpack/, about 20 MiB
#   tools/train/run-background.sh stop                  # the CPU run saves its checkpoint
#   /usr/bin/python3 tools/train/compact-checkpoint.py tools/train/checkpoints/NAME.pt
#   du -sh --exclude=.git .   # what travels (tracked + untracked files + .trainpack) <= 64 MiB
# The device call (the device tool's `run`, carry [".trainpack"], timeout_s 570):
#   tools/train/device-stretch.sh NAME QUALITY SECONDS [train.py options]
#   e.g. tools/train/device-stretch.sh base-q5 5 420 --lr-schedule 0:5e-4 --batch 16 --crop 256
# Back here, from the reply's files_at folder:
#   cp FILES_AT/train/checkpoints/NAME.pt tools/train/checkpoints/
#   cp FILES_AT/train/logs/NAME.log tools/train/logs/    # the tree's log with the stretch appended
#   then restart the CPU run (run-background.sh start ...), which resumes from it.
#
# It resumes NAME from tools/train/checkpoints/NAME.pt (or starts it, or --init-from), trains on
# CUDA for SECONDS after the data is loaded (--stop-after), saves, shrinks the checkpoint
# (compact-checkpoint.py, or --lean for a larger model: under the 16 MiB a returned file may
# have) and writes the checkpoint,
# the log and the driver log under $OUT/train/. SECONDS + start-up (~1 min) + save must stay
# inside the call's limit: 420 s leaves room in a 570 s call. Iterations on the GPU are larger
# (--batch/--crop) than on the CPU, so iteration counts of the two are not comparable: the log's
# recipe line says which was which. WAI_DEVICE_ALLOW_CPU=1 lets it run without CUDA (to try the
# script here on a few iterations).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
name=$1 quality=$2 seconds=$3
shift 3
PY=${WAI_TRAIN_PYTHON:-python3}
out=${OUT:?OUT is not set (the device tool sets it; here set it to a folder)}/train
mkdir -p "$out/checkpoints" "$out/logs"
[ -f "tools/train/checkpoints/$name.pt" ] && cp "tools/train/checkpoints/$name.pt" "$out/checkpoints/"
[ -f "tools/train/logs/$name.log" ] && cp "tools/train/logs/$name.log" "$out/logs/"
. tools/train/device-common.sh
device_setup device-stretch
threads=$(( $(nproc) > 8 ? 8 : $(nproc) ))
PYTHONUNBUFFERED=1 "$PY" tools/train/train.py --qualities "$quality" --name "$name" --out "$out" \
    --device "$device" --data-pack .trainpack --stop-after "$seconds" --threads "$threads" \
    --save-every 1e9 "$@"
"$PY" tools/train/compact-checkpoint.py "$out/checkpoints/$name.pt"
# a larger model (N=128/M=192: 56 MB compact) goes back lean: float16 weights, no Adam state,
# resumable with a re-warm-up (compact-checkpoint.py --lean)
if [ "$(stat -c %s "$out/checkpoints/$name.pt")" -gt $((15 * 1024 * 1024)) ]; then
    "$PY" tools/train/compact-checkpoint.py --lean "$out/checkpoints/$name.pt"
fi
tail -3 "$out/logs/$name.log"
ls -la "$out/checkpoints" "$out/logs"
