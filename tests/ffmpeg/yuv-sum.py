#!/usr/bin/python3
"""Distinct frames of a VLC `--vout yuv --yuv-chroma RV24` file (YUV4MPEG2 framing, RGB24
frames), or with --raw WxH of a headerless RGB24 file (VLC's `#transcode{vcodec=RV24}` to
`mux=raw`): prints "SHA256 WxH COUNT", the SHA-256 over the frames with repeats of the previous
frame dropped (VLC repeats a frame when the clock asks for one). Used by vlc.sh and
full-check.sh."""
import hashlib
import sys

args = sys.argv[1:]
raw = None
if args[:1] == ['--raw']:
    raw, args = args[1], args[2:]
d = open(args[0], 'rb').read()
if raw:
    w, h = (int(v) for v in raw.split('x'))
    size, pos, marker = w * h * 3, 0, b''
else:
    nl = d.find(b'\n')
    hdr = d[:nl].split()
    w = int([t for t in hdr if t.startswith(b'W')][0][1:])
    h = int([t for t in hdr if t.startswith(b'H')][0][1:])
    size, pos, marker = w * h * 3, nl + 1, b'FRAME\n'
frames, last = [], None
while pos < len(d):
    assert d[pos:pos + len(marker)] == marker, 'bad frame marker'
    f = d[pos + len(marker):pos + len(marker) + size]
    assert len(f) == size, 'short frame'
    if f != last:
        frames.append(f)
    last, pos = f, pos + len(marker) + size
print(hashlib.sha256(b''.join(frames)).hexdigest(), '%dx%d' % (w, h), len(frames))
