"""A second reading of the WAI format (docs/spec/wai-format.md) in Python + numpy, for the
records of docs/research/: parse a WHM1 model (1.0, or 1.1 with its RATES table of per-rate
qstep/rstep) and a one-frame .wai stream (a WIH1 payload, or WIH2: a rate of a RATES model),
decode z and y (rANS, escapes), run the integer h_s (sections 5 and 6) to get every y table
index (7.4, with the rate's qstep) and mean, and encode symbol lists back to rANS bytes (section
7.1, the informative encoder), so that a float decoder's symbols can be costed with exactly the
integer codec's tables and escape rules.

It also reads an encoder model directory's quality ladder (ladder(): the rules of
libwai-core/include/wai/encoder.h: the pair wai-qN.whm + .ana, else the quality file
wai-qN.rate naming a rate of a variable-rate pair), the one reader the evaluation and export
scripts share.

Needs only python3 and numpy. Integer convolutions run as float64 matrix products: every partial
sum is an integer below 2^53 (spec 5.1), so float64 is exact; the result is checked by the
stream itself (a wrong table index makes the y stream fail its end-of-stream check).
"""

import bisect
import os
import re
import struct

import numpy as np

ACT_MIN, ACT_MAX = -(1 << 23), (1 << 23) - 1
UNIT_STEP = 4096        # qstep = rstep of a WIH1 payload (Q12 1.0)
RATES = 1               # WHM1 flags bit 0 (format 1.1): a rate table follows the y tables


# ---- the quality ladder of a model directory (encoder.h, "Model search") ----

QUALITY_FILE_MAX = 4096
_MODEL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}\Z")


def read_quality_file(path):
    """(NAME, K) of a quality file ("model NAME" and "rate K" once each, '#' comments; the
    grammar of libwai-core's parse_quality_file); ValueError naming the file if unusable."""
    try:
        with open(path, "rb") as f:
            data = f.read(QUALITY_FILE_MAX + 1)
    except OSError as e:
        raise ValueError("%s: cannot read (%s)" % (path, e.strerror))
    if len(data) > QUALITY_FILE_MAX:
        raise ValueError("%s: not a text file of at most %d bytes" % (path, QUALITY_FILE_MAX))
    name = rate = None
    for n, line in enumerate(data.decode("latin-1").split("\n"), 1):
        line = line.split("#", 1)[0].rstrip(" \t\r").lstrip(" \t")
        if not line:
            continue
        key, val = re.match(r"([^ \t]*)[ \t]*(.*)\Z", line, re.S).groups()
        if key == "model" and name is None:
            if not _MODEL_NAME.match(val) or val.startswith("."):
                raise ValueError("%s: line %d: a model name (letters, digits, '-', '_', '.'; a "
                                 "file of this directory) after \"model\"" % (path, n))
            name = val
        elif key == "rate" and rate is None:
            if not re.match(r"[0-9]+\Z", val) or int(val) > 255:
                raise ValueError("%s: line %d: a rate 0..255 after \"rate\"" % (path, n))
            rate = int(val)
        else:
            raise ValueError("%s: line %d: not \"model NAME\" or \"rate K\" (each once)"
                             % (path, n))
    if name is None or rate is None:
        raise ValueError("%s: no \"%s\" line" % (path, "rate" if name is not None else "model"))
    return name, rate


