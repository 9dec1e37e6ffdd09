"""A second reading of the WAI format (docs/spec/wai-format.md) in Python + numpy, for the
records of docs/research/: parse a WHM1 model and a one-frame .wai stream, decode z and y
(rANS, escapes), run the integer h_s (sections 5 and 6) to get every y table index and mean,
and encode symbol lists back to rANS bytes (section 7.1, the informative encoder), so that a
float decoder's symbols can be costed with exactly the integer codec's tables and escape rules.

Needs only python3 and numpy. Integer convolutions run as float64 matrix products: every partial
sum is an integer below 2^53 (spec 5.1), so float64 is exact; the result is checked by the
stream itself (a wrong table index makes the y stream fail its end-of-stream check).
"""

import bisect
import struct

import numpy as np

ACT_MIN, ACT_MAX = -(1 << 23), (1 << 23) - 1


class Table:
    def __init__(self, offset, freq):
        self.offset = offset
        self.length = len(freq) - 1
        self.freq = list(freq)
        self.cdf = [0]
        for f in freq:
            self.cdf.append(self.cdf[-1] + f)
        assert self.cdf[-1] == 65536


class Model:
    def __init__(self, data):
        assert data[:4] == b"WHM1"
        (self.n_z, self.n_y, self.pad_multiple, self.y_down, self.z_down, n_hs, n_gs,
         self.n_scales, _) = struct.unpack_from("<9I", data, 80)
        pos = 116
        self.hs, self.gs = [], []
        for dest, n in ((self.hs, n_hs), (self.gs, n_gs)):
            for _ in range(n):
                rec, pos = self._layer(data, pos)
                dest.append(rec)
        self.z_median, self.z_tables = [], []
        for _ in range(self.n_z):
            med, = struct.unpack_from("<i", data, pos)
            t, pos = self._table(data, pos + 4)
            self.z_median.append(med)
            self.z_tables.append(t)
        self.thresholds = np.frombuffer(data, "<i4", self.n_scales - 1, pos).astype(np.int64)
        pos += 4 * (self.n_scales - 1)
        self.y_tables = []
        for _ in range(self.n_scales):
            t, pos = self._table(data, pos)
            self.y_tables.append(t)
        assert pos + 4 == len(data)

    @staticmethod
    def _table(data, pos):
        off, length = struct.unpack_from("<iI", data, pos)
        freq = struct.unpack_from("<%dH" % (length + 1), data, pos + 8)
        return Table(off, freq), pos + 8 + 2 * (length + 1)

    @staticmethod
    def _layer(data, pos):
        t = data[pos]
        if t in (1, 2):
            cin, cout, kh, kw, stride, pad, opad = struct.unpack_from("<IIBBBBB", data, pos + 4)
            pos += 20
            w = np.frombuffer(data, "<i2", cout * cin * kh * kw, pos).reshape(cout, cin, kh, kw)
            pos += 2 * w.size
            e = np.frombuffer(data, "u1", cout, pos).astype(np.int64)
            pos += cout
            b = np.frombuffer(data, "<i8", cout, pos).astype(np.int64)
            pos += 8 * cout
            return ("conv" if t == 1 else "convT", w.astype(np.int64), e, b, stride, pad, opad), pos
        if t == 3:
            return ("lrelu", struct.unpack_from("<i", data, pos + 4)[0]), pos + 8
        if t == 4:   # inverse GDN (g_s only; parsed, not run here)
            c, g = struct.unpack_from("<II", data, pos + 4)
            return ("igdn", c, g), pos + 12 + 8 * c + 4 * c * c
        raise ValueError("layer type %d" % t)

    def table_index(self, scale_q12):
        """Section 7.4 for integer (or real, already x4096) scales: least k with s <= thr[k]."""
        return np.searchsorted(self.thresholds, scale_q12, side="left").astype(np.int64)


def rshr(v, e):
    e = np.asarray(e, dtype=np.int64).reshape(-1, 1, 1)
    half = np.where(e > 0, np.left_shift(np.int64(1), np.maximum(e - 1, 0)), 0)
    return (v + half) >> e


