#!/usr/bin/python3
"""A data pack: the training photos, downscaled, for a machine without the Debian packages.

    /usr/bin/python3 tools/train/pack-data.py [-o .trainpack] [--short-side 512] [--quality 95]

The device machine (tools/train/device-stretch.sh) has PyTorch and a GPU but none of the
Debian wallpaper packages, and what travels there is limited (the working tree and carried
paths: 64 MiB in all). The pack holds every `train` photo of data-manifest.tsv scaled down to
the given short side (Lanczos after JPEG DCT-domain pre-scaling, as dataset.py) and stored as
JPEG (4:4:4, the given quality), and every `eval` picture exactly as train.py evaluates it
(dataset.load_eval) as PNG, so eval figures on the device are those of the CPU runs. `val`
pictures are left out. With --max-mib, train photos are added in a fixed shuffled order until
the pack reaches that size (default 20 MiB: about two thirds of the photos at the default
short side 384 and quality 90). `pack.tsv` lists file, SHA-256, split, licence and source path
(train.py --data-pack checks the SHA-256). The output folder is ignored by git (.gitignore);
the same photos and options give the same bytes.
"""

import argparse
import hashlib
import io
import os
import sys

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import dataset  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, ".trainpack"))
    ap.add_argument("--short-side", type=int, default=384)
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--max-mib", type=float, default=20.0,
                    help="stop adding train photos (in a fixed shuffled order) at this size")
    a = ap.parse_args()
    rows = dataset.read_manifest(check=True)
    os.makedirs(a.output, exist_ok=True)
    for f in os.listdir(a.output):
        os.unlink(os.path.join(a.output, f))
    lines = ["# file\tsha256\tsplit\tlicence\tsource (package path)"]
    total = 0
    # eval pictures first, then the train photos in a fixed pseudo-random order (by SHA-256 of
    # the source file), so that a size budget keeps a spread of all packages
    order = [i for i, r in enumerate(rows) if r["split"] == "eval"]
    order += sorted((i for i, r in enumerate(rows) if r["split"] == "train"),
                    key=lambda i: hashlib.sha256(rows[i]["sha256"].encode()).hexdigest())
    n_train = 0
    for i in order:
        r = rows[i]
        if r["split"] == "train" and total > a.max_mib * 2 ** 20:
            break
        stem = "%03d-%s" % (i, os.path.splitext(os.path.basename(r["path"]))[0])
        buf = io.BytesIO()
        if r["split"] == "train":
            name = stem + ".jpg"
            im = Image.fromarray(dataset.load_scaled(r["path"], short_side=a.short_side))
            im.save(buf, "JPEG", quality=a.quality, subsampling=0, optimize=True)
        else:
            name = stem + ".png"
            Image.fromarray(dataset.load_eval(r["path"])).save(buf, "PNG", optimize=True)
        data = buf.getvalue()
        with open(os.path.join(a.output, name), "wb") as f:
            f.write(data)
        total += len(data)
        n_train += r["split"] == "train"
        lines.append("\t".join((name, hashlib.sha256(data).hexdigest(), r["split"], r["licence"],
                                "%s %s" % (r["package"], r["path"]))))
    with open(os.path.join(a.output, dataset.PACK_INDEX), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d files (%d of %d train photos, short side %d, JPEG q%d 4:4:4), %.1f MiB"
          % (a.output, len(lines) - 1, n_train, sum(r["split"] == "train" for r in rows),
             a.short_side, a.quality, total / 2 ** 20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
