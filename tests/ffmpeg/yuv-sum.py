#!/usr/bin/python3
"""Distinct frames of a VLC `--vout yuv --yuv-chroma RV24` file (YUV4MPEG2 framing, RGB24
frames): prints "SHA256 WxH COUNT", the SHA-256 over the frames with repeats of the previous
frame dropped (VLC repeats a frame when the clock asks for one). Used by vlc.sh and
full-check.sh."""
import hashlib
import sys

d = open(sys.argv[1], 'rb').read()
nl = d.find(b'\n')
hdr = d[:nl].split()
w = int([t for t in hdr if t.startswith(b'W')][0][1:])
h = int([t for t in hdr if t.startswith(b'H')][0][1:])
size, pos, frames, last = w * h * 3, nl + 1, [], None
while pos < len(d):
    assert d[pos:pos + 6] == b'FRAME\n', 'bad frame marker'
    f = d[pos + 6:pos + 6 + size]
    assert len(f) == size, 'short frame'
    if f != last:
        frames.append(f)
    last, pos = f, pos + 6 + size
print(hashlib.sha256(b''.join(frames)).hexdigest(), '%dx%d' % (w, h), len(frames))
