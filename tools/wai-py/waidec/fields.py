"""Little-endian field reading (spec conventions) and CRC32."""

import struct
import zlib

import numpy as np


def crc32(data):
    """CRC-32 of ISO-HDLC / IEEE 802.3, the same function as zlib's crc32() (spec conventions)."""
    return zlib.crc32(data) & 0xFFFFFFFF


assert crc32(b"123456789") == 0xCBF43926

_FORMATS = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q",
            "i16": "<h", "i32": "<i", "i64": "<q"}
_SIZES = {k: struct.calcsize(v) for k, v in _FORMATS.items()}
_NUMPY = {k: np.dtype(v) for k, v in
          {"u8": "<u1", "u16": "<u2", "u32": "<u4", "u64": "<u8",
           "i16": "<i2", "i32": "<i4", "i64": "<i8"}.items()}


def read(data, offset, kind):
    """One little-endian integer of type `kind` ('u8', 'u32', 'i64', ...) at `offset`."""
    return struct.unpack_from(_FORMATS[kind], data, offset)[0]


class Cursor:
    """Reads consecutive fields from `data[start:end]`; running past `end` raises `error(...)`.

    `error` is the exception class for a read past the end (the caller decides which class
    of the spec that is: *truncated* for a unit, *invalid model* for a model record).
    """

    def __init__(self, data, start, end, error, what, layout=None):
        self.data, self.pos, self.end, self.error, self.what = data, start, end, error, what
        self.layout = layout    # if a list: (field, offset, size) of every field read, in order

    def need(self, n, field):
        if self.pos + n > self.end:
            raise self.error("%s: %s runs past the end (needs %d bytes at offset %d, %d left)"
                             % (self.what, field, n, self.pos, self.end - self.pos))

    def get(self, kind, field):
        n = _SIZES[kind]
        self.need(n, field)
        if self.layout is not None:
            self.layout.append((field, self.pos, n))
        v = read(self.data, self.pos, kind)
        self.pos += n
        return v

    def array(self, kind, count, field):
        """`count` values of `kind` as a numpy int64 array (little-endian in the file)."""
        n = _SIZES[kind] * count
        self.need(n, field)
        if self.layout is not None:
            self.layout.append((field, self.pos, n))
        a = np.frombuffer(self.data, dtype=_NUMPY[kind], count=count, offset=self.pos)
        self.pos += n
        return a.astype(np.int64)
