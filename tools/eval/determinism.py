#!/usr/bin/python3
"""Readings for docs/research/determinism-cost.md and the float half of reproducibility.md.

    /usr/bin/python3 tools/eval/determinism.py --work DIR [--wai build/tools/wai]

For every evaluation picture (samples/eval/manifest.tsv) and quality of the models/ ladder
(waiformat.ladder: a pair wai-qN.whm + .ana, or a quality file wai-qN.rate, rate K of a
variable-rate pair NAME.whm + .ana) with a float checkpoint (tools/train/checkpoints/qN.pt for a
pair, NAME.pt at its rate K for a quality file):

integer side: `wai encode --quality N` -> stream (bits = file size), `wai decode` -> RGB8, PSNR,
MS-SSIM.

float side: the same checkpoint in PyTorch (tools/train/model.py), float32, one thread: g_a and
h_a; z symbols round(z - median) with the exported z medians (the ones the integer codec uses);
float h_s on z_hat gives scales and means; with the exported steps of the rate (qstep, rstep of
the WHM1 rate table, Q12; a pair: 4096), table index = spec 7.4 applied to scale * 4096 with
qstep; y symbols round((y - mean) / dq), dq = qstep / 4096, as the C encoder rounds them; g_s on
y_hat = symbol * rstep / 4096 + mean; RGB8 = clamp(floor(255 x + 1/2)). Its bits are the bytes
of a stream coding those symbols with the model's own 16-bit tables and escape rules
(tools/eval/waiformat.py, the rANS encoder of spec 7.1), so both sides pay the same
entropy-coding overhead and container bytes.

float-likelihood side: the float model's own rate estimate (eval-mode forward of model.py at
the checkpoint's rate: z around its learnt medians, bits = -log2 of the likelihoods, no tables,
no container), the figure a paper would quote.

float decode variants (reproducibility): on each integer stream's own z_hat and y symbols, h_s
and g_s (on symbol * rstep / 4096 + mean) in float32 with 1 and 2 threads, float64 and bfloat16;
counts of y elements whose table index or Q12 mean differs from the integer decoder's and from
float32/1 thread, and RGB8 bytes that differ.

Rate K of the exported model is the checkpoint's rate whose exported steps are K's (export.py
--rates-keep may reorder); a checkpoint without it is an error.

Writes DIR/rd-wai.tsv, DIR/det-diag.tsv, DIR/repro-float.tsv. With --qualities (a model
replaced, the other qualities' checkpoints not at hand) only those qualities are measured and
their rows replace theirs in the files there; the other rows are kept.
"""

import argparse
import copy
import hashlib
import os
import subprocess
import sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
import evalmath as E  # noqa: E402
import records as R  # noqa: E402
import waiformat as W  # noqa: E402
import export as X  # noqa: E402
import model as TM  # noqa: E402

CKPT = os.path.join(ROOT, "tools", "train", "checkpoints")


