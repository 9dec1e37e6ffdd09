/* Reference kernels: the executable form of spec section 5. Plain loops with int64
 * accumulators; every other kernel set must produce exactly these integers. Row ranges
 * [oy0, oy1) partition the work: any split gives the same tensor as one call. */
#include <math.h>

#include "dsp.h"

/* Output columns accumulated at once: an int64 row tile on the stack (2 KiB). */
#define TILE 256
/* IGDN keeps x2 of every channel for a tile of positions: C * T int64 (32 KiB). */
#define IGDN_X2 4096
#define IGDN_TILE 64

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }


/* rshr of the spec conventions; the planted faults vec_rshr_* are misreadings of it that
 * `wai verify --kernels reference` on the conformance vectors must catch (vectors/README.md,
 * "Rule vectors"; tests/planted-faults.txt). */
static inline int64_t planted_rshr(int64_t v, unsigned s)
{
    if (!s) return v;
#if defined(WAI_PLANTED_FAULT_VEC_RSHR_AWAY)      /* ties away from zero */
    return v < 0 ? -((-v + ((int64_t)1 << (s - 1))) >> s) : (v + ((int64_t)1 << (s - 1))) >> s;
#elif defined(WAI_PLANTED_FAULT_VEC_RSHR_EVEN)    /* ties to even */
    int64_t q = v >> s, r = v - (q << s), h = (int64_t)1 << (s - 1);
    return r > h || (r == h && (q & 1)) ? q + 1 : q;
#elif defined(WAI_PLANTED_FAULT_VEC_RSHR_TRUNC)   /* C division: truncation toward zero */
    return (v + ((int64_t)1 << (s - 1))) / ((int64_t)1 << (s - 1) << 1);
#elif defined(WAI_PLANTED_FAULT_VEC_RSHR_INT32)   /* 2^(s-1) in 32 bits: INT32_MIN for s = 32 */
    return (v + (int32_t)((uint32_t)1 << (s - 1))) >> s;
#else
    return wai_rshr(v, s);
#endif
}

/* rshr, then the activation clamp: the last step of conv and convT. */
static inline int32_t conv_out(int64_t acc, unsigned shift)
{
#ifdef WAI_PLANTED_FAULT_VEC_ACC_INT32
    acc = (int32_t)(uint32_t)(uint64_t)acc;   /* planted: a 32-bit accumulator (wraps around) */
#endif
#if defined(WAI_PLANTED_FAULT_VEC_RSHR_AWAY) || defined(WAI_PLANTED_FAULT_VEC_RSHR_EVEN) || \
    defined(WAI_PLANTED_FAULT_VEC_RSHR_TRUNC) || defined(WAI_PLANTED_FAULT_VEC_RSHR_INT32)
    return wai_clamp_act(planted_rshr(acc, shift));
#endif
#ifdef WAI_PLANTED_FAULT_DSP_RSHR_TIE
    /* planted: ties round down instead of up */
    if (shift) acc = (acc + ((int64_t)1 << (shift - 1)) - 1) >> shift;
    return wai_clamp_act(acc);
#else
    return wai_clamp_act(wai_rshr(acc, shift));
#endif
}

uint32_t wai_isqrt64(uint64_t n)
{
    /* The double estimate is within a few units of the root (n rounds to 53 bits); the
     * integer steps then make it the exact floor. r * r cannot overflow: r <= 2^32 - 1. */
    uint64_t r = (uint64_t)sqrt((double)n);
    if (r > UINT32_MAX) r = UINT32_MAX;
#if defined(WAI_PLANTED_FAULT_VEC_ISQRT_DOUBLE)   /* planted: floor(sqrt(double)) as it is */
    return (uint32_t)r;
#elif defined(WAI_PLANTED_FAULT_VEC_ISQRT_STRICT) /* planted: the largest r with r * r < n */
    while (r * r >= n && r) r--;
    while ((r + 1) * (r + 1) < n) r++;
    return (uint32_t)r;
#elif defined(WAI_PLANTED_FAULT_VEC_ISQRT_NEAREST) /* planted: the root rounded to nearest */
    while (r * r > n) r--;
    while ((r + 1) * (r + 1) <= n) r++;
    return (uint32_t)(n - r * r > r ? r + 1 : r);
#endif
#ifndef WAI_PLANTED_FAULT_DSP_ISQRT
    while (r * r > n) r--;
#endif
    while (r < UINT32_MAX && (r + 1) * (r + 1) <= n) r++;
    return (uint32_t)r;
}

