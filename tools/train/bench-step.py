#!/usr/bin/python3
"""Time one training step (forward, backward, Adam) of the trainer's model on random data.

    /usr/bin/python3 tools/train/bench-step.py [N,M,channels_last,bf16 ...] [--runs 12]

Each argument is one configuration, e.g. `64,96,1,0` (N=64, M=96, channels-last, float32);
default: the float32 layouts and bf16 autocast at N=64/M=96 and channels-last at larger sizes.
Batch 8 of 128x128 as train.py; the same process settings as train.py (2 threads, passive
OpenMP waits, glibc malloc tuning). Prints the median and minimum seconds per step over the
runs after two warm-up steps. The configurations run one after another, so compare figures of
one run on a quiet machine (the training job stopped).
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402,F401  (malloc tuning at import, as in training)
import torch  # noqa: E402
from model import MeanScaleHyperprior, rate_distortion  # noqa: E402


def run(N, M, cl, bf16, runs):
    torch.manual_seed(0)
    m = MeanScaleHyperprior(N, M)
    main, _aux = m.parameter_groups()
    opt = torch.optim.Adam(main, lr=1e-4)
    x = torch.rand(8, 3, 128, 128)
    if cl:
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    ts = []
    for _ in range(runs + 2):
        t = time.perf_counter()
        opt.zero_grad()
        out = m(x, ste=True, bf16=bf16)
        loss, _bpp, _mse = rate_distortion({k: v.float() for k, v in out.items()}, x, 0.025)
        loss.backward()
        opt.step()
        ts.append(time.perf_counter() - t)
    ts = sorted(ts[2:])
    params = sum(p.numel() for p in m.parameters()) / 1e6
    print("N=%d M=%d channels-last=%d bf16=%d params %.2fM: median %.3f s/step, min %.3f"
          % (N, M, cl, bf16, params, ts[len(ts) // 2], ts[0]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("configs", nargs="*",
                    default=["64,96,0,0", "64,96,1,0", "64,96,0,1", "64,96,1,1", "96,144,1,0",
                             "128,192,1,0"])
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print("torch %s, %d threads, %s" % (torch.__version__, torch.get_num_threads(),
                                        os.uname().machine))
    for c in a.configs:
        N, M, cl, bf = (int(v) for v in c.split(","))
        run(N, M, bool(cl), bool(bf), a.runs)


if __name__ == "__main__":
    main()
