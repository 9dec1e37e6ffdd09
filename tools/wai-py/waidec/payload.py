"""The WIH1 payload (spec section 3) and one picture's decode (sections 1, 6, 7 and 8)."""

from bisect import bisect_left

import numpy as np

from .errors import BitstreamError
from .fields import read
from .graph import padded_size, run
from .ops import ACT_MAX, ACT_MIN
from .rans import RansDecoder

MAGIC = b"WIH1"


def parse_payload_header(payload, seq):
    """Returns (z_size, y_size) after the checks of section 3 (all *bitstream error*). The
    payload has its 20 header bytes: the frame unit checked P >= 20 (2.2)."""
    if payload[0:4] != MAGIC:
        raise BitstreamError("payload magic %r is not WIH1" % payload[0:4])
    width, height, z_size, y_size = (read(payload, off, "u32") for off in (4, 8, 12, 16))
    if width != seq.width or height != seq.height:
        raise BitstreamError("payload size %dx%d but the sequence header says %dx%d"
                             % (width, height, seq.width, seq.height))
    if z_size < 4 or y_size < 4:
        raise BitstreamError("z_size %d / y_size %d below 4" % (z_size, y_size))
    if 20 + z_size + y_size != len(payload):
        raise BitstreamError("20 + z_size %d + y_size %d is not payload_size %d"
                             % (z_size, y_size, len(payload)))
    return z_size, y_size


def scale_index(thresholds, s):
    """Section 7.4: the least k in [0, n_scales - 1) with s <= threshold[k], else n_scales - 1.
    `thresholds` is strictly increasing, so that is the leftmost insertion point of s."""
    return bisect_left(thresholds, s)


def decode_picture(payload, seq, model):
    """Decode one payload to the display window as RGB8 bytes (rows top to bottom, R G B)."""
    z_size, y_size = parse_payload_header(payload, seq)
    wp, hp = padded_size(model, seq.width, seq.height)
    hz, wz = hp // model.z_down, wp // model.z_down
    hy, wy = hp // model.y_down, wp // model.y_down

    # 7.3: z, channel by channel, rows, columns; table c for channel c
    dec = RansDecoder(payload, 20, z_size, "z stream")
    z_hat = np.empty((model.n_z, hz, wz), dtype=np.int64)
    for c in range(model.n_z):
        table, median = model.z_tables[c], model.z_medians[c]
        vals = [dec.value(table) for _ in range(hz * wz)]
        z_hat[c] = np.clip(np.array(vals, dtype=np.int64) * 4096 + median, ACT_MIN, ACT_MAX).reshape(hz, wz)
    dec.finish()

    # 6: h_s gives scales (channels [0, n_y)) and means (channels [n_y, 2 n_y))
    p = run(model.h_s, z_hat)
    scales, means = p[:model.n_y], p[model.n_y:]

    # 7.4 and 7.5: y, each element with the table its scale selects
    dec = RansDecoder(payload, 20 + z_size, y_size, "y stream")
    index = [scale_index(model.thresholds, int(s)) for s in scales.reshape(-1).tolist()]
    tables = model.y_tables
    v = np.array([dec.value(tables[k]) for k in index], dtype=np.int64).reshape(model.n_y, hy, wy)
    dec.finish()
    y_hat = np.clip(v * 4096 + means, ACT_MIN, ACT_MAX)

    # 6 and 8: g_s, then the display window of the picture as RGB8
    r = run(model.g_s, y_hat)
    win = r[:, seq.disp_y:seq.disp_y + seq.disp_h, seq.disp_x:seq.disp_x + seq.disp_w]
    rgb = np.clip((win * 255 + (1 << 11)) >> 12, 0, 255).astype(np.uint8)
    return rgb.transpose(1, 2, 0).tobytes()      # [row][col][k], interleaved
