"""rANS decoding of values with escape and bypass codes (spec sections 7.1 and 7.2).

One symbol at a time, in plain Python integers: readable and exact (the state is a 32-bit
unsigned value; Python integers do not overflow, and the spec's bounds keep it below 2^32).
"""

from bisect import bisect_right

from .errors import BitstreamError, TruncatedError

RANS_L = 1 << 23            # lower bound of the normalised state ("L = 2^23" of 7.1)
PROB_BITS = 16              # M = 65536
MAX_VALUE = 65535           # every decoded value must satisfy |v| <= 65535
MAX_NIBBLES = 8             # nb <= 8


class RansDecoder:
    """Decodes one rANS stream: `data[start:start + size]`."""

    def __init__(self, data, start, size, what):
        self.data = data
        self.pos = start            # absolute read position in `data`
        self.end = start + size     # the stream's S bytes end here
        self.what = what
        # S >= 4 is checked by the payload header; the initial state is bytes 0..3, LE.
        x = int.from_bytes(data[start:start + 4], "little")
        if not RANS_L <= x < 1 << 31:
            raise BitstreamError("%s: initial rANS state 0x%08x not in [2^23, 2^31)" % (what, x))
        self.x = x
        self.pos += 4

    def _advance(self, start, freq, c):
        """x = freq * (x >> 16) + c - start, then renormalise by bytes."""
        x = freq * (self.x >> PROB_BITS) + c - start
        while x < RANS_L:
            if self.pos == self.end:
                raise TruncatedError("%s: the rANS stream ends inside a symbol" % self.what)
            x = (x << 8) | self.data[self.pos]
            self.pos += 1
        self.x = x

    def symbol(self, table):
        """Decode one symbol with `table` (freq, cdf): the s with cdf[s] <= c < cdf[s+1]."""
        c = self.x & 0xFFFF
        s = bisect_right(table.cdf, c) - 1       # cdf[0] = 0 <= c < 65536 = cdf[L+1]
        self._advance(table.cdf[s], table.freq[s], c)
        return s

    def nibble(self):
        """A bypass nibble k: start 4096*k, freq 4096."""
        c = self.x & 0xFFFF
        k = c >> 12
        self._advance(4096 * k, 4096, c)
        return k

    def value(self, table):
        """A value coded with `table` (7.2): in-range symbol, or escape + bypass code."""
        s = self.symbol(table)
        if s < table.length:
            v = s + table.offset
        else:
            # bypass code of u: the length nb as nibbles (15 continues), then nb nibbles of u
            nb = 0
            while True:
                k = self.nibble()
                nb += k
                if nb > MAX_NIBBLES:
                    raise BitstreamError("%s: bypass code of more than 8 nibbles" % self.what)
                if k != 15:
                    break
            u = 0
            for i in range(nb):
                u |= self.nibble() << (4 * i)
            if u & 1:
                d = -(u + 1) // 2
            else:
                d = u // 2 + table.length
            v = d + table.offset
        if abs(v) > MAX_VALUE:
            raise BitstreamError("%s: decoded value %d outside -65535..65535" % (self.what, v))
        return v

    def finish(self):
        """After the last symbol: x = 2^23 and every byte consumed."""
        if self.x != RANS_L or self.pos != self.end:
            raise BitstreamError("%s: the rANS stream does not end cleanly (state 0x%x, %d bytes left)"
                                 % (self.what, self.x, self.end - self.pos))
