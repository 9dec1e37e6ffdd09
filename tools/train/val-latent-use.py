#!/usr/bin/python3
"""Which latent channels a checkpoint uses, on the validation pictures (float model, rounded
latents as the codec, likelihood bits).

    /usr/bin/python3 tools/train/val-latent-use.py CKPT [CKPT ...] [--first K]

Prints per checkpoint: y bits per pixel in all, in the first K channels (default 96, the base's
M) and in the rest, z bits per pixel, and the mean PSNR of the clamped reconstructions. Made to
see whether the channels that widen.py adds are taken into use (a widened model's new channels
start silent). Also the PSNR of g_s(y) with y not rounded at all ("ceiling"): what the
transforms could give with no quantisation, so the gap to the rounded PSNR is what rounding
costs and the ceiling is the transforms' own limit (session 9: at q7/q8 the ceiling is within
0.3-0.5 dB of the rounded PSNR, so a higher lambda cannot buy quality there; only better or
larger transforms can). The validation split only: the eval set stays out of choices (issue 12).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import dataset  # noqa: E402
from model import MeanScaleHyperprior  # noqa: E402


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--first", type=int, default=96)
    args = ap.parse_args()
    rows = [r for r in dataset.read_manifest(check=False) if r["split"] == "val"]
    pics = [dataset.load_eval(r["path"]) for r in rows]
    for path in args.checkpoints:
        ck = torch.load(path, map_location="cpu", weights_only=False)
        m = MeanScaleHyperprior(ck["N"], ck["M"])
        m.load_state_dict({k: v.float() for k, v in ck["model"].items()})
        m.eval()
        by_ch = np.zeros(ck["M"])
        z_bits = n_pix = 0.0
        psnrs, ceil = [], []
        for a in pics:
            x = torch.from_numpy(a.transpose(2, 0, 1)[None].astype(np.float32) / 255.0)
            out = m(x)
            by_ch += (-torch.log2(out["y_lik"])).sum((0, 2, 3)).numpy()
            z_bits += (-torch.log2(out["z_lik"])).sum().item()
            n_pix += x.shape[2] * x.shape[3]
            mse = ((out["x_hat"].clamp(0, 1) - x) ** 2).mean().item()
            psnrs.append(10 * np.log10(1 / max(mse, 1e-12)))
            mse = ((m.g_s(m.g_a(x)).clamp(0, 1) - x) ** 2).mean().item()
            ceil.append(10 * np.log10(1 / max(mse, 1e-12)))
        k = min(args.first, ck["M"])
        print("%s (N=%d M=%d, iteration %d): y %.4f bpp (channels 0..%d: %.4f, the rest: %.4f), "
              "z %.4f bpp, PSNR %.2f dB (ceiling, y not rounded: %.2f dB) over %d validation "
              "pictures"
              % (path, ck["N"], ck["M"], ck["iteration"], by_ch.sum() / n_pix, k - 1,
                 by_ch[:k].sum() / n_pix, by_ch[k:].sum() / n_pix, z_bits / n_pix,
                 float(np.mean(psnrs)), float(np.mean(ceil)), len(pics)))


if __name__ == "__main__":
    main()
