#version 450
// inverse GDN (spec 5.5): one output element (channel i, position q) per invocation:
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
    const int gid = element_index();
    if (gid < 0) return;
    const int C = p.cin;
    const int plane = p.oh * p.ow;
    const int i = gid / plane;
    const int q = gid - i * plane;

    int64_t acc = b[i];
    int xi = q, gi = i * C;
    for (int j = 0; j < C; j++, xi += plane, gi++) {
        const int64_t v = int64_t(x[xi]);
        acc += int64_t(w[gi]) * ((v * v + 2048l) >> 12);
    }
    const int64_t r = int64_t(uint64_t(isqrt64(uint64_t(acc))));
    y[gid] = clamp_act(rshr(int64_t(x[gid]) * r, uint(p.shift)));
}
