#!/usr/bin/python3
"""Float PyTorch timing of the same g_s topology wai-bench runs (mbt2018-mean decoder,
q6: M=320, N=192; convT k5 s2 p2 op1 with IGDN between), on random weights of the same
shapes. This is the comparison point for docs/research/decode-throughput.md: float32, no
integer exactness, the kernels PyTorch picks (mkldnn where available).

    bench-torch.py [--size 768x512] [--reps 5] [--threads 1,0]   (0 = PyTorch's default)
Prints wall and process-CPU median / min / max per thread count."""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F


def build(M=320, N=192, seed=1):
    g = torch.Generator().manual_seed(seed)
    layers = []
    chans = [(M, N), (N, N), (N, N), (N, 3)]
    for k, (cin, cout) in enumerate(chans):
        w = torch.randn(cin, cout, 5, 5, generator=g) * (1.0 / (cin * 25 / 4) ** 0.5)
        b = torch.randn(cout, generator=g) * 0.05
        layers.append(("convt", w, b))
        if k < 3:
            beta = 1.0 + 0.06 * (torch.rand(N, generator=g) * 2 - 1)
            gamma = 0.001 + 0.009 * torch.rand(N, N, generator=g)
            gamma.fill_diagonal_(0.1)
            layers.append(("igdn", beta, gamma.reshape(N, N, 1, 1)))
    return layers


def g_s(layers, x):
    for kind, a, b in layers:
        if kind == "convt":
            x = F.conv_transpose2d(x, a, b, stride=2, padding=2, output_padding=1)
        else:  # inverse GDN (CompressAI): x * sqrt(beta + gamma * x^2)
            x = x * torch.sqrt(F.conv2d(x * x, b, a))
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="768x512")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1,0")
    a = ap.parse_args()
    W, H = (int(v) for v in a.size.split("x"))
    layers = build()
    x = torch.randn(1, 320, H // 16, W // 16)
    default_threads = os.cpu_count() or 1
    macs = 0.0
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}, "
          f"float32 g_s q6 topology, {W}x{H}, {a.reps} reps")
    for t in (int(v) for v in a.threads.split(",")):
        n = t if t > 0 else default_threads
        torch.set_num_threads(n)
        walls, cpus = [], []
        with torch.no_grad():
            g_s(layers, x)  # warm-up (allocations, kernel selection)
            for _ in range(a.reps):
                w0, c0 = time.perf_counter(), time.process_time()
                y = g_s(layers, x)
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
        assert y.shape == (1, 3, H, W)
        print(f"  torch/{n}{'(auto)' if t == 0 else ''}  wall median {statistics.median(walls)*1e3:9.2f} ms "
              f"(min {min(walls)*1e3:9.2f}, max {max(walls)*1e3:9.2f})  "
              f"cpu median {statistics.median(cpus)*1e3:9.2f} ms")


if __name__ == "__main__":
    main()
