#!/usr/bin/python3
"""Float PyTorch timing of the same g_s topology wai-bench runs (mbt2018-mean decoder,
q6: M=320, N=192; convT k5 s2 p2 op1 with IGDN between), on random weights of the same
shapes. This is the comparison point for docs/research/decode-throughput.md: float32, no
integer exactness, the kernels PyTorch picks (mkldnn where available).

    bench-torch.py [--size 768x512] [--reps 5] [--threads 1,0] [--forms convt,phases]
(threads 0 = PyTorch's default). Prints wall and process-CPU median / min / max per thread
count and form: `convt` is F.conv_transpose2d; `phases` the same sums as four conv2d per
transposed layer, the faster float baseline on this PyTorch."""
import argparse
import ctypes
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


# The transposed convolution k5 s2 p2 op1 as four stride-1 convolutions, one per output phase
# (ry, rx), interleaved: output row 2m + r takes taps k = r, r+2, r+4 of input rows m+1, m, m-1,
# i.e. a correlation with kernel taps [4, 2, 0] (r = 0, padding 1 and 1) or [3, 1] (r = 1,
# padding 0 and 1). The same sums as conv_transpose2d, but through conv2d, which this PyTorch
# runs far faster (mkldnn) than its conv_transpose2d.
TAPS = {0: ([4, 2, 0], (1, 1)), 1: ([3, 1], (0, 1))}


def convt_phases(x, w, b):
    n, _, h, wd = x.shape
    wt = w.transpose(0, 1)  # conv2d layout: out, in, kh, kw
    y = x.new_empty(n, w.shape[1], 2 * h, 2 * wd)
    for ry in (0, 1):
        ky, (pt, pb) = TAPS[ry]
        for rx in (0, 1):
            kx, (pl, pr) = TAPS[rx]
            k = wt[:, :, ky][:, :, :, kx].contiguous()
            y[:, :, ry::2, rx::2] = F.conv2d(F.pad(x, (pl, pr, pt, pb)), k, b)
    return y


def g_s(layers, x, phases=False):
    for kind, a, b in layers:
        if kind == "convt":
            if phases:
                x = convt_phases(x, a, b)
            else:
                x = F.conv_transpose2d(x, a, b, stride=2, padding=2, output_padding=1)
        else:  # inverse GDN (CompressAI): x * sqrt(beta + gamma * x^2)
            x = x * torch.sqrt(F.conv2d(x * x, b, a))
    return x


def blas_threads():
    """The BLAS PyTorch calls (libblas.so.3, a Debian alternative): its name, and a function
    that sets its thread count. torch.set_num_threads does not reach OpenBLAS's own pthreads,
    so without this a "1 thread" run of PyTorch would use every CPU inside BLAS calls."""
    try:
        lib = ctypes.CDLL("libblas.so.3")
    except OSError:
        return "libblas.so.3 not loadable", lambda n: None
    path = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if hasattr(lib, "openblas_set_num_threads"):
        return f"OpenBLAS ({path})", lambda n: lib.openblas_set_num_threads(n)
    return f"{path} (no thread control: reference BLAS is single-threaded)", lambda n: None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="768x512")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1,0")
    ap.add_argument("--forms", default="convt,phases",
                    help="convt: conv_transpose2d; phases: four conv2d per layer (see convt_phases)")
    a = ap.parse_args()
    W, H = (int(v) for v in a.size.split("x"))
    layers = build()
    x = torch.randn(1, 320, H // 16, W // 16)
    default_threads = os.cpu_count() or 1
    forms = a.forms.split(",")
    blas, set_blas_threads = blas_threads()
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}, "
          f"BLAS {blas}, float32 g_s q6 topology, {W}x{H}, {a.reps} reps, forms {a.forms}")
    with torch.no_grad():  # the two forms compute the same sums: check on a small input
        xs = torch.randn(1, 320, 6, 5)
        d = (g_s(layers, xs, True) - g_s(layers, xs, False)).abs().max().item()
        print(f"  phases vs conv_transpose2d on 6x5 -> 96x80: max |difference| {d:.3g}")
        assert d < 1e-3
    for t in (int(v) for v in a.threads.split(",")):
        n = t if t > 0 else default_threads
        torch.set_num_threads(n)
        set_blas_threads(n)
        for form in forms:
            walls, cpus = [], []
            with torch.no_grad():
                g_s(layers, x, form == "phases")  # warm-up (allocations, kernel selection)
                for _ in range(a.reps):
                    w0, c0 = time.perf_counter(), time.process_time()
                    y = g_s(layers, x, form == "phases")
                    walls.append(time.perf_counter() - w0)
                    cpus.append(time.process_time() - c0)
            assert y.shape == (1, 3, H, W)
            name = f"torch-{form}/{n}{'(auto)' if t == 0 else ''}"
            print(f"  {name:22s} wall median {statistics.median(walls)*1e3:9.2f} ms "
                  f"(min {min(walls)*1e3:9.2f}, max {max(walls)*1e3:9.2f})  "
                  f"cpu median {statistics.median(cpus)*1e3:9.2f} ms")


if __name__ == "__main__":
    main()
