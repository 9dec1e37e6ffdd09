#!/usr/bin/python3
"""The Python binding and the Pillow plugin (meson test python; environment from
python/meson.build: WAI_LIBRARY, PYTHONPATH, WAI_MODEL_PATH, WAI_CLI, WAI_SOURCE_ROOT).
Plain asserts, no test framework; prints PASS/FAIL lines and a summary."""
import hashlib
import io
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, UnidentifiedImageError

import wai

SRC = os.environ["WAI_SOURCE_ROOT"]
CLI = os.environ["WAI_CLI"]
MODELS = os.path.join(SRC, "models")
counts = {"pass": 0, "fail": 0}


def report(ok, what, detail=""):
    counts["pass" if ok else "fail"] += 1
    print("%s %s%s" % ("PASS" if ok else "FAIL", what, "" if ok or not detail else ": " + str(detail)))


def raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    except Exception as e:      # the wrong exception
        return AssertionError("%s instead of %s" % (type(e).__name__, exc.__name__))
    return None


def manifest(path):
    for line in open(path):
        if line.strip() and not line.startswith("#"):
            name, sha, frames, size = line.split()
            w, h = map(int, size.split("x"))
            yield name, sha, int(frames), w, h


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


tmp = tempfile.mkdtemp()

# 1. wai.decode: every conformance vector and sample to its pinned hash (frames concatenated)
for d in ("vectors", "samples"):
    for name, want, frames, w, h in manifest(os.path.join(SRC, d, "manifest.txt")):
        data = open(os.path.join(SRC, d, name), "rb").read()
        a = wai.decode(data)
        report(a.shape == (frames, h, w, 3) and a.dtype == np.uint8 and sha(a) == want,
               "wai.decode %s: %s %s" % (name, a.shape, sha(a)[:16]), "expected %s" % want)
        if d == "vectors":
            m = wai.info(data)
            report((m["width"], m["height"], m["frames"]) == (w, h, frames), "wai.info %s" % name, m)
v09 = open(os.path.join(SRC, "vectors", "v09-video-3x64x48.wai"), "rb").read()
report(wai.decode(v09, max_frames=1).shape == (1, 48, 64, 3), "max_frames=1 stops after frame 0")

# 2. errors: libwai's message and code in a WaiError (an OSError)
v01 = open(os.path.join(SRC, "vectors", "v01-64x64.wai"), "rb").read()
for what, data, needle in [
        ("truncated in the frame", v01[:200], "truncated"),
        ("truncated in the header", v01[:50], "truncated"),
        ("a flipped bit in the frame", v01[:300] + bytes([v01[300] ^ 4]) + v01[301:], "CRC"),
        ("a flipped bit in the header", v01[:20] + bytes([v01[20] ^ 1]) + v01[21:], "CRC"),
        ("not WAI", b"\x89PNG\r\n\x1a\n" + bytes(100), "bitstream"),
        ("empty", b"", "empty")]:
    e = raises(wai.WaiError, wai.decode, data)
    ok = isinstance(e, wai.WaiError) and isinstance(e, OSError) and needle.lower() in str(e).lower()
    report(ok, "WaiError for %s: %s" % (what, e), "" if ok else repr(e))
    if isinstance(e, wai.WaiError) and what != "empty":
        report(e.code < 0, "its code is a negative errno value (%s)" % e.code)
c05 = open(os.path.join(SRC, "vectors", "corpus", "c05-fig-33x17.wai"), "rb").read()
saved = os.environ.get("WAI_MODEL_PATH")
os.environ["WAI_MODEL_PATH"] = tmp
e = raises(wai.WaiError, wai.decode, c05)
report(isinstance(e, wai.WaiError) and "not found" in str(e), "model not found: %s" % e)
a = wai.decode(c05, model_path=os.path.join(SRC, "vectors", "corpus"))
report(a.shape == (1, 17, 33, 3), "model_path= finds it")
os.environ["WAI_MODEL_PATH"] = saved

# 3. wai.encode: the same bytes as `wai encode` of the same picture
pic = wai.decode(open(os.path.join(SRC, "samples", "coffee-q5.wai"), "rb").read())[0][:96, :128]
Image.fromarray(pic).save(os.path.join(tmp, "in.png"))
subprocess.run([CLI, "encode", "-q", os.path.join(tmp, "in.png"), "-o", os.path.join(tmp, "cli.wai"),
                "--quality", "2", "--model-dir", MODELS], check=True)
