#!/usr/bin/python3
"""Make the real-content conformance corpus vectors/corpus/ (issue 13 part 4).

    /usr/bin/python3 tools/corpus/make-corpus.py [--wai build/tools/wai] [--out vectors/corpus]
    /usr/bin/python3 tools/corpus/make-corpus.py --check     (remake in a temporary directory,
                                                             compare byte for byte, write nothing)

From photographs shipped by Debian packages (SOURCES below: package, version, path, SHA-256,
licence; all in the `train` split of tools/train/data-manifest.tsv, none in `eval`), the
pictures of ITEMS are cut and resized with Pillow (python3-pil, Lanczos, fixed boxes; the clip's
60 frames are a pan and zoom with boxes computed from the frame number), written as PNG into a
temporary directory and coded with

    wai encode IN -o OUT.wai --model M.whm --analysis M.ana [--fps 30] -q

where M is the frozen conformance model vectors/corpus/wai-conformance-1 (never the shipped
models/wai-qN, which are retrained). Then `wai decode --sha256` of each stream (with
--model-path OUT) gives the pinned hash, written to OUT/manifest.txt in the format of
vectors/manifest.txt (`wai verify OUT/manifest.txt --model-path OUT` checks it), with a comment
line per stream giving the SHA-256 of the RGB24 input that was coded (so a rerun elsewhere can
tell a difference in the picture preparation from one in the encoder).

Exits 1 if a source file is missing or has another SHA-256 (install the package version named),
or with --check if anything differs.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = "wai-conformance-1"

# name: (package, version, path, sha256, licence, copyright)
SOURCES = {
    "seeding": ("lomiri-wallpapers-16.04", "20.04.0-2",
                "/usr/share/backgrounds/seeding_by_Clements_Engelhardt.jpg",
                "a5634d1ab5e41a3568e92d4a894a500c92b891f9ff734e50bd224d6e185a605f",
                "CC0-1.0", "Clemens Engelhardt, 2018"),
    "moray": ("krank", "0.7+dfsg2-4",
              "/usr/share/games/krank/levels/unera-backgrounds/level-12.jpg",
              "e4e8ca9795166dda21f23bd616007c6deac0630420c9064dee0ef201dba01bb4",
              "public-domain", "Slava Anishenko"),
    "sunset": ("lomiri-wallpapers-16.04", "20.04.0-2",
               "/usr/share/backgrounds/sunset_by_Aitzol_Berasategi.jpg",
               "474dab6a4b9f94dc76c29dfe30e9f5db4af0fd2e33fe5d695f8152b371efca18",
               "CC-BY-4.0", "Aitzol Berasategi, 2018"),
    "wine": ("lomiri-wallpapers-16.04", "20.04.0-2",
             "/usr/share/backgrounds/Wine_by_Jakkub_Mede.jpg",
             "d2e96e6d4da40dd804b3d0ce295e94de04a2d7d9b6785d42cd9d92ba58bced74",
             "CC-BY-4.0", "Jakub Mede, 2018"),
    "fig": ("lomiri-wallpapers-16.04", "20.04.0-2",
            "/usr/share/backgrounds/Picture_0B_by_freespace.jpg",
            "c8c0ab18e48d9e0419fe42881112137f3afafc27dfddc29ec3a6d54c56d225ad",
            "CC-BY-4.0", "Trevor \"Freespace\", 2018"),
    "picos": ("lomiri-wallpapers-16.04", "20.04.0-2",
              "/usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg",
              "414d0072b2f6f2c555deafeaef6e45c4fed6fa9ad26eba6560ca8803959cf97a",
              "CC-BY-4.0", "Aitzol Berasategi, 2018"),
}


def fit_box(sw, sh, w, h):
    """The largest centred box of the source with the aspect ratio w:h."""
    if sw * h >= sh * w:      # source wider: full height
        bw = sh * w / h
        return ((sw - bw) / 2, 0.0, (sw + bw) / 2, float(sh))
    bh = sw * h / w
    return (0.0, (sh - bh) / 2, float(sw), (sh + bh) / 2)


def whole(w, h):
    def make(im):
        return [im.resize((w, h), Image.LANCZOS, box=fit_box(im.width, im.height, w, h))]
    return make


def crop(box, w, h):
    def make(im):
        return [im.resize((w, h), Image.LANCZOS, box=box)]
    return make


def pan_zoom(w, h, frames):
    """A pan from left to right while zooming in: frame t shows a w:h box whose width goes
    from 60 % of the source's to 30 %, its centre from (30 %, 55 %) to (70 %, 40 %) of the source."""
    def make(im):
        out = []
        for t in range(frames):
            a = t / (frames - 1)
            bw = im.width * (0.60 - 0.30 * a)
            bh = bw * h / w
            cx = im.width * (0.30 + 0.40 * a)
            cy = im.height * (0.55 - 0.15 * a)
            box = (cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2)
            out.append(im.resize((w, h), Image.LANCZOS, box=box))
        return out
    return make


