#!/usr/bin/python3
"""A variable-rate checkpoint (train.py --rates) against fine-tuned models, on the validation
pictures (float model, rounded latents as the codec, likelihood bits of y and z).

    /usr/bin/python3 tools/train/val-rates.py VR_CKPT [--compare CKPT,CKPT,...]

Prints every rate's bpp and PSNR, each --compare checkpoint's (plain models, as they are), and
for each of those the variable-rate model's bits at the same PSNR, interpolated linearly in
(PSNR, ln bpp) between its two neighbouring rates (blank outside its range). The validation
split only: the eval set stays out of choices (issue 12).
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import dataset  # noqa: E402
from model import MeanScaleHyperprior  # noqa: E402


def load(path):
    ck = torch.load(path, map_location="cpu", weights_only=False)
    rates = ck.get("rates")
    m = MeanScaleHyperprior(ck["N"], ck["M"], len(rates) if rates else 0)
    m.load_state_dict({k: v.float() for k, v in ck["model"].items()})
    m.eval()
    return m, ck


@torch.no_grad()
def measure(m, pics, rate=None):
    bits = n_pix = 0.0
    psnrs = []
    for a in pics:
        x = torch.from_numpy(a.transpose(2, 0, 1)[None].astype(np.float32) / 255.0)
        out = m(x, rate=rate)
        bits += -(torch.log2(out["y_lik"]).sum() + torch.log2(out["z_lik"]).sum()).item()
        n_pix += x.shape[2] * x.shape[3]
        mse = ((out["x_hat"].clamp(0, 1) - x) ** 2).mean().item()
        psnrs.append(10 * math.log10(1 / max(mse, 1e-12)))
    return bits / n_pix, float(np.mean(psnrs))


def bits_at(curve, psnr):
    """ln-bpp interpolation of the (bpp, psnr) curve at psnr; None outside it."""
    pts = sorted(curve, key=lambda p: p[1])
    for (b0, p0), (b1, p1) in zip(pts, pts[1:]):
        if p0 <= psnr <= p1 and p1 > p0:
            t = (psnr - p0) / (p1 - p0)
            return math.exp(math.log(b0) + t * (math.log(b1) - math.log(b0)))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vr")
    ap.add_argument("--compare", default="")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pics = [dataset.load_eval(r["path"]) for r in dataset.read_manifest(check=False)
            if r["split"] == "val"]
    m, ck = load(args.vr)
    if not ck.get("rates"):
        raise SystemExit("%s is not a variable-rate checkpoint" % args.vr)
    print("%s (N=%d M=%d, iteration %d), %d validation pictures"
          % (args.vr, ck["N"], ck["M"], ck["iteration"], len(pics)))
    curve = []
    for r, lmbda in enumerate(ck["rates"]):
        bpp, psnr = measure(m, pics, r)
        curve.append((bpp, psnr))
        print("rate %2d lambda %-7g %.4f bpp %.2f dB" % (r, lmbda, bpp, psnr), flush=True)
    for path in [p for p in args.compare.split(",") if p]:
        c, cck = load(path)
        bpp, psnr = measure(c, pics)
        vb = bits_at(curve, psnr)
        print("%s (lambda %g, iteration %d): %.4f bpp %.2f dB; variable-rate model at that "
              "PSNR: %s" % (path, cck["lambda"], cck["iteration"], bpp, psnr,
                            "%.4f bpp (%+.1f %% bits)" % (vb, 100 * (vb / bpp - 1))
                            if vb else "outside its range"), flush=True)


if __name__ == "__main__":
    main()