enc = wai.encode(pic, quality=2, model_dir=MODELS)
report(enc == open(os.path.join(tmp, "cli.wai"), "rb").read(), "wai.encode == wai encode (%d bytes)" % len(enc))
report(wai.decode(enc).shape == (1, 96, 128, 3), "and it decodes")
two = wai.encode(np.stack([pic, pic[::-1]]), quality=2, model_dir=MODELS)
report(wai.info(two)["frames"] == 2, "a sequence of two pictures")
e = raises(wai.WaiError, wai.encode, pic, quality=99, model_dir=MODELS)
report(isinstance(e, wai.WaiError), "quality 99: WaiError (%s)" % e)
report(isinstance(raises(ValueError, wai.encode, pic.astype(np.float32)), ValueError), "float pixels: ValueError")
report(2 in wai.available_qualities(MODELS), "available_qualities lists 2")
# kernels: every set gives the same stream and pictures; an unknown name is a ValueError, a set
# this CPU lacks a WaiError
report(wai.encode(pic, quality=2, model_dir=MODELS, kernels="reference") == enc and
       wai.encode(pic, quality=2, model_dir=MODELS, kernels="c") == enc, "encode kernels=reference, c: the same bytes")
report(sha(wai.decode(enc, kernels="reference")) == sha(wai.decode(enc)), "decode kernels=reference: the same pictures")
report(isinstance(raises(ValueError, wai.encode, pic, model_dir=MODELS, kernels="fast"), ValueError),
       "kernels='fast': ValueError")
lacking = "neon" if platform.machine() in ("x86_64", "i686", "i386", "AMD64") else "avx2"
e = raises(wai.WaiError, wai.decode, enc, kernels=lacking)
report(isinstance(e, wai.WaiError), "decode kernels=%s on %s: WaiError (%s)" % (lacking, platform.machine(), e))
e = raises(wai.WaiError, wai.encode, pic, model_dir=MODELS, kernels=lacking)
report(isinstance(e, wai.WaiError), "encode kernels=%s on %s: WaiError (%s)" % (lacking, platform.machine(), e))
# rate control: the same bytes as the CLI's target, and what was chosen
size5 = len(wai.encode(pic, quality=5, model_dir=MODELS))
subprocess.run([CLI, "encode", "-q", os.path.join(tmp, "in.png"), "-o", os.path.join(tmp, "t.wai"),
                "--target-size", str(size5), "--model-dir", MODELS], check=True)
st = []
t = wai.encode(pic, target_size=size5, model_dir=MODELS, stats=st)
report(t == open(os.path.join(tmp, "t.wai"), "rb").read() and len(t) <= size5,
       "target_size=%d == wai encode --target-size (%d bytes)" % (size5, len(t)))
report(len(st) == 1 and st[0]["quality"] == 5 and st[0]["target_met"] and st[0]["psnr"] is None,
       "stats: quality 5, met (%s)" % st)
st = []
t = wai.encode(pic, target_psnr=1000 - 1, model_dir=MODELS, stats=st)
top = max(wai.available_qualities(MODELS))
report(st[0]["quality"] == top and not st[0]["target_met"] and st[0]["psnr"] > 10,
       "target_psnr out of reach: the top quality, not met, its PSNR %.2f dB" % st[0]["psnr"])
st = []
t = wai.encode(np.stack([pic, pic]), target_bpp=1.0, model_dir=MODELS, stats=st)
report(len(t) * 8 <= 1.0 * 128 * 96 * 2 and len(st) == 2, "target_bpp=1.0 over 2 frames: %d bytes" % len(t))
report(isinstance(raises(ValueError, wai.encode, pic, target_size=0), ValueError), "target_size=0: ValueError")
report(isinstance(raises(ValueError, wai.encode, pic, target_size=5000, target_psnr=30), ValueError),
       "two targets: ValueError")
buf = io.BytesIO()
Image.fromarray(pic).save(buf, format="WAI", target_size=size5, model_dir=MODELS)
report(buf.getvalue() == wai.encode(pic, target_size=size5, model_dir=MODELS), "img.save(target_size=...)")

