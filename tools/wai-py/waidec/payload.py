"""The WIH1 and WIH2 payloads (spec section 3) and one picture's decode (sections 1, 6, 7 and 8)."""

from bisect import bisect_left

import numpy as np

from .errors import BitstreamError
from .fields import read
from .graph import padded_size, run
from .ops import ACT_MAX, ACT_MIN
from .rans import RansDecoder

MAGIC = b"WIH1"
MAGIC2 = b"WIH2"        # version 1.1: a rate of a RATES model
UNIT_STEP = 4096


def parse_payload_header(payload, seq, model):
    """Returns (header size, rate or None for WIH1, z_size, y_size) after the checks of section 3
    (all *bitstream error*). The payload has at least 20 bytes: the frame unit checked P >= 20
    (2.2)."""
    rate = None
    if payload[0:4] == MAGIC:
        hsize = 20
        width, height, z_size, y_size = (read(payload, off, "u32") for off in (4, 8, 12, 16))
    elif payload[0:4] == MAGIC2:
        hsize = 24
        if len(payload) < 24:
            raise BitstreamError("WIH2 payload of %d bytes, below 24" % len(payload))
        width, height, rate, z_size, y_size = (read(payload, off, "u32") for off in (4, 8, 12, 16, 20))
        if model.n_rates == 0:
            raise BitstreamError("WIH2 payload but the model has no rate table (RATES)")
        if rate >= model.n_rates:
            raise BitstreamError("rate %d not below n_rates %d" % (rate, model.n_rates))
    else:
        raise BitstreamError("payload magic %r is not WIH1 or WIH2" % payload[0:4])
    if width != seq.width or height != seq.height:
        raise BitstreamError("payload size %dx%d but the sequence header says %dx%d"
                             % (width, height, seq.width, seq.height))
    if z_size < 4 or y_size < 4:
        raise BitstreamError("z_size %d / y_size %d below 4" % (z_size, y_size))
    if hsize + z_size + y_size != len(payload):
        raise BitstreamError("%d + z_size %d + y_size %d is not payload_size %d"
                             % (hsize, z_size, y_size, len(payload)))
    return hsize, rate, z_size, y_size


def scale_index(thresholds, s, qs=UNIT_STEP):
    """Section 7.4: the least k in [0, n_scales - 1) with s * 4096 <= threshold[k] * qs, else
    n_scales - 1 (Python integers: exact). `thresholds` is strictly increasing and qs > 0, so the
    products are too, and that k is the leftmost insertion point of s * 4096 among them."""
    return bisect_left(thresholds, s * 4096, key=lambda t: t * qs)


def decode_picture(payload, seq, model):
    """Decode one payload to the display window as RGB8 bytes (rows top to bottom, R G B)."""
    hsize, rate, z_size, y_size = parse_payload_header(payload, seq, model)
    # section 3: WIH1 has unit steps, WIH2 its rate's steps, per channel of y
    qsteps = [UNIT_STEP] * model.n_y if rate is None else model.qstep[rate]
    rsteps = [UNIT_STEP] * model.n_y if rate is None else model.rstep[rate]
    wp, hp = padded_size(model, seq.width, seq.height)
    hz, wz = hp // model.z_down, wp // model.z_down
    hy, wy = hp // model.y_down, wp // model.y_down

    # 7.3: z, channel by channel, rows, columns; table c for channel c
    dec = RansDecoder(payload, hsize, z_size, "z stream")
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
    dec = RansDecoder(payload, hsize + z_size, y_size, "y stream")
    index = [scale_index(model.thresholds, int(s), qsteps[c])
             for c in range(model.n_y) for s in scales[c].reshape(-1).tolist()]
    tables = model.y_tables
    v = np.array([dec.value(tables[k]) for k in index], dtype=np.int64).reshape(model.n_y, hy, wy)
    dec.finish()
    rs = np.array(rsteps, dtype=np.int64).reshape(model.n_y, 1, 1)
    y_hat = np.clip(v * rs + means, ACT_MIN, ACT_MAX)     # |v * rs| < 2^40: int64 is exact

    # 6 and 8: g_s, then the display window of the picture as RGB8
    r = run(model.g_s, y_hat)
    win = r[:, seq.disp_y:seq.disp_y + seq.disp_h, seq.disp_x:seq.disp_x + seq.disp_w]
    rgb = np.clip((win * 255 + (1 << 11)) >> 12, 0, 255).astype(np.uint8)
    return rgb.transpose(1, 2, 0).tobytes()      # [row][col][k], interleaved
