#!/usr/bin/python3
"""Write the six evaluation pictures as PNG files, or check the committed ones.

    /usr/bin/python3 tools/train/eval-pictures.py            # writes samples/eval/*.png + manifest
    /usr/bin/python3 tools/train/eval-pictures.py --check    # remakes them in memory, compares

Each picture is the `eval` row of tools/train/data-manifest.tsv (never trained on), prepared
by dataset.load_eval (scaled down to long side 512, centre crop to a multiple of 64): exactly
what the trainer's evaluation sees. The PNGs are committed so that the C tests and the records
need neither the packages nor Python; samples/eval/manifest.tsv states, per picture, its source
package and version, the source file and its SHA-256, the licence, the attribution and the
PNG's own SHA-256. PIL's PNG writer with zlib level 9 is deterministic for the same
Pillow/zlib; --check compares the decoded pixels (and reports whether the file bytes match).
"""

import argparse
import hashlib
import io
import os
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dataset  # noqa: E402

OUT = os.path.join(HERE, "..", "..", "samples", "eval")
# short name -> attribution, as the packages' copyright/metadata files state it
ATTRIBUTION = {
    "Bridge": "Sander Klootwijk (lomiri-wallpapers-16.04 debian/copyright)",
    "life": "Aitzol Berasategi (lomiri-wallpapers-16.04 debian/copyright)",
    "LadyBird": "2008 Charles Barbin (mate-backgrounds debian/copyright)",
    "EveningGlow": "Ian Hex (plasma-workspace-wallpapers: debian/copyright GPL-2+; "
                   "its metadata.json says LGPLv3)",
    "coffee": "Rachel Michetti (python3-skimage skimage/data notes)",
    "china": "danielbuechele, flickr (python3-sklearn sklearn/datasets/images/README.txt)",
}


def short_name(path):
    base = os.path.basename(path)
    if "EveningGlow" in path:
        return "EveningGlow"
    return base.split("_by_")[0].split(".")[0]


def png_bytes(a):
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG", compress_level=9)
    return buf.getvalue()


def pictures():
    for r in dataset.read_manifest(check=True):
        if r["split"] == "eval":
            yield short_name(r["path"]), r, dataset.load_eval(r["path"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    out = os.path.normpath(args.out)
    rows, bad = [], 0
    for name, r, a in pictures():
        data = png_bytes(a)
        path = os.path.join(out, name + ".png")
        if args.check:
            have = np.asarray(Image.open(path).convert("RGB"))
            same_px = have.shape == a.shape and bool((have == a).all())
            same_file = open(path, "rb").read() == data
            print("%s %s: pixels %s, file bytes %s" % ("ok" if same_px else "MISMATCH", name,
                  "equal" if same_px else "differ", "equal" if same_file else "differ"))
            bad += not same_px
            continue
        os.makedirs(out, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        rows.append((name + ".png", "%dx%d" % (a.shape[1], a.shape[0]), hashlib.sha256(data).hexdigest(),
                     r["package"], r["version"], r["path"], r["sha256"], r["licence"],
                     ATTRIBUTION[name]))
    if args.check:
        sys.exit(1 if bad else 0)
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("# file\tsize\tsha256\tpackage\tversion\tsource\tsource_sha256\tlicence\tattribution\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    print("wrote %d pictures to %s" % (len(rows), out))


if __name__ == "__main__":
    main()