def ladder(model_dir, pairs=True):
    """{quality N: (model path without extension, rate K or None)} of one model directory, as
    the encoder finds them there: the pair wai-qN.whm + .ana (rate None), else the quality file
    wai-qN.rate, rate K of its pair NAME.whm + .ana. An unusable quality file (or, with pairs,
    one whose pair is missing) is a ValueError naming it, as the encoder's search stops there.
    pairs=False: a quality file's pair need not be there yet (export-all.sh installs it)."""
    found = {}
    for f in os.listdir(model_dir):
        m = re.match(r"wai-q([1-9][0-9]*)\.(whm|ana|rate)\Z", f)
        if m and os.path.isfile(os.path.join(model_dir, f)):
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    out = {}
    for q in sorted(found):
        stem = os.path.join(model_dir, "wai-q%d" % q)
        if {"whm", "ana"} <= found[q]:
            out[q] = (stem, None)
        elif "rate" in found[q]:
            name, rate = read_quality_file(stem + ".rate")
            path = os.path.join(model_dir, name)
            if pairs and not (os.path.isfile(path + ".whm") and os.path.isfile(path + ".ana")):
                raise ValueError("%s.rate names model %s, but %s.whm and .ana are not both in "
                                 "that directory" % (stem, name, name))
            out[q] = (path, rate)
    return out


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
        self.flags, = struct.unpack_from("<I", data, 12)
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
        # format 1.1: per rate qstep[0..n_y-1] then rstep[0..n_y-1], Q12
        self.n_rates, self.qstep, self.rstep = 0, [], []
        if self.flags & RATES:
            self.n_rates, = struct.unpack_from("<I", data, pos)
            tab = np.frombuffer(data, "<u4", 2 * self.n_rates * self.n_y, pos + 4)
            tab = tab.astype(np.int64).reshape(self.n_rates, 2, self.n_y)
            self.qstep = [[int(v) for v in t[0]] for t in tab]
            self.rstep = [[int(v) for v in t[1]] for t in tab]
            pos += 4 + 4 * tab.size
        assert pos + 4 == len(data)

    def steps(self, rate):
        """(qstep, rstep) per y channel, Q12: rate None is a WIH1 payload's unit steps."""
        if rate is None:
            return [UNIT_STEP] * self.n_y, [UNIT_STEP] * self.n_y
        if not 0 <= rate < self.n_rates:
            raise ValueError("rate %d, the model has %d rates" % (rate, self.n_rates))
        return self.qstep[rate], self.rstep[rate]

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

    def table_index(self, scale_q12, qstep=UNIT_STEP):
        """Section 7.4 for integer (or real, already x4096) scales: the least k with
        s * 4096 <= thr[k] * qstep (WIH1: qstep 4096, i.e. s <= thr[k]). qstep is one Q12 step
        or a list, channel c (axis 0 of the scales) with qstep[c]. Integer scales compare
        exactly in int64 (|s| < 2^23, thr * qstep < 2^55)."""
        s = np.asarray(scale_q12)
        s = s * 4096 if s.dtype.kind in "iu" else s.astype(np.float64) * 4096.0
        if np.ndim(qstep) == 0:
            return np.searchsorted(self.thresholds * int(qstep), s, side="left").astype(np.int64)
        out = np.empty(s.shape, np.int64)
        for c, qs in enumerate(qstep):
            out[c] = np.searchsorted(self.thresholds * int(qs), s[c], side="left")
        return out


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


def hyper(model, z_hat, rate=None):
    """Integer h_s (int64 [n_z][Hz][Wz] Q12) -> (table index at the rate's qstep, mean Q12),
    each [n_y][Hy][Wy]."""
    p = run_layers(model.hs, z_hat.astype(np.int64))
    ny = model.n_y
    return model.table_index(p[:ny], model.steps(rate)[0]), p[ny:]


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


def stream_overhead(rate=None):
    """Container bytes of a one-frame stream: a WIH2 header (a rate) is 4 bytes longer."""
    return STREAM_OVERHEAD + (0 if rate is None else 4)


