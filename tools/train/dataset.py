#!/usr/bin/python3
"""Training photos from freely licensed Debian packages (installs nothing).

    /usr/bin/python3 tools/train/dataset.py            # (re)write tools/train/data-manifest.tsv
    /usr/bin/python3 tools/train/dataset.py --check    # verify the installed files against it

The manifest lists package, version, path, SHA-256, licence and split (train/eval) of every
picture. Licences were read from each package's /usr/share/doc/<pkg>/copyright (python3-skimage
and python3-sklearn: from the per-image notes in skimage/data/_fetchers.py and
sklearn/datasets/images/README.txt, the Debian copyright file only says BSD-3-Clause for "*").
Artwork (renders, gradients, drawings) is left out; only camera photos are used.

Training crops (train.py, `CropSampler`): every train photo is decoded once at start-up into a
small pyramid of downscaled copies (short side 1024, 768, 512, 384 px, never upscaled; Lanczos
after JPEG DCT-domain pre-scaling). Downscaling removes the JPEG artefacts of the sources and
gives a spread of detail scales. Each sample picks a photo uniformly, a pyramid level
uniformly, a random 128x128 window and a random horizontal flip. Evaluation pictures are scaled
to long side 512 and centre-cropped to a multiple of 64 (the model's pad_multiple).
"""

import argparse
import hashlib
import os
import subprocess
import sys

import numpy as np
from PIL import Image

Image.MAX_IMAGE_PIXELS = None

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "data-manifest.tsv")

LOMIRI = "/usr/share/backgrounds/"
MATE = "/usr/share/backgrounds/mate/nature/"
SKIMAGE = "/usr/lib/python3/dist-packages/skimage/data/"
SKLEARN = "/usr/lib/python3/dist-packages/sklearn/datasets/images/"


def _plasma(name):
    return "/usr/share/wallpapers/%s/contents/images/2560x1600.jpg" % name


