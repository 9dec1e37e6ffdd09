# Sourced by device-stretch.sh and device-finetune.sh (tools/train/README.md, "On the device
# machine"): the checks before a stretch on the device machine.
#   device_setup NAME     needs PY; sets `device` (cuda, or cpu with WAI_DEVICE_ALLOW_CPU=1)
device_setup() {
    [ -f ".trainpack/pack.tsv" ] || { echo "$1: no .trainpack (run pack-data.py and carry it)" >&2; exit 3; }
    device=cuda
    if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
        [ "${WAI_DEVICE_ALLOW_CPU:-0}" = 1 ] || { echo "$1: no CUDA device" >&2; exit 3; }
        device=cpu
    fi
    "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
        torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
}
