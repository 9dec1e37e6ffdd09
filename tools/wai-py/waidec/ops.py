"""The integer operators of section 5, on numpy int64 tensors [channels][rows][columns].

All arithmetic is int64 and exact: section 5.1 bounds every sum below 2^61, and numpy's int64
multiply, add and einsum wrap only beyond 2^63. `>>` on numpy int64 is the arithmetic (floor)
shift the spec asks for.
"""

import numpy as np

ACT_MIN = -(1 << 23)
ACT_MAX = (1 << 23) - 1


def rshr(v, s):
    """Round-shift: v when s == 0, else (v + 2^(s-1)) >> s (ties towards +infinity).

    `s` may be a scalar or an array broadcast against `v` (per-channel shifts).
    """
    s = np.asarray(s, dtype=np.int64)
    half = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0)
    return (v + half) >> s


def clamp_act(v):
    return np.clip(v, ACT_MIN, ACT_MAX)


def isqrt(n):
    """Elementwise floor(sqrt(n)) for int64 n >= 0 (n < 2^62): the largest r with r*r <= n.

    A float estimate, then exact integer corrections until r*r <= n < (r+1)*(r+1) holds everywhere.
    """
    r = np.floor(np.sqrt(n.astype(np.float64))).astype(np.int64)
    while True:
        high = r * r > n
        low = (r + 1) * (r + 1) <= n
        if not high.any() and not low.any():
            return r
        r = r - high + low


def conv_out_size(layer, h, w):
    """Output rows and columns of a conv2d (5.2) or transposed conv2d (5.3) for an h x w input."""
    s, p = layer.stride, layer.pad
    if layer.type == 1:
        return (h + 2 * p - layer.kh) // s + 1, (w + 2 * p - layer.kw) // s + 1
    return ((h - 1) * s - 2 * p + layer.kh + layer.out_pad,
            (w - 1) * s - 2 * p + layer.kw + layer.out_pad)


def _bias_shift_clamp(acc, layer):
    """Y[o] = clamp(rshr(acc + b[o], e[o]), ACT_MIN, ACT_MAX) on acc[cout][rows][cols]."""
    acc = acc + layer.bias[:, None, None]
    return clamp_act(rshr(acc, layer.shift[:, None, None]))


def conv2d(x, layer):
    """Section 5.2: one matrix product per kernel tap (ky, kx) over a zero-padded input."""
    cin, h, w = x.shape
    s, p, kh, kw = layer.stride, layer.pad, layer.kh, layer.kw
    ho, wo = conv_out_size(layer, h, w)
    xp = np.zeros((cin, h + 2 * p, w + 2 * p), dtype=np.int64)
    xp[:, p:p + h, p:p + w] = x
    acc = np.zeros((layer.cout, ho * wo), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            # the inputs X[i][oy*s - p + ky][ox*s - p + kx] for every (oy, ox), in padded coordinates
            taps = xp[:, ky:ky + s * (ho - 1) + 1:s, kx:kx + s * (wo - 1) + 1:s].reshape(cin, ho * wo)
            acc += np.einsum("oi,ip->op", layer.weight[:, :, ky, kx], taps)
    return _bias_shift_clamp(acc.reshape(layer.cout, ho, wo), layer)


def conv_transpose2d(x, layer):
    """Section 5.3, scatter form: every input element adds X * w[o][i][ky][kx] at
    (iy*s - p + ky, ix*s - p + kx). The sums are kept in a frame shifted by +p so that
    no index is negative; the output is the window [p, p + Ho) x [p, p + Wo) of it."""
    cin, h, w = x.shape
    s, p, kh, kw = layer.stride, layer.pad, layer.kh, layer.kw
    ho, wo = conv_out_size(layer, h, w)
    full = np.zeros((layer.cout, (h - 1) * s + kh + layer.out_pad, (w - 1) * s + kw + layer.out_pad),
                    dtype=np.int64)
    flat = x.reshape(cin, h * w)
    for ky in range(kh):
        for kx in range(kw):
            contrib = np.einsum("oi,ip->op", layer.weight[:, :, ky, kx], flat)
            full[:, ky:ky + s * (h - 1) + 1:s, kx:kx + s * (w - 1) + 1:s] += contrib.reshape(-1, h, w)
    return _bias_shift_clamp(full[:, p:p + ho, p:p + wo], layer)


def leaky_relu(x, layer):
    """Section 5.4: x if x >= 0, else (x * slope_q16 + 2^15) >> 16."""
    return np.where(x >= 0, x, (x * layer.slope_q16 + (1 << 15)) >> 16)


def inverse_gdn(x, layer):
    """Section 5.5, at every position: Y[i] = clamp(rshr(x_i * isqrt(n_i), 6 + g/2))."""
    c, h, w = x.shape
    flat = x.reshape(c, h * w)
    x2 = (flat * flat + (1 << 11)) >> 12
    n = layer.beta[:, None] + np.einsum("ij,jp->ip", layer.gamma, x2)
    r = isqrt(n)
    y = clamp_act(rshr(flat * r, 6 + layer.gamma_shift // 2))
    return y.reshape(c, h, w)


def apply_layer(x, layer):
    if layer.type == 1:
        return conv2d(x, layer)
    if layer.type == 2:
        return conv_transpose2d(x, layer)
    if layer.type == 3:
        return leaky_relu(x, layer)
    return inverse_gdn(x, layer)
