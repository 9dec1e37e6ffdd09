#!/usr/bin/python3
"""Shrink a training checkpoint for the repository or the device machine's way back.

    /usr/bin/python3 tools/train/compact-checkpoint.py [--weights-only|--lean|--lean-v|--half|--float32] CKPT...

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

--lean keeps what a resume needs except Adam's state: float16 weights, the iteration, the RNG
states and the lineage (an N=128/M=192 checkpoint: 84 MB full, 56 MB compact, 14 MB lean, within
a session's ~30 MB of checkpoints). train.py resumes from it with new Adam moments and a
200-iteration linear re-warm-up of the lr (logged in the quality's log); the weights carry the
float16 rounding once per resume, far below one lr-sized step's effect on their training.

--lean-v is --lean plus Adam's second moments (exp_avg_sq) in bfloat16, and the auxiliary
optimiser's whole state: an N=128/M=192 checkpoint in 28 MB. The second moment is the slow one
(beta2 = 0.999: about a thousand iterations to build again), and without it a resume has to
re-warm the lr over 200 iterations of a session's few hundred; the first moment (beta1 = 0.9)
rebuilds in a few dozen. train.py resumes from it with the first moments at zero and no
re-warm-up (zero first moments already make the first steps small).

--half is --weights-only with the weights in float16 (for the way back from the device machine,
whose returned files are 64 MiB in all: a widened N=128/M=192 checkpoint is 28 MB, 14 MB in
half). A half file is only carried: --float32 turns it back into a float32 weights-only file
before anything else reads it (its weights keep the float16 rounding, 2^-11 relative: finer
than the export's 12-bit per-channel steps except near a step's edge, and an init for training).
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


def convert(state, want, have):
    """The tensors of dtype `have` in `want` (a tensor beyond float16's range stays float32)."""
    return {k: (v.to(want) if v.dtype == have and v.abs().max() < 60000 else v).contiguous()
            for k, v in state.items()}


def lean(path, keep_v=False):
    """--lean, or with keep_v --lean-v: Adam's second moments (bfloat16) and the auxiliary
    optimiser's state kept as "opt_v" and "aux_opt"."""
    ck = torch.load(path, map_location="cpu", weights_only=False)
    before = os.path.getsize(path)
    if "opt" not in ck:
        raise SystemExit("%s: not a full checkpoint (no optimiser state)" % path)
    opt = ck.pop("opt")
    if keep_v:
        for st in opt.get("state", {}).values():
            st.pop("exp_avg", None)
            if st.get("exp_avg_sq") is not None:
                st["exp_avg_sq"] = st["exp_avg_sq"].to(torch.bfloat16).contiguous()
        ck["opt_v"] = opt
    else:
        ck.pop("aux_opt", None)
    ck["model"] = convert(ck["model"], torch.float16, torch.float32)
    ck["lean"] = True
    atomic_save(ck, path)
    print("%s: %s, %.1f -> %.1f MB"
          % (path, "lean-v (float16 weights, Adam's second moments in bfloat16; resumable)" if keep_v
             else "lean (float16 weights, no Adam state; resumable)",
             before / 1e6, os.path.getsize(path) / 1e6))


def half(path, to_half=True):
    ck = torch.load(path, map_location="cpu", weights_only=False)
    before = os.path.getsize(path)
    if to_half:
        for key in ("opt", "aux_opt", "rng"):
            ck.pop(key, None)
    want, have = (torch.float16, torch.float32) if to_half else (torch.float32, torch.float16)
    ck["model"] = convert(ck["model"], want, have)
    if to_half:
        ck["half"] = True
    else:
        ck.pop("half", None)
    atomic_save(ck, path)
    print("%s: weights in %s, %.1f -> %.1f MB" % (path, "float16" if to_half else "float32",
                                                  before / 1e6, os.path.getsize(path) / 1e6))


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
    modes = {"--weights-only": weights_only, "--half": half, "--lean": lean,
             "--lean-v": lambda p: lean(p, keep_v=True),
             "--float32": lambda p: half(p, to_half=False)}
    chosen = [a for a in argv if a in modes]
    paths = [p for p in argv if p not in modes]
    if len(chosen) > 1 or not paths or any(p.startswith("-") for p in paths):
        sys.exit(__doc__)
    for p in paths:
        (modes[chosen[0]] if chosen else compact)(p)
