#!/usr/bin/python3
"""Where a checkpoint stands against JPEG, on the validation pictures, through the real codec.

    /usr/bin/python3 tools/train/val-rd.py CKPT [CKPT ...] [--build build] [--work DIR]
                                          [--split val]

For the choices made while training (recipe, data, model size, when to fine-tune), on pictures
that are neither trained on nor in the eval set (split `val` of data-manifest.tsv): the eval
set stays out of every choice and is judged only at the end (issue 12).

Each checkpoint is exported (export.py) into DIR, every validation picture (scaled and cropped
as the eval pictures: long side 512, a multiple of 64) is coded with `wai encode` at the
checkpoint's quality and decoded with `wai decode` (the integer decoder), and compared with
libjpeg-turbo (`cjpeg -quality Q -sample 2x2 -optimize`, 4:2:0, settings 5..95) on the same
picture. For each picture: WAI's bpp (stream size) and PSNR (RGB8), JPEG's bpp at the same
PSNR (log-rate interpolated linearly between the two enclosing JPEG settings), the ratio
WAI bits / JPEG bits (below 1: WAI needs fewer bits), and WAI's PSNR against JPEG q90's (what
cameras save at: issue 23's target 1). One rate point per checkpoint, so this is
not a BD-rate; the records' script (tools/eval/) computes those from all qualities.

A variable-rate checkpoint (train.py --rates) is measured at each of its rates (`wai encode
--rate R`; --rates picks some), one block per rate; at the end, its bits at each plain
checkpoint's mean PSNR (interpolated between its rates), against that checkpoint's.
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "eval"))
import dataset  # noqa: E402
import evalmath as E  # noqa: E402

_spec = importlib.util.spec_from_file_location("val_rates", os.path.join(HERE, "val-rates.py"))
val_rates = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(val_rates)

JPEG_Q = (1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 75, 80, 85, 90, 95)
PY = "/usr/bin/python3"


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stdout))
    return r.stdout


def jpeg_curve(png, rgb, work):
    """JPEG's (bpp, PSNR) at every setting of JPEG_Q, sorted by PSNR, and q90's point."""
    pts = []
    ppm = png[:-4] + ".ppm"
    Image.fromarray(rgb).save(ppm)
    for q in JPEG_Q:
        jpg = "%s-j%d.jpg" % (png[:-4], q)
        run(["cjpeg", "-quality", str(q), "-sample", "2x2", "-optimize", "-outfile", jpg, ppm])
        run(["djpeg", "-ppm", "-outfile", jpg + ".ppm", jpg])
        dec = np.array(Image.open(jpg + ".ppm").convert("RGB"))
        pts.append((8.0 * os.path.getsize(jpg) / (rgb.shape[0] * rgb.shape[1]),
                    E.psnr(rgb, dec)))
    return sorted(pts, key=lambda p: p[1]), pts[JPEG_Q.index(90)]


def jpeg_bpp_at(curve, psnr):
    """JPEG bpp at this PSNR, log-rate interpolated; None outside JPEG's measured range."""
    for (b0, p0), (b1, p1) in zip(curve, curve[1:]):
        if p0 <= psnr <= p1 and p1 > p0:
            t = (psnr - p0) / (p1 - p0)
            return float(np.exp(np.log(b0) + t * (np.log(b1) - np.log(b0))))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--split", default="val", help="manifest split to use (default val)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N pictures")
    ap.add_argument("--rates", default=None,
                    help="a variable-rate checkpoint's rate indices to measure (default all)")
    a = ap.parse_args()
    wai = os.path.join(a.build, "tools", "wai")
    if not os.access(wai, os.X_OK):
        raise SystemExit("no %s: build the tree first" % wai)
    rows = [r for r in dataset.read_manifest(check=True) if r["split"] == a.split]
    if a.limit:
        rows = rows[:a.limit]
    if not rows:
        raise SystemExit("no pictures of split %r in the manifest" % a.split)
    work = a.work or tempfile.mkdtemp(prefix="wai-val-")
    os.makedirs(work, exist_ok=True)
    pics = []
    for r in rows:
        name = os.path.splitext(os.path.basename(r["path"]))[0]
        rgb = dataset.load_eval(r["path"])
        png = os.path.join(work, name + ".png")
        Image.fromarray(rgb).save(png)
        pics.append((name, png, rgb, jpeg_curve(png, rgb, work)))
    import torch
    vr_curves, plain = [], []   # (path, [(mean bpp, mean PSNR) per rate]); (path, (bpp, PSNR))
    for ck_path in a.checkpoints:
        ck = torch.load(ck_path, map_location="cpu", weights_only=False)
        q, it = int(ck["quality"]), int(ck["iteration"])
        mdir = os.path.join(work, "m-%s-%d" % (os.path.basename(ck_path)[:-3], it))
        os.makedirs(mdir, exist_ok=True)
        run([PY, os.path.join(HERE, "export.py"), ck_path, "-o", os.path.join(mdir, "wai-q%d" % q)])
        if ck.get("rates"):
            idx = ([int(v) for v in a.rates.split(",")] if a.rates
                   else list(range(len(ck["rates"]))))
            curve = []
            for r in idx:
                print("%s (quality %d, rate %d: lambda %g, iteration %d), %d pictures of split %s:"
                      % (ck_path, q, r, ck["rates"][r], it, len(pics), a.split))
                curve.append(measure(wai, pics, mdir, q, ["--rate", str(r)]))
            vr_curves.append((ck_path, curve))
        else:
            print("%s (quality %d, lambda %g, iteration %d), %d pictures of split %s:"
                  % (ck_path, q, ck["lambda"], it, len(pics), a.split))
            plain.append((ck_path, measure(wai, pics, mdir, q, [])))
    # a variable-rate model's bits at each plain model's mean PSNR, ln-bpp interpolated between
    # its two enclosing rates (val-rates.py's bits_at; blank outside its range)
    for vr_path, curve in vr_curves:
        for path, (bpp, psnr) in plain:
            vb = val_rates.bits_at(curve, psnr)
            print("%s at the PSNR of %s (%.3f bpp, %.2f dB): %s" % (
                vr_path, path, bpp, psnr,
                "%.3f bpp (%+.1f %% bits)" % (vb, 100 * (vb / bpp - 1)) if vb else "outside its range"))
    return 0


