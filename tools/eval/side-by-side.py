#!/usr/bin/python3
"""Original | WAI | JPEG at the same file size, as one PNG per picture and quality.

    /usr/bin/python3 tools/eval/side-by-side.py [--pictures Bridge,coffee] [--qualities 2,6]
                                               [--models models] [--wai build/tools/wai]
                                               [--out docs/research/data] [--jpeg-quality 90]

For each evaluation picture (samples/eval/<name>.png) and WAI quality: the picture is coded
with `wai encode --quality Q`, decoded with `wai decode`, and compared with libjpeg-turbo
(`cjpeg -quality J -sample 2x2 -optimize`, 4:2:0) at the largest setting J whose file is not
larger than the WAI stream (so JPEG never gets more bytes than WAI). The three panels are
written side by side into `<out>/side-by-side-<name>-q<Q>.png`, with a caption line per panel
(bytes, bpp, PSNR over RGB8). Both codecs' byte counts include their containers. The same
inputs give the same PNG bytes (no timestamps are written).

--jpeg-quality J: JPEG at that one setting instead (e.g. 90, what cameras save at; its file
may be larger than WAI's), written to `side-by-side-<name>-q<Q>-jpeg<J>.png`.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageDraw

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import evalmath as E  # noqa: E402

CAPTION = 14  # pixels of caption under each panel


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def jpeg_decode(jpg):
    run(["djpeg", "-ppm", "-outfile", jpg + ".ppm", jpg])
    return np.array(Image.open(jpg + ".ppm").convert("RGB"))


def jpeg_encode(ppm, q, work):
    """(file, bytes) of cjpeg at setting q, 4:2:0."""
    jpg = os.path.join(work, "j%d.jpg" % q)
    run(["cjpeg", "-quality", str(q), "-sample", "2x2", "-optimize", "-outfile", jpg, ppm])
    return jpg, os.path.getsize(jpg)


def jpeg_at(ppm, q, work):
    """(bytes, decoded RGB, setting) of cjpeg at setting q."""
    jpg, size = jpeg_encode(ppm, q, work)
    return size, jpeg_decode(jpg), q


def jpeg_at_most(ppm, limit, work):
    """(bytes, decoded RGB, setting) of the largest cjpeg setting with a file <= limit bytes."""
    best = None
    lo, hi = 1, 100
    while lo <= hi:  # file size grows with the setting (checked on the result below)
        q = (lo + hi) // 2
        jpg, size = jpeg_encode(ppm, q, work)
        if size <= limit:
            best = (q, jpg, size)
            lo = q + 1
        else:
            hi = q - 1
    if best is None:
        return None
    q, jpg, size = best
    return size, jpeg_decode(jpg), q


def panel(rgb, text):
    h, w = rgb.shape[:2]
    im = Image.new("RGB", (w, h + CAPTION), (255, 255, 255))
    im.paste(Image.fromarray(rgb), (0, 0))
    ImageDraw.Draw(im).text((3, h + 1), text, fill=(0, 0, 0))
    return im


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pictures", default="Bridge,coffee")
    ap.add_argument("--qualities", default="2,6")
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--wai", default=os.path.join(ROOT, "build", "tools", "wai"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "research", "data"))
    ap.add_argument("--jpeg-quality", type=int, help="JPEG at this setting, not at WAI's size")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.pictures.split(","):
        src = os.path.join(ROOT, "samples", "eval", name + ".png")
        rgb = np.array(Image.open(src).convert("RGB"))
        npix = rgb.shape[0] * rgb.shape[1]
        for q in a.qualities.split(","):
            with tempfile.TemporaryDirectory() as work:
                stream = os.path.join(work, "a.wai")
                run([a.wai, "encode", "-q", src, "-o", stream, "--quality", q,
                     "--model-dir", a.models])
                run([a.wai, "decode", stream, "-o", os.path.join(work, "a.png"),
                     "--model-path", a.models])
                wai = np.array(Image.open(os.path.join(work, "a.png")).convert("RGB"))
                wbytes = os.path.getsize(stream)
                ppm = os.path.join(work, "src.ppm")
                Image.fromarray(rgb).save(ppm)
                jp = (jpeg_at(ppm, a.jpeg_quality, work) if a.jpeg_quality
                      else jpeg_at_most(ppm, wbytes, work))
            panels = [panel(rgb, "original %s" % name),
                      panel(wai, "WAI q%s: %d bytes, %.3f bpp, %.2f dB"
                            % (q, wbytes, 8.0 * wbytes / npix, E.psnr(rgb, wai)))]
            if jp:
                jbytes, jrgb, jq = jp
                panels.append(panel(jrgb, "JPEG -quality %d 4:2:0: %d bytes, %.3f bpp, %.2f dB"
                                    % (jq, jbytes, 8.0 * jbytes / npix, E.psnr(rgb, jrgb))))
            else:
                blank = np.full_like(rgb, 255)
                panels.append(panel(blank, "JPEG: no setting fits in %d bytes" % wbytes))
            w = sum(p.width for p in panels) + 4 * (len(panels) - 1)
            sheet = Image.new("RGB", (w, panels[0].height), (255, 255, 255))
            x = 0
            for p in panels:
                sheet.paste(p, (x, 0))
                x += p.width + 4
            suffix = "-jpeg%d" % a.jpeg_quality if a.jpeg_quality else ""
            path = os.path.join(a.out, "side-by-side-%s-q%s%s.png" % (name, q, suffix))
            sheet.save(path, optimize=True)
            print("wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
