#version 450
// RGB8 output (spec 8): the display window of the g_s output R[3][Hp][Wp] as interleaved bytes,
// out = clamp((R * 255 + 2^11) >> 12, 0, 255) in int64. The bytes are packed tightly (rows of
// 3 dw bytes, no padding, rows one after the other), 4 to a word, byte j of a word in bits
// 8j .. 8j + 7 (the host reads the words as little-endian bytes); one invocation per word, so
// a word may end one row and start the next, and the last word is zero-filled past the end.
#include "common.glsl"

// The push constant block of common.glsl, read as the window of this pass.
#define HP p.ih      // padded height of R
#define WP p.iw      // padded width of R
#define DH p.oh      // window
#define DW p.ow
#define DY p.kh
#define DX p.kw

uint rgb8(int v)
{
    const int64_t c = (int64_t(v) * 255l + 2048l) >> 12;
    return uint(c < 0l ? 0l : c > 255l ? 255l : c);
}

void main()
{
    const int gid = element_index();
    if (gid < 0) return;
    const uint row_bytes = 3u * uint(DW), n_bytes = row_bytes * uint(DH);
    const uint plane = uint(HP) * uint(WP);
    const uint b0 = 4u * uint(gid);
#ifdef WAI_PLANTED_FAULT_VK_RGB_TAIL
    // planted: a word that runs past the end of its first byte's row is not written
    if ((b0 + 3u) / row_bytes != b0 / row_bytes || b0 + 3u >= n_bytes) return;
#endif
    uint word = 0u;
    for (uint j = 0u; j < 4u; j++) {
        const uint b = b0 + j;
        if (b >= n_bytes) break;
        const uint row = b / row_bytes, r = b - row * row_bytes;
        const uint col = r / 3u, k = r - 3u * col;
        word |= rgb8(x[k * plane + (uint(DY) + row) * uint(WP) + uint(DX) + col]) << (8u * j);
    }
    y[gid] = int(word);
}
