#version 450
// transposed conv2d (spec 5.3) in gather form: output row oy takes the taps ky with
// (oy + pad - ky) mod stride == 0 from input row iy = (oy + pad - ky) / stride in [0, ih);
// columns likewise. The sum is the spec's scatter sum, term for term. 4 output channels per
// invocation (see dot4 in common.glsl).
#include "common.glsl"

void main()
{
    // Invocations are ordered by output phase (oy mod s, ox mod s), then position: the lanes of
    // a subgroup share their tap set (no divergence) and read consecutive input columns.
    // p.n counts ceil(cout / 4) * s^2 * ceil(oh / s) * ceil(ow / s) invocations; a few fall
    // outside the picture.
    const int gid = element_index();
    if (gid < 0) return;
    const int s = p.stride;
    const int qw = (p.ow + s - 1) / s, qh = (p.oh + s - 1) / s;
    int t = gid / qw;
    const int qx = gid - t * qw;
    const int qy = t % qh;
    t /= qh;
    const int px = t % s;
    t /= s;
    const int py = t % s;
    const int o0 = 4 * (t / s);
    const int oy = qy * s + py, ox = qx * s + px;
    if (oy >= p.oh || ox >= p.ow) return;

    const int ny = oy + p.pad, nx = ox + p.pad;      // both >= 0
    const int plane = p.ih * p.iw, taps = p.kh * p.kw, ws = p.cin * taps;

    i64vec4 acc = i64vec4(0l);
    // ky runs over ny mod s, ny mod s + s, ... while iy = (ny - ky) / s >= 0
    for (int ky = ny % s; ky < p.kh && ky <= ny; ky += s) {
        const int iy = (ny - ky) / s;
        if (iy >= p.ih) continue;
        for (int kx = nx % s; kx < p.kw && kx <= nx; kx += s) {
            const int ix = (nx - kx) / s;
#ifdef WAI_PLANTED_FAULT_VK_CONVT_EDGE
            if (ix >= p.iw - 1) continue;   // planted: the last input column never contributes
#else
            if (ix >= p.iw) continue;
#endif
            acc += dot4(iy * p.iw + ix, o0 * ws + ky * p.kw + kx, plane, taps, ws);
        }
    }
    store4(o0, oy * p.ow + ox, p.oh * p.ow, acc);
}
