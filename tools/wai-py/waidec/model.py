"""The model file, WHM1 (spec section 4): parsing, validation and the channel walk (4.3);
version 1.1's RATES flag and rate table.

Every violation raises InvalidModelError; the model is then unusable.
"""

import hashlib
from dataclasses import dataclass, field

import numpy as np

from .errors import InvalidModelError
from .fields import Cursor, crc32, read

MAGIC = b"WHM1"
HEADER_SIZE = 116
MIN_SIZE = 120          # header + CRC; "a model is at least 120 bytes"

CONV, CONVT, LEAKY_RELU, IGDN = 1, 2, 3, 4
RATES = 1               # flags bit 0 (version 1.1): a rate table follows the y tables
STEP_MAX = 1 << 24      # qstep and rstep: 1..2^24 (Q12)


@dataclass
class ConvLayer:
    """type 1 (conv2d) or type 2 (transposed conv2d), section 4.1."""
    type: int
    cin: int
    cout: int
    kh: int
    kw: int
    stride: int
    pad: int
    out_pad: int
    weight: np.ndarray      # int64 [cout][cin][kh][kw]
    shift: np.ndarray       # int64 [cout], e[o]
    bias: np.ndarray        # int64 [cout], b[o]


@dataclass
class LeakyReluLayer:
    """type 3, section 4.1 / 5.4."""
    type: int
    slope_q16: int


@dataclass
class IgdnLayer:
    """type 4, section 4.1 / 5.5."""
    type: int
    channels: int
    gamma_shift: int
    beta: np.ndarray        # int64 [C]
    gamma: np.ndarray       # int64 [C][C], gamma[i][j]


@dataclass
class Table:
    """A table record (4.2) with its cumulative table, as Python lists for the rANS loop."""
    offset: int
    length: int             # L: in-range symbols; symbol L is the escape
    freq: list
    cdf: list               # L + 2 entries, cdf[0] = 0, cdf[L + 1] = 65536


@dataclass
class Model:
    sha256: bytes
    size: int
    name: bytes
    n_z: int
    n_y: int
    pad_multiple: int
    y_down: int
    z_down: int
    h_s: list
    g_s: list
    z_medians: list         # median_q12 per z channel
    z_tables: list
    thresholds: list        # n_scales - 1 strictly increasing Q12 scales
    y_tables: list
    layout: list = field(default_factory=list)   # (field, offset, size) of every field
    n_rates: int = 0        # 0 without RATES
    qstep: list = field(default_factory=list)    # [n_rates][n_y] quantisation steps (7.4)
    rstep: list = field(default_factory=list)    # [n_rates][n_y] reconstruction steps (7.5)


def _check(cond, what):
    if not cond:
        raise InvalidModelError(what)