def _conv(x, layer):
    kind, w, e, b, s, p, op = layer
    cout, cin, kh, kw = w.shape
    _, h, wd = x.shape
    xf = x.astype(np.float64)
    wf = w.astype(np.float64)
    if kind == "conv":
        ho, wo = (h + 2 * p - kh) // s + 1, (wd + 2 * p - kw) // s + 1
        xp = np.zeros((cin, h + 2 * p + s, wd + 2 * p + s))
        xp[:, p:p + h, p:p + wd] = xf
        acc = np.zeros((cout, ho, wo))
        for ky in range(kh):
            for kx in range(kw):
                patch = xp[:, ky:ky + s * ho:s, kx:kx + s * wo:s].reshape(cin, -1)
                acc += (wf[:, :, ky, kx] @ patch).reshape(cout, ho, wo)
    else:
        ho, wo = (h - 1) * s - 2 * p + kh + op, (wd - 1) * s - 2 * p + kw + op
        big = np.zeros((cout, (h - 1) * s + kh + op + p, (wd - 1) * s + kw + op + p))
        xr = xf.reshape(cin, -1)
        for ky in range(kh):
            for kx in range(kw):
                big[:, ky:ky + s * h:s, kx:kx + s * wd:s] += (wf[:, :, ky, kx] @ xr).reshape(cout, h, wd)
        acc = big[:, p:p + ho, p:p + wo]
    acc = np.rint(acc).astype(np.int64) + b.reshape(-1, 1, 1)
    return np.clip(rshr(acc, e), ACT_MIN, ACT_MAX)


def run_layers(layers, x):
    for layer in layers:
        if layer[0] == "lrelu":
            x = np.where(x >= 0, x, (x * layer[1] + (1 << 15)) >> 16)
        else:
            x = _conv(x, layer)
    return x


def hyper(model, z_hat):
    """Integer h_s (int64 [n_z][Hz][Wz] Q12) -> (table index, mean Q12), each [n_y][Hy][Wy]."""
    p = run_layers(model.hs, z_hat.astype(np.int64))
    ny = model.n_y
    return model.table_index(p[:ny]), p[ny:]


# ---- rANS (section 7) ----

def decode_values(buf, tables):
    """Decode len(tables) values, value i with tables[i]; checks the end condition."""
    x = int.from_bytes(buf[:4], "little")
    pos = 4
    n = len(buf)
    out = []

    def sym(cdf_or_none, freq_or_none):
        nonlocal x, pos
        c = x & 0xFFFF
        if cdf_or_none is None:
            s = c >> 12
            start, f = 4096 * s, 4096
        else:
            s = bisect.bisect_right(cdf_or_none, c) - 1
            start, f = cdf_or_none[s], freq_or_none[s]
        x = f * (x >> 16) + c - start
        while x < (1 << 23):
            if pos == n:
                raise ValueError("truncated")
            x = (x << 8) | buf[pos]
            pos += 1
        return s

    for t in tables:
        s = sym(t.cdf, t.freq)
        if s < t.length:
            out.append(s + t.offset)
            continue
        nb = 0
        while True:
            k = sym(None, None)
            nb += k
            if nb > 8:
                raise ValueError("bypass too long")
            if k < 15:
                break
        u = 0
        for i in range(nb):
            u |= sym(None, None) << (4 * i)
        d = -(u + 1) // 2 if u & 1 else u // 2 + t.length
        out.append(d + t.offset)
    if x != (1 << 23) or pos != n:
        raise ValueError("stream does not end as section 7.1 says")
    return out


def _symbols(values, tables):
    """(start, freq) pairs of the rANS symbols that code the values (section 7.2)."""
    out = []
    for v, t in zip(values, tables):
        d = v - t.offset
        if 0 <= d < t.length:
            out.append((t.cdf[d], t.freq[d]))
            continue
        out.append((t.cdf[t.length], t.freq[t.length]))
        u = -2 * d - 1 if d < 0 else 2 * (d - t.length)
        nb = 0
        while u >> (4 * nb):
            nb += 1
        m = nb
        while m >= 15:
            out.append((4096 * 15, 4096))
            m -= 15
        out.append((4096 * m, 4096))
        for i in range(nb):
            out.append((4096 * ((u >> (4 * i)) & 15), 4096))
    return out


