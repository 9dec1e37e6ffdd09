/* A design study, not part of the build: an exact stride-1 convolution (3x3 taps, zero
 * padding; the decoder's operands: 12-bit weights in int16, activations in int32 within the
 * int16 range, as the VNNI set's one-half case) on AMX-INT8
 * tiles, checked against plain int64 sums on every output and timed on one core: the study
 * that preceded the library's AMX set (libwai-core/src/x86/dsp_avx512amx.c, which has the
 * same sums with the decoder's phases, halves and edges; docs/research/camera-size.md).
 *
 * Why the sums are exact. w = wh * 256 + wl with wh = w >> 8 in [-128, 127] and wl = w & 255 in
 * [0, 255]; likewise x = xh * 256 + xl. Then
 *   sum w x = 2^16 * sum wh xh + 2^8 * (sum wh xl + sum wl xh) + sum wl xl,
 * four int8 tile products (tdpbssd, tdpbsud, tdpbusd, tdpbuud) into three int32 tiles. A term
 * of the last is at most 255 * 255, of the middle one 2 * 128 * 255 in magnitude, so with at
 * most 32,768 terms per output no tile sum wraps; the three are combined in int64.
 *
 * Layout. The input is packed once per call into two byte planes (xh, xl), per row
 * [channel quad][column][4 channels], with a zero column at each end; a B tile (16 channel
 * quads x 16 columns) of tap (ky, kx) is then a tileloadd at the column offset kx with the
 * quad stride, so the taps need no copy. The weights are packed once per layer into A tiles
 * (16 output channels x 64 input channels) per tap and 64-channel block, wh and wl apart.
 *
 * With "peak": the core's tile peak instead, tdpbssd on four independent 16x16 int32
 * accumulator tiles, no loads in the loop (16,384 int8 multiply-adds per tdpbssd; the
 * decoder's operands take four int8 products each, so a quarter of that is theirs).
 *
 *   cc -O2 -mamx-tile -mamx-int8 -mavx512f tools/bench-amx-conv.c -o /tmp/amx-conv
 *   /tmp/amx-conv CIN COUT H W [REPS]    (CIN a multiple of 64, COUT of 16, W of 16)
 *   /tmp/amx-conv peak                   (gcc >= 11, Linux >= 5.16, a CPU with AMX) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#define K 3 /* taps per side */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

