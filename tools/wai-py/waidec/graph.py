"""The layer graphs h_s and g_s (spec sections 4.3, 6 and 9.2): shapes for a picture size,
the memory estimate, and running a layer list on a tensor."""

from .errors import InvalidModelError, LimitError
from .model import ConvLayer
from .ops import apply_layer, conv_out_size

MAX_SIDE = 1 << 24          # the tensor limit (implementation limit, 2.3): more rows or columns is *limit exceeded*


def padded_size(model, width, height):
    """Wp, Hp: width and height rounded up to a multiple of pad_multiple (section 3)."""
    m = model.pad_multiple
    return -(-width // m) * m, -(-height // m) * m


def walk_shapes(layers, shape, name):
    """Shapes [(c, h, w), ...] of the input and of every layer's output (section 4.3)."""
    shapes = [shape]
    c, h, w = shape
    for k, layer in enumerate(layers):
        if isinstance(layer, ConvLayer):
            if layer.cin != c:
                raise InvalidModelError("%s layer %d: cin %d but receives %d channels" % (name, k, layer.cin, c))
            h, w = conv_out_size(layer, h, w)
            c = layer.cout
            for dim, v in (("height", h), ("width", w)):     # the height first, then the width
                if v < 1:
                    raise InvalidModelError("%s layer %d: output %s %d below 1" % (name, k, dim, v))
                if v > MAX_SIDE:
                    raise LimitError("%s layer %d: output %s %d above the tensor limit 2^24" % (name, k, dim, v))
        shapes.append((c, h, w))
    return shapes


def check_graph(model, width, height):
    """Section 4.3 for one picture size; returns (h_s shapes, g_s shapes)."""
    wp, hp = padded_size(model, width, height)
    hy, wy = hp // model.y_down, wp // model.y_down
    hs = walk_shapes(model.h_s, (model.n_z, hp // model.z_down, wp // model.z_down), "h_s")
    if hs[-1] != (2 * model.n_y, hy, wy):
        raise InvalidModelError("h_s ends with %s, not %s" % (hs[-1], (2 * model.n_y, hy, wy)))
    gs = walk_shapes(model.g_s, (model.n_y, hy, wy), "g_s")
    if gs[-1] != (3, hp, wp):
        raise InvalidModelError("g_s ends with %s, not %s" % (gs[-1], (3, hp, wp)))
    return hs, gs


STRIPE_BYTES = 48 << 20     # libwai-core's automatic stripe height keeps g_s's pair within this (10)
HS_STRIPE_BYTES = 8 << 20   # and h_s's within this (9.2, 10)


def stripe_window(layer, in_rows, o0, o1):
    """Section 10: the input rows [a, b) of a layer whose run on its own gives output rows
    [o0, o1) exactly, and `base`, the full output row of that run's row 0."""
    if not isinstance(layer, ConvLayer):
        return o0, o1, o0                       # leaky ReLU, IGDN: position by position
    s, p, k = layer.stride, layer.pad, layer.kh
    if layer.type == 2:                         # transposed conv
        a = min(-((o0 + p - k + 1) // -s), o0 // s)
        a = max(0, min(a, in_rows - 1))
        b = (o1 - 1 + p) // s + 1
    else:                                       # conv
        a = max(0, min(o0 * s - p, in_rows - 1))
        a -= a % s
        b = (o1 - 1) * s - p + k
    b = max(a + 1, min(b, in_rows))
    while True:
        base = a * s if layer.type == 2 else a // s
        rows = conv_out_size(layer, b - a, 1)[0]
        if rows >= 1 and base + rows >= o1:
            return a, b, base
        if b >= in_rows:
            raise AssertionError("section 10: no window reaches output row %d" % o1)
        b += 1                                  # at b = in_rows it always reaches o1


def stripe_rows_auto(model, gs):
    """libwai-core's automatic stripe height (10): the largest pair of g_s within STRIPE_BYTES,
    in multiples of y_down."""
    hp = gs[-1][1]
    pair = max(n(a) + n(b) for a, b in zip(gs, gs[1:]))
    rows = min(STRIPE_BYTES * hp // (4 * pair), hp) // model.y_down * model.y_down
    return max(rows, model.y_down)


def hs_stripe_rows(model, hs, stripe_rows):
    """libwai-core's h_s stripe height (9.2): stripe_rows // y_down (at least 1) when set, else
    the largest pair of h_s within HS_STRIPE_BYTES, in multiples of z_down / y_down."""
    if stripe_rows:
        return max(stripe_rows // model.y_down, 1)
    hy = hs[-1][1]
    pair = max(n(a) + n(b) for a, b in zip(hs, hs[1:]))
    unit = model.z_down // model.y_down if model.z_down % model.y_down == 0 else 1
    rows = min(HS_STRIPE_BYTES * hy // (4 * pair), hy) // unit * unit
    return max(rows, unit)


def stripe_windows(layers, shapes, disp_y, disp_h, rows):
    """The stripes of `rows` rows covering [disp_y, disp_y + disp_h) of the output of `layers`
    (g_s or h_s; `shapes` from walk_shapes): for each, its output rows (o0, o1) and per layer
    the input window (a, b) of section 10."""
    rows = min(rows, disp_h)
    for y0 in range(disp_y, disp_y + disp_h, rows):
        o0, o1 = y0, min(y0 + rows, disp_y + disp_h)
        win = [None] * len(layers)
        a, b = o0, o1
        for k in reversed(range(len(layers))):
            a, b, _ = stripe_window(layers[k], shapes[k][1], a, b)
            win[k] = (a, b)
        yield (o0, o1), win


def stripe_tensor_max(layers, shapes, disp_y, disp_h, rows):
    """Q_gs (Q_hs) of 9.2: the largest window tensor (input or output of a layer's run, or the
    stripe of the list's output) over the stripes of `rows` rows covering [disp_y, disp_y +
    disp_h) of the output of `layers` (g_s or h_s; `shapes` from walk_shapes)."""
    q = 0
    for (o0, o1), win in stripe_windows(layers, shapes, disp_y, disp_h, rows):
        q = max(q, shapes[-1][0] * (o1 - o0) * shapes[-1][2])
        for layer, (a, b), (c, _, w), (co, _, wo) in zip(layers, win, shapes, shapes[1:]):
            out_rows = conv_out_size(layer, b - a, 1)[0] if isinstance(layer, ConvLayer) else b - a
            q = max(q, c * (b - a) * w, co * out_rows * wo)
    return q


def stripe_kept_sum(layers, shapes, disp_y, disp_h, rows):
    """K_gs of 9.2: over the levels that keep rows (the input of a conv or transposed conv with
    another before it in the list), the sum of each level's largest c * (r1 - r0') * w over two
    neighbouring stripes, where [r0, r1) is its window in one stripe and r0' the next one's
    window start (where they overlap)."""
    keeps = [isinstance(l, ConvLayer) and any(isinstance(e, ConvLayer) for e in layers[:k])
             for k, l in enumerate(layers)]
    kmax = [0] * len(layers)
    prev = None
    for _, win in stripe_windows(layers, shapes, disp_y, disp_h, rows):
        if prev:
            for k, (c, _, w) in enumerate(shapes[:-1]):
                if keeps[k] and prev[k][1] > win[k][0]:
                    kmax[k] = max(kmax[k], c * (prev[k][1] - win[k][0]) * w)
        prev = win
    return sum(kmax)


def n(shape):
    return shape[0] * shape[1] * shape[2]


def memory_estimate(model, hs, gs, width, height, disp_y, disp_h, stripe_rows=0):
    """`work` of section 9.2, in bytes: g_s in stripes of `stripe_rows` rows (0: libwai-core's
    automatic height) over the display rows, h_s in stripes over all rows of y."""
    z, y = n(hs[0]), n(gs[0])
    rows = stripe_rows or stripe_rows_auto(model, gs)
    q_gs = stripe_tensor_max(model.g_s, gs, disp_y, disp_h, rows)
    k_gs = stripe_kept_sum(model.g_s, gs, disp_y, disp_h, rows)
    hy = hs[-1][1]
    q_hs = stripe_tensor_max(model.h_s, hs, 0, hy, min(hs_stripe_rows(model, hs, stripe_rows), hy))
    return 3 * width * height + 4 * y + max(4 * z + y + 8 * q_hs, 8 * q_gs + 4 * k_gs)


def run(layers, x):
    """Apply the layers in order (section 6)."""
    for layer in layers:
        x = apply_layer(x, layer)
    return x
