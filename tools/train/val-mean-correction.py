#!/usr/bin/python3
"""The encoder's colour-mean correction on the validation pictures: one pass against the default.

    /usr/bin/python3 tools/train/val-mean-correction.py [--qualities 1,2,8] [--build build]
                                                        [--models models] [--passes 2]

For each validation picture (split `val` of data-manifest.tsv, scaled and cropped as the eval
pictures: dataset.load_eval) and quality: `wai encode --mean-correction 0` and
`--mean-correction PASSES`, each decoded with `wai decode`; prints the stream bytes, the PSNR
(RGB8) and the worst channel-mean error |mean(decoded) - mean(original)| in levels of both, and
a summary line. The eval pictures stay out (issue 12): this is the measurement the encoder
default was chosen on. Needs python3-numpy, python3-pil, a build of the tree.
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
import dataset  # noqa: E402


def code(wai, models, png, q, passes, work):
    s, d = os.path.join(work, "t.wai"), os.path.join(work, "t.png")
    subprocess.run([wai, "encode", "-q", png, "-o", s, "--quality", str(q), "--model-dir", models,
                    "--mean-correction", str(passes)], check=True)
    subprocess.run([wai, "decode", s, "-o", d, "--model-path", models], check=True)
    return os.path.getsize(s), np.asarray(Image.open(d).convert("RGB")).astype(np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qualities", default="1,2,8")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--passes", type=int, default=2)
    a = ap.parse_args()
    wai = os.path.join(a.build, "tools", "wai")
    rows = [r for r in dataset.read_manifest(check=False) if r["split"] == "val"]
    worst = {0: [], a.passes: []}
    dbs, dbytes = [], []
    with tempfile.TemporaryDirectory() as work:
        png = os.path.join(work, "in.png")
        for r in rows:
            x = dataset.load_eval(r["path"])
            if x.dtype != np.uint8:
                x = (x * 255 + 0.5).astype(np.uint8)
            if x.shape[0] == 3:
                x = x.transpose(1, 2, 0)
            Image.fromarray(x).save(png)
            ref = x.astype(np.float64)
            name = os.path.splitext(os.path.basename(r["path"]))[0][:20]
            for q in [int(v) for v in a.qualities.split(",")]:
                out = []
                for p in (0, a.passes):
                    size, dec = code(wai, a.models, png, q, p, work)
                    mse = ((dec - ref) ** 2).mean()
                    err = np.abs(dec.mean((0, 1)) - ref.mean((0, 1))).max()
                    out.append((size, 10 * np.log10(255 ** 2 / mse), err))
                    worst[p].append(err)
                dbs.append(out[1][1] - out[0][1])
                dbytes.append(out[1][0] / out[0][0] - 1)
                print("%-20s %dx%d q%d  one pass %6d B %.3f dB cast %.2f | %d passes %6d B %.3f dB "
                      "cast %.2f" % (name, x.shape[1], x.shape[0], q, *out[0], a.passes, *out[1]),
                      flush=True)
    print("summary: %d points; worst cast one pass max %.2f median %.2f; %d passes max %.2f median "
          "%.2f; PSNR change median %+.3f dB (min %+.3f, max %+.3f); bytes change median %+.2f %% "
          "(min %+.2f, max %+.2f)"
          % (len(dbs), max(worst[0]), float(np.median(worst[0])), a.passes, max(worst[a.passes]),
             float(np.median(worst[a.passes])), float(np.median(dbs)), min(dbs), max(dbs),
             100 * float(np.median(dbytes)), 100 * min(dbytes), 100 * max(dbytes)))


if __name__ == "__main__":
    main()