/* Spec 5.2. Loop order o, oy, i, ky, kx, ox: the innermost loop runs along an input row. */
static void conv_ref(const WaiLayer *l, const int32_t *in, int ih, int iw,
                     int32_t *out, int oh, int ow, int oy0, int oy1)
{
    const int cin = l->cin, kh = l->kh, kw = l->kw, s = l->stride, pad = l->pad;
    int64_t acc[TILE];

    for (int o = 0; o < l->cout; o++) {
        const int16_t *wo = l->weight + (size_t)o * cin * kh * kw;
        for (int oy = oy0; oy < oy1; oy++) {
            int32_t *dst = out + ((size_t)o * oh + oy) * ow;
            for (int ox0 = 0; ox0 < ow; ox0 += TILE) {
                const int n = imin(TILE, ow - ox0);
                for (int t = 0; t < n; t++) acc[t] = l->bias[o];
                for (int i = 0; i < cin; i++) {
                    for (int ky = 0; ky < kh; ky++) {
                        const int iy = oy * s - pad + ky;
                        if (iy < 0 || iy >= ih) continue; /* zero padding */
                        const int32_t *src = in + ((size_t)i * ih + iy) * iw;
                        for (int kx = 0; kx < kw; kx++) {
#ifdef WAI_PLANTED_FAULT_VEC_CONV_KSWAP
                            /* planted: weights read as [i][kx][ky] (kh and kw swapped) */
                            const int64_t wv = wo[(i * kw + kx) * kh + ky];
#else
                            const int64_t wv = wo[(i * kh + ky) * kw + kx];
#endif
                            /* the ox of this tile with ix = ox*s - pad + kx in [0, iw) */
                            const int lo = imax(wai_ceil_div(pad - kx, s), ox0);
                            const int hi = imin(wai_floor_div(iw - 1 + pad - kx, s) + 1, ox0 + n);
                            for (int ox = lo; ox < hi; ox++)
                                acc[ox - ox0] += src[ox * s - pad + kx] * wv;
                        }
                    }
                }
                for (int t = 0; t < n; t++) dst[ox0 + t] = conv_out(acc[t], l->shift[o]);
            }
        }
    }
}

/* Spec 5.3 in gather form for rows: output row oy takes the taps ky with
 * (oy + pad - ky) mod stride = 0 from input row iy = (oy + pad - ky) / stride. Within a row,
 * each (kx, ix) adds to ox = ix*stride - pad + kx, the same sum as the spec's scatter. */
static void convt_ref(const WaiLayer *l, const int32_t *in, int ih, int iw,
                      int32_t *out, int oh, int ow, int oy0, int oy1)
{
    const int cin = l->cin, kh = l->kh, kw = l->kw, s = l->stride, pad = l->pad;
    int64_t acc[TILE];

    for (int o = 0; o < l->cout; o++) {
        const int16_t *wo = l->weight + (size_t)o * cin * kh * kw;
        for (int oy = oy0; oy < oy1; oy++) {
            int32_t *dst = out + ((size_t)o * oh + oy) * ow;
            for (int ox0 = 0; ox0 < ow; ox0 += TILE) {
                const int n = imin(TILE, ow - ox0);
                for (int t = 0; t < n; t++) acc[t] = l->bias[o];
                for (int i = 0; i < cin; i++) {
                    for (int ky = 0; ky < kh; ky++) {
                        const int num = oy + pad - ky;
                        if (num < 0 || num % s) continue;
                        const int iy = num / s;
                        if (iy >= ih) continue;
                        const int32_t *src = in + ((size_t)i * ih + iy) * iw;
                        for (int kx = 0; kx < kw; kx++) {
#ifdef WAI_PLANTED_FAULT_VEC_CONVT_FLIP
                            /* planted: the kernel flipped, as in a convolution */
                            const int64_t wv = wo[(i * kh + (kh - 1 - ky)) * kw + (kw - 1 - kx)];
#else
                            const int64_t wv = wo[(i * kh + ky) * kw + kx];
#endif
                            /* the ix whose ox = ix*s - pad + kx falls in [ox0, ox0 + n) */
                            const int lo = imax(wai_ceil_div(ox0 + pad - kx, s), 0);
#ifdef WAI_PLANTED_FAULT_DSP_CONVT_EDGE
                            /* planted: the last input column never contributes */
                            const int hi = imin(wai_floor_div(ox0 + n - 1 + pad - kx, s) + 1, iw - 1);
#else
                            const int hi = imin(wai_floor_div(ox0 + n - 1 + pad - kx, s) + 1, iw);
#endif
                            const int off = kx - pad - ox0; /* acc index of ix is ix*s + off */
                            for (int ix = lo; ix < hi; ix++)
                                acc[ix * s + off] += src[ix] * wv;
                        }
                    }
                }
                for (int t = 0; t < n; t++) dst[ox0 + t] = conv_out(acc[t], l->shift[o]);
            }
        }
    }
}

