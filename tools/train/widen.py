#!/usr/bin/python3
"""Widen a trained model (N, M) -> (N2, M2) without changing what it computes.

    /usr/bin/python3 tools/train/widen.py IN.pt OUT.pt --N 128 --M 192 [--check]

Why: the top qualities saturate at N=64/M=96 (q7 -> q8 +0.18 bpp for +0.15 dB; issue 12), and a
bigger model trained from scratch needs many more iterations than a fine-tune. A function-
preserving widening (Net2Net, Chen et al. 2016, in its "new units start silent" form) lets the
bigger model start where the small one ended and add capacity as it trains.

Every layer's weight tensor grows; the old block is copied. New output units of a hidden layer
get small random weights (so that they carry a signal and gradients reach them); weights from
new units into old units are zero, so the old units -- and the model's output -- are unchanged.
The layers that make y (g_a's last), z (h_a's last) and the scales/means (h_s's last) give their
new channels zero weights: y_new = z_new = 0 and mean_new = 0, scale_new = 0 -> bounded to 0.11,
where coding a 0 costs ~1e-5 bits. Inverse/forward GDN: new channels get beta 1, gamma 0.1 on
the diagonal and 0 to and from the old channels. The entropy bottleneck's new channels copy the
most peaked old channel's density, moved to median 0 (z_new = 0 codes in a fraction of a bit).

Output: a weights-only checkpoint (the format train.py --init-from reads); --check runs both
models in eval mode on the validation pictures and prints the largest x_hat difference and the
rates (x_hat must match to float rounding; the rate may grow by the z_new bits only).
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
from model import GDN, MeanScaleHyperprior  # noqa: E402
from train import atomic_save  # noqa: E402

NEW_STD = 0.02  # relative to the layer's old weight std: small, but a real signal


def _grow_conv(old, new, cin_old, cout_old, transposed, silent_out, gen):
    """old/new: nn.Conv2d or ConvTranspose2d. New-in -> old-out weights are zero; new outputs
    get random weights (zero where silent_out)."""
    w_old = old.weight.data
    w = torch.zeros_like(new.weight.data)
    std = float(w_old.std()) * NEW_STD
    if transposed:  # (cin, cout, kh, kw)
        w.normal_(0.0, std, generator=gen)
        w[:, :cout_old] = 0.0
        w[:cin_old, :cout_old] = w_old
        if silent_out:
            w[:, cout_old:] = 0.0
    else:           # (cout, cin, kh, kw)
        w.normal_(0.0, std, generator=gen)
        w[:cout_old] = 0.0
        w[:cout_old, :cin_old] = w_old
        if silent_out:
            w[cout_old:] = 0.0
    new.weight.data.copy_(w)
    b = torch.zeros_like(new.bias.data)
    b[:cout_old] = old.bias.data
    new.bias.data.copy_(b)


def _grow_gdn(old, new, c_old):
    beta_o, gamma_o = old.effective()
    c = new.beta.shape[0]
    beta = torch.ones(c)
    beta[:c_old] = beta_o.detach()
    gamma = 0.1 * torch.eye(c)
    gamma[:c_old, :c_old] = gamma_o.detach()
    new.beta.data.copy_(new.beta_reparam.init(beta))
    new.gamma.data.copy_(new.gamma_reparam.init(gamma))


def _grow_chain(old_seq, new_seq, widths_old, gen, silent_last, transposed_layers):
    """widths_old: input width then each conv's output width in the old model."""
    k = 0
    for i, (a, b) in enumerate(zip(old_seq, new_seq)):
        if isinstance(a, GDN):
            _grow_gdn(a, b, widths_old[k])
        elif hasattr(a, "weight"):
            last = k == len(widths_old) - 2
            _grow_conv(a, b, widths_old[k], widths_old[k + 1], i in transposed_layers,
                       silent_last and last, gen)
            k += 1