def _read_layer(cur, where):
    ltype = cur.get("u8", where + ".type")
    zeros = [cur.get("u8", where + ".zero") for _ in range(3)]
    _check(zeros == [0, 0, 0], "%s: the three bytes after the type must be 0" % where)
    if ltype in (CONV, CONVT):
        cin = cur.get("u32", where + ".cin")
        cout = cur.get("u32", where + ".cout")
        kh = cur.get("u8", where + ".kh")
        kw = cur.get("u8", where + ".kw")
        stride = cur.get("u8", where + ".stride")
        pad = cur.get("u8", where + ".pad")
        out_pad = cur.get("u8", where + ".out_pad")
        zeros = [cur.get("u8", where + ".zero") for _ in range(3)]
        # The field rules are checked before the arrays are read: the array sizes depend on them.
        _check(1 <= cin <= 1024, "%s: cin %d not in 1..1024" % (where, cin))
        _check(1 <= cout <= 1024, "%s: cout %d not in 1..1024" % (where, cout))
        _check(1 <= kh <= 15 and 1 <= kw <= 15, "%s: kernel %dx%d not in 1..15" % (where, kh, kw))
        _check(1 <= stride <= 8, "%s: stride %d not in 1..8" % (where, stride))
        _check(pad <= 14 and pad < kh and pad < kw, "%s: pad %d (kernel %dx%d)" % (where, pad, kh, kw))
        if ltype == CONV:
            _check(out_pad == 0, "%s: conv2d out_pad %d must be 0" % (where, out_pad))
        else:
            _check(out_pad < stride, "%s: out_pad %d not below stride %d" % (where, out_pad, stride))
        _check(zeros == [0, 0, 0], "%s: reserved bytes must be 0" % where)
        _check(cin * kh * kw <= 1 << 16, "%s: cin*kh*kw = %d above 2^16" % (where, cin * kh * kw))
        weight = cur.array("i16", cout * cin * kh * kw, where + ".weight").reshape(cout, cin, kh, kw)
        _check(bool(((weight >= -2048) & (weight <= 2047)).all()), "%s: a weight outside -2048..2047" % where)
        shift = cur.array("u8", cout, where + ".shift")
        _check(bool((shift <= 32).all()), "%s: a shift above 32" % where)
        bias = cur.array("i64", cout, where + ".bias")
        _check(bool((np.abs(bias) <= 1 << 52).all()), "%s: a bias with |b| above 2^52" % where)
        return ConvLayer(ltype, cin, cout, kh, kw, stride, pad, out_pad, weight, shift, bias)
    if ltype == LEAKY_RELU:
        slope = cur.get("i32", where + ".slope_q16")
        _check(0 <= slope <= 65536, "%s: slope_q16 %d not in 0..65536" % (where, slope))
        return LeakyReluLayer(ltype, slope)
    if ltype == IGDN:
        c = cur.get("u32", where + ".channels")
        g = cur.get("u32", where + ".gamma_shift")
        _check(1 <= c <= 512, "%s: channels %d not in 1..512" % (where, c))
        _check(8 <= g <= 24 and g % 2 == 0, "%s: gamma_shift %d not even in 8..24" % (where, g))
        beta = cur.array("i64", c, where + ".beta")
        _check(bool(((beta >= 0) & (beta <= 1 << 60)).all()), "%s: a beta outside 0..2^60" % where)
        gamma = cur.array("i32", c * c, where + ".gamma").reshape(c, c)
        _check(bool(((gamma >= 0) & (gamma < 1 << 17)).all()), "%s: a gamma outside 0..2^17-1" % where)
        return IgdnLayer(ltype, c, g, beta, gamma)
    raise InvalidModelError("%s: unknown layer type %d" % (where, ltype))


def _read_table(cur, where):
    offset = cur.get("i32", where + ".offset")
    length = cur.get("u32", where + ".length")
    _check(abs(offset) <= 1 << 16, "%s: |offset| %d above 2^16" % (where, offset))
    _check(1 <= length <= 65535, "%s: length %d not in 1..65535" % (where, length))
    freq = cur.array("u16", length + 1, where + ".freq")
    _check(bool((freq >= 1).all()), "%s: a zero frequency" % where)
    _check(int(freq.sum()) == 65536, "%s: frequencies sum to %d, not 65536" % (where, int(freq.sum())))
    freq = [int(f) for f in freq]
    cdf = [0]
    for f in freq:
        cdf.append(cdf[-1] + f)
    return Table(offset, length, freq, cdf)


def channel_walk(model):
    """The size-independent part of 4.3: every cin / C matches, h_s ends at 2*n_y, g_s at 3."""
    for layers, start, end, name in ((model.h_s, model.n_z, 2 * model.n_y, "h_s"),
                                     (model.g_s, model.n_y, 3, "g_s")):
        ch = start
        for k, layer in enumerate(layers):
            if isinstance(layer, ConvLayer):
                _check(layer.cin == ch, "%s layer %d: cin %d but receives %d channels" % (name, k, layer.cin, ch))
                ch = layer.cout
            elif isinstance(layer, IgdnLayer):
                _check(layer.channels == ch, "%s layer %d: IGDN C %d but receives %d channels"
                       % (name, k, layer.channels, ch))
        _check(ch == end, "%s ends with %d channels, not %d" % (name, ch, end))


