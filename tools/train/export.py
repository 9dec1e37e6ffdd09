#!/usr/bin/python3
"""Export a training checkpoint to the two files the WAI encoder needs.

    /usr/bin/python3 tools/train/export.py CKPT.pt -o models/wai-q3 [--name NAME]
    /usr/bin/python3 tools/train/export.py VR.pt -o models/wai-vr [--rates-keep 0,3,7]
    /usr/bin/python3 tools/train/export.py --self-test     (deconv layout vs spec 5.3)

writes `<out>.whm` (the WHM1 integer model of docs/spec/wai-format.md section 4: h_s, g_s,
z tables, y tables; what a decoder loads) and `<out>.ana` (the float analysis transforms g_a
and h_a for the encoder; format in docs/spec/wai-encoder-weights.md, informative) and prints
`<sha256>  <path>` for both. The WHM1 writer here is independent of libwai-core's
`wai_model_serialize` (a second implementation of section 4). Everything is deterministic:
float64 numpy on the checkpoint's float32 values, integer rounding by floor(x + 1/2), integer
table quantisation; the same checkpoint gives the same bytes (check with sha256sum).

A variable-rate checkpoint (train.py --rates: ck["rates"] its lambdas, rate_log_dq/rate_log_dr
in the model) exports as a format 1.1 model: WHM1 flags bit 0 RATES and, after the y tables,
n_rates then per rate qstep[0..M-1] and rstep[0..M-1] = round(4096 * exp(.)) clamped to
1..2^24; --rates-keep picks and orders the rates (default all); the default name is
wai-vr<R>-n<N>m<M> ... (R rates). A plain checkpoint's files are unchanged (flags 0).

Rules (tools/train/README.md "What the WHM1 export will need"):
- conv / deconv: per output channel o, e[o] = the largest e in 0..32 with
  round(max|w[o]| * 2^e) <= 2047 and |round(b * 2^(12+e))| <= 2^52; w = round(w * 2^e),
  b = round(b * 2^(12+e)). ConvTranspose2d weight [cin][cout][kh][kw] is stored as
  w[o][i][ky][kx] (first two axes swapped, not flipped).
- leaky ReLU: slope_q16 = round(0.01 * 65536) = 655.
- IGDN: GDN.effective() (after the non-negative reparametrisation); gamma_shift g = the largest
  even g in 8..24 with round(max gamma * 2^g) <= 2^17 - 1 and round(max beta * 2^(12+g)) <= 2^60.
- z tables: the entropy bottleneck's quantiles solved by bisection on logits_cumulative (the
  aux loss of a young checkpoint has not converged), median_q12 = round(median * 4096), range
  [median_q - minima, median_q + maxima] (CompressAI's update(), at most 2 * ZR_MAX + 1 symbols),
  escape = both tails, quantised as below.
- y tables and thresholds: tools/mkmodel.c's algorithm exactly (README-mkmodel.md); the
  resulting bytes equal wai-mkmodel's (checked by --check-ytables).
- quantisation of weights to 16-bit frequencies: mkmodel's largest-remainder method.
"""

import argparse
import hashlib
import math
import os
import struct
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

N_SCALES = 64
ZR_MAX = 4096          # bound on the z table half range (symbols), far above what models need
ANA_MAGIC = b"WAA1"


def rnd(x):
    """floor(x + 1/2) for a float or numpy array, as int64 / Python int."""
    return np.floor(np.asarray(x, dtype=np.float64) + 0.5).astype(np.int64)