static uint64_t rng = 88172645463325252ull;
static int rr(int lo, int hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (int)(rng % (uint64_t)(hi - lo + 1));
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* out[o][y][x] = sum over c, ky, kx of w[o][c][ky][kx] * in[c][y + ky - 1][x + kx - 1] */
static void conv_ref(const int16_t *w, const int32_t *in, int cin, int cout, int h, int wd,
                     int64_t *out)
{
    for (int o = 0; o < cout; o++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < wd; x++) {
                int64_t s = 0;
                for (int c = 0; c < cin; c++)
                    for (int ky = 0; ky < K; ky++)
                        for (int kx = 0; kx < K; kx++) {
                            const int iy = y + ky - 1, ix = x + kx - 1;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                            s += (int64_t)w[((o * cin + c) * K + ky) * K + kx] *
                                 in[((size_t)c * h + iy) * wd + ix];
                        }
                out[((size_t)o * h + y) * wd + x] = s;
            }
}

typedef struct {
    int cin, cout, h, w, ncb, pw; /* 64-channel blocks, packed row width (w + 2 columns) */
    int8_t *wa_h, *wa_l;          /* [ob][tap][cb][16][64] */
    int8_t *xh, *xl;              /* [h + 2 rows][cin / 4][pw][4] */
} Amx;

static void pack_weights(Amx *a, const int16_t *w)
{
    const int cin = a->cin, nob = a->cout / 16;
    for (int ob = 0; ob < nob; ob++)
        for (int t = 0; t < K * K; t++)
            for (int cb = 0; cb < a->ncb; cb++)
                for (int m = 0; m < 16; m++)
                    for (int k = 0; k < 64; k++) {
                        const int o = ob * 16 + m, c = cb * 64 + k;
                        const int v = w[(o * cin + c) * K * K + t];
                        const size_t d = ((((size_t)ob * K * K + t) * a->ncb + cb) * 16 + m) * 64 + k;
                        a->wa_h[d] = (int8_t)(v >> 8);
                        a->wa_l[d] = (int8_t)(uint8_t)(v & 255);
                    }
}

/* The input's byte planes, zero rows above and below and a zero column at each end; 16
 * columns of a channel quad at a time: each int32 lane of a vector gathers one column's four
 * bytes (the low bytes, or bits 8-15, of the quad's four channels). */
static void pack_input(Amx *a, const int32_t *in)
{
    const size_t row = (size_t)a->cin * a->pw;
    memset(a->xh, 0, row * (a->h + 2));
    memset(a->xl, 0, row * (a->h + 2));
    const __m512i m8 = _mm512_set1_epi32(255);
    for (int y = 0; y < a->h; y++)
        for (int q = 0; q < a->cin / 4; q++) {
            const int32_t *src = in + ((size_t)4 * q * a->h + y) * a->w;
            const size_t cs = (size_t)a->h * a->w;
            const size_t d = (size_t)(y + 1) * row + (size_t)q * a->pw * 4 + 4;
            for (int x = 0; x < a->w; x += 16) {
                __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
                for (int k = 0; k < 4; k++) {
                    const __m512i v = _mm512_loadu_si512(src + k * cs + x);
                    lo = _mm512_or_si512(lo, _mm512_slli_epi32(_mm512_and_si512(v, m8), 8 * k));
                    hi = _mm512_or_si512(
                        hi, _mm512_slli_epi32(_mm512_and_si512(_mm512_srai_epi32(v, 8), m8), 8 * k));
                }
                _mm512_storeu_si512(a->xl + d + (size_t)x * 4, lo);
                _mm512_storeu_si512(a->xh + d + (size_t)x * 4, hi);
            }
        }
}

static void conv_amx(const Amx *a, int32_t *out)
{
    const size_t row = (size_t)a->cin * a->pw, qstride = (size_t)a->pw * 4;
    int32_t hh[256], mid[256], ll[256];
    const int nob = a->cout / 16;
    for (int y = 0; y < a->h; y++)
        for (int ob = 0; ob < nob; ob++)
            for (int x0 = 0; x0 < a->w; x0 += 16) {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                for (int ky = 0; ky < K; ky++)
                    for (int kx = 0; kx < K; kx++) {
                        const int t = ky * K + kx;
                        for (int cb = 0; cb < a->ncb; cb++) {
                            const size_t wo = (((size_t)ob * K * K + t) * a->ncb + cb) * 1024;
                            const size_t xo = (size_t)(y + ky) * row + (size_t)cb * 16 * qstride +
                                              (size_t)(x0 + kx) * 4;
                            _tile_loadd(3, a->wa_h + wo, 64);
                            _tile_loadd(4, a->wa_l + wo, 64);
                            _tile_loadd(5, a->xh + xo, qstride);
                            _tile_loadd(6, a->xl + xo, qstride);
                            _tile_dpbssd(0, 3, 5);
                            _tile_dpbsud(1, 3, 6);
                            _tile_dpbusd(1, 4, 5);
                            _tile_dpbuud(2, 4, 6);
                        }
                    }
                _tile_stored(0, hh, 64);
                _tile_stored(1, mid, 64);
                _tile_stored(2, ll, 64);
                /* the decoder's epilogue: int64 sum, rshr 17, clamp to the activations' range */
                for (int m = 0; m < 16; m++) {
                    int32_t *o = out + ((size_t)(ob * 16 + m) * a->h + y) * a->w + x0;
                    for (int n = 0; n < 16; n++) {
                        const int64_t s = ((int64_t)hh[m * 16 + n] << 16) +
                                          ((int64_t)mid[m * 16 + n] << 8) + ll[m * 16 + n];
                        const int64_t r = (s + (1 << 16)) >> 17;
                        o[n] = (int32_t)(r > 32767 ? 32767 : r < -32768 ? -32768 : r);
                    }
                }
            }
}

/* The tile peak ("peak"): tiles 4-7 hold operands, 0-3 the sums. */
static int peak(void)
{
    static int8_t a[16 * 64], b[16 * 64];
    static int32_t c[16 * 16];
    for (int i = 0; i < 16 * 64; i++) {
        a[i] = (int8_t)(i % 7 - 3);
        b[i] = (int8_t)(i % 5 - 2);
    }
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const long iters = 20000000;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (long k = 0; k < iters; k++) {
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 4, 7);
            _tile_dpbssd(2, 5, 6);
            _tile_dpbssd(3, 5, 7);
        }
        double t = now() - t0, r = 4.0 * 16384.0 * iters / t / 1e9;
        printf("rep %d: %.3f s, %.1f GMAC/s int8 (%.1f for the decoder's operands)\n", rep, t, r,
               r / 4);
        if (r > best) best = r;
    }
    _tile_stored(0, c, 64);
    _tile_release();
    printf("best %.1f GMAC/s int8, %.1f for the decoder's operands (checksum %d)\n", best,
           best / 4, c[0]);
    return 0;
}

