#!/usr/bin/python3
"""Seed corpora for FFmpeg's fuzz targets from WAI streams (tests/fuzz/ffmpeg/build.sh).

    mkseeds.py OUTDIR STREAM.wai...

OUTDIR/dem/: each stream as it is (inputs up to 2048 bytes are read whole) and with the
2048-byte trailer tools/target_dem_fuzzer.c reads from inputs over 2048 bytes (le32
io_buffer_size, a flags byte (1: seekable), le64 filesize, le32 interrupt counter, then a
1024-byte file name, left empty).
OUTDIR/dec/: the stream's units for tools/target_dec_fuzzer.c: the frame units as packets split
by its "FUZZ-TAG" marker, then the sequence header as extradata, then its 1024-byte trailer
(le32 width, height, le64 bit_rate, le32 bits_per_coded_sample, flags byte (1: use the wai
parser), le32 extradata_size, ..., le64 keyframes at 41, le64 flush pattern at 58 (all ones: no
flushes), skip_frame byte at 66); one seed without and one with the parser, and one with the
header in band instead of in extradata.
"""
import os
import struct
import sys
import zlib

TAG = struct.pack('<Q', 0x4741542D5A5A5546)   # "FUZZ-TAG"


def units(data):
    """Split a stream into (start code, unit bytes), following unit_size / payload_size."""
    out, off = [], 0
    while off + 12 <= len(data):
        code = data[off:off + 4]
        if code == b'WAIS':
            n = struct.unpack_from('<I', data, off + 8)[0]
        elif code == b'WAIF':
            n = struct.unpack_from('<I', data, off + 4)[0] + 20
        else:
            break
        u = data[off:off + n]
        if len(u) != n or zlib.crc32(u[:-4]) != struct.unpack_from('<I', u, n - 4)[0]:
            break
        out.append((code, u))
        off += n
    return out


def dec_trailer(parser, extradata_size):
    t = bytearray(1024)
    struct.pack_into('<B', t, 20, 1 if parser else 0)
    struct.pack_into('<I', t, 21, extradata_size)
    struct.pack_into('<Q', t, 41, 0xAAAAAAAAAAAAAAAA)     # keyframes: every packet a key frame
    struct.pack_into('<Q', t, 58, 0xFFFFFFFFFFFFFFFF)     # flush pattern: never
    struct.pack_into('<B', t, 66, 254 - 48)               # skip_frame = AVDISCARD_DEFAULT
    return bytes(t)


def main():
    out = sys.argv[1]
    os.makedirs(out + '/dem', exist_ok=True)
    os.makedirs(out + '/dec', exist_ok=True)
    for path in sys.argv[2:]:
        data = open(path, 'rb').read()
        name = os.path.splitext(os.path.basename(path))[0]
        open(f'{out}/dem/{name}.wai', 'wb').write(data)
        t = bytearray(2048)
        struct.pack_into('<IBQI', t, 0, 32768, 1, len(data), 0x7FFFFFFF)
        open(f'{out}/dem/{name}-trailer.bin', 'wb').write(data + bytes(t))
        us = units(data)
        if not us or us[0][0] != b'WAIS':
            continue
        hdr, frames = us[0][1], [u for c, u in us[1:] if c == b'WAIF']
        body = TAG.join(frames)
        open(f'{out}/dec/{name}.bin', 'wb').write(body + hdr + dec_trailer(False, len(hdr)))
        open(f'{out}/dec/{name}-parser.bin', 'wb').write(body + hdr + dec_trailer(True, len(hdr)))
        open(f'{out}/dec/{name}-inband.bin', 'wb').write(TAG.join([hdr] + frames) + dec_trailer(False, 0xFFFFFFFF))


if __name__ == '__main__':
    main()