def llround(x):
    """C llround for finite x >= 0 (half away from zero), exact."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


# ---- 16-bit frequency quantisation: tools/mkmodel.c quantise(), integer ----

def quantise(w):
    n = len(w)
    floored = [False] * n
    b = 65536
    grew = True
    while grew:
        grew = False
        t = sum(x for x, f in zip(w, floored) if not f)
        for i in range(n):
            if not floored[i] and w[i] * b < t:
                floored[i] = True
                grew = True
        b = 65536 - sum(floored)
    freq = [0] * n
    left = b
    rem = []
    for i in range(n):
        if floored[i]:
            freq[i] = 1
            continue
        q = w[i] * b
        freq[i] = q // t
        left -= q // t
        rem.append((-(q % t), i))
    rem.sort()
    for j in range(left):
        freq[rem[j][1]] += 1
    assert sum(freq) == 65536 and min(freq) >= 1 and max(freq) <= 65535
    return freq


# ---- y tables (mkmodel make_tables / make_y_table) ----

def y_tables():
    lo, hi = math.log(0.11), math.log(256.0)
    thresholds, tables = [], []
    for k in range(N_SCALES):
        s = math.exp(lo + (hi - lo) * k / (N_SCALES - 1))
        if k < N_SCALES - 1:
            thresholds.append(llround(s * 4096.0))
        rr = math.ceil(s * 6.1)
        length = 2 * rr + 1
        kk = 1.0 / (s * math.sqrt(2.0))
        w = []
        for i in range(length):
            a = abs(float(i) - float(rr))
            p = 1.0 - math.erfc(0.5 * kk) if a == 0 else \
                0.5 * (math.erfc((a - 0.5) * kk) - math.erfc((a + 0.5) * kk))
            w.append(llround(p * 1099511627776.0))
        w.append(llround(math.erfc((rr + 0.5) * kk) * 1099511627776.0))
        tables.append((-rr, length, quantise(w)))
    return thresholds, tables


# ---- z tables from the entropy bottleneck, in float64 ----

class Bottleneck:
    def __init__(self, sd, prefix="entropy_bottleneck."):
        def get(name):
            return sd[prefix + name].detach().double().numpy()
        self.mats, self.biases, self.factors = [], [], []
        i = 0
        while prefix + "matrices.%d" % i in sd:
            self.mats.append(np.log1p(np.exp(-np.abs(get("matrices.%d" % i)))) +
                             np.maximum(get("matrices.%d" % i), 0))  # softplus, stable
            self.biases.append(get("biases.%d" % i))
            if prefix + "factors.%d" % i in sd:
                self.factors.append(np.tanh(get("factors.%d" % i)))
            i += 1
        self.channels = self.mats[0].shape[0]

    def logits(self, c, x):
        """logits_cumulative for channel c at the points x (1-D array)."""
        v = np.asarray(x, dtype=np.float64).reshape(1, -1)
        for i, m in enumerate(self.mats):
            v = m[c] @ v + self.biases[i][c]
            if i < len(self.factors):
                v = v + self.factors[i][c] * np.tanh(v)
        return v.reshape(-1)

    def solve(self, c, target):
        """x with logits(x) = target (monotone increasing), by bisection."""
        lo, hi = -1.0, 1.0
        while self.logits(c, [lo])[0] > target:
            lo *= 2
            if lo < -1e7:
                raise ValueError("channel %d: no lower quantile" % c)
        while self.logits(c, [hi])[0] < target:
            hi *= 2
            if hi > 1e7:
                raise ValueError("channel %d: no upper quantile" % c)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid == lo or mid == hi:
                break
            if self.logits(c, [mid])[0] < target:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    def table(self, c, tail_mass=1e-9):
        t = math.log(2 / tail_mass - 1)
        q0, q1, q2 = (self.solve(c, -t), self.solve(c, 0.0), self.solve(c, t))
        med_q12 = int(rnd(q1 * 4096))
        med = med_q12 / 4096.0
        minima = min(max(math.ceil(med - q0), 0), ZR_MAX)
        maxima = min(max(math.ceil(q2 - med), 0), ZR_MAX)
        offset, length = -minima, minima + maxima + 1
        v = np.arange(offset, offset + length, dtype=np.float64) + med
        lower = self.logits(c, v - 0.5)
        upper = self.logits(c, v + 0.5)
        sign = -np.sign(lower + upper)
        sig = lambda a: 1.0 / (1.0 + np.exp(-a))
        pmf = np.abs(sig(sign * upper) - sig(sign * lower))
        esc = sig(lower[0]) + sig(-upper[-1])
        w = [llround(float(p) * 1099511627776.0) for p in pmf] + [llround(float(esc) * 2.0 ** 40)]
        return med_q12, offset, length, quantise(w)


# ---- layers ----

def conv_record(weight, bias, ttype, stride, pad, out_pad):
    """weight float64 [cout][cin][kh][kw] (already transposed for deconv)."""
    cout, cin, kh, kw = weight.shape
    wq = np.zeros(weight.shape, dtype=np.int64)
    shifts, bq = [], []
    for o in range(cout):
        m = float(np.max(np.abs(weight[o])))
        e = 32
        while e > 0 and (int(rnd(m * 2.0 ** e)) > 2047 or
                         abs(int(rnd(bias[o] * 2.0 ** (12 + e)))) > 2 ** 52):
            e -= 1
        wq[o] = rnd(weight[o] * 2.0 ** e)
        b = int(rnd(bias[o] * 2.0 ** (12 + e)))
        if int(np.max(np.abs(wq[o]))) > 2048 or wq[o].max() > 2047 or abs(b) > 2 ** 52:
            raise ValueError("weights/bias out of range even at shift 0")
        shifts.append(e)
        bq.append(b)
    out = struct.pack("<B3xIIBBBBB3x", ttype, cin, cout, kh, kw, stride, pad, out_pad)
    out += wq.astype("<i2").tobytes()
    out += bytes(shifts)
    out += np.array(bq, dtype="<i8").tobytes()
    return out, shifts


def lrelu_record(slope):
    return struct.pack("<B3xi", 3, int(rnd(slope * 65536)))


def igdn_record(beta, gamma):
    c = beta.shape[0]
    g = 24
    while g > 8 and (int(rnd(gamma.max() * 2.0 ** g)) > 2 ** 17 - 1 or
                     int(rnd(beta.max() * 2.0 ** (12 + g))) > 2 ** 60):
        g -= 2
    bq = rnd(beta * 2.0 ** (12 + g))
    gq = rnd(gamma * 2.0 ** g)
    if bq.min() < 0 or bq.max() > 2 ** 60 or gq.min() < 0 or gq.max() > 2 ** 17 - 1:
        raise ValueError("IGDN parameters out of range")
    return (struct.pack("<B3xII", 4, c, g) + bq.astype("<i8").tobytes() +
            gq.astype("<i4").tobytes()), g


def effective_gdn(sd, prefix):
    """GDN.effective() in float64: max(p, sqrt(min + ped))^2 - ped."""
    ped = (2.0 ** -18) ** 2
    beta = sd[prefix + "beta"].detach().double().numpy()
    gamma = sd[prefix + "gamma"].detach().double().numpy()
    bb = (1e-6 + ped) ** 0.5
    gb = (0.0 + ped) ** 0.5
    return np.maximum(beta, bb) ** 2 - ped, np.maximum(gamma, gb) ** 2 - ped


def arr(sd, key):
    return sd[key].detach().double().numpy()


def rate_table(sd, keep):
    """The WHM1 rate table (spec 4, version 1.1) of a variable-rate checkpoint: for each rate
    index of `keep`, in that order, qstep[0..M-1] then rstep[0..M-1], each
    round(4096 * exp(rate_log_dq / rate_log_dr)) clamped to 1..2^24 (Q12)."""
    dq, dr = arr(sd, "rate_log_dq"), arr(sd, "rate_log_dr")
    out = []
    for r in keep:
        q = np.clip(rnd(np.exp(dq[r]) * 4096.0), 1, 1 << 24)
        s = np.clip(rnd(np.exp(dr[r]) * 4096.0), 1, 1 << 24)
        out.append(([int(v) for v in q], [int(v) for v in s]))
    return out


def write_whm1(sd, n, m, name, rates=None):
    """rates: None (a plain model, flags 0) or rate_table()'s list (flags bit 0 RATES, the
    table after the y tables)."""
    hs, gs = [], []
    # h_s: deconv, lrelu, deconv, lrelu, conv
    hs.append(conv_record(arr(sd, "h_s.0.weight").transpose(1, 0, 2, 3), arr(sd, "h_s.0.bias"),
                          2, 2, 2, 1)[0])
    hs.append(lrelu_record(0.01))
    hs.append(conv_record(arr(sd, "h_s.2.weight").transpose(1, 0, 2, 3), arr(sd, "h_s.2.bias"),
                          2, 2, 2, 1)[0])
    hs.append(lrelu_record(0.01))
    hs.append(conv_record(arr(sd, "h_s.4.weight"), arr(sd, "h_s.4.bias"), 1, 1, 1, 0)[0])
    for i in range(7):
        if i % 2 == 0:
            gs.append(conv_record(arr(sd, "g_s.%d.weight" % i).transpose(1, 0, 2, 3),
                                  arr(sd, "g_s.%d.bias" % i), 2, 2, 2, 1)[0])
        else:
            gs.append(igdn_record(*effective_gdn(sd, "g_s.%d." % i))[0])
    eb = Bottleneck(sd)
    body = b""
    for c in range(n):
        med, off, length, freq = eb.table(c)
        body += struct.pack("<iiI", med, off, length) + struct.pack("<%dH" % len(freq), *freq)
    thr, yt = y_tables()
    ytab = struct.pack("<%di" % len(thr), *thr)
    for off, length, freq in yt:
        ytab += struct.pack("<iI", off, length) + struct.pack("<%dH" % len(freq), *freq)
    nb = name.encode("utf-8")[:64]
    layers = b"".join(hs) + b"".join(gs)
    rtab = b""
    if rates:
        rtab = struct.pack("<I", len(rates))
        for qs, rs in rates:
            assert len(qs) == m and len(rs) == m
            rtab += struct.pack("<%dI" % m, *qs) + struct.pack("<%dI" % m, *rs)
    size = 116 + len(layers) + len(body) + len(ytab) + len(rtab) + 4
    head = b"WHM1" + struct.pack("<III", 1, size, 1 if rates else 0) + nb + bytes(64 - len(nb))
    head += struct.pack("<9I", n, m, 64, 16, 64, 5, 7, N_SCALES, 0)
    data = head + layers + body + ytab + rtab
    assert len(data) + 4 == size
    return data + struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF), ytab


ANA_CONVS = ["g_a.0.", "g_a.2.", "g_a.4.", "g_a.6.", "h_a.0.", "h_a.2.", "h_a.4."]


def ana_f16_lossless(sd):
    """Whether every conv weight of g_a and h_a is a binary16 value (a checkpoint whose weights
    were stored in float16, as compact-checkpoint.py's): then the .ana can store them as
    binary16 at half the size and the encoder computes the same floats."""
    for prefix in ANA_CONVS:
        w = sd[prefix + "weight"].detach().float().numpy()
        if not np.array_equal(w.astype(np.float16).astype(np.float32), w):
            return False
    return True


def write_ana(sd, n, m, name, whm_sha, f16=False):
    """docs/spec/wai-encoder-weights.md: float32 g_a and h_a; with f16 (flags bit 0), the conv
    weights in binary16 (only when that is exact: ana_f16_lossless)."""
    recs = []
    if f16:
        assert ana_f16_lossless(sd), "binary16 conv weights would round"

    def conv_f(prefix, stride, pad):
        w = sd[prefix + "weight"].detach().float().numpy()
        b = sd[prefix + "bias"].detach().float().numpy()
        cout, cin, kh, kw = w.shape
        return (struct.pack("<B3xIIBBBB", 1, cin, cout, kh, kw, stride, pad) +
                w.astype("<f2" if f16 else "<f4").tobytes() + b.astype("<f4").tobytes())

    def gdn_f(prefix):
        beta, gamma = effective_gdn(sd, prefix)
        return (struct.pack("<B3xI", 5, beta.shape[0]) + beta.astype("<f4").tobytes() +
                gamma.astype("<f4").tobytes())

    for i in range(7):
        recs.append(conv_f("g_a.%d." % i, 2, 2) if i % 2 == 0 else gdn_f("g_a.%d." % i))
    n_ga = len(recs)
    recs.append(conv_f("h_a.0.", 1, 1))
    recs.append(struct.pack("<B3xf", 3, 0.01))
    recs.append(conv_f("h_a.2.", 2, 2))
    recs.append(struct.pack("<B3xf", 3, 0.01))
    recs.append(conv_f("h_a.4.", 2, 2))
    n_ha = len(recs) - n_ga
    nb = name.encode("utf-8")[:64]
    body = b"".join(recs)
    size = 128 + len(body) + 4
    head = ANA_MAGIC + struct.pack("<III", 1, size, 1 if f16 else 0) + nb + bytes(64 - len(nb))
    head += struct.pack("<4I", n, m, n_ga, n_ha) + whm_sha
    head += bytes(128 - len(head))
    assert len(head) == 128
    data = head + body
    return data + struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF)


def self_test():
    """The stored deconv layout against spec 5.3's scatter formula, on a tiny random layer."""
    import torch
    g = torch.Generator().manual_seed(1)
    ct = torch.nn.ConvTranspose2d(3, 2, 5, stride=2, padding=2, output_padding=1)
    with torch.no_grad():
        ct.weight.copy_(torch.randn(ct.weight.shape, generator=g))
        ct.bias.copy_(torch.randn(ct.bias.shape, generator=g))
    x = torch.randn(1, 3, 4, 3, generator=g)
    ref = ct(x).detach().double().numpy()[0]
    w = ct.weight.detach().double().numpy().transpose(1, 0, 2, 3)   # the stored w[o][i][ky][kx]
    xs = x.double().numpy()[0]
    s, p, k = 2, 2, 5
    acc = np.zeros(ref.shape) + ct.bias.detach().double().numpy()[:, None, None]
    for i in range(3):
        for iy in range(4):
            for ix in range(3):
                for ky in range(k):
                    for kx in range(k):
                        oy, ox = iy * s - p + ky, ix * s - p + kx
                        if 0 <= oy < ref.shape[1] and 0 <= ox < ref.shape[2]:
                            acc[:, oy, ox] += xs[i, iy, ix] * w[:, i, ky, kx]
    err = float(np.abs(acc - ref).max())
    print("deconv layout vs spec 5.3: max |diff| %.2e" % err)
    return 0 if err < 1e-5 else 1


def lineage(ck):
    """'base-q5 it35399 + it3750 + it9000': the first model's name and iterations, then those
    of each fine-tune in turn (train.py keeps the chain in the checkpoint's "init")."""
    chain, init = [ck["iteration"]], ck.get("init")
    while init:
        root = init
        chain.append(init["iteration"])
        init = init.get("init")
    return "%s it%s" % (root["name"], " + it".join(str(i) for i in reversed(chain)))


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="--self-test: check the deconv layout and exit")
    ap.add_argument("checkpoint")
    ap.add_argument("-o", "--output", required=True, help="path without extension")
    ap.add_argument("--name", help="WHM1 name field (default wai-q<Q>-n<N>m<M> it<I>; a "
                    "fine-tune: wai-q<Q>-n<N>m<M> <base> it<B> + it<I>)")
    ap.add_argument("--quality", type=int, help="the quality in the default name (default: the "
                    "checkpoint's; a model shipped at another rung of the ladder)")
    ap.add_argument("--ana-weights", choices=("auto", "f32", "f16"), default="auto",
                    help="the .ana's conv weights: binary16 when exact (auto, the default: then "
                    "the encoder computes the same floats at half the file size), always binary32 "
                    "(f32), or binary16, refused unless exact (f16)")
    ap.add_argument("--rates-keep", metavar="I,J,...",
                    help="a variable-rate checkpoint (ck['rates']): export only these of its rate "
                    "indices, in this order (default: all); rate r of the model is the r-th")
    ap.add_argument("--check-ytables", metavar="WHM",
                    help="compare the y tables with those of a wai-mkmodel file and exit")
    a = ap.parse_args()
    if a.check_ytables:
        thr, yt = y_tables()
        ytab = struct.pack("<%di" % len(thr), *thr)
        for off, length, freq in yt:
            ytab += struct.pack("<iI", off, length) + struct.pack("<%dH" % len(freq), *freq)
        ref = open(a.check_ytables, "rb").read()
        ok = ref[-4 - len(ytab):-4] == ytab
        print("y tables %s %s" % ("identical to" if ok else "DIFFER from", a.check_ytables))
        return 0 if ok else 1
    import torch
    ck = torch.load(a.checkpoint, map_location="cpu")
    sd = ck["model"]
    n, m = int(ck["N"]), int(ck["M"])
    q = a.quality or ck["quality"]
    vr = ck.get("rates")
    rates = None
    if a.rates_keep is not None and not vr:
        print("export: --rates-keep: %s is not a variable-rate checkpoint" % a.checkpoint,
              file=sys.stderr)
        return 1
    if vr:
        # a variable-rate checkpoint (train.py --rates): WHM1 1.1 with a rate table. Loading it
        # into the model checks that the rate parameters have the checkpoint's shapes.
        import model as train_model
        train_model.MeanScaleHyperprior(n, m, rates=len(vr)).load_state_dict(sd)
        keep = list(range(len(vr)))
        if a.rates_keep is not None:
            try:
                keep = [int(t) for t in a.rates_keep.split(",")]
            except ValueError:
                keep = []
            if (not keep or len(set(keep)) != len(keep) or
                    any(not 0 <= k < len(vr) for k in keep)):
                print("export: --rates-keep %s: distinct indices 0..%d of the checkpoint's %d "
                      "rates" % (a.rates_keep, len(vr) - 1, len(vr)), file=sys.stderr)
                return 1
        if len(keep) > 256:
            print("export: %d rates, a WHM1 holds at most 256" % len(keep), file=sys.stderr)
            return 1
        rates = rate_table(sd, keep)
        for r, k in enumerate(keep):
            print("rate %d: checkpoint rate %d, lambda %g" % (r, k, vr[k]), file=sys.stderr)
    tag = "q%d" % q if not vr else "vr%d" % len(rates)
    name = a.name or "wai-%s-n%dm%d it%d" % (tag, n, m, ck["iteration"])
    if not a.name and ck.get("init"):   # a fine-tune: the base's iterations, then its own
        name = "wai-%s-n%dm%d %s" % (tag, n, m, lineage(ck))
    whm, _ = write_whm1(sd, n, m, name, rates)
    sha = hashlib.sha256(whm).digest()
    lossless = ana_f16_lossless(sd)
    if a.ana_weights == "f16" and not lossless:
        print("export: --ana-weights f16: a conv weight is not a binary16 value", file=sys.stderr)
        return 1
    ana = write_ana(sd, n, m, name, sha, f16=lossless and a.ana_weights != "f32")
    for ext, data in ((".whm", whm), (".ana", ana)):
        path = a.output + ext
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        print("%s  %s" % (hashlib.sha256(data).hexdigest(), path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