def read_stream(data, model):
    """One-frame stream -> dict with rate (None for WIH1), z_sym, z_hat, y_sym, y_index, y_mean
    and y_hat (numpy int64, Q12)."""
    assert data[:4] == b"WAIS"
    unit, w, h = struct.unpack_from("<III", data, 8)
    pos = unit
    assert data[pos:pos + 4] == b"WAIF"
    psize, = struct.unpack_from("<I", data, pos + 4)
    pl = data[pos + 16:pos + 16 + psize]
    if pl[:4] == b"WIH1":
        rate, hs = None, 20
        zs, ys = struct.unpack_from("<II", pl, 12)
    else:
        assert pl[:4] == b"WIH2"
        hs = 24
        rate, zs, ys = struct.unpack_from("<III", pl, 12)
    zbuf, ybuf = pl[hs:hs + zs], pl[hs + zs:hs + zs + ys]
    m = model
    wp = -(-w // m.pad_multiple) * m.pad_multiple
    hp = -(-h // m.pad_multiple) * m.pad_multiple
    hz, wz, hy, wy = hp // m.z_down, wp // m.z_down, hp // m.y_down, wp // m.y_down
    zt = [m.z_tables[c] for c in range(m.n_z) for _ in range(hz * wz)]
    z_sym = np.array(decode_values(zbuf, zt), dtype=np.int64).reshape(m.n_z, hz, wz)
    med = np.array(m.z_median, dtype=np.int64).reshape(-1, 1, 1)
    z_hat = np.clip(z_sym * 4096 + med, ACT_MIN, ACT_MAX)
    idx, mean = hyper(m, z_hat, rate)
    yt = [m.y_tables[k] for k in idx.reshape(-1)]
    y_sym = np.array(decode_values(ybuf, yt), dtype=np.int64).reshape(m.n_y, hy, wy)
    rs = np.array(m.steps(rate)[1], dtype=np.int64).reshape(-1, 1, 1)
    y_hat = np.clip(y_sym * rs + mean, ACT_MIN, ACT_MAX)    # section 7.5
    return dict(width=w, height=h, rate=rate, z_bytes=zs, y_bytes=ys, z_sym=z_sym, z_hat=z_hat,
                y_sym=y_sym, y_index=idx, y_mean=mean, y_hat=y_hat, model_sha256=data[52:84],
                zbuf=bytes(zbuf), ybuf=bytes(ybuf))


def coded_bytes(model, z_sym, y_sym, y_index):
    """(z bytes, y bytes) of a payload coding these symbols with the model's tables."""
    m = model
    plane = z_sym.shape[1] * z_sym.shape[2]
    zt = [m.z_tables[i // plane] for i in range(z_sym.size)]
    yt = [m.y_tables[k] for k in y_index.reshape(-1)]
    return (len(encode_values([int(v) for v in z_sym.reshape(-1)], zt)),
            len(encode_values([int(v) for v in y_sym.reshape(-1)], yt)))


def main(argv):
    """waiformat.py MODEL_DIR STREAM...: decode each one-frame stream (its model and rate those of
    quality N in MODEL_DIR's ladder, from the name NAME-qN.wai) and re-encode its symbols; exit 1
    unless every stream decodes with that model and rate and re-encodes to the same bytes.
    waiformat.py --ladder [--unpaired] MODEL_DIR: print the ladder, a line "N<tab>PATH<tab>K"
    per quality (PATH without extension, K "-" for a pair); exit 1 on an unusable quality file.
    --unpaired: a quality file's pair need not be there yet."""
    import hashlib
    import sys
    if argv[:1] == ["--ladder"]:
        unpaired = argv[1:2] == ["--unpaired"]
        try:
            lad = ladder(argv[1 + unpaired], pairs=not unpaired)
        except ValueError as e:
            print("waiformat: %s" % e, file=sys.stderr)
            return 1
        for q, (stem, rate) in lad.items():
            print("%d\t%s\t%s" % (q, stem, "-" if rate is None else rate))
        return 0
    lad = ladder(argv[0])
    models = {}
    bad = 0
    for path in argv[1:]:
        q = re.match(r".*-q([0-9]+)\.wai\Z", os.path.basename(path))
        if not q or int(q.group(1)) not in lad:
            print("waiformat: %s: not NAME-qN.wai of a quality N of %s" % (path, argv[0]),
                  file=sys.stderr)
            bad += 1
            continue
        stem, rate = lad[int(q.group(1))]
        if stem not in models:
            data = open(stem + ".whm", "rb").read()
            models[stem] = (Model(data), hashlib.sha256(data).digest())
        m, sha = models[stem]
        r = read_stream(open(path, "rb").read(), m)
        plane = r["z_sym"].shape[1] * r["z_sym"].shape[2]
        zt = [m.z_tables[i // plane] for i in range(r["z_sym"].size)]
        yt = [m.y_tables[k] for k in r["y_index"].reshape(-1)]
        same = (r["model_sha256"] == sha and r["rate"] == rate and
                encode_values([int(v) for v in r["z_sym"].reshape(-1)], zt) == r["zbuf"] and
                encode_values([int(v) for v in r["y_sym"].reshape(-1)], yt) == r["ybuf"])
        bad += not same
        if not same:
            print("waiformat: %s: %s" % (path, "re-encoded bytes differ" if r["model_sha256"] == sha
                                           and r["rate"] == rate else "not %s.whm at rate %s"
                                           % (stem, rate)), file=sys.stderr)
    print("waiformat: %d of %d streams decoded and re-encoded byte for byte" %
          (len(argv) - 1 - bad, len(argv) - 1))
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
