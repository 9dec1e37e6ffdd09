"""Stream units (spec section 2): framing, the sequence header unit (2.1), the frame unit (2.2)
and the search for a candidate unit when resynchronising (2.4).

The framing checks look only at a unit's first 12 bytes; the unit parsers then get the complete
unit and apply the rest of the checking order.
"""

from dataclasses import dataclass

from .errors import BitstreamError, CrcError, LimitError, TruncatedError, UnsupportedError
from .fields import crc32, read

SEQ_START = b"WAIS"
FRAME_START = b"WAIF"
SEQ_FIXED = 96              # sequence header without an embedded model, CRC included
FRAME_OVERHEAD = 20         # frame unit header (16) + CRC (4)
MODEL_EMBEDDED = 1


class FramingError(Exception):
    """A framing failure (section 2, steps 1-4): the error, and where reading goes on."""

    def __init__(self, error, resync_from):
        super().__init__(str(error))
        self.error = error                  # a WaiError
        self.resync_from = resync_from      # the read position the search for a candidate starts at


def framing(data, pos, max_unit):
    """Section 2's framing at read position `pos` (at least one byte left).

    Returns (start code, unit size) of a complete unit, or raises FramingError."""
    n = len(data) - pos
    head = data[pos:pos + min(n, 4)]
    # 1. the first min(n, 4) bytes begin a start code
    if not (SEQ_START.startswith(head) or FRAME_START.startswith(head)):
        raise FramingError(BitstreamError("no unit starts at offset %d (bytes %s)" % (pos, head.hex())), pos)
    # 2. the start code and the size field are there
    need = 12 if head == SEQ_START else 8
    if n < 4 or n < need:
        raise FramingError(TruncatedError("the stream ends at offset %d, %d bytes into a unit"
                                          % (len(data), n)), pos + 1)
    # 3. the unit size: unit_size >= 96 for a sequence header; the unit size limit
    if head == SEQ_START:
        size = read(data, pos + 8, "u32")
        if size < SEQ_FIXED:
            raise FramingError(BitstreamError("sequence header at offset %d: unit_size %d below 96"
                                              % (pos, size)), pos + 1)
    else:
        size = FRAME_OVERHEAD + read(data, pos + 4, "u32")
    if size > max_unit:
        raise FramingError(LimitError("unit at offset %d: %d bytes, above the unit size limit %d"
                                      % (pos, size, max_unit)), pos + 1)
    # 4. the whole unit is present
    if n < size:
        raise FramingError(TruncatedError("the stream ends inside the unit at offset %d (%d of %d bytes)"
                                          % (pos, n, size)), pos + 1)
    return head, size


def find_candidate(data, pos, max_unit):
    """Section 2.4's search from `pos`: the offset of the first candidate (or len(data)), and
    whether the stream ended inside a possible candidate on the way (*truncated*)."""
    ended_inside = False
    p = pos
    while p < len(data):
        p = _next_start(data, p)
        if p >= len(data):
            break
        n = len(data) - p
        head = data[p:p + 4]
        if n < 4:                                   # 1 to 3 final bytes that begin a start code
            ended_inside = True
        elif n < (12 if head == SEQ_START else 8):  # a start code without its 12 or 8 bytes
            ended_inside = True
        else:
            if head == SEQ_START:
                size = read(data, p + 8, "u32")
                plausible = size >= SEQ_FIXED
            else:
                p_size = read(data, p + 4, "u32")
                size = FRAME_OVERHEAD + p_size
                plausible = p_size >= 20
            if plausible and size <= max_unit:
                if size > n:                        # a plausible unit size reaching past the end
                    ended_inside = True
                elif read(data, p + size - 4, "u32") == crc32(data[p:p + size - 4]):
                    return p, ended_inside
        p += 1
    return len(data), ended_inside


def _next_start(data, p):
    """The first offset >= p where the bytes (up to 4) begin a start code."""
    while p < len(data):
        head = data[p:p + 4]
        if SEQ_START.startswith(head) or FRAME_START.startswith(head):
            return p
        p += 1
    return p


