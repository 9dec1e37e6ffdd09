#version 450
// leaky ReLU (spec 5.4): y = x for x >= 0, else (x * slope_q16 + 2^15) >> 16 in int64.
#include "common.glsl"

void main()
{
    const int gid = element_index();
    if (gid < 0) return;
    const int v = x[gid];
    y[gid] = v >= 0 ? v : int((int64_t(v) * int64_t(p.slope) + 32768l) >> 16);
}