/* Spec 5.5, in place. All channels' x2 of a tile of positions are computed first, so a
 * channel's output can overwrite its input (Y[i] needs only x2 and its own x[i]). */
static void igdn_ref(const WaiLayer *l, int32_t *x, int h, int w, int y0, int y1)
{
    const int C = l->cin;
#ifdef WAI_PLANTED_FAULT_VEC_IGDN_SHIFT16
    const unsigned shift = 14;   /* planted: the shift of gamma_shift 16 (the tiny model's) for all */
#else
    const unsigned shift = 6 + (unsigned)l->gamma_shift / 2;
#endif
    const size_t plane = (size_t)h * w;
    const int T = imax(1, imin(IGDN_TILE, IGDN_X2 / C)); /* C <= 512 (checked by the graph) */
    int64_t x2[IGDN_X2];
    int64_t acc[IGDN_TILE];

    for (int py = y0; py < y1; py++) {
        for (int px0 = 0; px0 < w; px0 += T) {
            const int n = imin(T, w - px0);
            int32_t *base = x + (size_t)py * w + px0;
            for (int j = 0; j < C; j++) {
                const int32_t *xj = base + j * plane;
                for (int t = 0; t < n; t++)
#ifdef WAI_PLANTED_FAULT_VEC_IGDN_X2_FLOOR
                    x2[j * T + t] = ((int64_t)xj[t] * xj[t]) >> 12;   /* planted: no rounding */
#else
                    x2[j * T + t] = ((int64_t)xj[t] * xj[t] + (1 << 11)) >> 12;
#endif
            }
            for (int i = 0; i < C; i++) {
                const int32_t *gi = l->gamma + (size_t)i * C;
                for (int t = 0; t < n; t++) acc[t] = l->beta[i];
                for (int j = 0; j < C; j++) {
#ifdef WAI_PLANTED_FAULT_VEC_IGDN_GAMMA_T
                    const int64_t g = l->gamma[(size_t)j * C + i];   /* planted: gamma[j][i] */
                    (void)gi;
#else
                    const int64_t g = gi[j];
#endif
                    for (int t = 0; t < n; t++) acc[t] += g * x2[j * T + t];
                }
                int32_t *xi = base + i * plane;
                for (int t = 0; t < n; t++) {
                    const int64_t r = wai_isqrt64((uint64_t)acc[t]);
                    xi[t] = wai_clamp_act(planted_rshr(xi[t] * r, shift));
                }
            }
        }
    }
}

/* Spec 5.4. */
static void lrelu_ref(int32_t *x, size_t n, int32_t slope_q16)
{
    for (size_t k = 0; k < n; k++)
        if (x[k] < 0) {
#if defined(WAI_PLANTED_FAULT_VEC_LRELU_TRUNC)    /* planted: C division, toward zero */
            x[k] = (int32_t)(((int64_t)x[k] * slope_q16) / 65536);
#elif defined(WAI_PLANTED_FAULT_VEC_LRELU_FLOOR)  /* planted: no rounding term */
            x[k] = (int32_t)(((int64_t)x[k] * slope_q16) >> 16);
#elif defined(WAI_PLANTED_FAULT_VEC_LRELU_AWAY)   /* planted: ties away from zero */
            x[k] = (int32_t)-((-(int64_t)x[k] * slope_q16 + (1 << 15)) >> 16);
#else
            x[k] = (int32_t)(((int64_t)x[k] * slope_q16 + (1 << 15)) >> 16);
#endif
        }
}

/* The encoder's float sums (dsp.h, WaiAnaConv), element by element in the stated order. */
void wai_ana_conv_ref(const WaiAnaConv *a)
{
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
    for (int n = 0; n < a->no; n++)
        for (int x = 0; x < a->nx; x++) {
            float acc = a->bias[n];
            for (int i = 0; i < a->cin; i++)
                for (int t = 0; t < a->ntaps; t++) {
                    /* toff may be negative (a tap left of the first column): signed offsets */
                    const float *xi = a->in + (size_t)i * a->cstride;
                    const float p = a->w[((size_t)i * a->kk + a->widx[t]) * a->wstride + n] *
                                    xi[a->toff[t] + x];
                    acc = acc + p;
                }
            a->out[(size_t)n * a->ostride + x] = acc;
        }
}

void wai_dsp_init_ref(WaiDsp *dsp)
{
    /* a whole assignment: no backend, no stale pointer from a stack-allocated table */
    *dsp = (WaiDsp){ .conv = conv_ref, .convt = convt_ref, .igdn = igdn_ref, .lrelu = lrelu_ref,
                     .ana_conv = wai_ana_conv_ref };
}