def _grow_bottleneck(old, new, c_old):
    eb_o, eb_n = old, new
    with torch.no_grad():
        med = eb_o.medians()
        # the most peaked channel: largest likelihood of its median bin
        v = med.reshape(-1, 1, 1)
        lik = eb_o.likelihood(v).reshape(-1)
        src = int(torch.argmax(lik))
        for lst_o, lst_n in ((eb_o.matrices, eb_n.matrices), (eb_o.biases, eb_n.biases),
                             (eb_o.factors, eb_n.factors)):
            for po, pn in zip(lst_o, lst_n):
                pn.data[:c_old] = po.data
                pn.data[c_old:] = po.data[src]
        # move the copies to median 0: x -> x + med[src] in the first affine layer
        shift = torch.nn.functional.softplus(eb_o.matrices[0].data[src]) * med[src]
        eb_n.biases[0].data[c_old:] = eb_o.biases[0].data[src] + shift
        q = eb_o.quantiles.data[src].clone() - med[src]
        eb_n.quantiles.data[:c_old] = eb_o.quantiles.data
        eb_n.quantiles.data[c_old:] = q
    return src


def widen(old, n2, m2, seed=1):
    n, m = old.N, old.M
    if n2 < n or m2 < m or m2 % 2:
        raise SystemExit("widen: N2 >= N, M2 >= M, M2 even")
    gen = torch.Generator().manual_seed(seed)
    new = MeanScaleHyperprior(n2, m2)
    _grow_chain(old.g_a, new.g_a, [3, n, n, n, m], gen, True, ())
    _grow_chain(old.g_s, new.g_s, [m, n, n, n, 3], gen, False, (0, 2, 4, 6))
    _grow_chain(old.h_a, new.h_a, [m, n, n, n], gen, True, ())
    # h_s: hidden widths M and 3M/2; the last layer's 2M outputs are (scales, means) halves,
    # so old scale c -> c, old mean c -> M2 + c.
    _grow_chain(old.h_s[:4], new.h_s[:4], [n, m, m * 3 // 2], gen, False, (0, 2))
    lo, ln = old.h_s[4], new.h_s[4]
    w = torch.zeros_like(ln.weight.data)
    b = torch.zeros_like(ln.bias.data)
    c_in = m * 3 // 2
    w[:m, :c_in] = lo.weight.data[:m]
    w[m2:m2 + m, :c_in] = lo.weight.data[m:]
    b[:m] = lo.bias.data[:m]
    b[m2:m2 + m] = lo.bias.data[m:]
    ln.weight.data.copy_(w)
    ln.bias.data.copy_(b)
    src = _grow_bottleneck(old.entropy_bottleneck, new.entropy_bottleneck, n)
    return new, src


@torch.no_grad()
def make_live(new, n, m, m2, live, live_s, gen, pack=None):
    """Wake the new latent channels (session 8: left at zero they stay dead, because rounding
    keeps them at 0 and no gradient reaches them). g_a's new outputs get random weights
    `live` times the old ones' std, so that y_new leaves the rounding bin; g_s's weights from
    them `live_s` times its old std (the picture changes a little); h_s's new scales start at
    the measured std of y_new on the validation pictures (a scale at its bound would price them
    at ~30 bits each and the rate term would push them back to 0). Means stay 0. pack: a data
    pack (pack-data.py) instead of the installed photos; its validation pictures, or else its
    first 13 training pictures."""
    ga, gs, hs = new.g_a[-1], new.g_s[0], new.h_s[-1]
    w = ga.weight.data                      # (M2, N, k, k)
    std = float(w[:m].std())
    w[m:].normal_(0.0, std * live, generator=gen)
    ga.bias.data[m:] = 0.0
    w = gs.weight.data                      # transposed: (M2, N, k, k)
    std = float(w[:m].std())
    w[m:].normal_(0.0, std * live_s, generator=gen)
    rows = dataset.read_pack(pack) if pack else dataset.read_manifest(check=False)
    pick = [r for r in rows if r["split"] == "val"] or [r for r in rows if r["split"] == "train"][:13]
    acc = []
    new.eval()
    for r in pick:
        a = dataset.load_eval(r["path"])
        x = torch.from_numpy(a.transpose(2, 0, 1)[None].astype(np.float32) / 255.0)
        y = new.g_a(x)[0, m:]
        acc.append(y.reshape(m2 - m, -1))
    sd = torch.cat(acc, 1).std(1).clamp(min=0.5)
    hs.bias.data[m:m2] = sd                 # the scales half of h_s's output
    return float(sd.mean())


@torch.no_grad()
def check(old, new):
    rows = dataset.read_manifest(check=False)
    worst = 0.0
    for r in rows:
        if r["split"] != "val":
            continue
        a = dataset.load_eval(r["path"])
        x = torch.from_numpy(a.transpose(2, 0, 1)[None].astype(np.float32) / 255.0)
        res = []
        for mdl in (old, new):
            mdl.eval()
            out = mdl(x)
            bits_y = -torch.log2(out["y_lik"]).sum().item()
            bits_z = -torch.log2(out["z_lik"]).sum().item()
            res.append((out["x_hat"], bits_y, bits_z))
        d = (res[0][0] - res[1][0]).abs().max().item()
        worst = max(worst, d)
        npix = x.shape[2] * x.shape[3]
        print("%-28s x_hat max diff %.2e  bpp y %.4f -> %.4f  z %.5f -> %.5f"
              % (os.path.basename(r["path"])[:28], d, res[0][1] / npix, res[1][1] / npix,
                 res[0][2] / npix, res[1][2] / npix))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--N", type=int, default=128)
    ap.add_argument("--M", type=int, default=192)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--live", type=float, default=0.0,
                    help="new latent channels start live: g_a's weights to them this many times "
                         "the old std (0: silent, the function-preserving widening)")
    ap.add_argument("--live-s", type=float, default=0.1,
                    help="with --live: g_s's weights from them, times its old std")
    ap.add_argument("--data-pack", default=None,
                    help="with --live: measure y_new on a data pack's pictures (pack-data.py)")
    args = ap.parse_args()
    ck = torch.load(args.src, map_location="cpu", weights_only=False)
    old = MeanScaleHyperprior(ck["N"], ck["M"])
    old.load_state_dict(ck["model"])
    new, src = widen(old, args.N, args.M, args.seed)
    print("widened N=%d M=%d -> N=%d M=%d; new z channels copy channel %d's density"
          % (ck["N"], ck["M"], args.N, args.M, src))
    if args.live > 0 and args.M > ck["M"]:
        gen = torch.Generator().manual_seed(args.seed + 1)
        s = make_live(new, ck["N"], ck["M"], args.M, args.live, args.live_s, gen, args.data_pack)
        print("new latent channels live: g_a x%g, g_s x%g of the old std; initial scale %.2f"
              % (args.live, args.live_s, s))
        if args.check:
            raise SystemExit("widen: --check needs --live 0 (live channels change the picture)")
    if args.check:
        worst = check(old, new)
        print("largest x_hat difference %.2e" % worst)
        if not worst < 1e-4:
            raise SystemExit("widen: the widened model does not compute the same pictures")
    out = {k: ck[k] for k in ("format", "quality", "lambda", "iteration") if k in ck}
    out.update({"name": "%s-n%dm%d" % (ck.get("name", "q%d" % ck["quality"]), args.N, args.M),
                "N": args.N, "M": args.M, "train_seconds": ck.get("train_seconds", 0.0),
                "last_eval": ck.get("last_eval", 0), "device": "cpu", "init": ck.get("init"),
                "widened_from": {"name": ck.get("name"), "N": ck["N"], "M": ck["M"],
                                 "iteration": int(ck["iteration"]), "seed": args.seed,
                                 "live": args.live, "live_s": args.live_s},
                "model": {k: v.contiguous() for k, v in new.state_dict().items()}})
    atomic_save(out, args.dst)
    print("wrote %s (%.1f MB)" % (args.dst, os.path.getsize(args.dst) / 1e6))


if __name__ == "__main__":
    main()
