#!/usr/bin/python3
"""Write the damaged set of a small stream into a directory (issue 26's browser test; the same
recipe as gdk-pixbuf-wai/tests/pixbuf-tests.sh and python/tests/test_wai.py):

  cut-N.wai       the first N bytes (3, 4, 11, 50, 95, 100, half, all but one)
  flip-OFF.wai    one flipped bit in the header's fields, its CRC, the frame unit's header
                  and its payload
  header-only.wai the sequence header alone
  frame-first.wai the frame unit before the header
  garbage.wai     4096 bytes of a fixed pseudo-random sequence (not WAI at all)

  tests/damaged-set.py STREAM OUTDIR        (prints the names written, one per line)
"""
import os
import random
import sys

src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
os.makedirs(out, exist_ok=True)
files = {}
for n in (3, 4, 11, 50, 95, 100, len(data) // 2, len(data) - 1):
    files["cut-%d.wai" % n] = data[:n]
for off in (5, 14, 60, 93, 97, 110, len(data) // 2, len(data) - 2):
    d = bytearray(data)
    d[off] ^= 0x10
    files["flip-%d.wai" % off] = bytes(d)
files["header-only.wai"] = data[:96]
files["frame-first.wai"] = data[96:] + data[:96]
files["garbage.wai"] = random.Random(1).randbytes(4096)
for name, d in files.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(d)
    print(name)
