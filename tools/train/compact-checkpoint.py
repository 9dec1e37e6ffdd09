#!/usr/bin/python3
"""Shrink a training checkpoint for the repository or the device machine's way back.

    /usr/bin/python3 tools/train/compact-checkpoint.py [--weights-only] CKPT [CKPT ...]

Adam's two moment tensors are stored as bfloat16 instead of float32 (weights stay float32):
an N=64/M=96 checkpoint goes from 21 MB to 14 MB, under the device machine's 16 MiB per
returned file and a third less in git per committed checkpoint. train.py resumes from either
form (torch's Adam casts its state to the parameters' dtype on loading); a resume from the
compact form is not bit-exact with one from the full form (the moments lose their low bits),
which only nudges the next steps. Rewrites each file atomically; a compact file stays as it is.

--weights-only keeps only the weights and the metadata (quality, lambda, N, M, iteration, ...):
7.1 MB for N=64/M=96. Such a file exports (export.py, export-all.sh), evaluates and starts new
models (train.py --init-from), but does not resume (train.py says so). It is the committed form
of the shipped qualities' checkpoints.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch  # noqa: E402

from train import atomic_save  # noqa: E402


def weights_only(path):
    ck = torch.load(path, map_location="cpu", weights_only=False)
    before = os.path.getsize(path)
    for key in ("opt", "aux_opt", "rng"):
        ck.pop(key, None)
    ck["model"] = {k: v.contiguous() for k, v in ck["model"].items()}
    atomic_save(ck, path)
    print("%s: weights only, %.1f -> %.1f MB" % (path, before / 1e6, os.path.getsize(path) / 1e6))


def compact(path):
    ck = torch.load(path, map_location="cpu", weights_only=False)
    n = 0
    for key in ("opt", "aux_opt"):
        for st in ck.get(key, {}).get("state", {}).values():
            for k in ("exp_avg", "exp_avg_sq"):
                t = st.get(k)
                if t is not None and t.dtype == torch.float32:
                    st[k] = t.to(torch.bfloat16)
                    n += 1
    ck["model"] = {k: v.contiguous() for k, v in ck["model"].items()}
    before = os.path.getsize(path)
    atomic_save(ck, path)
    print("%s: %d moment tensors to bfloat16, %.1f -> %.1f MB"
          % (path, n, before / 1e6, os.path.getsize(path) / 1e6))


if __name__ == "__main__":
    argv = sys.argv[1:]
    only = "--weights-only" in argv
    paths = [p for p in argv if p != "--weights-only"]
    if not paths or any(p.startswith("-") for p in paths):
        sys.exit(__doc__)
    for p in paths:
        (weights_only if only else compact)(p)
