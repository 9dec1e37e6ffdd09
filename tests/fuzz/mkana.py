#!/usr/bin/python3
"""A small .ana file (float g_a, h_a; the layout of tools/train/export.py's write_ana) for the
micro model, as a seed for tests/fuzz/fuzz_ana.c. Weights are seeded pseudo-random numbers.

    mkana.py MICRO.whm OUT.ana [--f16]

--f16: the conv weights as binary16 (flags bit 0, docs/spec/wai-encoder-weights.md).
"""
import hashlib
import random
import struct
import sys
import zlib


def main():
    whm = open(sys.argv[1], 'rb').read()
    f16 = sys.argv[3:] == ['--f16']
    n, m = 8, 8                       # wai-micro-n8m8: N (z channels), M (y channels)
    rng = random.Random(1)

    def floats(k, lo, hi, half=False):
        return struct.pack('<%d%s' % (k, 'e' if half else 'f'), *[rng.uniform(lo, hi) for _ in range(k)])

    def conv(cin, cout, k, stride, pad):
        return (struct.pack('<B3xIIBBBB', 1, cin, cout, k, k, stride, pad) +
                floats(cout * cin * k * k, -0.1, 0.1, f16) + floats(cout, -0.01, 0.01))

    def gdn(c):
        return struct.pack('<B3xI', 5, c) + floats(c, 0.5, 1.5) + floats(c * c, 0.0, 0.1)

    lrelu = struct.pack('<B3xf', 3, 0.01)
    # the structure of the trained models: g_a downsamples by 16, h_a by 4 more (y_down 16,
    # z_down 64)
    ga = [conv(3, m, 5, 2, 2), gdn(m), conv(m, m, 5, 2, 2), gdn(m), conv(m, m, 5, 2, 2), gdn(m),
          conv(m, m, 5, 2, 2)]
    ha = [conv(m, n, 3, 1, 1), lrelu, conv(n, n, 5, 2, 2), lrelu, conv(n, n, 5, 2, 2)]
    body = b''.join(ga + ha)
    size = 128 + len(body) + 4
    head = bytearray(128)
    head[0:4] = b'WAA1'
    struct.pack_into('<IIII', head, 4, 1, size, 1 if f16 else 0, 0)
    struct.pack_into('<IIII', head, 80, n, m, len(ga), len(ha))
    head[96:128] = hashlib.sha256(whm).digest()
    data = bytes(head) + body
    open(sys.argv[2], 'wb').write(data + struct.pack('<I', zlib.crc32(data) & 0xFFFFFFFF))


if __name__ == '__main__':
    main()
