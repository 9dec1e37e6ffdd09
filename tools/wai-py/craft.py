"""Deterministic crafting of damaged and edge-case WAI inputs for the cross-check (check.py).

Every case is derived from the committed vectors, the build's seeded models (wai-mkmodel) and
fixed seeds: the same bytes on every run. Nothing here is written into the repository; check.py
writes the cases under the build directory.

A case is a stream, the models its search path holds, optional decoder settings, and the outcome
this decoder's author expects from the spec (an error class, "ok", or None where the outcome
is not obvious, as for a flipped byte inside a rANS stream). check.py compares the Python
decoder with `wai decode` on every case, and the Python decoder with the expectation.

Contents: stream writers, a rANS encoder (spec 7.1, informative part) for crafted latents, a
model writer for synthetic models, and make_cases().
"""

import hashlib
import random
import struct
from dataclasses import dataclass

import numpy as np

from waidec.fields import crc32
from waidec.graph import run
from waidec.model import load_model
from waidec.ops import ACT_MAX, ACT_MIN
from waidec.payload import scale_index

RANS_L = 1 << 23


# --------------------------------------------------------------------------------------------
# small byte helpers

def p32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def put(buf, off, fmt, value):
    """A copy of `buf` with `value` packed as `fmt` (struct format, little-endian) at `off`."""
    b = bytearray(buf)
    struct.pack_into("<" + fmt, b, off, value)
    return bytes(b)


def flip(buf, off, mask=0xFF):
    b = bytearray(buf)
    b[off] ^= mask
    return bytes(b)


def fix_crc(unit):
    """Recompute a unit's trailing CRC over everything before it."""
    return unit[:-4] + p32(crc32(unit[:-4]))


def split_units(stream):
    """The units of a valid stream, as a list of bytes."""
    units, pos = [], 0
    while pos < len(stream):
        code = stream[pos:pos + 4]
        if code == b"WAIS":
            size = struct.unpack_from("<I", stream, pos + 8)[0]
        else:
            size = 20 + struct.unpack_from("<I", stream, pos + 4)[0]
        units.append(stream[pos:pos + size])
        pos += size
    return units


# --------------------------------------------------------------------------------------------
# stream writers (spec 2.1, 2.2, 3)

def seq_header(width, height, sha, model=b"", disp=None, fps=(25, 1), frame_count=0, flags=None,
               major=1, minor=0, colour=(1, 13, 0, 1), reserved=0):
    flags = (1 if model else 0) if flags is None else flags
    disp = disp or (0, 0, width, height)
    body = (b"WAIS" + bytes([major, minor]) + struct.pack("<H", flags) + p32(96 + len(model))
            + struct.pack("<9I", width, height, *disp, *fps, frame_count) + bytes(colour) + sha
            + p32(len(model)) + p32(reserved) + model)
    return body + p32(crc32(body))


def frame_unit(payload, index=0, flags=0):
    body = b"WAIF" + p32(len(payload)) + p32(index) + p32(flags) + payload
    return body + p32(crc32(body))


def wih1(width, height, zs, ys):
    return b"WIH1" + struct.pack("<4I", width, height, len(zs), len(ys)) + zs + ys


def payload_of(unit):
    return unit[16:-4]


def with_payload(unit, payload):
    """The frame unit `unit` with another payload (payload_size and CRC updated)."""
    return frame_unit(payload, struct.unpack_from("<I", unit, 8)[0], struct.unpack_from("<I", unit, 12)[0])


def _split_streams(payload, cut=0):
    """The z and y rANS streams of a WIH1 payload; `cut` bytes dropped from the end of y."""
    z_size = struct.unpack_from("<I", payload, 12)[0]
    return payload[20:20 + z_size], payload[20 + z_size:len(payload) - cut]


def header_field(unit, off, fmt, value):
    return fix_crc(put(unit, off, fmt, value))


# --------------------------------------------------------------------------------------------
# rANS encoder (spec 7.1, informative) and value coding (7.2)

