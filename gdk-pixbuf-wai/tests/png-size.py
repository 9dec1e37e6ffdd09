"""png-size.py FILE: "WIDTHxHEIGHT" of a PNG file (its IHDR), or "not a PNG"."""
import struct
import sys

d = open(sys.argv[1], "rb").read(24)
print("%dx%d" % struct.unpack(">II", d[16:24]) if d[:8] == b"\x89PNG\r\n\x1a\n" else "not a PNG")