# file stem, source, what is made of it, fps (None: one picture), what it exercises
ITEMS = [
    ("c01-seeding-1920x1080", "seeding", whole(1920, 1080), None, "1080p (1920x1088 coded)"),
    ("c02-moray-1024x768", "moray", whole(1024, 768), None, "a 4:3 picture, sides multiples of 64"),
    ("c03-sunset-1001x667", "sunset", whole(1001, 667), None, "odd sides, neither a multiple of 64"),
    ("c04-wine-427x641", "wine", whole(427, 641), None, "a tall picture with odd sides"),
    ("c05-fig-33x17", "fig", crop((1040.0, 500.0, 1700.0, 840.0), 33, 17), None,
     "a tiny picture: 33x17 of one 64x64 block"),
    ("c06-picos-pan-320x180x60", "picos", pan_zoom(320, 180, 60), 30,
     "a 60-frame clip at 30 fps (pan and zoom)"),
    ("c07-seeding-4032x3024", "seeding", whole(4032, 3024), None,
     "camera size (12 MP, 4:3): the decode's memory bounded by the striped synthesis"),
]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def load_source(key):
    pkg, ver, path, want, _, _ = SOURCES[key]
    try:
        data = open(path, "rb").read()
    except OSError as e:
        raise SystemExit("%s: %s (install Debian package %s %s)" % (path, e.strerror, pkg, ver))
    if sha256(data) != want:
        raise SystemExit("%s: SHA-256 %s, want %s (Debian package %s %s)" %
                         (path, sha256(data), want, pkg, ver))
    im = Image.open(path)
    im.load()
    return im.convert("RGB")


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise SystemExit("%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stderr.decode(errors="replace")))
    return r.stdout.decode()


def make(wai, out, model_dir):
    whm = os.path.join(model_dir, MODEL + ".whm")
    ana = os.path.join(model_dir, MODEL + ".ana")
    model_sha = sha256(open(whm, "rb").read())
    lines = ["# WAI real-content corpus (tools/corpus/make-corpus.py): <file> <sha256 of decoded RGB8> <frames> <W>x<H>",
             "# model %s (%s.whm, the frozen conformance model; vectors/corpus/README.md)" % (model_sha, MODEL)]
    sources = {}
    with tempfile.TemporaryDirectory(prefix="wai-corpus-") as tmp:
        for stem, src, maker, fps, _ in ITEMS:
            if src not in sources:
                sources[src] = load_source(src)
            pics = maker(sources[src])
            w, h = pics[0].size
            raw = b"".join(p.tobytes() for p in pics)
            if len(pics) == 1:
                inp = os.path.join(tmp, stem + ".png")
                pics[0].save(inp)
            else:
                for i, p in enumerate(pics):
                    p.save(os.path.join(tmp, "%s-%03d.png" % (stem, i)))
                inp = os.path.join(tmp, stem + "-%03d.png")
            dst = os.path.join(out, stem + ".wai")
            cmd = [wai, "encode", inp, "-o", dst, "--model", whm, "--analysis", ana, "-q"]
            if fps:
                cmd += ["--fps", str(fps)]
            run(cmd)
            got = run([wai, "decode", dst, "--sha256", "--model-path", model_dir]).split()[0]
            lines.append("# input %s: %d frame(s) of %dx%d RGB24, sha256 %s" %
                         (stem, len(pics), w, h, sha256(raw)))
            lines.append("%s.wai %s %d %dx%d" % (stem, got, len(pics), w, h))
            print("%s.wai: %d bytes, %d frame(s) %dx%d, %.3f bpp" %
                  (stem, os.path.getsize(dst), len(pics), w, h,
                   os.path.getsize(dst) * 8 / (w * h * len(pics))), flush=True)
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wai", default=os.path.join(ROOT, "build", "tools", "wai"))
    ap.add_argument("--out", default=os.path.join(ROOT, "vectors", "corpus"))
    ap.add_argument("--check", action="store_true",
                    help="remake in a temporary directory and compare with --out byte for byte")
    a = ap.parse_args()
    if not a.check:
        make(a.wai, a.out, a.out)
        return 0
    with tempfile.TemporaryDirectory(prefix="wai-corpus-check-") as tmp:
        make(a.wai, tmp, a.out)
        bad = 0
        for name in sorted(os.listdir(tmp)):
            ref = os.path.join(a.out, name)
            same = os.path.exists(ref) and open(ref, "rb").read() == open(os.path.join(tmp, name), "rb").read()
            print("%s %s" % ("same" if same else "DIFFERS", name))
            bad += not same
        print("corpus-check: %d files, %d differ" % (len(os.listdir(tmp)), bad))
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