def rans_encode(symbols, final_state=RANS_L):
    """`symbols`: (start, freq) pairs in decoding order. The decoder ends in `final_state`."""
    x = final_state
    out = bytearray()
    for start, freq in reversed(symbols):
        while x >= freq << 15:
            out.append(x & 0xFF)
            x >>= 8
        x = (x // freq) * 65536 + x % freq + start
    return p32(x) + bytes(reversed(out))


def nibble(k):
    return (4096 * k, 4096)


def value_symbols(table, v, nb=None, length_nibbles=None):
    """The symbols coding value `v` with `table`. For an escape, `nb` may ask for a non-minimal
    length and `length_nibbles` for an arbitrary (even invalid) length code."""
    d = v - table.offset
    if 0 <= d < table.length:
        return [(table.cdf[d], table.freq[d])]
    u = -2 * d - 1 if d < 0 else 2 * (d - table.length)
    if nb is None:
        nb = 0
        while u >> (4 * nb):
            nb += 1
    if length_nibbles is None:
        length_nibbles, n = [], nb
        while n >= 15:
            length_nibbles.append(15)
            n -= 15
        length_nibbles.append(n)
    syms = [(table.cdf[table.length], table.freq[table.length])]
    syms += [nibble(k) for k in length_nibbles]
    syms += [nibble((u >> (4 * i)) & 15) for i in range(nb)]
    return syms


def latent_shapes(model, width, height):
    m = model.pad_multiple
    wp, hp = -(-width // m) * m, -(-height // m) * m
    return ((model.n_z, hp // model.z_down, wp // model.z_down),
            (model.n_y, hp // model.y_down, wp // model.y_down))


def encode_payload(model, width, height, z, y, special=None, final=(RANS_L, RANS_L)):
    """A WIH1 payload holding latents z[n_z][Hz][Wz] and y[n_y][Hy][Wy] (python ints).

    `special` maps ('z'|'y', flat index) to value_symbols() keyword arguments (odd codes)."""
    special = special or {}
    zsyms = []
    for i, v in enumerate(z.reshape(-1).tolist()):
        c = i // (z.shape[1] * z.shape[2])
        zsyms += value_symbols(model.z_tables[c], v, **special.get(("z", i), {}))
    med = np.array(model.z_medians, dtype=np.int64)[:, None, None]
    z_hat = np.clip(z.astype(np.int64) * 4096 + med, ACT_MIN, ACT_MAX)
    scales = run(model.h_s, z_hat)[:model.n_y].reshape(-1).tolist()
    ysyms = []
    for i, v in enumerate(y.reshape(-1).tolist()):
        table = model.y_tables[scale_index(model.thresholds, scales[i])]
        ysyms += value_symbols(table, v, **special.get(("y", i), {}))
    return wih1(width, height, rans_encode(zsyms, final[0]), rans_encode(ysyms, final[1]))


def random_latents(model, width, height, rng, escapes=0.0, zmax=3, ymax=2):
    """Small random latents, a fraction `escapes` of them far out of range (|v| up to 65535)."""
    zs, ys = latent_shapes(model, width, height)

    def draw(shape, vmax):
        n = shape[0] * shape[1] * shape[2]
        out = []
        for _ in range(n):
            if rng.random() < escapes:
                out.append(rng.choice([-1, 1]) * rng.randrange(20, 65536))
            else:
                out.append(rng.randrange(-vmax, vmax + 1))
        return np.array(out, dtype=np.int64).reshape(shape)
    return draw(zs, zmax), draw(ys, ymax)


# --------------------------------------------------------------------------------------------
# model editing (section 4) and synthetic models

class ModelEdit:
    """A WHM1 model as bytes with the offsets of its fields (from the Python loader)."""

    def __init__(self, data):
        self.data = bytes(data)
        self.model = load_model(self.data, layout=True)
        self.fields = {}
        for name, off, size in self.model.layout:
            self.fields.setdefault(name, (off, size))

    def offset(self, name, elem=0, elem_size=0):
        return self.fields[name][0] + elem * elem_size

    def set(self, name, fmt, value, elem=0, fix=True):
        """The model with field `name` (element `elem` of an array) set; CRC fixed if `fix`."""
        d = put(self.data, self.offset(name, elem, struct.calcsize("<" + fmt)), fmt, value)
        return refix_model(d) if fix else d

    def boundaries(self):
        """Every field boundary offset, sorted."""
        return sorted({off for _, off, _ in self.model.layout} | {len(self.data)})


def refix_model(d):
    """Set file_size to the length and recompute the CRC at the end."""
    d = put(d, 8, "I", len(d))
    return d[:-4] + p32(crc32(d[:-4]))


def truncate_model(d, n):
    """The first n bytes as a model of its own (file_size, CRC), the CRC slot appended."""
    return refix_model(d[:n] + b"\0\0\0\0")


def sha(d):
    return hashlib.sha256(d).digest()


def quantise(weights):
    """Integer weights -> frequencies >= 1 summing to 65536 (largest remainder, floor 1)."""
    w = [max(0, int(x)) for x in weights]
    total = sum(w) or 1
    freq = [max(1, (x * 65536) // total) for x in w]
    diff = 65536 - sum(freq)
    order = sorted(range(len(w)), key=lambda i: -w[i])
    i = 0
    while diff != 0:
        k = order[i % len(order)]
        if diff > 0:
            freq[k] += 1
            diff -= 1
        elif freq[k] > 1:
            freq[k] -= 1
            diff += 1
        i += 1
    return freq


def table_bytes(offset, freq):
    return struct.pack("<iI", offset, len(freq) - 1) + struct.pack("<%dH" % len(freq), *freq)


def conv_bytes(ltype, w, shift, bias, stride=1, pad=0, out_pad=0):
    cout, cin, kh, kw = w.shape
    return (bytes([ltype, 0, 0, 0]) + struct.pack("<II", cin, cout)
            + bytes([kh, kw, stride, pad, out_pad, 0, 0, 0])
            + w.astype("<i2").tobytes() + np.asarray(shift, dtype="u1").tobytes()
            + np.asarray(bias, dtype="<i8").tobytes())


def leaky_bytes(slope):
    return bytes([3, 0, 0, 0]) + struct.pack("<i", slope)


def igdn_bytes(beta, gamma, g):
    c = len(beta)
    return (bytes([4, 0, 0, 0]) + struct.pack("<II", c, g) + np.asarray(beta, dtype="<i8").tobytes()
            + np.asarray(gamma, dtype="<i4").reshape(c * c).tobytes())


def model_bytes(n_z, n_y, pad_multiple, y_down, z_down, hs, gs, ztables, thresholds, ytables,
                name=b"synthetic"):
    """A WHM1 file from record bytes: hs/gs lists of layer records, ztables (median, offset,
    freq) triples, ytables (offset, freq) pairs."""
    head = (b"WHM1" + struct.pack("<III", 1, 0, 0) + name.ljust(64, b"\0")
            + struct.pack("<9I", n_z, n_y, pad_multiple, y_down, z_down, len(hs), len(gs),
                          len(ytables), 0))
    body = b"".join(hs) + b"".join(gs)
    body += b"".join(struct.pack("<i", m) + table_bytes(o, f) for m, o, f in ztables)
    body += struct.pack("<%di" % len(thresholds), *thresholds)
    body += b"".join(table_bytes(o, f) for o, f in ytables)
    return refix_model(head + body + b"\0\0\0\0")


def rand_conv(rng, ltype, cin, cout, kh, kw, stride=1, pad=0, out_pad=0, gain=1.0):
    """Random 12-bit weights with per-channel shifts that keep activations in a sane range."""
    w = np.array([rng.randrange(-2048, 2048) for _ in range(cout * cin * kh * kw)],
                 dtype=np.int64).reshape(cout, cin, kh, kw)
    taps = cin * max(1, (kh * kw) // (stride * stride if ltype == 2 else 1))
    base = int(round(np.log2(1200.0 * np.sqrt(taps) / gain)))
    shift = [min(32, max(0, base + rng.randrange(-1, 2))) for _ in range(cout)]
    bias = [rng.randrange(-2048, 2048) << shift[o] for o in range(cout)]
    return conv_bytes(ltype, w, shift, bias, stride, pad, out_pad)


def rand_igdn(rng, c, g):
    beta = [max(0, (1 << (12 + g)) + rng.randrange(-(1 << (8 + g)), 1 << (8 + g))) for _ in range(c)]
    gamma = [[rng.randrange(0, min(1 << 17, 1 << (g - 2))) if i == j else rng.randrange(0, min(1 << 17, 1 << (g - 5)))
              for j in range(c)] for i in range(c)]
    return igdn_bytes(beta, gamma, g)


def laplace_table(rng, r):
    """A z table: symbols -r..r with Laplacian-ish weights, plus the escape."""
    rho = rng.uniform(0.3, 0.8)
    w = [int(1e9 * rho ** abs(s)) for s in range(-r, r + 1)] + [int(1e9 * rho ** r)]
    return -r, quantise(w)


def synthetic_model(seed, topology):
    """Small valid models with strides, non-square kernels, slopes and gamma shifts that the
    seeded vectors do not reach (topologies 'a', 'b', 'c')."""
    rng = random.Random(seed)
    if topology == "a":
        # z_down 8, y_down 2: h_s upsamples by 4 with a stride-4 convT, then non-square convs
        n_z, n_y, pm, yd, zd = 2, 3, 8, 2, 8
        hs = [rand_conv(rng, 2, 2, 6, 4, 4, stride=4),
              leaky_bytes(32768),                               # every odd negative x is a tie
              rand_conv(rng, 1, 6, 5, 3, 5, pad=2),             # (H+2) x W
              leaky_bytes(0),
              rand_conv(rng, 1, 5, 6, 3, 1)]                    # back to H x W
        gs = [rand_conv(rng, 2, 3, 4, 4, 4, stride=4),          # 2Hp x 2Wp
              rand_igdn(rng, 4, 8),
              rand_conv(rng, 1, 4, 4, 3, 3, stride=2, pad=1),   # Hp x Wp
              rand_igdn(rng, 4, 24),
              rand_conv(rng, 2, 4, 3, 3, 3, stride=3, pad=1, out_pad=2),   # 3Hp x 3Wp
              leaky_bytes(65536),
              rand_conv(rng, 1, 3, 3, 5, 5, stride=3, pad=1)]   # Hp x Wp
    elif topology == "b":
        # no downsampling in z at all (z_down 1), y_down 1: same-size graphs, 1x1 and 7x7 kernels
        n_z, n_y, pm, yd, zd = 3, 2, 1, 1, 1
        hs = [rand_conv(rng, 1, 3, 5, 1, 1), leaky_bytes(1),
              rand_conv(rng, 1, 5, 4, 7, 7, pad=3)]
        gs = [rand_conv(rng, 1, 2, 6, 3, 3, pad=1), rand_igdn(rng, 6, 12), leaky_bytes(65535),
              rand_conv(rng, 2, 6, 3, 2, 2, stride=2),          # 2H x 2W
              rand_conv(rng, 1, 3, 3, 2, 2, stride=2)]          # H x W
    else:
        # z_down 4 with a stride-2 convT (k 3, out_pad 1) and a stride-2 conv, y_down 4
        n_z, n_y, pm, yd, zd = 4, 4, 16, 4, 4
        hs = [rand_conv(rng, 2, 4, 6, 3, 3, stride=2, pad=1, out_pad=1),    # 2H
              leaky_bytes(6553),
              rand_conv(rng, 1, 6, 8, 3, 3, stride=2, pad=1)]               # H
        gs = [rand_conv(rng, 2, 4, 5, 5, 5, stride=2, pad=2, out_pad=1), rand_igdn(rng, 5, 16),
              rand_conv(rng, 2, 5, 5, 6, 6, stride=2, pad=2),
              rand_igdn(rng, 5, 10),
              rand_conv(rng, 1, 5, 3, 3, 3, pad=1)]
    ztables = []
    for _ in range(n_z):
        off, freq = laplace_table(rng, rng.randrange(2, 12))
        ztables.append((rng.randrange(-3000, 3000), off, freq))
    n_scales = rng.randrange(3, 9)
    thresholds = sorted(rng.sample(range(200, 20000), n_scales - 1))
    ytables = [laplace_table(rng, rng.randrange(1, 10)) for _ in range(n_scales)]
    return model_bytes(n_z, n_y, pm, yd, zd, hs, gs, ztables, thresholds, ytables,
                       name=b"synthetic %s seed %d" % (topology.encode(), seed))


# --------------------------------------------------------------------------------------------
# the cases

@dataclass
class Case:
    name: str
    stream: bytes
    models: dict = None          # file name -> bytes for the case's own model directory
    use_build_models: bool = True   # search the build's model directory (seeded models) too
    max_memory: int = None
    expect: str = None           # "ok", an error class name, or None (compare only)


BIT, TRUNC, CRC, UNSUP, NOTFOUND, INVALID, LIMIT, OK = (
    "bitstream error", "truncated", "CRC error", "unsupported", "model not found",
    "invalid model", "limit exceeded", "ok")


def make_cases(vector_dir, micro_model, tiny_model):
    """All cases, in a fixed order. `vector_dir`: the committed vectors; `micro_model`,
    `tiny_model`: the bytes of the build's wai-micro-n8m8.whm and wai-tiny-n64m96.whm."""
    cases = []

    def add(name, stream, expect, **kw):
        cases.append(Case(name, stream, expect=expect, **kw))

    def vec(name):
        with open("%s/%s.wai" % (vector_dir, name), "rb") as f:
            return f.read()

    v02 = vec("v02-1x1")
    hdr, frm = split_units(v02)
    P = len(frm) - 20
    z_size, y_size = struct.unpack_from("<II", frm, 28)
    pay = payload_of(frm)

    # -- truncation at every field boundary of the sequence header and the frame unit
    add("trunc-empty", b"", BIT)
    for n in (1, 2, 3):
        add("trunc-seq-%d" % n, v02[:n], TRUNC)
    for n in (4, 5, 6, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 49, 50, 51, 52, 84, 88, 92, 95):
        add("trunc-seq-%d" % n, v02[:n], TRUNC)
    add("header-only", hdr, OK)
    for n in (1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 28, 32, 36, 36 + z_size // 2, 36 + z_size,
              36 + z_size + y_size // 2, 16 + P, 18 + P, 19 + P):
        add("trunc-frame-%d" % n, hdr + frm[:n], TRUNC)
    v09 = vec("v09-video-3x64x48")
    u09 = split_units(v09)
    add("trunc-video-2-frames", b"".join(u09[:3]), OK)
    add("trunc-video-mid-frame-2", b"".join(u09[:3]) + u09[3][:100], TRUNC)
    v10 = vec("v10-embedded-32x32")
    u10 = split_units(v10)
    for n in (96, 200, 5000, len(u10[0]) // 2, len(u10[0]) - 1):
        add("trunc-embedded-%d" % n, v10[:n], TRUNC)

    # -- start codes and magics, stray bytes
    add("magic-wais", flip(v02, 3, 0x01), BIT)
    add("magic-waif", hdr + flip(frm, 3, 0x01), BIT)
    add("magic-wih1", hdr + fix_crc(flip(frm, 19, 0x01)), BIT)
    add("frame-before-header", frm + hdr, BIT)
    add("frame-only", frm, BIT)
    add("garbage", bytes(random.Random(5).randrange(256) for _ in range(5000)), BIT)
    add("stray-between-units", hdr + b"XYZW" + frm, BIT)
    add("stray-tail-2", v02 + b"XY", BIT)
    add("stray-tail-start-2", v02 + b"WA", TRUNC)
    add("stray-tail-start-4", v02 + b"WAIF", TRUNC)
    add("stray-tail-5", v02 + b"WAIFX", TRUNC)
    add("zero-padding-tail", v02 + bytes(16), BIT)

    # -- CRCs
    add("crc-header", flip(hdr, 95, 0x10) + frm, CRC)
    add("crc-header-field", flip(hdr, 12, 0x02) + frm, CRC)
    add("crc-frame", hdr + flip(frm, len(frm) - 1, 0x80), CRC)
    add("crc-payload-byte", hdr + flip(frm, 40, 0x04), CRC)
    add("crc-video-frame-3", b"".join(u09[:3]) + flip(u09[3], 300), CRC)
    em = u10[0]
    msize = struct.unpack_from("<I", em, 84)[0]
    add("embedded-model-byte-flipped", fix_crc(flip(em, 92 + 300, 0x01)) + u10[1], INVALID)
    bad_model = bytearray(em[92:92 + msize])
    bad_model[300] ^= 1
    bad_model = bytes(bad_model)
    add("embedded-model-crc", fix_crc(em[:52] + sha(bad_model) + em[84:92] + bad_model + em[-4:]) + u10[1], INVALID)

    # -- versions
    for major in (0, 2, 255):
        add("version-major-%d" % major, header_field(hdr, 4, "B", major) + frm, UNSUP)
    # framing comes before version_major (section 2): an incomplete unit is *truncated*, a
    # unit_size below 96 a *bitstream error*, whatever the version
    add("version-major-2-short", put(hdr, 4, "B", 2)[:5], TRUNC)
    add("version-major-2-short12", put(hdr, 4, "B", 2)[:12], TRUNC)
    add("version-major-2-unit-size-50", put(put(hdr, 4, "B", 2), 8, "I", 50)[:60], BIT)
    add("version-major-2-then-frame", header_field(hdr, 4, "B", 2) + frm, UNSUP)
    add("version-major-2-header-replaced", header_field(hdr, 4, "B", 2) + hdr + frm, UNSUP)
    add("version-minor-7", header_field(hdr, 5, "B", 7) + frm, OK)

    # -- sequence header fields (CRC fixed)
    H = lambda off, fmt, v: header_field(hdr, off, fmt, v) + frm   # noqa: E731
    add("hdr-flags-2", H(6, "H", 2), UNSUP)
    add("hdr-flags-8000", H(6, "H", 0x8000), UNSUP)
    add("hdr-flags-embedded-no-model", H(6, "H", 1), BIT)
    add("hdr-matrix-1", H(50, "B", 1), UNSUP)
    add("hdr-full-range-0", H(51, "B", 0), UNSUP)
    add("hdr-full-range-2", H(51, "B", 2), UNSUP)
    add("hdr-flags-and-width-0", fix_crc(put(put(hdr, 6, "H", 4), 12, "I", 0)) + frm, UNSUP)
    add("hdr-matrix-and-reserved", fix_crc(put(put(hdr, 50, "B", 2), 88, "I", 1)) + frm, UNSUP)
    add("hdr-unit-size-95", put(hdr, 8, "I", 95) + frm, BIT)
    add("hdr-unit-size-0", put(hdr, 8, "I", 0) + frm, BIT)
    add("hdr-unit-size-huge", put(hdr, 8, "I", 0xFFFFFFF0) + frm, LIMIT)
    add("hdr-unit-size-100", fix_crc(put(hdr[:92] + b"\0\0\0\0" + hdr[92:], 8, "I", 100)) + frm, BIT)
    add("hdr-model-size-no-flag", fix_crc(put(put(hdr[:92] + b"\0\0\0\0" + hdr[92:], 8, "I", 100), 84, "I", 4)) + frm, BIT)
    add("hdr-width-0", H(12, "I", 0), BIT)
    add("hdr-height-0", H(16, "I", 0), BIT)
    add("hdr-width-65537", H(12, "I", 65537), BIT)
    add("hdr-height-huge", H(16, "I", 0xFFFFFFFF), BIT)
    add("hdr-width-16385", H(12, "I", 16385), LIMIT)
    add("hdr-width-65536", H(12, "I", 65536), LIMIT)
    add("hdr-height-16385", H(16, "I", 16385), LIMIT)
    # the largest picture libwai-core allows is within its default budget (9.2: about 1.25 GiB with
    # h_s and g_s in stripes), so the header is usable and the 1x1 frame is what is refused; a
    # 1 GiB budget refuses the header
    h16k = fix_crc(put(put(hdr, 12, "I", 16384), 16, "I", 16384))
    add("hdr-size-16384-square", h16k + frm, BIT)
    add("hdr-size-16384-square-budget-1g", h16k + frm, LIMIT, max_memory=1 << 30)
    add("hdr-width-2-payload-mismatch", H(12, "I", 2), BIT)
    add("hdr-disp-w-0", H(28, "I", 0), BIT)
    add("hdr-disp-h-0", H(32, "I", 0), BIT)
    add("hdr-disp-x-1", H(20, "I", 1), BIT)
    add("hdr-disp-y-1", H(24, "I", 1), BIT)
    add("hdr-disp-x-wraps", H(20, "I", 0xFFFFFFFF), BIT)
    add("hdr-disp-y-wraps", H(24, "I", 0xFFFFFFFF), BIT)
    add("hdr-fps-num-0", H(36, "I", 0), BIT)
    add("hdr-fps-den-0", H(40, "I", 0), BIT)
    add("hdr-reserved-1", H(88, "I", 1), BIT)
    add("hdr-colour-primaries-2", H(48, "B", 2), OK)
    add("hdr-transfer-1", H(49, "B", 1), OK)
    add("hdr-frame-count-9", H(44, "I", 9), OK)
    v06 = vec("v06-window-96x80")
    h06, f06 = split_units(v06)
    add("hdr-window-moved", fix_crc(put(put(h06, 20, "I", 16), 24, "I", 10)) + f06, OK)
    add("hdr-window-whole", fix_crc(put(put(put(put(h06, 20, "I", 0), 24, "I", 0), 28, "I", 96), 32, "I", 80)) + f06, OK)
    add("hdr-window-1x1-corner", fix_crc(put(put(put(put(h06, 20, "I", 95), 24, "I", 79), 28, "I", 1), 32, "I", 1)) + f06, OK)

    # -- frame unit fields
    add("frame-flags-1", hdr + fix_crc(put(frm, 12, "I", 1)), BIT)
    add("frame-payload-19", hdr + frame_unit(pay[:19]), BIT)
    add("frame-payload-0", hdr + frame_unit(b""), BIT)
    add("frame-payload-size-huge", hdr + put(frm, 4, "I", 0xFFFFFF00), LIMIT)
    add("frame-payload-size-200M", hdr + put(frm, 4, "I", 200 << 20), TRUNC)
    add("frame-payload-size-plus-1", hdr + put(frm, 4, "I", P + 1), TRUNC)
    add("frame-index-5", hdr + fix_crc(put(frm, 8, "I", 5)), OK)
    add("video-reordered", u09[0] + u09[3] + u09[1] + u09[2], OK)
    add("video-frame-repeated", u09[0] + u09[1] + u09[1] + u09[2], OK)
    add("header-repeated", hdr + frm + hdr + frm, OK)
    v01 = vec("v01-64x64")
    h01, f01 = split_units(v01)
    add("header-changed-then-old-frame", hdr + h01 + frm, BIT)
    add("header-changed-between-frames", hdr + frm + h01 + f01, OK)
    add("header-broken-repeat", hdr + frm + flip(hdr, 30) + frm, CRC)

    # -- payload header (CRC fixed)
    def PL(p):
        return hdr + with_payload(frm, p)
    add("payload-width", PL(put(pay, 4, "I", 2)), BIT)
    add("payload-height", PL(put(pay, 8, "I", 0)), BIT)
    add("payload-z-size-3", PL(put(put(pay, 12, "I", 3), 16, "I", y_size + z_size - 3)), BIT)
    add("payload-y-size-3", PL(put(put(pay, 12, "I", z_size + y_size - 3), 16, "I", 3)), BIT)
    add("payload-sizes-sum", PL(put(pay, 12, "I", z_size + 1)), BIT)
    add("payload-sizes-wrap", PL(put(put(pay, 12, "I", 0xFFFFFFFF), 16, "I", (P - 20 - 0xFFFFFFFF) & 0xFFFFFFFF)), BIT)
    add("payload-sizes-zero", PL(b"WIH1" + struct.pack("<4I", 1, 1, 0, 0)), BIT)

    # -- rANS streams of v02 (CRC fixed)
    zs, ys = pay[20:20 + z_size], pay[20 + z_size:]
    add("rans-z-state-low", PL(put(pay, 23, "B", 0x00)), BIT)
    add("rans-z-state-high", PL(put(pay, 23, "B", 0x80)), BIT)
    add("rans-y-state-low", PL(put(pay, 23 + z_size, "B", 0x00)), BIT)
    add("rans-y-state-high", PL(put(pay, 23 + z_size, "B", 0xFF)), BIT)
    add("rans-y-state-2^23", PL(put(pay, 20 + z_size, "I", RANS_L)), None)
    add("rans-z-minus-last-byte", PL(wih1(1, 1, zs[:-1], ys)), None)
    add("rans-y-minus-last-byte", PL(wih1(1, 1, zs, ys[:-1])), None)
    add("rans-z-extra-byte", PL(wih1(1, 1, zs + b"\0", ys)), BIT)
    add("rans-y-extra-byte", PL(wih1(1, 1, zs, ys + b"\x55")), BIT)
    add("rans-streams-swapped", PL(wih1(1, 1, ys, zs)), None)
    add("rans-y-4-bytes", PL(wih1(1, 1, zs, ys[:4])), None)
    rng = random.Random(7)
    for off in sorted(rng.sample(range(24, 20 + z_size), 8)):
        add("rans-z-flip-%d" % off, PL(flip(pay, off, 1 << rng.randrange(8))), None)
    for off in sorted(rng.sample(range(24 + z_size, 20 + z_size + y_size), 8)):
        add("rans-y-flip-%d" % off, PL(flip(pay, off, 1 << rng.randrange(8))), None)
    v07 = vec("v07-escapes-64x64")
    h07, f07 = split_units(v07)
    p07 = payload_of(f07)
    z7 = struct.unpack_from("<I", p07, 12)[0]
    for off in sorted(rng.sample(range(24 + z7, len(p07)), 6)):
        add("rans-escapes-flip-%d" % off, h07 + with_payload(f07, flip(p07, off, 1 << rng.randrange(8))), None)

    # -- crafted latents with the micro model (40x24: z 8x1x1, y 8x4x4)
    micro = load_model(micro_model)
    msha = sha(micro_model)
    W, Hh = 40, 24
    mh = seq_header(W, Hh, msha)
    rng = random.Random(11)
    z, y = random_latents(micro, W, Hh, rng)

    def M(name, expect, z=z, y=y, special=None, final=(RANS_L, RANS_L)):
        add("values-" + name, mh + frame_unit(encode_payload(micro, W, Hh, z, y, special, final)), expect)
    M("plain", OK)
    z2, y2 = random_latents(micro, W, Hh, random.Random(12), escapes=0.2)
    M("random-escapes", OK, z2, y2)
    zz = z.copy()
    zz[0, 0, 0], zz[1, 0, 0] = 65535, -65535
    M("z-extremes-clamped", OK, zz)
    yy = y.copy()
    yy[0, 0, 0], yy[0, 0, 1], yy[3, 2, 2] = 65535, -65535, 40000
    M("y-extremes-clamped", OK, y=yy)
    yy = y.copy()
    yy[2, 1, 1] = 65536
    M("y-65536", BIT, y=yy)
    yy[2, 1, 1] = -65536
    M("y-minus-65536", BIT, y=yy)
    zz = z.copy()
    zz[5, 0, 0] = 65536
    M("z-65536", BIT, zz)
    yy = y.copy()
    yy[1, 0, 0] = 1000
    M("nb-9", BIT, y=yy, special={("y", 16): {"nb": 9, "length_nibbles": [9]}})
    M("nb-15-nibble", BIT, y=yy, special={("y", 16): {"nb": 16, "length_nibbles": [15, 1]}})
    M("nb-8-leading-zeros", OK, y=yy, special={("y", 16): {"nb": 8}})
    M("nb-minimal", OK, y=yy)
    yy[1, 0, 0] = 2 ** 16 + 10
    M("bypass-u-big", BIT, y=yy, special={("y", 16): {"nb": 8}})
    zz = z.copy()
    zz[3, 0, 0] = micro.z_tables[3].offset + micro.z_tables[3].length   # u = 0, nb = 0
    M("z-escape-u-0", OK, zz)
    M("final-state-plus-1", BIT, final=(RANS_L, RANS_L + 1))
    M("final-state-z-wrong", BIT, final=(RANS_L + 256, RANS_L))
    good = encode_payload(micro, W, Hh, z, y)
    zsz = struct.unpack_from("<I", good, 12)[0]
    add("values-y-ends-in-bypass", mh + frame_unit(wih1(W, Hh, good[20:20 + zsz], good[20 + zsz:-1])), None)
    esc = encode_payload(micro, W, Hh, z, yy, {("y", 16): {"nb": 8}})
    add("values-y-cut-in-escape", mh + frame_unit(wih1(W, Hh, esc[20:20 + zsz], esc[20 + zsz:20 + zsz + 8])), None)

    # -- going on after an error (section 2.4): damage in the middle of a 4-frame micro stream
    fr = [frame_unit(encode_payload(micro, W, Hh, *random_latents(micro, W, Hh, random.Random(40 + k))), k)
          for k in range(4)]
    bad_hdr_missing = seq_header(W, Hh, sha(b"missing model"))
    G = lambda *parts: b"".join(parts)   # noqa: E731
    add("resync-none", G(mh, *fr), OK)
    add("resync-crc-frame-2", G(mh, fr[0], flip(fr[1], 40), fr[2], fr[3]), CRC)
    add("resync-crc-frames-1-3", G(mh, flip(fr[0], 30), fr[1], flip(fr[2], 50), fr[3]), CRC)
    add("resync-garbage-between", G(mh, fr[0], b"garbage!" * 5, fr[1], fr[2]), BIT)
    add("resync-garbage-with-start-codes", G(mh, fr[0], b"xxWAIFxxxxxxxxWAISxxxxxxxxxxxxWAIF\x30\0\0\0", fr[1]), BIT)
    add("resync-cut-frame-middle", G(mh, fr[0], fr[1][:len(fr[1]) // 2], fr[2], fr[3]), CRC)
    add("resync-cut-frame-end", G(mh, fr[0], fr[1], fr[2][:30]), TRUNC)
    add("resync-two-cut-units-end", G(mh, fr[0], b"junk", fr[1][:60], fr[2][:30]), BIT)
    add("resync-cut-at-end-twice", G(mh, fr[0], fr[1][:len(fr[1]) - 5], fr[2][:9]), CRC)
    add("resync-start-code-prefix-end", G(mh, fr[0], b"zzWA"), BIT)
    add("resync-frame-flags-middle", G(mh, fr[0], fix_crc(put(fr[1], 12, "I", 2)), fr[2]), BIT)
    add("resync-frame-p19-middle", G(mh, fr[0], frame_unit(b"WIH1" + bytes(15)), fr[2]), BIT)
    add("resync-payload-error-middle", G(mh, fr[0], with_payload(fr[1], put(payload_of(fr[1]), 23, "B", 0x80)), fr[2]), BIT)
    add("resync-payload-size-huge-middle", G(mh, fr[0], put(fr[1], 4, "I", 0xFFFFFF00), fr[2]), LIMIT)
    add("resync-unit-size-small-middle", G(mh, fr[0], put(mh, 8, "I", 40), fr[1]), BIT)
    add("resync-header-crc-middle", G(mh, fr[0], flip(mh, 20), fr[1], fr[2]), CRC)
    add("resync-header-fields-middle", G(mh, fr[0], header_field(mh, 40, "I", 0), fr[1]), BIT)
    add("resync-header-version-middle", G(mh, fr[0], header_field(mh, 4, "B", 3), fr[1]), UNSUP)
    add("resync-header-unusable-middle", G(mh, fr[0], bad_hdr_missing, fr[1], fr[2], mh, fr[3]), NOTFOUND)
    add("resync-header-too-big-middle", G(mh, fr[0], header_field(mh, 12, "I", 20000), fr[1], mh, fr[2]), LIMIT)
    add("resync-header-unusable-repeated", G(mh, fr[0], bad_hdr_missing, fr[1], bad_hdr_missing, fr[2]), NOTFOUND)
    add("resync-header-other-size", G(mh, fr[0], seq_header(64, 64, msha), fr[1], mh, fr[2]), BIT)
    add("resync-frames-before-header", G(fr[0], fr[1], mh, fr[2]), BIT)
    add("resync-header-broken-then-frames", G(flip(mh, 20), fr[0], mh, fr[1]), CRC)
    add("resync-unusable-first-header", G(bad_hdr_missing, fr[0], mh, fr[1]), NOTFOUND)
    add("resync-unusable-then-broken-header", G(mh, fr[0], bad_hdr_missing, fr[1], flip(mh, 20), fr[2], mh, fr[3]), NOTFOUND)
    add("resync-broken-header-twice-at-start", G(flip(mh, 20), flip(mh, 21), fr[0]), CRC)
    add("resync-rans-truncated-each", G(mh, with_payload(fr[0], wih1(W, Hh, *_split_streams(payload_of(fr[0]), 1))),
                                        with_payload(fr[1], wih1(W, Hh, *_split_streams(payload_of(fr[1]), 1))),
                                        fr[2]), None)

    # a later header embedding a damaged copy of the model in force: the decoder may take the
    # model it holds (4.4), and both do (SPEC-QUESTIONS.md A2)
    add("resync-later-header-damaged-embedded-model",
        G(mh, fr[0], seq_header(W, Hh, msha, model=flip(micro_model, 300), fps=(30, 1)), fr[1]), OK)
    add("resync-later-header-other-embedded-model",
        G(mh, fr[0], seq_header(W, Hh, sha(b"x"), model=micro_model, fps=(30, 1)), fr[1], mh, fr[2]), INVALID)

    # -- models: missing, search path, embedded
    add("model-not-found", seq_header(1, 1, sha(b"no such model")) + frm, NOTFOUND)
    add("model-not-found-no-frames", seq_header(1, 1, sha(b"no such model")), NOTFOUND)
    add("model-in-case-dir", mh + frame_unit(good), OK, models={"micro.whm": micro_model},
        use_build_models=False)
    other = sha(b"the name of another model")
    add("model-exact-name-other-sha", seq_header(W, Hh, other) + frame_unit(good), NOTFOUND,
        models={other.hex() + ".whm": micro_model}, use_build_models=False)
    add("model-wrong-extension", mh + frame_unit(good), NOTFOUND, models={"micro.bin": micro_model},
        use_build_models=False)
    add("model-dir-with-junk", mh + frame_unit(good), OK,
        models={"a-junk.whm": b"WHM1 junk", "micro.whm": micro_model}, use_build_models=False)
    add("model-embedded-micro", seq_header(W, Hh, msha, model=micro_model) + frame_unit(good), OK,
        use_build_models=False)
    add("model-embedded-tiny-size", seq_header(W, Hh, sha(b"WHM1"), model=b"WHM1"), INVALID)
    add("model-embedded-other-sha", seq_header(W, Hh, sha(tiny_model), model=micro_model), INVALID)
    add("memory-budget-small-v01", v01, LIMIT, max_memory=100000)
    add("memory-budget-small-micro", mh + frame_unit(good), LIMIT, max_memory=50000)
    add("memory-budget-large", mh + frame_unit(good), OK, max_memory=64 << 20)

    # -- damaged models: the micro model edited, the stream names the edited model's SHA-256
    me = ModelEdit(micro_model)

    def MD(name, data, expect, embedded=False):
        """A stream naming the edited model `data`. Where the edited model is valid (by the
        Python loader) the payload is coded with it, so that the decode runs to the end."""
        frame = frame_unit(good)
        if expect != INVALID:
            try:
                frame = frame_unit(encode_payload(load_model(data), W, Hh, z, y))
            except Exception:
                pass
        if embedded:
            s = seq_header(W, Hh, sha(data), model=data) + frame
            add("model-" + name, s, expect, use_build_models=False)
        else:
            s = seq_header(W, Hh, sha(data)) + frame
            add("model-" + name, s, expect, models={"edited.whm": data}, use_build_models=False)

    bounds = me.boundaries()
    picks = sorted(set(bounds[:40:3] + bounds[40::37]))
    for n in sorted(set([0, 4, 8, 119, 120] + picks[::2])):
        if n < len(micro_model):
            MD("cut-%d" % n, micro_model[:n], INVALID)
    for n in picks[1::2]:
        if 16 < n < len(micro_model) - 4:
            MD("cut-fixed-%d" % n, truncate_model(micro_model, n), INVALID)
    MD("magic", put(micro_model, 0, "4s", b"WHM2"), INVALID)
    MD("version-0", me.set("version", "I", 0, fix=False), INVALID)
    MD("version-2", me.set("version", "I", 2, fix=False), INVALID)
    MD("file-size-plus-1", put(micro_model, 8, "I", len(micro_model) + 1), INVALID)
    MD("crc", flip(micro_model, len(micro_model) - 2), INVALID)
    MD("weight-no-crc-fix", me.set("h_s[0].weight", "h", 5, fix=False), INVALID)
    MD("flags-1", me.set("flags", "I", 1), INVALID)
    MD("name-changed", refix_model(put(micro_model, 20, "4s", b"XXXX")), OK)
    for fname, values in (("n_z", (0, 1025, 7, 9)), ("n_y", (0, 1025, 7)),
                          ("pad_multiple", (0, 1025, 48, 32)), ("y_down", (0, 1025, 3)),
                          ("z_down", (0, 1025, 128)), ("n_hs", (0, 65, 4, 6)), ("n_gs", (0, 65, 6)),
                          ("n_scales", (0, 257, 63, 65)), ("reserved", (1,))):
        for v in values:
            MD("%s-%d" % (fname.replace("_", "-"), v), me.set(fname, "I", v), INVALID)
    MD("z-down-32-graph", me.set("z_down", "I", 32), INVALID)
    MD("y-down-32-graph", me.set("y_down", "I", 32), INVALID)
    MD("y-down-8-graph", me.set("y_down", "I", 8), INVALID)
    MD("pad-multiple-128", me.set("pad_multiple", "I", 128), None)
    # layer records: h_s[0] convT, h_s[1] leaky ReLU, h_s[4] conv, g_s[1] IGDN
    for fname, fmt, v, exp in (
            ("h_s[0].type", "B", 0, INVALID), ("h_s[0].type", "B", 5, INVALID),
            ("h_s[0].type", "B", 1, INVALID), ("h_s[0].type", "B", 3, None),
            ("h_s[0].type", "B", 4, None),
            ("h_s[1].type", "B", 4, INVALID), ("h_s[1].type", "B", 2, None),
            ("h_s[0].cin", "I", 0, INVALID), ("h_s[0].cin", "I", 1025, INVALID),
            ("h_s[0].cin", "I", 7, INVALID), ("h_s[0].cout", "I", 0, INVALID),
            ("h_s[0].cout", "I", 1025, INVALID), ("h_s[0].cout", "I", 9, INVALID),
            ("h_s[0].kh", "B", 0, INVALID), ("h_s[0].kh", "B", 16, INVALID),
            ("h_s[0].kw", "B", 0, INVALID), ("h_s[0].stride", "B", 0, INVALID),
            ("h_s[0].stride", "B", 9, INVALID), ("h_s[0].pad", "B", 5, INVALID),
            ("h_s[0].pad", "B", 15, INVALID), ("h_s[0].out_pad", "B", 2, INVALID),
            ("h_s[4].out_pad", "B", 1, INVALID), ("h_s[0].shift", "B", 33, INVALID),
            ("h_s[0].shift", "B", 32, OK), ("h_s[0].shift", "B", 0, OK),
            ("h_s[0].weight", "h", 2048, INVALID), ("h_s[0].weight", "h", -2049, INVALID),
            ("h_s[0].weight", "h", 2047, OK), ("h_s[0].weight", "h", -2048, OK),
            ("g_s[6].weight", "h", -32768, INVALID),
            ("h_s[0].bias", "q", (1 << 52) + 1, INVALID), ("h_s[0].bias", "q", -(1 << 52) - 1, INVALID),
            ("h_s[0].bias", "q", 1 << 52, OK), ("g_s[0].bias", "q", -(1 << 52), OK),
            ("h_s[1].slope_q16", "i", -1, INVALID), ("h_s[1].slope_q16", "i", 65537, INVALID),
            ("h_s[1].slope_q16", "i", 65536, OK), ("h_s[3].slope_q16", "i", 0, OK),
            ("h_s[1].slope_q16", "i", 32768, OK),
            ("g_s[1].channels", "I", 0, INVALID), ("g_s[1].channels", "I", 513, INVALID),
            ("g_s[1].channels", "I", 7, INVALID), ("g_s[1].gamma_shift", "I", 7, INVALID),
            ("g_s[1].gamma_shift", "I", 9, INVALID), ("g_s[1].gamma_shift", "I", 26, INVALID),
            ("g_s[1].gamma_shift", "I", 6, INVALID), ("g_s[1].gamma_shift", "I", 8, OK),
            ("g_s[1].gamma_shift", "I", 24, OK), ("g_s[1].beta", "q", -1, INVALID),
            ("g_s[1].beta", "q", (1 << 60) + 1, INVALID), ("g_s[1].beta", "q", 1 << 60, OK),
            ("g_s[3].beta", "q", 0, OK), ("g_s[1].gamma", "i", 1 << 17, INVALID),
            ("g_s[1].gamma", "i", -1, INVALID), ("g_s[1].gamma", "i", (1 << 17) - 1, OK),
            ("z[0].offset", "i", 65537, INVALID), ("z[0].offset", "i", -65537, INVALID),
            ("z[0].length", "I", 0, INVALID), ("z[0].length", "I", 65536, INVALID),
            ("z[0].length", "I", 34, INVALID), ("z[2].freq", "H", 0, INVALID),
            ("z[2].freq", "H", me.model.z_tables[2].freq[0] + 1, INVALID),
            ("y[0].length", "I", 0, INVALID),
            ("y[5].freq", "H", me.model.y_tables[5].freq[0] + 1, INVALID),
            ("y[63].freq", "H", 0, INVALID),
            ("threshold[1]", "i", 451, INVALID), ("threshold[1]", "i", 450, INVALID),
            ("threshold[62]", "i", 2 ** 31 - 1, OK)):
        MD("%s-%d" % (fname.replace("[", "").replace("]", "").replace("_", "-"), v), me.set(fname, fmt, v), exp)
    zero_off = me.offset("h_s[0].type") + 1
    MD("layer-zero-byte", refix_model(put(micro_model, zero_off, "B", 1)), INVALID)
    conv_zero = me.offset("h_s[0].out_pad") + 1
    MD("conv-zero-byte", refix_model(put(micro_model, conv_zero + 2, "B", 1)), INVALID)
    MD("extra-bytes-before-crc", refix_model(micro_model[:-4] + b"\0\0\0\0" + b"\0\0\0\0"), INVALID)
    # an in-range symbol whose value is above 65535: z table 0 with offset 65536 (valid model)
    edited = ModelEdit(me.set("z[0].offset", "i", 65536))
    zz = z.copy()
    zz[0, 0, 0] = 65536 + 1
    s = seq_header(W, Hh, sha(edited.data)) + frame_unit(encode_payload(edited.model, W, Hh, zz, y))
    add("model-z-offset-65536-value-65537", s, BIT, models={"edited.whm": edited.data}, use_build_models=False)
    edited = ModelEdit(me.set("z[0].offset", "i", -65536))
    zz[0, 0, 0] = -65535
    s = seq_header(W, Hh, sha(edited.data)) + frame_unit(encode_payload(edited.model, W, Hh, zz, y))
    add("model-z-offset-minus-65536-value-ok", s, OK, models={"edited.whm": edited.data}, use_build_models=False)
    MD("embedded-n-z-0", me.set("n_z", "I", 0), INVALID, embedded=True)
    MD("embedded-crc", flip(micro_model, 500), INVALID, embedded=True)
    MD("embedded-cut-fixed", truncate_model(micro_model, 3000), INVALID, embedded=True)

    # -- synthetic models: strides, non-square kernels, slopes, gamma shifts; random latents
    for topo, seeds, sizes in (("a", (1, 2, 3), ((13, 9), (8, 8), (30, 17))),
                               ("b", (1, 2), ((5, 3), (12, 7))),
                               ("c", (1, 2, 3), ((20, 20), (7, 33)))):
        for seed in seeds:
            mdl = synthetic_model(seed, topo)
            mobj = load_model(mdl)
            for (w, h) in sizes:
                r = random.Random(seed * 1000 + w)
                zl, yl = random_latents(mobj, w, h, r, escapes=0.05, zmax=6, ymax=4)
                s = seq_header(w, h, sha(mdl), model=mdl if seed == 2 else b"") + \
                    frame_unit(encode_payload(mobj, w, h, zl, yl))
                add("synthetic-%s%d-%dx%d" % (topo, seed, w, h), s, OK,
                    models={"synthetic.whm": mdl}, use_build_models=False)
    # the smallest graph: 1x1 convs, n_scales 1 (no thresholds)
    big = model_bytes(1, 1, 1, 1, 1,
                      [conv_bytes(1, np.ones((2, 1, 1, 1), dtype=np.int64), [0, 0], [0, 0])],
                      [conv_bytes(1, np.ones((3, 1, 1, 1), dtype=np.int64), [0, 0, 0], [0, 0, 0])],
                      [(0, -1, [21845, 21845, 21846])], [], [(-1, [21845, 21845, 21846])])
    add("synthetic-minimal", seq_header(3, 2, sha(big)) +
        frame_unit(encode_payload(load_model(big), 3, 2, np.zeros((1, 2, 3), dtype=np.int64),
                                  np.array([[[0, 1, -1], [5, -7, 1]]], dtype=np.int64))),
        OK, models={"m.whm": big}, use_build_models=False)
    # cin*kh*kw at and above 2^16: h_s[0] a 15x15 conv over n_z input channels
    for n_z, expect in ((291, OK), (292, INVALID)):     # 291*225 = 65475, 292*225 = 65700
        taps = model_bytes(n_z, 1, 1, 1, 1,
                           [conv_bytes(1, np.ones((1, n_z, 15, 15), dtype=np.int64), [12], [0], pad=7),
                            conv_bytes(1, np.ones((2, 1, 1, 1), dtype=np.int64), [0, 0], [0, 0])],
                           [conv_bytes(1, np.ones((3, 1, 1, 1), dtype=np.int64), [0, 0, 0], [0, 0, 0])],
                           [(0, -1, [21845, 21845, 21846])] * n_z, [], [(-1, [21845, 21845, 21846])])
        s = seq_header(3, 2, sha(taps))
        if expect == OK:
            s += frame_unit(encode_payload(load_model(taps), 3, 2,
                                           np.ones((n_z, 2, 3), dtype=np.int64),
                                           np.array([[[0, 1, -1], [5, -7, 1]]], dtype=np.int64)))
        add("synthetic-taps-%d" % (n_z * 225), s, expect, models={"m.whm": taps}, use_build_models=False)
    # a tensor side above 2^24: four stride-8 convT up, four stride-8 convs down
    up = [conv_bytes(2, np.ones((1, 1, 8, 8), dtype=np.int64), [6], [0], stride=8) for _ in range(4)]
    down = [conv_bytes(1, np.ones((1, 1, 1, 1), dtype=np.int64), [0], [0], stride=8) for _ in range(3)]
    down.append(conv_bytes(1, np.ones((2, 1, 1, 1), dtype=np.int64), [0, 0], [0, 0], stride=8))
    tall = model_bytes(1, 1, 1, 1, 1, up + down,
                       [conv_bytes(1, np.ones((3, 1, 1, 1), dtype=np.int64), [0, 0, 0], [0, 0, 0])],
                       [(0, -1, [21845, 21845, 21846])], [], [(-1, [21845, 21845, 21846])])
    add("synthetic-side-above-2^24", seq_header(16384, 1, sha(tall)), LIMIT,
        models={"m.whm": tall}, use_build_models=False)
    add("synthetic-side-small-ok", seq_header(1, 1, sha(tall)) +
        frame_unit(encode_payload(load_model(tall), 1, 1, np.zeros((1, 1, 1), dtype=np.int64),
                                  np.array([[[3]]], dtype=np.int64))),
        OK, models={"m.whm": tall}, use_build_models=False)

    # -- the channel walk and the shape rules of 4.3, on 1x1-conv models (n_z = n_y = 1)
    def one(cin, cout, ltype=1, kh=1, kw=1, pad=0):
        return conv_bytes(ltype, np.ones((cout, cin, kh, kw), dtype=np.int64), [0] * cout, [0] * cout, pad=pad)
    zt, yt = [(0, -1, [21845, 21845, 21846])], [(-1, [21845, 21845, 21846])]
    for name, hs, gs in (("hs-cin", [one(2, 2)], [one(1, 3)]),
                         ("hs-end-channels", [one(1, 3)], [one(1, 3)]),
                         ("gs-end-channels", [one(1, 2)], [one(1, 4)]),
                         ("gs-igdn-channels", [one(1, 2)], [one(1, 3), igdn_bytes([1 << 20] * 2, [[0, 0], [0, 0]], 8)]),
                         ("gs-cin-after-igdn", [one(1, 2)], [one(1, 2), igdn_bytes([1 << 20] * 2, [[0, 0], [0, 0]], 8), one(3, 3)])):
        mdl = model_bytes(1, 1, 1, 1, 1, hs, gs, zt, [], yt)
        add("synthetic-walk-" + name, seq_header(2, 2, sha(mdl)), INVALID, models={"m.whm": mdl},
            use_build_models=False)
    # a 3x3 conv without padding, then a 3x3 convT back: valid for 3x3 pictures, a shape of
    # -1 x -1 (not positive) for 1x1, 0 x 0 for 2x2
    mdl = model_bytes(1, 1, 1, 1, 1, [one(1, 1, kh=3, kw=3), one(1, 2, ltype=2, kh=3, kw=3)], [one(1, 3)], zt, [], yt)
    mobj = load_model(mdl)
    for w, h, expect in ((1, 1, INVALID), (2, 2, INVALID), (3, 2, INVALID), (3, 3, OK), (4, 5, OK)):
        s = seq_header(w, h, sha(mdl))
        if expect == OK:
            s += frame_unit(encode_payload(mobj, w, h, np.zeros((1, h, w), dtype=np.int64),
                                           np.arange(w * h, dtype=np.int64).reshape(1, h, w) - 3))
        add("synthetic-shape-%dx%d" % (w, h), s, expect, models={"m.whm": mdl}, use_build_models=False)
    # 7.4: scales exactly on, between and above the thresholds. h_s copies z_hat into the scale
    # and the mean (z_hat = 4096 v), so z = -1..4 gives scales -4096, 0, 4096 (= threshold 0),
    # 8192 (= threshold 1), 12288 (= threshold 2), 16384 (above the last); each table has its
    # own offset, so a wrong index decodes other values
    ytabs = [(-1 - k, quantise([1000] * (3 + k) + [500])) for k in range(4)]
    mdl = model_bytes(1, 1, 1, 1, 1, [one(1, 2)], [one(1, 3)], zt, [4096, 8192, 12288], ytabs)
    zl = np.array([[[-1, 0, 1], [2, 3, 4]]], dtype=np.int64)
    add("synthetic-scale-thresholds", seq_header(3, 2, sha(mdl)) +
        frame_unit(encode_payload(load_model(mdl), 3, 2, zl, np.array([[[0, 1, -1], [2, -2, 1]]], dtype=np.int64))),
        OK, models={"m.whm": mdl}, use_build_models=False)
    # 7.3: v * 4096 + median_q12 with an extreme median (beyond int32), then the clamp
    for median in (2 ** 31 - 1, -2 ** 31):
        mdl = model_bytes(1, 1, 1, 1, 1, [one(1, 2)], [one(1, 3)], [(median, -1, [21845, 21845, 21846])],
                          [4096], [(-1, [21845, 21845, 21846]), (-2, [13107] * 4 + [13108])])
        zl = np.array([[[65535, -65535, 0], [1, -1, 7]]], dtype=np.int64)
        add("synthetic-median-%d" % median, seq_header(3, 2, sha(mdl)) +
            frame_unit(encode_payload(load_model(mdl), 3, 2, zl, np.array([[[0, 1, -1], [3, -3, 1]]], dtype=np.int64))),
            OK, models={"m.whm": mdl}, use_build_models=False)
    # 5.5: isqrt where floor(sqrt(double)) is one too high. beta = (r+1)^2 - 1 with
    # r + 1 = 1027 * 2^17 (n > 2^53 rounds up to (r+1)^2 in a double), gamma = 0, x = 1:
    # Y = rshr(1 * r, 18) = 513, but 514 with r + 1; the last conv maps 513 to grey and 514 to white
    r1 = 1027 << 17
    pin_z = [(0, -1, [21845, 21845, 21846])]
    hs_mean = conv_bytes(1, np.array([[[[0]]], [[[1]]]], dtype=np.int64), [0, 12], [0, 0])  # mean = z
    mdl = model_bytes(1, 1, 1, 1, 1, [hs_mean],
                      [igdn_bytes([r1 * r1 - 1], [[0]], 24),
                       conv_bytes(1, np.full((3, 1, 1, 1), 2047, dtype=np.int64), [0] * 3, [2048 - 2047 * 513] * 3)],
                      pin_z, [], yt)
    add("synthetic-isqrt-double-trap", seq_header(1, 1, sha(mdl)) +
        frame_unit(encode_payload(load_model(mdl), 1, 1, np.array([[[1]]]), np.array([[[0]]]))),
        OK, models={"m.whm": mdl}, use_build_models=False)
    # 5.4: a leaky ReLU tie. x = -1, slope 1/2: (-32768 + 32768) >> 16 = 0 (ties up); a decoder
    # rounding ties away from zero gets -1, which the last conv (weight 2047) makes visible
    mdl = model_bytes(1, 1, 1, 1, 1, [hs_mean],
                      [leaky_bytes(32768),
                       conv_bytes(1, np.full((3, 1, 1, 1), 2047, dtype=np.int64), [0] * 3, [2048] * 3)],
                      pin_z, [], yt)
    add("synthetic-leaky-tie", seq_header(1, 1, sha(mdl)) +
        frame_unit(encode_payload(load_model(mdl), 1, 1, np.array([[[-1]]]), np.array([[[0]]]))),
        OK, models={"m.whm": mdl}, use_build_models=False)
    # -- version 1.1: WIH2 payloads and RATES models (v20: a RATES model embedded, frames at
    # rates 0, 1, 2 and a WIH1 frame); each damaged frame is a bitstream error, the others decode
    u20 = split_units(vec("v20-rates-8x1"))
    h20, f20 = u20[0], u20[1:]
    p0 = payload_of(f20[0])

    def v20_with(k, payload):
        return h20 + b"".join(with_payload(f, payload) if i == k else f for i, f in enumerate(f20))
    add("wih2-rate-n-rates", v20_with(0, put(p0, 12, "I", 3)), BIT)
    add("wih2-rate-max", v20_with(1, put(payload_of(f20[1]), 12, "I", 0xFFFFFFFF)), BIT)
    add("wih2-magic-wih3", v20_with(2, b"WIH3" + payload_of(f20[2])[4:]), BIT)
    for n in (20, 23):
        add("wih2-payload-%d" % n, v20_with(0, p0[:n]), BIT)
    add("wih2-size-mismatch", v20_with(0, p0[:-1]), BIT)
    add("wih2-z-size-3", v20_with(0, put(p0, 16, "I", 3)), BIT)
    add("wih2-bad-rate-and-streams", v20_with(0, put(p0[:24], 12, "I", 7) + bytes(len(p0) - 24)), BIT)
    # a WIH1 payload's header read as WIH2 (the rate field is its z_size)
    add("wih1-as-wih2", v20_with(3, b"WIH2" + payload_of(f20[3])[4:]), BIT)
    # a WIH2 frame under a model without RATES (v14: the same 8x1 picture size)
    h14 = split_units(vec("v14-scale-8x1"))[0]
    add("wih2-plain-model", h14 + f20[0], BIT)
    # the embedded RATES model with flags bit 1, or with bit 0 cleared (the rate table is then
    # bytes before the CRC): invalid model
    em20 = h20[92:-4]
    for name, flags in (("flags-bit1", 3), ("flags-no-rates", 0)):
        bad = bytearray(em20)
        struct.pack_into("<I", bad, 12, flags)
        bad = bytes(bad[:-4]) + p32(crc32(bytes(bad[:-4])))
        add("rates-model-" + name, fix_crc(h20[:52] + sha(bad) + h20[84:92] + bad + h20[-4:]) + f20[0], INVALID)

    # the memory budget between the spec's `work` and `work` + the model (SPEC-QUESTIONS.md A5)
    add("memory-budget-work-plus-file", mh + frame_unit(good), OK, max_memory=43328 + len(micro_model) + 4096)
    return cases