def measure(wai, pics, mdir, q, extra):
    """Every picture through the codec with the model pair of quality q in mdir; prints a line
    per picture and the means."""
    ratios, bpps, psnrs, errs, over_q90 = [], [], [], [], []
    for name, png, rgb, (curve, q90) in pics:
        stream = os.path.join(mdir, name + ".wai")
        run([wai, "encode", png, "-o", stream, "--quality", str(q), "--model-dir", mdir, "-q"]
            + extra)
        dec = os.path.join(mdir, name + ".dec.png")
        run([wai, "decode", stream, "-o", dec, "--model-path", mdir])
        out = np.array(Image.open(dec).convert("RGB"))
        bpp = 8.0 * os.path.getsize(stream) / (rgb.shape[0] * rgb.shape[1])
        p = E.psnr(rgb, out)
        jb = jpeg_bpp_at(curve, p)
        ratio = bpp / jb if jb else float("nan")
        err = out.reshape(-1, 3).mean(0) - rgb.reshape(-1, 3).astype(float).mean(0)
        cast = np.abs(err)
        errs.append(err)
        bpps.append(bpp)
        psnrs.append(p)
        if jb:
            ratios.append(ratio)
        over_q90.append(p - q90[1])
        print("  %-28s %dx%d  %.3f bpp %6.2f dB  JPEG at that PSNR %s  WAI/JPEG %s  "
              "max channel-mean error %.2f (R G B %+.2f %+.2f %+.2f)  JPEG q90 %.2f dB %.2f bpp "
              "(%+.2f dB)"
              % (name, rgb.shape[1], rgb.shape[0], bpp, p,
                 "%.3f bpp" % jb if jb else "n/a", "%.2f" % ratio if jb else "n/a",
                 cast.max(), err[0], err[1], err[2], q90[1], q90[0], p - q90[1]))
    print("  mean %.3f bpp %.2f dB; WAI/JPEG bits median %s over %d of %d pictures"
          % (np.mean(bpps), np.mean(psnrs),
             "%.3f" % float(np.median(ratios)) if ratios else "n/a", len(ratios), len(pics)))
    print("  at or above JPEG q90's PSNR on %d of %d pictures (PSNR - q90's: %+.2f to %+.2f dB)"
          % (sum(d >= 0 for d in over_q90), len(pics), min(over_q90), max(over_q90)))
    e = np.array(errs)
    print("  channel-mean error (decoded - original), mean over the pictures: R G B "
          "%+.2f %+.2f %+.2f; worst |error| %.2f" % (*e.mean(0), np.abs(e).max()), flush=True)
    return float(np.mean(bpps)), float(np.mean(psnrs))


if __name__ == "__main__":
    sys.exit(main())