# 4. the Pillow plugin
im = Image.open(os.path.join(SRC, "samples", "coffee-q5.wai"))
report((im.format, im.mode, im.size, im.n_frames) == ("WAI", "RGB", (600, 400), 1),
       "Image.open: %s %s %s n_frames %d" % (im.format, im.mode, im.size, im.n_frames))
want = dict((n, s) for n, s, _, _, _ in manifest(os.path.join(SRC, "samples", "manifest.txt")))
report(hashlib.sha256(im.tobytes()).hexdigest() == want["coffee-q5.wai"], "its pixels: the pinned hash")
seq = Image.open(os.path.join(SRC, "vectors", "v09-video-3x64x48.wai"))
frames = wai.decode(v09)
ok = seq.n_frames == 3 and seq.is_animated
for k in (0, 2, 1):
    seq.seek(k)
    ok = ok and seq.tell() == k and seq.tobytes() == frames[k].tobytes()
report(ok, "seek() over the 3 frames of v09, each the frame wai.decode gives")
report(isinstance(raises(EOFError, seq.seek, 3), EOFError), "seek(3): EOFError")
open(os.path.join(tmp, "garbage.bin"), "wb").write(b"not a picture at all\n" * 100)
report(isinstance(raises(UnidentifiedImageError, Image.open, os.path.join(tmp, "garbage.bin")),
                  UnidentifiedImageError), "a file of no known format: UnidentifiedImageError")
e = raises(OSError, Image.open, io.BytesIO(v01[:20] + bytes([v01[20] ^ 1]) + v01[21:]))
report(isinstance(e, OSError), "a damaged header: OSError from Image.open (%s)" % e)
damaged = Image.open(io.BytesIO(v01[:300] + bytes([v01[300] ^ 4]) + v01[301:]))
e = raises(OSError, damaged.load)
report(isinstance(e, OSError), "a damaged frame: OSError from load() (%s)" % e)
# the damaged set of the GdkPixbuf test (gdk-pixbuf-wai/tests/pixbuf-tests.sh): truncations,
# one flipped bit in each part of v01, the header alone: each an OSError from open() or load(),
# carrying libwai's message; 3 bytes or a frame unit first are no WAI file at all
def load_all(data):
    im = Image.open(io.BytesIO(data))
    im.load()

bad = [("cut-%d" % n, v01[:n]) for n in (4, 11, 50, 95, 100, len(v01) // 2, len(v01) - 1)]
for off in (5, 14, 60, 93, 97, 110, len(v01) // 2, len(v01) - 2):
    d = bytearray(v01)
    d[off] ^= 0x10
    bad.append(("flip-%d" % off, bytes(d)))
bad.append(("header-only", v01[:96]))
ok = True
for name, data in bad:
    e = raises(OSError, load_all, data)
    if not isinstance(e, OSError) or isinstance(e, UnidentifiedImageError) or not str(e):
        ok = False
        print("# %s: %r" % (name, e))
report(ok, "the damaged set (%d files): each an OSError with libwai's message" % len(bad))
for name, data in (("cut-3", v01[:3]), ("frame-first", v01[96:] + v01[:96])):
    report(isinstance(raises(UnidentifiedImageError, load_all, data), UnidentifiedImageError),
           "%s: not WAI (UnidentifiedImageError)" % name)
report(Image.open(os.path.join(tmp, "in.png")).format == "PNG", "PNG still opens as PNG")
buf = io.BytesIO()
Image.fromarray(pic).save(buf, format="WAI", quality=2, model_dir=MODELS)
report(buf.getvalue() == enc, "img.save(format='WAI', quality=2) == wai.encode")
Image.fromarray(pic).save(os.path.join(tmp, "out.wai"), quality=2, model_dir=MODELS)
back = Image.open(os.path.join(tmp, "out.wai"))
report(back.size == (128, 96) and back.tobytes() == wai.decode(enc)[0].tobytes(),
       "save to a .wai name and open it again")
buf = io.BytesIO()
seq.save(buf, format="WAI", save_all=True, quality=2, model_dir=MODELS)
report(wai.info(buf.getvalue())["frames"] == 3, "save_all=True writes every frame")
report(Image.MIME.get("WAI") == "image/x-wai" and Image.EXTENSION.get(".wai") == "WAI",
       "registered: .wai and image/x-wai")

shutil.rmtree(tmp, ignore_errors=True)
print("python: %d passed, %d failed" % (counts["pass"], counts["fail"]))
sys.exit(1 if counts["fail"] else 0)
