#!/usr/bin/python3
"""Readings for docs/research/classic-codecs.md: JPEG, WebP and AVIF on the evaluation set.

    /usr/bin/python3 tools/eval/classic.py --work DIR

JPEG: libjpeg-turbo `cjpeg -quality Q -sample 2x2 -optimize` (4:2:0, optimised Huffman tables),
decoded by `djpeg -ppm`. WebP: `cwebp -q Q` (lossy, 4:2:0, default method 4), `dwebp -ppm`.
AVIF: `avifenc --min A --max A -y 420 -s 6 -j 1` (libaom, 4:2:0, speed 6), `avifdec`.
Bits = file size. PSNR and MS-SSIM on RGB8 against the source PNG (tools/eval/evalmath.py).
Writes docs/research/data/rd-classic.tsv.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import evalmath as E  # noqa: E402


def pictures():
    out = []
    for line in open(os.path.join(ROOT, "samples", "eval", "manifest.tsv")):
        if line.strip() and not line.startswith("#"):
            out.append(line.split("\t")[0])
    return out

JPEG_Q = (1, 2, 3, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90)
WEBP_Q = (0, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90)
AVIF_Q = (63, 60, 56, 52, 48, 44, 40, 36, 32, 28, 24)


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "research", "data"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rows = []
    for pic in pictures():
        name = os.path.splitext(pic)[0]
        src = os.path.join(ROOT, "samples", "eval", pic)
        rgb = np.array(Image.open(src).convert("RGB"))
        npix = rgb.shape[0] * rgb.shape[1]
        ppm = os.path.join(a.work, name + ".ppm")
        Image.fromarray(rgb).save(ppm)
        for codec, qs in (("jpeg", JPEG_Q), ("webp", WEBP_Q), ("avif", AVIF_Q)):
            for q in qs:
                base = os.path.join(a.work, "%s-%s%d" % (name, codec, q))
                if codec == "jpeg":
                    enc = base + ".jpg"
                    run(["cjpeg", "-quality", str(q), "-sample", "2x2", "-optimize",
                         "-outfile", enc, ppm])
                    run(["djpeg", "-ppm", "-outfile", base + ".dec.ppm", enc])
                    dec = base + ".dec.ppm"
                elif codec == "webp":
                    enc = base + ".webp"
                    run(["cwebp", "-q", str(q), src, "-o", enc])
                    run(["dwebp", enc, "-ppm", "-o", base + ".dec.ppm"])
                    dec = base + ".dec.ppm"
                else:
                    enc = base + ".avif"
                    run(["avifenc", "--min", str(q), "--max", str(q), "-y", "420", "-s", "6",
                         "-j", "1", src, enc])
                    run(["avifdec", enc, base + ".dec.png"])
                    dec = base + ".dec.png"
                out = np.array(Image.open(dec).convert("RGB"))
                size = os.path.getsize(enc)
                rows.append((codec, q, name, size, 8.0 * size / npix, E.psnr(rgb, out),
                             E.ms_ssim(rgb, out)))
        print(name, "done", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "rd-classic.tsv"), "w") as f:
        f.write("# codec\tsetting\tpicture\tbytes\tbpp\tpsnr_db\tmsssim\n")
        for r in rows:
            f.write("%s\t%d\t%s\t%d\t%.6f\t%.4f\t%.6f\n" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
