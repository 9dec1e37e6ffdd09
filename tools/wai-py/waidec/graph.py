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


def memory_estimate(hs, gs, width, height):
    """`work` of section 9.2, in bytes."""
    def n(shape):
        return shape[0] * shape[1] * shape[2]

    p_hs = max(n(a) + n(b) for a, b in zip(hs, hs[1:]))
    p_gs = max(n(a) + n(b) for a, b in zip(gs, gs[1:]))
    z, y = n(hs[0]), n(gs[0])
    return 4 * (p_hs + p_gs + 2 * y) + 8 * z + 13 * y + 3 * width * height


def run(layers, x):
    """Apply the layers in order (section 6)."""
    for layer in layers:
        x = apply_layer(x, layer)
    return x
