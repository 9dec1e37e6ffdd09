#!/usr/bin/python3
"""Remove a model's systematic colour cast: shift the output bias of g_s's last layer.

    /usr/bin/python3 tools/train/calibrate-bias.py CKPT [--pictures 96] [--passes 2] [--dry-run]

A trained model can decode every picture a little too blue, say (issue 12's target: every
channel mean within 1.0 level of the original). This measures, with the float model in eval
mode (latents rounded around their means and medians, as the integer decoder does), the mean
over TRAINING pictures of each RGB channel's error (decoded RGB8 mean minus original mean, in
levels; every picture weighs the same), and subtracts it from the 3 output biases of g_s's last
transposed convolution (x_hat = conv + bias, so a bias shift moves every output sample by the
same amount until the [0, 1] clamp). Each pass measures again with the new biases (the clamp
makes one pass inexact). The pictures: `--pictures` of the `train` split of
data-manifest.tsv, evenly spaced in manifest order, scaled and cropped as the eval pictures
(long side 512, multiples of 64) -- never val or eval pictures, so val-rd.py can judge the
effect. The checkpoint is rewritten in place (atomically) with the new biases and a
`bias_calibration` entry (pictures, passes, the shift in levels, the residual error); the
rest of it (Adam states included) is unchanged. Prints the error before and after each pass.
"""

import argparse
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dataset  # noqa: E402
from model import MeanScaleHyperprior  # noqa: E402
from train import atomic_save  # noqa: E402


def channel_errors(net, pics):
    """Mean over the pictures of (decoded RGB8 channel mean - original channel mean), levels."""
    errs = []
    with torch.no_grad():
        for rgb in pics:
            x = torch.from_numpy(rgb.transpose(2, 0, 1).astype(np.float32) / 255.0)[None]
            x_hat = net(x)["x_hat"].clamp(0, 1)
            dec = torch.floor(x_hat * 255.0 + 0.5).double()
            errs.append((dec.mean((0, 2, 3)) - x.double().mean((0, 2, 3)) * 255.0).numpy())
    return np.mean(errs, axis=0), np.array(errs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--pictures", type=int, default=96, help="train pictures used (default 96)")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--dry-run", action="store_true", help="measure only, write nothing")
    ap.add_argument("--split", default="train",
                    help="manifest split measured (default train; another one implies "
                    "--dry-run: calibrate on train, judge on val)")
    a = ap.parse_args()
    torch.set_num_threads(2)
    ck = torch.load(a.checkpoint, map_location="cpu", weights_only=False)
    net = MeanScaleHyperprior(int(ck["N"]), int(ck["M"]))
    net.load_state_dict(ck["model"])
    net.eval()
    if a.split != "train":
        a.dry_run, a.passes = True, 0
    rows = [r for r in dataset.read_manifest(check=True) if r["split"] == a.split]
    step = max(1, len(rows) // max(1, a.pictures))
    rows = rows[::step][:a.pictures]
    pics = [dataset.load_eval(r["path"]) for r in rows]
    bias = net.g_s[-1].bias
    shift = np.zeros(3)
    mean, per = channel_errors(net, pics)
    print("%s: %d %s pictures; error before (R G B, levels): %+.3f %+.3f %+.3f; "
          "worst picture |error| %.2f, median %.2f" % (
              a.checkpoint, len(pics), a.split, *mean, np.abs(per).max(),
              float(np.median(np.abs(per).max(1)))))
    for p in range(a.passes):
        with torch.no_grad():
            bias -= torch.from_numpy(mean / 255.0).to(bias.dtype)
        shift -= mean
        mean, per = channel_errors(net, pics)
        print("  pass %d: shift %+.3f %+.3f %+.3f levels; error after %+.3f %+.3f %+.3f; worst "
              "picture |error| %.2f" % (p + 1, *shift, *mean, np.abs(per).max()))
    if a.dry_run:
        return 0
    ck["model"] = {k: v.contiguous() for k, v in net.state_dict().items()}
    prev = ck.get("bias_calibration")
    total = shift + (np.array(prev["shift_levels"]) if prev else 0)
    ck["bias_calibration"] = {"pictures": len(pics), "passes": a.passes,
                              "shift_levels": [float(v) for v in total],
                              "residual_levels": [float(v) for v in mean]}
    atomic_save(ck, a.checkpoint)
    print("  wrote %s (total shift %+.3f %+.3f %+.3f levels)" % (a.checkpoint, *total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
