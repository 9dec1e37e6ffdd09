#version 450
// conv2d (spec 5.2): 4 output channels at one position per invocation, int64 accumulators,
// zero padding (the taps outside the input are skipped).
#include "common.glsl"

void main()
{
    const int gid = element_index();
    if (gid < 0) return;
    const int ox = gid % p.ow;
    const int oy = (gid / p.ow) % p.oh;
    const int o0 = 4 * (gid / (p.ow * p.oh));

    // the taps whose input row / column is inside the picture
    const int y0 = oy * p.stride - p.pad, x0 = ox * p.stride - p.pad;
    const int ky0 = max(0, -y0), ky1 = min(p.kh, p.ih - y0);
    const int kx0 = max(0, -x0), kx1 = min(p.kw, p.iw - x0);
    const int plane = p.ih * p.iw, taps = p.kh * p.kw, ws = p.cin * taps;

    i64vec4 acc = i64vec4(0l);
    for (int ky = ky0; ky < ky1; ky++)
        for (int kx = kx0; kx < kx1; kx++)
            acc += dot4((y0 + ky) * p.iw + x0 + kx, o0 * ws + ky * p.kw + kx, plane, taps, ws);
    store4(o0, oy * p.ow + ox, p.oh * p.ow, acc);
}
