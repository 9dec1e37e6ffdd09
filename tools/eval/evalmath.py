"""Numbers for the records of docs/research/, numpy only (the verifier runs where there is no
torch or scipy): PSNR, MS-SSIM, and the Bjontegaard delta rate with PCHIP interpolation.

BD-rate (Bjontegaard, VCEG-M33; PCHIP as in the common BD-rate tools, e.g. the JVET CTC sheet
and the `bjontegaard` Python package): for each curve, log10(rate) as a piecewise cubic Hermite
(Fritsch-Carlson, SciPy's PchipInterpolator) function of quality; both integrated exactly over
the overlap of the two quality ranges; BD-rate = 10^(mean difference) - 1, in percent, test
against anchor (positive: the test needs more bits for the same quality).
"""

import math

import numpy as np


def psnr(a, b):
    """RGB8 arrays (H, W, 3): PSNR over all samples, dB."""
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


def _gauss(size=11, sigma=1.5):
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2
    g = np.exp(-x ** 2 / (2 * sigma ** 2))
    return g / g.sum()


def _filt(img, g):
    """'valid' separable filtering of a 2-D array."""
    k = len(g)
    h, w = img.shape
    rows = sum(g[i] * img[i:h - k + 1 + i, :] for i in range(k))
    return sum(g[i] * rows[:, i:w - k + 1 + i] for i in range(k))


MS_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def ms_ssim(a, b, data_range=255.0):
    """MS-SSIM (Wang, Simoncelli, Bovik 2003) of RGB8 pictures: per channel, 5 scales, Gaussian
    window 11 / sigma 1.5, K1 0.01, K2 0.03, 2x2 average pooling, the mean over channels (as
    pytorch_msssim and CompressAI compute it)."""
    g = _gauss()
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    vals = []
    for ch in range(3):
        x = a[:, :, ch].astype(np.float64)
        y = b[:, :, ch].astype(np.float64)
        mcs = []
        for lev in range(len(MS_WEIGHTS)):
            mx, my = _filt(x, g), _filt(y, g)
            sxx = _filt(x * x, g) - mx * mx
            syy = _filt(y * y, g) - my * my
            sxy = _filt(x * y, g) - mx * my
            cs = (2 * sxy + c2) / (sxx + syy + c2)
            ssim = ((2 * mx * my + c1) / (mx * mx + my * my + c1)) * cs
            if lev < len(MS_WEIGHTS) - 1:
                mcs.append(max(float(np.mean(cs)), 0.0))
                h2, w2 = x.shape[0] // 2 * 2, x.shape[1] // 2 * 2
                x = x[:h2, :w2].reshape(h2 // 2, 2, w2 // 2, 2).mean(axis=(1, 3))
                y = y[:h2, :w2].reshape(h2 // 2, 2, w2 // 2, 2).mean(axis=(1, 3))
            else:
                last = max(float(np.mean(ssim)), 0.0)
        v = last ** MS_WEIGHTS[-1]
        for m, wt in zip(mcs, MS_WEIGHTS):
            v *= m ** wt
        vals.append(v)
    return float(np.mean(vals))


def msssim_db(v):
    return -10 * math.log10(1 - v) if v < 1 else float("inf")


# ---- PCHIP and BD-rate ----

def _pchip_slopes(x, y):
    h = np.diff(x)
    delta = np.diff(y) / h
    n = len(x)
    d = np.zeros(n)
    if n == 2:
        d[:] = delta[0]
        return d
    for k in range(1, n - 1):
        if delta[k - 1] * delta[k] <= 0:
            d[k] = 0.0
        else:
            w1, w2 = 2 * h[k] + h[k - 1], h[k] + 2 * h[k - 1]
            d[k] = (w1 + w2) / (w1 / delta[k - 1] + w2 / delta[k])

    def end(h0, h1, m0, m1):
        e = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
        if np.sign(e) != np.sign(m0):
            return 0.0
        if np.sign(m0) != np.sign(m1) and abs(e) > abs(3 * m0):
            return 3 * m0
        return e

    d[0] = end(h[0], h[1], delta[0], delta[1])
    d[-1] = end(h[-1], h[-2], delta[-1], delta[-2])
    return d


def pchip_integral(x, y, lo, hi):
    """Integral over [lo, hi] of the PCHIP interpolant through (x, y), x strictly increasing,
    x[0] <= lo <= hi <= x[-1]."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if np.any(np.diff(x) <= 0):
        raise ValueError("quality values must be strictly increasing")
    d = _pchip_slopes(x, y)
    total = 0.0
    for k in range(len(x) - 1):
        a, b = max(lo, x[k]), min(hi, x[k + 1])
        if a >= b:
            continue
        h = x[k + 1] - x[k]
        delta = (y[k + 1] - y[k]) / h
        c = (y[k], d[k], (3 * delta - 2 * d[k] - d[k + 1]) / h, (d[k] + d[k + 1] - 2 * delta) / h ** 2)

        def prim(s):
            return c[0] * s + c[1] * s ** 2 / 2 + c[2] * s ** 3 / 3 + c[3] * s ** 4 / 4
        total += prim(b - x[k]) - prim(a - x[k])
    return total


def bd_rate(rate_anchor, q_anchor, rate_test, q_test):
    """BD-rate in percent of test against anchor; None when the quality ranges do not overlap."""
    def prep(r, q):
        order = np.argsort(q)
        return np.asarray(q, dtype=np.float64)[order], np.log10(np.asarray(r, dtype=np.float64)[order])
    qa, la = prep(rate_anchor, q_anchor)
    qt, lt = prep(rate_test, q_test)
    lo, hi = max(qa[0], qt[0]), min(qa[-1], qt[-1])
    if not hi > lo:
        return None
    ia = pchip_integral(qa, la, lo, hi)
    it = pchip_integral(qt, lt, lo, hi)
    return (10 ** ((it - ia) / (hi - lo)) - 1) * 100


def summary(values):
    """(median, mean, min, max) of a list of floats."""
    v = np.asarray(values, dtype=np.float64)
    return float(np.median(v)), float(np.mean(v)), float(np.min(v)), float(np.max(v))