int main(int argc, char **argv)
{
    const int is_peak = argc == 2 && !strcmp(argv[1], "peak");
    if (argc < 5 && !is_peak) {
        fprintf(stderr, "usage: amx-conv CIN COUT H W [REPS] | amx-conv peak\n");
        return 2;
    }
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) {
        perror("arch_prctl(ARCH_REQ_XCOMP_PERM): AMX not usable here");
        return 1;
    }
    struct tilecfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
    if (is_peak) return peak();

    const int cin = atoi(argv[1]), cout = atoi(argv[2]), h = atoi(argv[3]), w = atoi(argv[4]);
    const int reps = argc > 5 ? atoi(argv[5]) : 7;
    if (cin < 64 || cin % 64 || cout < 16 || cout % 16 || h < 1 || w < 16 || w % 16 ||
        cin * K * K > 32768 || reps < 1 || reps > 99) {
        fprintf(stderr, "CIN a multiple of 64, COUT of 16, W of 16, CIN * 9 <= 32768\n");
        return 2;
    }

    const size_t nw = (size_t)cout * cin * K * K, nin = (size_t)cin * h * w, nout = (size_t)cout * h * w;
    int16_t *wt = malloc(nw * sizeof(int16_t));
    int32_t *in = malloc(nin * sizeof(int32_t)); /* the decoder's activations are int32 */
    int64_t *want = malloc(nout * sizeof(int64_t));
    int32_t *out = malloc(nout * sizeof(int32_t));
    /* operands at both ends of their ranges: 12-bit weights, int16 activations */
    for (size_t e = 0; e < nw; e++) wt[e] = (int16_t)(e % 97 == 0 ? (e % 2 ? -2048 : 2047) : rr(-2048, 2047));
    for (size_t e = 0; e < nin; e++) in[e] = (int32_t)(e % 89 == 0 ? (e % 2 ? -32768 : 32767) : rr(-32768, 32767));
    Amx a = { .cin = cin, .cout = cout, .h = h, .w = w, .ncb = cin / 64, .pw = w + 2 };
    a.wa_h = aligned_alloc(64, nw + 64);
    a.wa_l = aligned_alloc(64, nw + 64);
    const size_t xs = ((size_t)cin * a.pw * (h + 2) + 63) / 64 * 64;
    a.xh = aligned_alloc(64, xs);
    a.xl = aligned_alloc(64, xs);
    pack_weights(&a, wt);

    conv_ref(wt, in, cin, cout, h, w, want);
    pack_input(&a, in);
    conv_amx(&a, out);
    size_t bad = 0;
    for (size_t e = 0; e < nout; e++) {
        const int64_t r = (want[e] + (1 << 16)) >> 17;
        const int32_t v = (int32_t)(r > 32767 ? 32767 : r < -32768 ? -32768 : r);
        bad += out[e] != v;
    }
    printf("conv %d->%d k3 s1, %dx%d: %zu of %zu outputs differ from the int64 reference\n", cin,
           cout, h, w, bad, nout);

    const double macs = (double)cout * cin * K * K * h * w;
    double t[99], tp[99];
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        pack_input(&a, in);
        const double t1 = now();
        conv_amx(&a, out);
        const double t2 = now();
        t[r] = t2 - t0;
        tp[r] = t1 - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    qsort(tp, (size_t)reps, sizeof(double), cmp_double);
    printf("  AMX, 1 thread: median %.2f ms (min %.2f, max %.2f; packing %.2f ms) %.1f GMAC/s\n",
           t[reps / 2] * 1e3, t[0] * 1e3, t[reps - 1] * 1e3, tp[reps / 2] * 1e3,
           macs / t[reps / 2] * 1e-9);
    _tile_release();
    return bad != 0;
}
