#version 450
// RGB8 output (spec 8): the display window of the g_s output R[3][Hp][Wp] as interleaved bytes,
// out = clamp((R * 255 + 2^11) >> 12, 0, 255) (int64 in the spec; see rgb8()). The bytes are
// packed tightly (rows of 3 dw bytes, no padding, one row after the other), 4 to a word, byte j
// of a word in bits 8j .. 8j + 7 (the host reads the words as little-endian bytes). One
// invocation converts 4 pixels of the window in row-major order, which are 12 bytes, exactly 3
// words: no word is shared by two invocations, whatever dw is. A group of 4 may end one row and
// start the next; the last group may have 1 to 3 pixels, and its last word is zero past the end.
#include "common.glsl"

// The push constant block of common.glsl, read as the window of this pass.
#define HP p.ih      // padded height of R
#define WP p.iw      // padded width of R
#define DH p.oh      // window
#define DW p.ow
#define DY p.kh
#define DX p.kw      // p.n: invocations, ceil(dw dh / 4)

// The int64 formula, in int32: it is non-decreasing in v, 0 from v = -9 down and 255 from
// v = 4105 up, so clamping v to [-16, 4112] first changes no output and keeps v 255 far from
// overflow (int64 is slow or emulated on many GPUs).
uint rgb8(int v)
{
    const int c = (clamp(v, -16, 4112) * 255 + 2048) >> 12;
    return uint(clamp(c, 0, 255));
}

void main()
{
    const int gid = element_index();
    if (gid < 0) return;
    const uint dw = uint(DW), n_px = dw * uint(DH), plane = uint(HP) * uint(WP);
    const uint q0 = 4u * uint(gid);
    uint row = q0 / dw, col = q0 - row * dw; // one division: the pixels after q0 step along
    uint w0 = 0u, w1 = 0u, w2 = 0u;
    for (uint j = 0u; j < 4u && q0 + j < n_px; j++, col++) {
        if (col == dw) {
            col = 0u;
            row++;
        }
        const uint i = (uint(DY) + row) * uint(WP) + uint(DX) + col;
        const uint r = rgb8(x[i]), g = rgb8(x[plane + i]), b = rgb8(x[2u * plane + i]);
        // pixel j is bytes 3j .. 3j + 2 of the 12
        if (j == 0u) {
            w0 |= r | g << 8 | b << 16;
        } else if (j == 1u) {
            w0 |= r << 24;
            w1 |= g | b << 8;
        } else if (j == 2u) {
            w1 |= r << 16 | g << 24;
            w2 |= b;
        } else {
            w2 |= r << 8 | g << 16 | b << 24;
        }
    }
    const uint words = (3u * n_px + 3u) / 4u, base = 3u * uint(gid);
    const uint w[3] = uint[3](w0, w1, w2);
    for (uint k = 0u; k < 3u && base + k < words; k++) {
#ifdef WAI_PLANTED_FAULT_VK_RGB_TAIL
        // planted: a word that runs past the end of its first byte's row is not written
        const uint fb = 4u * (base + k), row_bytes = 3u * dw;
        if ((fb + 3u) / row_bytes != fb / row_bytes || fb + 3u >= 3u * n_px) continue;
#endif
        y[base + k] = int(w[k]);
    }
}