@dataclass
class SequenceHeader:
    unit: bytes             # the whole unit, CRC included (an identical repeat is ignored)
    version_minor: int
    flags: int
    width: int
    height: int
    disp_x: int
    disp_y: int
    disp_w: int
    disp_h: int
    fps_num: int
    fps_den: int
    frame_count: int
    colour_primaries: int
    transfer: int
    matrix: int
    full_range: int
    model_sha256: bytes
    model: bytes            # the embedded model's bytes, or None


def parse_sequence_header(unit, pos):
    """Section 2.1's checks after the framing, on the complete unit found at offset `pos`:
    version_major, the CRC, then the field rules. Returns a SequenceHeader."""
    what = "sequence header at offset %d" % pos
    unit_size = len(unit)
    if unit[4] != 1:
        raise UnsupportedError("%s: version_major %d" % (what, unit[4]))
    if read(unit, unit_size - 4, "u32") != crc32(unit[:unit_size - 4]):
        raise CrcError(what)

    def f(off, kind="u32"):
        return read(unit, off, kind)

    h = SequenceHeader(unit, unit[5], f(6, "u16"), f(12), f(16), f(20), f(24), f(28), f(32),
                       f(36), f(40), f(44), unit[48], unit[49], unit[50], unit[51],
                       unit[52:84], None)
    model_size, reserved = f(84), f(88)
    if h.flags & ~MODEL_EMBEDDED:
        raise UnsupportedError("%s: unknown flags 0x%04x" % (what, h.flags))
    if h.matrix != 0:
        raise UnsupportedError("%s: matrix %d (only 0, identity, is defined)" % (what, h.matrix))
    if h.full_range != 1:
        raise UnsupportedError("%s: full_range %d (must be 1)" % (what, h.full_range))
    rules = [   # all *bitstream error*, in the spec's order; Python integers do not wrap
        (unit_size == SEQ_FIXED + model_size,
         "unit_size %d is not 96 + model_size %d" % (unit_size, model_size)),
        (bool(h.flags & MODEL_EMBEDDED) == (model_size != 0),
         "MODEL_EMBEDDED does not match model_size %d" % model_size),
        (1 <= h.width <= 65536, "width %d not in 1..65536" % h.width),
        (1 <= h.height <= 65536, "height %d not in 1..65536" % h.height),
        (h.disp_w >= 1 and h.disp_x + h.disp_w <= h.width,
         "display window x %d + w %d, width %d" % (h.disp_x, h.disp_w, h.width)),
        (h.disp_h >= 1 and h.disp_y + h.disp_h <= h.height,
         "display window y %d + h %d, height %d" % (h.disp_y, h.disp_h, h.height)),
        (h.fps_num >= 1 and h.fps_den >= 1, "frame rate %d/%d" % (h.fps_num, h.fps_den)),
        (reserved == 0, "reserved %d must be 0" % reserved),
    ]
    for ok, detail in rules:
        if not ok:
            raise BitstreamError("%s: %s" % (what, detail))
    if model_size:
        h.model = unit[92:92 + model_size]
    return h


@dataclass
class FrameUnit:
    offset: int
    frame_index: int
    payload: bytes


def parse_frame_unit(unit, pos):
    """Section 2.2's checks after the framing: the CRC, then P >= 20 and flags = 0."""
    what = "frame unit at offset %d" % pos
    p = len(unit) - FRAME_OVERHEAD
    if read(unit, 16 + p, "u32") != crc32(unit[:16 + p]):
        raise CrcError(what)
    if p < 20:
        raise BitstreamError("%s: payload_size %d below 20" % (what, p))
    flags = read(unit, 12, "u32")
    if flags != 0:
        raise BitstreamError("%s: flags 0x%x must be 0" % (what, flags))
    return FrameUnit(pos, read(unit, 8, "u32"), unit[16:16 + p])
