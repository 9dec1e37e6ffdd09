#!/usr/bin/python3
"""Can one model serve several rates? Per-channel quantisation steps on a frozen model, measured
against models fine-tuned for each rate, on the validation pictures (float model).

    /usr/bin/python3 tools/train/gain-probe.py BASE --lambdas 0.02,0.05 \
        [--compare CKPT,CKPT] [--iterations 300] [--crop 256] [--batch 8] [--threads 1]

For each lambda it trains only 2*M numbers on BASE's frozen weights: a quantisation step dq[c]
per latent channel (the encoder codes v = round((y - mean) / dq), the entropy model sees the
scale in those units, scale / dq) and a reconstruction step dr[c] (y_hat = v * dr + mean; the
"asymmetric gain" of Cui et al. 2021). dq = dr = 1 is the plain model. Training: the rate sees
(y - mean) / dq plus uniform noise, the synthesis gets the rounded value with a straight-through
gradient (the trainer's --ste mixed quantisation), loss lambda * 255^2 * MSE + bpp as train.py.
Then it evaluates BASE with each learned pair and every --compare checkpoint as it is (rounded
latents, likelihood bits of y and z, PSNR of the clamped picture), over the validation split
only (issue 12: the eval set stays out of choices). A research probe: nothing here ships.
"""
import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import dataset  # noqa: E402
from model import LIKELIHOOD_BOUND, SCALE_BOUND, MeanScaleHyperprior, lower_bound  # noqa: E402


def load(path):
    ck = torch.load(path, map_location="cpu", weights_only=False)
    m = MeanScaleHyperprior(ck["N"], ck["M"])
    m.load_state_dict({k: v.float() for k, v in ck["model"].items()})
    m.eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m, ck


def gaussian_lik(u, s):
    """Probability of the unit interval around u under N(0, s) (u, s in quantisation steps)."""
    s = lower_bound(s, SCALE_BOUND)
    v = torch.abs(u)
    c = -(2 ** -0.5)
    lik = 0.5 * torch.erfc(c * (0.5 - v) / s) - 0.5 * torch.erfc(c * (-0.5 - v) / s)
    return lower_bound(lik, LIKELIHOOD_BOUND)


@torch.no_grad()
def side(m, x):
    """y, the z likelihoods and h_s's (scales, means): none depend on the steps."""
    y = m.g_a(x)
    z = m.h_a(y)
    z_hat, z_lik = m.entropy_bottleneck(z)  # eval mode: z rounded around its medians
    scales, means = m.h_s(z_hat).chunk(2, 1)
    return y, z_lik, scales, means


def run(m, x, log_dq, log_dr, train):
    y, z_lik, scales, means = side(m, x)
    dq = torch.exp(log_dq)[None, :, None, None]
    dr = torch.exp(log_dr)[None, :, None, None]
    u = (y - means) / dq
    if train:
        u_noisy = u + torch.empty_like(u).uniform_(-0.5, 0.5)
        y_lik = gaussian_lik(u_noisy, scales / dq)
        u_round = u + (torch.round(u) - u).detach()
    else:
        u_round = torch.round(u)
        y_lik = gaussian_lik(u_round, scales / dq)
    x_hat = m.g_s(u_round * dr + means)
    return x_hat, y_lik, z_lik


def evaluate(m, pics, log_dq, log_dr):
    y_bits = z_bits = n_pix = 0.0
    psnrs = []
    with torch.no_grad():
        for a in pics:
            x = torch.from_numpy(a.transpose(2, 0, 1)[None].astype(np.float32) / 255.0)
            x_hat, y_lik, z_lik = run(m, x, log_dq, log_dr, False)
            y_bits += (-torch.log2(y_lik)).sum().item()
            z_bits += (-torch.log2(z_lik)).sum().item()
            n_pix += x.shape[2] * x.shape[3]
            mse = ((x_hat.clamp(0, 1) - x) ** 2).mean().item()
            psnrs.append(10 * np.log10(1 / max(mse, 1e-12)))
    return (y_bits + z_bits) / n_pix, float(np.mean(psnrs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("--lambdas", default="0.02,0.05")
    ap.add_argument("--compare", default="", help="checkpoints evaluated as they are")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--crop", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--symmetric", action="store_true", help="dr = dq (one step per channel)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    rows = dataset.read_manifest(check=False)
    pics = [dataset.load_eval(r["path"]) for r in rows if r["split"] == "val"]
    m, ck = load(args.base)
    zero = torch.zeros(ck["M"])
    bpp, psnr = evaluate(m, pics, zero, zero)
    print("%s as it is (lambda %g): %.4f bpp, %.2f dB" % (args.base, ck["lambda"], bpp, psnr),
          flush=True)
    for path in [p for p in args.compare.split(",") if p]:
        c, cck = load(path)
        bpp, psnr = evaluate(c, pics, zero, zero)
        print("%s as it is (lambda %g): %.4f bpp, %.2f dB" % (path, cck["lambda"], bpp, psnr),
              flush=True)
    sampler = dataset.CropSampler(rows, log=lambda s: print(s, flush=True), crop=args.crop)
    for lmbda in [float(v) for v in args.lambdas.split(",")]:
        # start from the plain step scaled as a uniform quantiser would need: bits ~ log2(1/d)
        start = 0.5 * math.log(ck["lambda"] / lmbda)
        log_dq = torch.full((ck["M"],), start, requires_grad=True)
        log_dr = log_dq if args.symmetric else torch.full((ck["M"],), start, requires_grad=True)
        params = [log_dq] if args.symmetric else [log_dq, log_dr]
        opt = torch.optim.Adam(params, lr=args.lr)
        t0 = time.time()
        for it in range(1, args.iterations + 1):
            x = torch.from_numpy(sampler.batch(rng, args.batch))
            x_hat, y_lik, z_lik = run(m, x, log_dq, log_dr, True)
            n_pix = x.shape[0] * x.shape[2] * x.shape[3]
            bpp = -(torch.log(y_lik).sum() + torch.log(z_lik).sum()) / math.log(2) / n_pix
            mse = torch.mean((x_hat - x) ** 2)
            loss = lmbda * 255 ** 2 * mse + bpp
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % 50 == 0:
                print("lambda %g it %d loss %.4f bpp %.4f psnr %.2f mean dq %.3f dr %.3f "
                      "(%.1f s/it)" % (lmbda, it, loss.item(), bpp.item(),
                                      10 * math.log10(1 / mse.item()),
                                      torch.exp(log_dq).mean().item(),
                                      torch.exp(log_dr).mean().item(),
                                      (time.time() - t0) / it), flush=True)
        bpp, psnr = evaluate(m, pics, log_dq.detach(), log_dr.detach())
        print("RESULT base with steps for lambda %g: %.4f bpp, %.2f dB (dq %.3f..%.3f, dr "
              "%.3f..%.3f)" % (lmbda, bpp, psnr, torch.exp(log_dq).min().item(),
                               torch.exp(log_dq).max().item(), torch.exp(log_dr).min().item(),
                               torch.exp(log_dr).max().item()), flush=True)
        torch.save({"lambda": lmbda, "log_dq": log_dq.detach(), "log_dr": log_dr.detach()},
                   "/tmp/gain-probe-%g.pt" % lmbda)


if __name__ == "__main__":
    main()
