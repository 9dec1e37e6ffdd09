#!/usr/bin/python3
"""A ladder of qualities on the validation pictures, through the integer codec: the rule of
issue 23's target 3 (rate and PSNR rise from each quality to the next on every picture,
neighbours at most 1.5 dB apart, median over the pictures), checked before the eval set sees a
ladder.

    /usr/bin/python3 tools/train/val-ladder.py [--models models] [--qualities 5,6,7]
                                               [--split val] [--build build]

Every quality of the model directory (pairs wai-qN.whm/.ana and quality files wai-qN.rate, read
by tools/eval/waiformat.py's ladder(); --qualities picks some) codes every picture of the split
(`wai encode --quality N --model-dir DIR`, `wai decode`); prints each picture's bpp and PSNR
(RGB8) per quality, then per neighbouring pair the median PSNR step, its range, and on how many
pictures both rate and PSNR rise. To try a candidate ladder, make a directory of links to the
pairs and write its quality files there. Pictures as in val-rd.py (dataset.load_eval).
"""

import argparse
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
import waiformat  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--qualities", help="comma list (default: every quality of --models)")
    ap.add_argument("--split", default="val")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    wai = os.path.join(a.build, "tools", "wai")
    if not os.access(wai, os.X_OK):
        raise SystemExit("no %s: build the tree first" % wai)
    ladder = waiformat.ladder(a.models)
    quals = [int(q) for q in a.qualities.split(",")] if a.qualities else sorted(ladder)
    missing = [q for q in quals if q not in ladder]
    if missing or len(quals) < 2:
        raise SystemExit("qualities %s: %s has %s" % (quals, a.models, sorted(ladder)))
    rows = [r for r in dataset.read_manifest(check=True) if r["split"] == a.split]
    work = tempfile.mkdtemp(prefix="wai-ladder-")
    for q in quals:
        stem, rate = ladder[q]
        print("q%d: %s%s" % (q, os.path.basename(stem), "" if rate is None else " rate %d" % rate))
    res = {}   # quality -> [(bpp, psnr) per picture]
    for r in rows:
        name = os.path.splitext(os.path.basename(r["path"]))[0]
        rgb = dataset.load_eval(r["path"])
        png = os.path.join(work, name + ".png")
        Image.fromarray(rgb).save(png)
        line = "  %-22s" % name[:22]
        for q in quals:
            s = os.path.join(work, "%s-q%d.wai" % (name, q))
            subprocess.run([wai, "encode", png, "-o", s, "--quality", str(q), "--model-dir",
                            a.models, "-q"], check=True)
            subprocess.run([wai, "decode", s, "-o", s + ".png", "--model-path", a.models],
                           check=True, stdout=subprocess.DEVNULL)
            out = np.array(Image.open(s + ".png").convert("RGB"))
            bpp = 8.0 * os.path.getsize(s) / (rgb.shape[0] * rgb.shape[1])
            p = E.psnr(rgb, out)
            res.setdefault(q, []).append((bpp, p))
            line += "  q%d %.3f %5.2f" % (q, bpp, p)
        print(line, flush=True)
    for q in quals:
        v = np.array(res[q])
        print("q%d: mean %.3f bpp %.2f dB, median %.2f dB" % (q, v[:, 0].mean(), v[:, 1].mean(),
                                                             np.median(v[:, 1])))
    for lo, hi in zip(quals, quals[1:]):
        a_, b_ = np.array(res[lo]), np.array(res[hi])
        d = b_[:, 1] - a_[:, 1]
        rise = int(np.sum((b_[:, 0] > a_[:, 0]) & (d > 0)))
        print("q%d -> q%d: PSNR step median %+.2f dB (%+.2f to %+.2f); rate and PSNR rise on %d "
              "of %d pictures" % (lo, hi, np.median(d), d.min(), d.max(), rise, len(d)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