def encode_values(values, tables):
    """rANS bytes of the values (the encoder of section 7.1)."""
    x = 1 << 23
    emitted = bytearray()
    for start, f in reversed(_symbols(values, tables)):
        lim = f << 15
        while x >= lim:
            emitted.append(x & 255)
            x >>= 8
        x = (x // f) * 65536 + (x % f) + start
    return x.to_bytes(4, "little") + bytes(reversed(emitted))


# ---- streams ----

STREAM_OVERHEAD = 96 + 20 + 20   # sequence header (no embedded model) + frame unit + WIH1 header


def read_stream(data, model):
    """One-frame stream -> dict with z_sym, z_hat, y_sym, y_index, y_mean (numpy int64)."""
    assert data[:4] == b"WAIS"
    unit, w, h = struct.unpack_from("<III", data, 8)
    pos = unit
    assert data[pos:pos + 4] == b"WAIF"
    psize, = struct.unpack_from("<I", data, pos + 4)
    pl = data[pos + 16:pos + 16 + psize]
    assert pl[:4] == b"WIH1"
    zs, ys = struct.unpack_from("<II", pl, 12)
    zbuf, ybuf = pl[20:20 + zs], pl[20 + zs:20 + zs + ys]
    m = model
    wp = -(-w // m.pad_multiple) * m.pad_multiple
    hp = -(-h // m.pad_multiple) * m.pad_multiple
    hz, wz, hy, wy = hp // m.z_down, wp // m.z_down, hp // m.y_down, wp // m.y_down
    zt = [m.z_tables[c] for c in range(m.n_z) for _ in range(hz * wz)]
    z_sym = np.array(decode_values(zbuf, zt), dtype=np.int64).reshape(m.n_z, hz, wz)
    med = np.array(m.z_median, dtype=np.int64).reshape(-1, 1, 1)
    z_hat = np.clip(z_sym * 4096 + med, ACT_MIN, ACT_MAX)
    idx, mean = hyper(m, z_hat)
    yt = [m.y_tables[k] for k in idx.reshape(-1)]
    y_sym = np.array(decode_values(ybuf, yt), dtype=np.int64).reshape(m.n_y, hy, wy)
    return dict(width=w, height=h, z_bytes=zs, y_bytes=ys, z_sym=z_sym, z_hat=z_hat,
                y_sym=y_sym, y_index=idx, y_mean=mean, zbuf=bytes(zbuf), ybuf=bytes(ybuf))


def coded_bytes(model, z_sym, y_sym, y_index):
    """(z bytes, y bytes) of a payload coding these symbols with the model's tables."""
    m = model
    plane = z_sym.shape[1] * z_sym.shape[2]
    zt = [m.z_tables[i // plane] for i in range(z_sym.size)]
    yt = [m.y_tables[k] for k in y_index.reshape(-1)]
    return (len(encode_values([int(v) for v in z_sym.reshape(-1)], zt)),
            len(encode_values([int(v) for v in y_sym.reshape(-1)], yt)))


def main(argv):
    """waiformat.py MODEL_DIR STREAM...: decode each one-frame stream (its model found as
    MODEL_DIR/wai-qN.whm from the name NAME-qN.wai) and re-encode its symbols; exit 1 unless every
    stream decodes and re-encodes to the same bytes."""
    import os
    import sys
    bad = 0
    for path in argv[1:]:
        q = int(os.path.basename(path)[:-4].rsplit("-q", 1)[1])
        m = Model(open(os.path.join(argv[0], "wai-q%d.whm" % q), "rb").read())
        r = read_stream(open(path, "rb").read(), m)
        plane = r["z_sym"].shape[1] * r["z_sym"].shape[2]
        zt = [m.z_tables[i // plane] for i in range(r["z_sym"].size)]
        yt = [m.y_tables[k] for k in r["y_index"].reshape(-1)]
        same = (encode_values([int(v) for v in r["z_sym"].reshape(-1)], zt) == r["zbuf"] and
                encode_values([int(v) for v in r["y_sym"].reshape(-1)], yt) == r["ybuf"])
        bad += not same
        if not same:
            print("waiformat: %s: re-encoded bytes differ" % path, file=sys.stderr)
    print("waiformat: %d of %d streams decoded and re-encoded byte for byte" %
          (len(argv) - 1 - bad, len(argv) - 1))
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