# (package, path, licence, split). Eval: 6 pictures from 5 packages, never trained on.
SOURCES = [
    ("lomiri-wallpapers-16.04", LOMIRI + "Bridge_by_Sander_Klootwijk.jpg", "CC-BY-SA-4.0", "eval"),
    ("lomiri-wallpapers-16.04", LOMIRI + "Dragonfly_by_Bolly.jpg", "CC-BY-SA-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "Picture_0B_by_freespace.jpg", "CC-BY-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "Picture_1A_by_freespace.jpg", "CC-BY-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "Wine_by_Jakkub_Mede.jpg", "CC-BY-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "aitzgorri_by_Aitzol_Berasategi.jpg", "CC-BY-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "analogpattern_by_Peter_Nerlich.jpg", "CC-BY-SA-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "free_by_Peter_Nerlich.jpg", "CC-BY-SA-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "friends_by_Aitzol_Berasategi.jpg", "CC-BY-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "greentock_by_Peter_Nerlich.jpg", "CC-BY-SA-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "life_by_Aitzol_Berasategi.jpg", "CC-BY-4.0", "eval"),
    ("lomiri-wallpapers-16.04", LOMIRI + "picosdeeuropa_by_Aitzol_Berasategi.jpg", "CC-BY-4.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "seeding_by_Clements_Engelhardt.jpg", "CC0-1.0", "train"),
    ("lomiri-wallpapers-16.04", LOMIRI + "sunset_by_Aitzol_Berasategi.jpg", "CC-BY-4.0", "train"),
    # (umang_by_Abhishek_Mudgal.jpg is a colour-gradient render: left out)
    ("mate-backgrounds", MATE + "Aqua.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "Blinds.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "Dune.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "FreshFlower.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "Garden.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "GreenMeadow.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "LadyBird.jpg", "GPL-2+", "eval"),
    ("mate-backgrounds", MATE + "RainDrops.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "Storm.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "TwoWings.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "Wood.jpg", "GPL-2+", "train"),
    ("mate-backgrounds", MATE + "YellowFlower.jpg", "GPL-2+", "train"),
    # plasma: the photographs only (the others are renders/drawings)
    ("plasma-workspace-wallpapers", _plasma("BytheWater"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("ColdRipple"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("ColorfulCups"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("DarkestHour"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("EveningGlow"), "GPL-2+", "eval"),
    ("plasma-workspace-wallpapers", _plasma("FallenLeaf"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("Grey"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("Kite"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("OneStandsOut"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("Path"), "GPL-2+", "train"),
    ("plasma-workspace-wallpapers", _plasma("summer_1am"), "GPL-2+", "train"),
    ("python3-skimage", SKIMAGE + "astronaut.png", "public-domain (NASA)", "train"),
    ("python3-skimage", SKIMAGE + "chelsea.png", "CC0-1.0", "train"),
    ("python3-skimage", SKIMAGE + "coffee.png", "CC0-1.0", "eval"),
    ("python3-skimage", SKIMAGE + "rocket.jpg", "public-domain (SpaceX)", "train"),
    ("python3-sklearn", SKLEARN + "china.jpg", "CC-BY-2.0", "eval"),
    ("python3-sklearn", SKLEARN + "flower.jpg", "CC-BY-2.0", "train"),
]

# More photos (session 5): photos-extra.tsv (package, path, licence, note), found and checked
# by eye and licence as in photos-extra-notes.md. Every VAL_EVERY-th of them (in file order,
# from the VAL_OFFSET-th) is a validation picture: never trained on, and not in the eval set,
# so that choices made while training (recipe, data, when to fine-tune; val-rd.py) leave the
# eval set alone (it is judged only at the end).
EXTRA = os.path.join(HERE, "photos-extra.tsv")
VAL_EVERY, VAL_OFFSET = 25, 12


def extra_sources(path=EXTRA):
    out = []
    with open(path) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
    for i, (pkg, fpath, lic, _note) in enumerate(rows):
        out.append((pkg, fpath, lic, "val" if i % VAL_EVERY == VAL_OFFSET else "train"))
    return out


SOURCES = SOURCES + extra_sources()
PACKAGES = sorted({s[0] for s in SOURCES})
PYRAMID_SHORT_SIDES = (1024, 768, 512, 384)
EVAL_LONG_SIDE = 512
CROP = 128


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_version(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def write_manifest(path=MANIFEST):
    missing = [p for p in PACKAGES if not package_version(p)]
    if missing:
        sys.exit("not installed: %s (see tools/train/README.md)" % " ".join(missing))
    versions = {p: package_version(p) for p in PACKAGES}
    rows = []
    for pkg, fpath, lic, split in SOURCES:
        if not os.path.isfile(fpath):
            sys.exit("missing file %s of %s" % (fpath, pkg))
        rows.append((pkg, versions[pkg], os.path.realpath(fpath), sha256_file(fpath), lic, split))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("# package\tversion\tpath\tsha256\tlicence\tsplit\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    os.replace(tmp, path)
    return rows


def read_manifest(path=MANIFEST, check=True):
    """Rows as dicts; with check, fails if a file is missing or its SHA-256 changed."""
    if not os.path.isfile(path):
        raise SystemExit("%s missing: run tools/train/dataset.py first" % path)
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            pkg, ver, fpath, sha, lic, split = line.rstrip("\n").split("\t")
            rows.append(dict(package=pkg, version=ver, path=fpath, sha256=sha, licence=lic,
                             split=split))
    if check:
        for r in rows:
            if not os.path.isfile(r["path"]):
                raise SystemExit("missing %s (install %s)" % (r["path"], r["package"]))
            if sha256_file(r["path"]) != r["sha256"]:
                raise SystemExit("SHA-256 of %s changed (package %s version differs from %s?)"
                                 % (r["path"], r["package"], r["version"]))
    return rows


PACK_INDEX = "pack.tsv"


def read_pack(pack_dir):
    """Rows of a data pack made by pack-data.py (for a machine without the Debian packages,
    e.g. the device machine): the same dicts as read_manifest, paths inside the pack, each
    file checked against its SHA-256."""
    rows = []
    with open(os.path.join(pack_dir, PACK_INDEX)) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, sha, split, lic, source = line.rstrip("\n").split("\t")
            path = os.path.join(pack_dir, name)
            if sha256_file(path) != sha:
                raise SystemExit("%s: SHA-256 differs from %s" % (path, PACK_INDEX))
            rows.append(dict(package="pack", version="", path=path, sha256=sha, licence=lic,
                             split=split, source=source))
    return rows


def load_scaled(path, short_side=None, long_side=None):
    """RGB uint8 array scaled down (never up) to the given short or long side."""
    im = Image.open(path)
    w, h = im.size
    f = min(1.0, (short_side / min(w, h)) if short_side else (long_side / max(w, h)))
    tw, th = max(1, round(w * f)), max(1, round(h * f))
    if im.format == "JPEG":
        im.draft("RGB", (tw, th))  # DCT-domain downscale to >= target: fast, no aliasing
    im = im.convert("RGB")
    if im.size != (tw, th):
        im = im.resize((tw, th), Image.LANCZOS)
    return np.asarray(im, dtype=np.uint8)


def load_pyramid(path, crop=CROP):
    levels = []
    for s in PYRAMID_SHORT_SIDES:
        a = load_scaled(path, short_side=s)
        if min(a.shape[:2]) < crop:
            continue
        if levels and levels[-1].shape == a.shape:
            continue  # the photo is smaller than this level: keep one native copy
        levels.append(a)
    return levels


def load_eval(path, multiple=64):
    a = load_scaled(path, long_side=EVAL_LONG_SIDE)
    h, w = (a.shape[0] // multiple) * multiple, (a.shape[1] // multiple) * multiple
    y0, x0 = (a.shape[0] - h) // 2, (a.shape[1] - w) // 2
    return np.ascontiguousarray(a[y0:y0 + h, x0:x0 + w])


class CropSampler:
    """Random crop x crop windows of the train photos' pyramids, as float32 NCHW in [0, 1]."""

    def __init__(self, rows, log=print, crop=CROP):
        self.crop = crop
        self.images = []
        for r in rows:
            if r["split"] == "train":
                levels = load_pyramid(r["path"], crop)
                if levels:
                    self.images.append(levels)
        n = sum(len(p) for p in self.images)
        mb = sum(a.nbytes for p in self.images for a in p) / 2 ** 20
        log("dataset: %d train photos, %d pyramid levels, %.0f MiB" % (len(self.images), n, mb))

    def batch(self, rng, size):
        crop = self.crop
        out = np.empty((size, crop, crop, 3), dtype=np.uint8)
        for k in range(size):
            levels = self.images[rng.integers(len(self.images))]
            a = levels[rng.integers(len(levels))]
            y = rng.integers(a.shape[0] - crop + 1)
            x = rng.integers(a.shape[1] - crop + 1)
            c = a[y:y + crop, x:x + crop]
            out[k] = c[:, ::-1] if rng.integers(2) else c
        return out.transpose(0, 3, 1, 2).astype(np.float32) / 255.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="verify files against the manifest")
    args = ap.parse_args()
    if args.check:
        rows = read_manifest()
        print("ok: %d files match %s" % (len(rows), MANIFEST))
        return
    rows = write_manifest()
    n = {k: sum(r[5] == k for r in rows) for k in ("train", "val", "eval")}
    print("wrote %s: %d train, %d val, %d eval" % (MANIFEST, n["train"], n["val"], n["eval"]))


if __name__ == "__main__":
    main()