def load_model(data, layout=False):
    """Parse and validate a WHM1 model held as `data` (bytes). Returns a Model.

    Order (section 4): size >= 120, magic, version, file_size, then the CRC, then the fields of the
    records in file order, then the channel walk of 4.3.
    """
    data = bytes(data)
    _check(len(data) >= MIN_SIZE, "model of %d bytes, below 120" % len(data))
    _check(data[0:4] == MAGIC, "bad magic %r" % data[0:4])
    version = read(data, 4, "u32")
    _check(version == 1, "version %d, not 1" % version)
    file_size = read(data, 8, "u32")
    _check(file_size == len(data), "file_size %d but the model has %d bytes" % (file_size, len(data)))
    crc = read(data, file_size - 4, "u32")
    _check(crc == crc32(data[:file_size - 4]), "CRC mismatch")

    lay = [] if layout else None
    cur = Cursor(data, 0, file_size - 4, InvalidModelError, "model", lay)
    cur.need(4, "magic")
    if lay is not None:
        lay.append(("magic", 0, 4))
    cur.pos = 4
    cur.get("u32", "version")
    cur.get("u32", "file_size")
    flags = cur.get("u32", "flags")
    cur.need(64, "name")
    name = data[16:80]
    if lay is not None:
        lay.append(("name", 16, 64))
    cur.pos = 80
    n_z = cur.get("u32", "n_z")
    n_y = cur.get("u32", "n_y")
    pad_multiple = cur.get("u32", "pad_multiple")
    y_down = cur.get("u32", "y_down")
    z_down = cur.get("u32", "z_down")
    n_hs = cur.get("u32", "n_hs")
    n_gs = cur.get("u32", "n_gs")
    n_scales = cur.get("u32", "n_scales")
    reserved = cur.get("u32", "reserved")
    _check(flags & ~RATES == 0, "flags %d: only bit 0 (RATES) may be set" % flags)
    _check(1 <= n_z <= 1024, "n_z %d not in 1..1024" % n_z)
    _check(1 <= n_y <= 1024, "n_y %d not in 1..1024" % n_y)
    _check(1 <= pad_multiple <= 1024, "pad_multiple %d not in 1..1024" % pad_multiple)
    _check(1 <= y_down <= 1024, "y_down %d not in 1..1024" % y_down)
    _check(1 <= z_down <= 1024, "z_down %d not in 1..1024" % z_down)
    _check(pad_multiple % y_down == 0 and pad_multiple % z_down == 0,
           "y_down %d and z_down %d must divide pad_multiple %d" % (y_down, z_down, pad_multiple))
    _check(1 <= n_hs <= 64, "n_hs %d not in 1..64" % n_hs)
    _check(1 <= n_gs <= 64, "n_gs %d not in 1..64" % n_gs)
    _check(1 <= n_scales <= 256, "n_scales %d not in 1..256" % n_scales)
    _check(reserved == 0, "reserved %d must be 0" % reserved)

    h_s = [_read_layer(cur, "h_s[%d]" % k) for k in range(n_hs)]
    g_s = [_read_layer(cur, "g_s[%d]" % k) for k in range(n_gs)]
    z_medians, z_tables = [], []
    for c in range(n_z):
        z_medians.append(cur.get("i32", "z[%d].median_q12" % c))
        z_tables.append(_read_table(cur, "z[%d]" % c))
    thresholds = [cur.get("i32", "threshold[%d]" % k) for k in range(n_scales - 1)]
    for k in range(1, len(thresholds)):
        _check(thresholds[k] > thresholds[k - 1], "thresholds not strictly increasing at %d" % k)
    y_tables = [_read_table(cur, "y[%d]" % k) for k in range(n_scales)]
    n_rates, qstep, rstep = 0, [], []
    if flags & RATES:
        # section 4 (1.1): n_rates, then per rate n_y qsteps and n_y rsteps, each 1..2^24
        n_rates = cur.get("u32", "n_rates")
        _check(1 <= n_rates <= 256, "n_rates %d not in 1..256" % n_rates)
        cur.need(8 * n_rates * n_y, "rate table")
        for r in range(n_rates):
            for name, dest in (("qstep", qstep), ("rstep", rstep)):
                steps = [cur.get("u32", "%s[%d][%d]" % (name, r, c)) for c in range(n_y)]
                for c, v in enumerate(steps):
                    _check(1 <= v <= STEP_MAX, "%s[%d][%d] = %d not in 1..2^24" % (name, r, c, v))
                dest.append(steps)
    _check(cur.pos == file_size - 4, "%d bytes between the %s and the CRC"
           % (file_size - 4 - cur.pos, "rate table" if flags & RATES else "last y table"))
    if lay is not None:
        lay.append(("crc", file_size - 4, 4))

    model = Model(hashlib.sha256(data).digest(), len(data), name, n_z, n_y, pad_multiple,
                  y_down, z_down, h_s, g_s, z_medians, z_tables, thresholds, y_tables, lay or [],
                  n_rates, qstep, rstep)
    channel_walk(model)
    return model
