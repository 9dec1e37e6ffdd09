#version 450
// inverse GDN (spec 5.5): for each output element (channel i, position q)
//   n_i = beta[i] + sum_j gamma[i][j] * ((x_j * x_j + 2^11) >> 12),  r = isqrt(n_i),
//   Y[i] = clamp(rshr(x_i * r, 6 + g/2)).
// Out of place (the host ping-pongs), so no invocation reads what another one wrote.
#include "common.glsl"

// floor(sqrt(n)), exact for every uint64: the binary digit-by-digit method (32 steps), no
// floating point. The host reads n as uint64 like the reference kernel's cast does.
uint isqrt64(uint64_t n)
{
    uint64_t res = 0ul;
    uint64_t bit = 1ul << 62;
    while (bit > n) bit >>= 2;
    while (bit != 0ul) {
        if (n >= res + bit) {
            n -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
#ifdef WAI_PLANTED_FAULT_VK_ISQRT
    if (n != 0ul && n == res) res += 1ul;   // planted: rounds up just below (r+1)^2 - 1
#endif
    return uint(res);
}

void main()
{
    // 4 channels i0 .. i0 + 3 at position q per invocation: each x2_j is computed once for the
    // four; the host pads gamma (rows) and beta to a multiple of 4 channels with zeros.
    const int gid = element_index();
    if (gid < 0) return;
    const int C = p.cin;
    const int plane = p.oh * p.ow;
    const int i0 = 4 * (gid / plane);
    const int q = gid - (i0 / 4) * plane;

    i64vec4 acc = i64vec4(b[i0], b[i0 + 1], b[i0 + 2], b[i0 + 3]);
    int xi = q, gi = i0 * C;
    for (int j = 0; j < C; j++, xi += plane, gi++) {
        const int64_t v = int64_t(x[xi]);
        const int64_t x2 = (v * v + 2048l) >> 12;
        acc += i64vec4(w[gi], w[gi + C], w[gi + 2 * C], w[gi + 3 * C]) * x2;
    }
    for (int t = 0; t < 4 && i0 + t < C; t++) {
        const int k = (i0 + t) * plane + q;
        const int64_t r = int64_t(uint64_t(isqrt64(uint64_t(acc[t]))));
        y[k] = clamp_act(rshr(int64_t(x[k]) * r, uint(p.shift)));
    }
}