def pictures():
    rows = []
    for line in open(os.path.join(ROOT, "samples", "eval", "manifest.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        rows.append(line.split("\t")[0])
    return rows


def qualities():
    """{quality: (model path without extension, rate or None, checkpoint)} of the ladder's
    qualities whose float checkpoint is here: qN.pt for a pair, NAME.pt for a quality file."""
    out = {}
    for q, (stem, rate) in W.ladder(os.path.join(ROOT, "models")).items():
        ck = os.path.join(CKPT, ("q%d" % q if rate is None else os.path.basename(stem)) + ".pt")
        if os.path.exists(ck):
            out[q] = (stem, rate, ck)
    return out


def load_rgb(path):
    return np.array(Image.open(path).convert("RGB"))


def to_rgb8(x, w, h):
    """float tensor (1, 3, Hp, Wp) in [0, 1] -> RGB8 (h, w, 3)."""
    a = x[0].detach().double().numpy()
    a = np.clip(np.floor(a * 255 + 0.5), 0, 255).astype(np.uint8)
    return a[:, :h, :w].transpose(1, 2, 0)


def padded(rgb, mult):
    h, w, _ = rgb.shape
    hp, wp = -(-h // mult) * mult, -(-w // mult) * mult
    a = np.pad(rgb, ((0, hp - h), (0, wp - w), (0, 0)), mode="edge")
    return torch.from_numpy(a.transpose(2, 0, 1).astype(np.float32) / 255.0)[None]


def load_net(path, m, rate):
    """(net in eval mode, the checkpoint's rate index of the model's rate, or None)."""
    ck = torch.load(path, map_location="cpu")
    vr = ck.get("rates")
    net = TM.MeanScaleHyperprior(int(ck["N"]), int(ck["M"]), rates=len(vr) if vr else 0)
    net.load_state_dict(ck["model"])
    net.eval()
    if rate is None:
        return net, None
    steps = (m.qstep[rate], m.rstep[rate])
    table = X.rate_table(ck["model"], range(len(vr or ())))
    if steps not in table:
        raise SystemExit("determinism: %s has no rate with the steps of rate %d of its model"
                         % (path, rate))
    return net, table.index(steps)


def mean_err(ref, dec):
    """Colour cast: per RGB channel, the decoded picture's mean minus the original's, in 8-bit
    levels (issue 12's target: within 1.0)."""
    return tuple(float(dec[..., c].astype(np.float64).mean() - ref[..., c].astype(np.float64).mean())
                 for c in range(3))


def channel_steps(m, rate):
    """The exported (qstep, rstep) of the rate per y channel as float64 (1, n_y, 1, 1) tensors,
    Q12 (4096 for a pair)."""
    return tuple(torch.tensor(st, dtype=torch.float64).reshape(1, -1, 1, 1)
                 for st in m.steps(rate))


def float_side(net, m, rgb, rate):
    """The float codec of the module docstring: (bytes, RGB8, z_sym, idx)."""
    h, w, _ = rgb.shape
    torch.set_num_threads(1)
    qs, rs = channel_steps(m, rate)
    with torch.no_grad():
        x = padded(rgb, m.pad_multiple)
        y = net.g_a(x)
        z = net.h_a(y)
        med = torch.tensor(m.z_median, dtype=torch.float64).reshape(1, -1, 1, 1) / 4096
        z_sym = torch.floor(z.double() - med + 0.5).clamp(-65535, 65535)
        z_hat = (z_sym + med).float()
        scales, means = net.h_s(z_hat).chunk(2, 1)
        idx = m.table_index(scales[0].double().numpy() * 4096.0, m.steps(rate)[0])
        # the C encoder's rounding: floor((4096 y - mean_q12) / qstep + 1/2)
        y_sym = torch.floor((y.double() - means.double()) * 4096.0 / qs + 0.5).clamp(-65535, 65535)
        y_hat = (y_sym * rs / 4096.0 + means.double()).float()
        x_hat = net.g_s(y_hat)
    zb, yb = W.coded_bytes(m, z_sym[0].long().numpy(), y_sym[0].long().numpy(), idx)
    return W.stream_overhead(rate) + zb + yb, to_rgb8(x_hat, w, h), z_sym[0].long().numpy(), idx


def float_likelihood(net, m, rgb, ck_rate):
    """The float model's own estimate, CompressAI-style (eval-mode forward at the checkpoint's
    rate index ck_rate, None for a plain model): z rounded around its learnt medians, bits =
    -log2 of the factorised and Gaussian likelihoods, no container. Returns (bytes rounded up,
    RGB8)."""
    h, w, _ = rgb.shape
    torch.set_num_threads(1)
    with torch.no_grad():
        out = net(padded(rgb, m.pad_multiple), rate=ck_rate)
        bits = -(torch.log2(out["y_lik"].double()).sum() + torch.log2(out["z_lik"].double()).sum())
    return int(np.ceil(float(bits) / 8)), to_rgb8(out["x_hat"], w, h)


VARIANTS = (("float32-t1", torch.float32, 1), ("float32-t2", torch.float32, 2),
            ("float64", torch.float64, 1), ("bfloat16", torch.bfloat16, 1))


def float_decode(net, m, rd, dtype, threads, w, h):
    """h_s and g_s on the integer stream's z_hat and y symbols (at its rate's rstep), in dtype."""
    torch.set_num_threads(threads)
    n = copy.deepcopy(net).to(dtype)
    rs = np.array(m.steps(rd["rate"])[1], dtype=np.float64).reshape(-1, 1, 1)
    with torch.no_grad():
        z_hat = torch.from_numpy(rd["z_hat"].astype(np.float64) / 4096.0)[None].to(dtype)
        scales, means = n.h_s(z_hat).chunk(2, 1)
        s = scales[0].double().numpy() * 4096.0
        mu = means[0].double().numpy()
        y_hat = torch.from_numpy(rd["y_sym"].astype(np.float64) * rs / 4096.0 + mu)[None].to(dtype)
        x = n.g_s(y_hat).double()
    return s, mu, to_rgb8(x, w, h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--wai", default=os.path.join(ROOT, "build", "tools", "wai"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "research", "data"))
    ap.add_argument("--only", help="quick look: one picture (no .png) and quality, NAME:Q")
    ap.add_argument("--qualities", help="comma list: measure only these, merged into --out")
    a = ap.parse_args()
    only_q = {int(q) for q in a.qualities.split(",")} if a.qualities else None
    os.makedirs(a.work, exist_ok=True)
    env = dict(os.environ, WAI_MODEL_PATH=os.path.join(ROOT, "models"))
    rd_rows, diag_rows, rep_rows = [], [], []
    for q, (stem, rate, ckpt) in qualities().items():
        if a.only and q != int(a.only.split(":")[1]):
            continue
        if only_q is not None and q not in only_q:
            continue
        m = W.Model(open(stem + ".whm", "rb").read())
        net, ck_rate = load_net(ckpt, m, rate)
        for pic in pictures():
            name = os.path.splitext(pic)[0]
            if a.only and name != a.only.split(":")[0]:
                continue
            src = os.path.join(ROOT, "samples", "eval", pic)
            rgb = load_rgb(src)
            h, w, _ = rgb.shape
            npix = w * h
            stream = os.path.join(a.work, "%s-q%d.wai" % (name, q))
            dec = os.path.join(a.work, "%s-q%d.png" % (name, q))
            subprocess.run([a.wai, "encode", src, "-o", stream, "--quality", str(q),
                            "--model-dir", os.path.join(ROOT, "models")], check=True,
                           env=env, stdout=subprocess.DEVNULL)
            subprocess.run([a.wai, "decode", stream, "-o", dec], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            data = open(stream, "rb").read()
            irgb = load_rgb(dec)
            rd_rows.append((name, q, "integer", len(data), 8.0 * len(data) / npix,
                            E.psnr(rgb, irgb), E.ms_ssim(rgb, irgb)) + mean_err(rgb, irgb))
            rd = W.read_stream(data, m)
            assert rd["rate"] == rate, "%s: rate %s, not quality %d's" % (stream, rd["rate"], q)
            fbytes, frgb, fz, fidx = float_side(net, m, rgb, rate)
            rd_rows.append((name, q, "float", fbytes, 8.0 * fbytes / npix,
                            E.psnr(rgb, frgb), E.ms_ssim(rgb, frgb)) + mean_err(rgb, frgb))
            lbytes, lrgb = float_likelihood(net, m, rgb, ck_rate)
            rd_rows.append((name, q, "float-likelihood", lbytes, 8.0 * lbytes / npix,
                            E.psnr(rgb, lrgb), E.ms_ssim(rgb, lrgb)) + mean_err(rgb, lrgb))
            diag_rows.append((name, q, hashlib.sha256(data).hexdigest(), rd["z_sym"].size,
                              int(np.sum(fz != rd["z_sym"])), rd["y_sym"].size,
                              int(np.sum(fidx != rd["y_index"]))))
            ref = None
            for vname, dtype, threads in VARIANTS:
                s, mu, vrgb = float_decode(net, m, rd, dtype, threads, w, h)
                vidx = m.table_index(s, m.steps(rate)[0])
                vmean = np.floor(mu * 4096.0 + 0.5).astype(np.int64)
                if ref is None:
                    ref = (vidx, vmean, vrgb)
                rep_rows.append((name, q, vname, rd["y_sym"].size,
                                 int(np.sum(vidx != rd["y_index"])),
                                 int(np.sum(vmean != rd["y_mean"])),
                                 int(np.sum(vidx != ref[0])), int(np.sum(vmean != ref[1])),
                                 int(np.sum(vrgb != irgb)), int(np.sum(vrgb != ref[2])),
                                 hashlib.sha256(vrgb.tobytes()).hexdigest()))
            print("q%d %s: int %d B %.3f dB, float %d B %.3f dB" %
                  (q, name, len(data), rd_rows[-3][5], fbytes, rd_rows[-2][5]), flush=True)
    os.makedirs(a.out, exist_ok=True)
    R.write_tsv(os.path.join(a.out, "rd-wai.tsv"),
               "# picture\tquality\tside\tbytes\tbpp\tpsnr_db\tmsssim"
               "\tmean_err_r\tmean_err_g\tmean_err_b\n",
               ["%s\t%d\t%s\t%d\t%.6f\t%.4f\t%.6f\t%.4f\t%.4f\t%.4f\n" % r for r in rd_rows], only_q)
    R.write_tsv(os.path.join(a.out, "det-diag.tsv"),
               "# picture\tquality\tstream_sha256\tz_elements\tz_sym_differ_torch_vs_c"
               "\ty_elements\ty_index_differ_float_vs_int\n",
               ["%s\t%d\t%s\t%d\t%d\t%d\t%d\n" % r for r in diag_rows], only_q)
    R.write_tsv(os.path.join(a.out, "repro-float.tsv"),
               "# picture\tquality\tvariant\ty_elements\tindex_differ_vs_int\tmean_differ_vs_int"
               "\tindex_differ_vs_f32t1\tmean_differ_vs_f32t1\trgb_bytes_differ_vs_int"
               "\trgb_bytes_differ_vs_f32t1\trgb_sha256\n",
               ["%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n" % r for r in rep_rows], only_q)
    return 0



if __name__ == "__main__":
    sys.exit(main())
