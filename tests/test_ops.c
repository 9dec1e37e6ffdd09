/* The reference integer operators (spec section 5): hand-computed cases, and the kernels
 * against independent naive formulations written here (direct conv, scatter convT). */
#define _DEFAULT_SOURCE 1 /* syscall() beside the project's _POSIX_C_SOURCE */
#include <string.h>

#include "dsp.h"
#include "testutil.h"

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
/* Whether Linux has granted this process the AMX tile data (ARCH_GET_XCOMP_PERM, bit 18 of
 * the permitted XSAVE features); -1 where the kernel cannot say. */
static int amx_permitted(void)
{
    unsigned long long m = 0;
    if (syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &m)) return -1;
    return (int)((m >> 18) & 1);
}
#else
static int amx_permitted(void) { return -1; }
#endif

/* The AMX grant changes the process (a larger minimum signal stack), so the library asks for
 * it only when the AMX set is chosen (dsp.c): not for the reference, C or VNNI sets; for
 * `auto` where the CPU has AMX and the build the set. Run first: nothing has asked yet. */
static void test_amx_grant_lazy(void)
{
    if (amx_permitted() != 0) return; /* no such kernel interface, or granted before us */
    WaiDsp d;
    CHECK_EQ(wai_dsp_init(&d, WAI_KERNELS_REFERENCE), 0);
    CHECK_EQ(wai_dsp_init(&d, WAI_KERNELS_C), 0);
    const int r = wai_dsp_init(&d, WAI_KERNELS_AVX512VNNI);
    CHECK(r == 0 || r == WAI_ERR_UNSUPPORTED);
    CHECK_EQ(amx_permitted(), 0);
    /* auto asks exactly where the AMX set can run (built, the CPU has it, the OS grants) */
    CHECK_EQ(wai_dsp_init(&d, WAI_KERNELS_AUTO), 0);
    const int after_auto = amx_permitted();
    CHECK_EQ(after_auto, wai_dsp_init(&d, WAI_KERNELS_AVX512AMX) == 0);
}

static WaiDsp dsp;

/* ---- helpers ---------------------------------------------------------------------------- */

static WaiLayer mk_conv(int type, int cin, int cout, int kh, int kw, int stride, int pad,
                        int out_pad, int16_t *w, uint8_t *shift, int64_t *bias)
{
    WaiLayer l;
    memset(&l, 0, sizeof(l));
    l.type = type;
    l.cin = cin; l.cout = cout; l.kh = kh; l.kw = kw;
    l.stride = stride; l.pad = pad; l.out_pad = out_pad;
    l.weight = w; l.shift = shift; l.bias = bias;
    return l;
}

static int conv_dim(const WaiLayer *l, int in, int k)
{
    return l->type == WAI_LAYER_CONV ? (in + 2 * l->pad - k) / l->stride + 1
                                     : (in - 1) * l->stride - 2 * l->pad + k + l->out_pad;
}

/* Spec conventions, written out again here rather than taken from common.h. */
static int32_t spec_out(int64_t acc, unsigned e)
{
    int64_t v = e ? (acc + ((int64_t)1 << (e - 1))) >> e : acc;
    return v < -(1 << 23) ? -(1 << 23) : v > (1 << 23) - 1 ? (1 << 23) - 1 : (int32_t)v;
}

/* Spec 5.2 literally: every output, every tap, a bounds test per tap. */
static void naive_conv(const WaiLayer *l, const int32_t *x, int h, int w, int32_t *y)
{
    const int oh = conv_dim(l, h, l->kh), ow = conv_dim(l, w, l->kw);
    for (int o = 0; o < l->cout; o++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int64_t acc = l->bias[o];
                for (int i = 0; i < l->cin; i++)
                    for (int ky = 0; ky < l->kh; ky++)
                        for (int kx = 0; kx < l->kw; kx++) {
                            int iy = oy * l->stride - l->pad + ky, ix = ox * l->stride - l->pad + kx;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                            acc += (int64_t)x[(i * h + iy) * w + ix] *
                                   l->weight[((o * l->cin + i) * l->kh + ky) * l->kw + kx];
                        }
                y[(o * oh + oy) * ow + ox] = spec_out(acc, l->shift[o]);
            }
}

/* Spec 5.3 in its scatter form: every input element adds into the outputs it reaches. */
static void naive_convt(const WaiLayer *l, const int32_t *x, int h, int w, int32_t *y)
{
    const int oh = conv_dim(l, h, l->kh), ow = conv_dim(l, w, l->kw);
    int64_t *acc = malloc(sizeof(*acc) * l->cout * oh * ow);
    for (int o = 0; o < l->cout; o++)
        for (int k = 0; k < oh * ow; k++) acc[o * oh * ow + k] = l->bias[o];
    for (int i = 0; i < l->cin; i++)
        for (int iy = 0; iy < h; iy++)
            for (int ix = 0; ix < w; ix++)
                for (int o = 0; o < l->cout; o++)
                    for (int ky = 0; ky < l->kh; ky++)
                        for (int kx = 0; kx < l->kw; kx++) {
                            int oy = iy * l->stride - l->pad + ky, ox = ix * l->stride - l->pad + kx;
                            if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                            acc[(o * oh + oy) * ow + ox] += (int64_t)x[(i * h + iy) * w + ix] *
                                l->weight[((o * l->cin + i) * l->kh + ky) * l->kw + kx];
                        }
    for (int k = 0; k < l->cout * oh * ow; k++) y[k] = spec_out(acc[k], l->shift[k / (oh * ow)]);
    free(acc);
}

static void run_conv(const WaiLayer *l, const int32_t *x, int h, int w, int32_t *y, int oh, int ow)
{
    (l->type == WAI_LAYER_CONV ? dsp.conv : dsp.convt)(l, x, h, w, y, oh, ow, 0, oh);
}

/* A random conv/convT layer with its own arrays. */
typedef struct TLayer {
    WaiLayer l;
    int16_t *w;
    uint8_t *shift;
    int64_t *bias;
} TLayer;

static void rand_layer(TLayer *t, uint64_t *s, int type, int cin, int cout, int kh, int kw,
                       int stride, int pad, int out_pad)
{
    const size_t nw = (size_t)cout * cin * kh * kw;
    t->w = malloc(nw * sizeof(*t->w));
    t->shift = malloc((size_t)cout);
    t->bias = malloc((size_t)cout * sizeof(*t->bias));
    for (size_t k = 0; k < nw; k++) t->w[k] = (int16_t)tu_range(s, -2048, 2047);
    for (int o = 0; o < cout; o++) {
        t->shift[o] = (uint8_t)tu_range(s, 0, 32);
        /* small biases half the time, so that not everything clamps */
        t->bias[o] = tu_range(s, 0, 1) ? tu_range(s, -(INT64_C(1) << 52), INT64_C(1) << 52)
                                       : tu_range(s, -100000, 100000);
    }
    t->l = mk_conv(type, cin, cout, kh, kw, stride, pad, out_pad, t->w, t->shift, t->bias);
}

static void free_layer(TLayer *t)
{
    free(t->w);
    free(t->shift);
    free(t->bias);
}

static int32_t *rand_tensor(uint64_t *s, size_t n)
{
    int32_t *x = malloc(n * sizeof(*x));
    const int64_t mag = tu_range(s, 0, 2) == 0 ? (1 << 23) : tu_range(s, 1, 8192);
    for (size_t k = 0; k < n; k++) {
        int64_t v = tu_range(s, -mag, mag);
        x[k] = (int32_t)(v > WAI_ACT_MAX ? WAI_ACT_MAX : v);
    }
    return x;
}

/* ---- isqrt ------------------------------------------------------------------------------ */

/* Bit-by-bit floor square root: an integer method independent of the kernel's. */
static uint32_t bitwise_isqrt(uint64_t n)
{
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > n) bit >>= 2;
    while (bit) {
        if (n >= r + bit) { n -= r + bit; r = (r >> 1) + bit; }
        else r >>= 1;
        bit >>= 2;
    }
    return (uint32_t)r;
}

static void check_isqrt_around(uint64_t k)
{
    const uint64_t k2 = k * k;
    CHECK_EQ(wai_isqrt64(k2), k);
    CHECK_EQ(wai_isqrt64(k2 - 1), k - 1);
    CHECK_EQ(wai_isqrt64(k2 + 1), k);
}

static void test_isqrt(void)
{
    CHECK_EQ(wai_isqrt64(0), 0);
    CHECK_EQ(wai_isqrt64(1), 1);
    CHECK_EQ(wai_isqrt64(2), 1);
    CHECK_EQ(wai_isqrt64(3), 1);
    CHECK_EQ(wai_isqrt64(4), 2);
    CHECK_EQ(wai_isqrt64(UINT64_MAX), UINT32_MAX);
    CHECK_EQ(wai_isqrt64(((uint64_t)1 << 62) - 1), (1u << 31) - 1);
    CHECK_EQ(wai_isqrt64((uint64_t)1 << 62), 1u << 31);

    int bad = 0;
    for (uint64_t n = 0; n < 200000; n++) bad += wai_isqrt64(n) != bitwise_isqrt(n);
    CHECK_EQ(bad, 0);
    for (uint64_t k = 1; k < 100000; k++) check_isqrt_around(k);
    /* near 2^26.5 (where doubles of n stop being exact, n ~ 2^53) and 2^31 (n ~ 2^62) */
    for (uint64_t k = 94906000; k < 94906500; k++) check_isqrt_around(k);
    for (uint64_t k = (1u << 31) - 2000; k < (1u << 31) + 2000; k++) check_isqrt_around(k);
    for (uint64_t k = UINT32_MAX - 1000; k < UINT32_MAX; k++) check_isqrt_around(k);
    CHECK_EQ(wai_isqrt64((uint64_t)UINT32_MAX * UINT32_MAX), UINT32_MAX);
    CHECK_EQ(wai_isqrt64((uint64_t)UINT32_MAX * UINT32_MAX - 1), UINT32_MAX - 1);

    uint64_t s = 1;
    bad = 0;
    for (int t = 0; t < 200000; t++) {
        uint64_t n = tu_rand(&s) >> tu_range(&s, 2, 63);
        bad += wai_isqrt64(n) != bitwise_isqrt(n);
    }
    CHECK_EQ(bad, 0);
}

/* ---- conv ------------------------------------------------------------------------------- */

static void test_conv_1x1(void)
{
    /* X0 = [1 2; 3 4], X1 = [5 6; 7 8] */
    static const int32_t x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    /* out 0: 5 + 3*x0 - 2*x1, shift 0 -> 5+3-10 = -2, 5+6-12 = -1, 5+9-14 = 0, 5+12-16 = 1
     * out 1: rshr(x0 + x1, 2) = rshr(6|8|10|12, 2): 1.5 -> 2, 2 -> 2, 2.5 -> 3, 3 -> 3 */
    int16_t w[4] = { 3, -2, 1, 1 };
    uint8_t sh[2] = { 0, 2 };
    int64_t b[2] = { 5, 0 };
    WaiLayer l = mk_conv(WAI_LAYER_CONV, 2, 2, 1, 1, 1, 0, 0, w, sh, b);
    static const int32_t expect[8] = { -2, -1, 0, 1, 2, 2, 3, 3 };
    int32_t y[8];
    run_conv(&l, x, 2, 2, y, 2, 2);
    for (int k = 0; k < 8; k++) CHECK_EQ(y[k], expect[k]);
}

static void test_conv_rounding(void)
{
    /* shift 1: v/2 rounded half up: -2.5 -> -2, 2.5 -> 3, -1.5 -> -1, 1.5 -> 2, -0.5 -> 0,
     * 0.5 -> 1, -2 -> -2, 2 -> 2. Shift 2 (second channel, weight 1, bias -1):
     * (v - 1)/4: -1.5 -> -1, 1 -> 1, -1 -> -1, 0.5 -> 1, -0.5 -> 0, 0 -> 0, -1.25 -> -1,
     * 0.75 -> 1 */
    static const int32_t x[8] = { -5, 5, -3, 3, -1, 1, -4, 4 };
    int16_t w[2] = { 1, 1 };
    uint8_t sh[2] = { 1, 2 };
    int64_t b[2] = { 0, -1 };
    WaiLayer l = mk_conv(WAI_LAYER_CONV, 1, 2, 1, 1, 1, 0, 0, w, sh, b);
    static const int32_t expect[16] = { -2, 3, -1, 2, 0, 1, -2, 2,
                                        -1, 1, -1, 1, 0, 0, -1, 1 };
    int32_t y[16];
    run_conv(&l, x, 1, 8, y, 1, 8);
    for (int k = 0; k < 16; k++) CHECK_EQ(y[k], expect[k]);
}

static void test_conv_clamp(void)
{
    const int32_t M = WAI_ACT_MAX, m = WAI_ACT_MIN;
    /* channel 0: w 2047 saturates both ways; channel 1: w 1, bias +1: ACT_MAX + 1 clamps,
     * ACT_MIN + 1 passes; channel 2: w 1, bias -1; channel 3: w 0 with bias 2^52 at shift
     * 32 -> 2^20 exactly (int64 bias path); channel 4: bias -(2^52) shift 20 -> -2^32 clamps */
    const int32_t x[3] = { M, m, 0 };
    int16_t w[5] = { 2047, 1, 1, 0, 0 };
    uint8_t sh[5] = { 0, 0, 0, 32, 20 };
    int64_t b[5] = { 0, 1, -1, INT64_C(1) << 52, -(INT64_C(1) << 52) };
    WaiLayer l = mk_conv(WAI_LAYER_CONV, 1, 5, 1, 1, 1, 0, 0, w, sh, b);
    const int32_t expect[15] = { M, m, 0,
                                 M, m + 1, 1,
                                 M - 1, m, -1,
                                 1 << 20, 1 << 20, 1 << 20,
                                 m, m, m };
    int32_t y[15];
    run_conv(&l, x, 1, 3, y, 1, 3);
    for (int k = 0; k < 15; k++) CHECK_EQ(y[k], expect[k]);
}

static void test_conv_3x3_stride2(void)
{
    /* X[y][x] = 4y + x + 1 on 4x4; Sobel-x kernel [1 0 -1; 2 0 -2; 1 0 -1]; pad 1, stride 2:
     * Ho = (4 + 2 - 3)/2 + 1 = 2. Output (oy, ox) is centred on input (2oy, 2ox).
     *  (0,0): row -1 is padding; 2*(0 - X01) + (0 - X11) = 2*(-2) - 6 = -10
     *  (0,1): 2*(X01 - X03) + (X11 - X13) = 2*(2 - 4) + (6 - 8) = -6
     *  (1,0): (0 - X11) + 2*(0 - X21) + (0 - X31) = -6 - 20 - 14 = -40
     *  (1,1): (6 - 8) + 2*(10 - 12) + (14 - 16) = -8
     * Channel 1: same taps, bias 7, shift 1: (-10+7)/2 = -1.5 -> -1, -6+7 = 1 -> 0.5 -> 1,
     *  -33/2 = -16.5 -> -16, -1/2 -> 0 */
    int32_t x[16];
    for (int k = 0; k < 16; k++) x[k] = k + 1;
    int16_t w[18] = { 1, 0, -1, 2, 0, -2, 1, 0, -1, 1, 0, -1, 2, 0, -2, 1, 0, -1 };
    uint8_t sh[2] = { 0, 1 };
    int64_t b[2] = { 0, 7 };
    WaiLayer l = mk_conv(WAI_LAYER_CONV, 1, 2, 3, 3, 2, 1, 0, w, sh, b);
    static const int32_t expect[8] = { -10, -6, -40, -8, -1, 1, -16, 0 };
    int32_t y[8], yn[8];
    run_conv(&l, x, 4, 4, y, 2, 2);
    naive_conv(&l, x, 4, 4, yn);
    for (int k = 0; k < 8; k++) CHECK_EQ(y[k], expect[k]);
    for (int k = 0; k < 8; k++) CHECK_EQ(yn[k], expect[k]);
}

static void test_conv_kernel_below_stride(void)
{
    /* k1 s2 on 5x5: Ho = (5 - 1)/2 + 1 = 3, Y[oy][ox] = X[2oy][2ox] * 3 */
    int32_t x[25], y[9];
    for (int k = 0; k < 25; k++) x[k] = 10 * (k / 5) + k % 5;
    int16_t w[1] = { 3 };
    uint8_t sh[1] = { 0 };
    int64_t b[1] = { 0 };
    WaiLayer l = mk_conv(WAI_LAYER_CONV, 1, 1, 1, 1, 2, 0, 0, w, sh, b);
    run_conv(&l, x, 5, 5, y, 3, 3);
    static const int32_t expect[9] = { 0, 6, 12, 60, 66, 72, 120, 126, 132 };
    for (int k = 0; k < 9; k++) CHECK_EQ(y[k], expect[k]);

    /* k3 s4 p1 on 6x6: Ho = (6 + 2 - 3)/4 + 1 = 2; taps rows/cols {-1,0,1} and {3,4,5};
     * all-ones kernel: (0,0) = X00+X01+X10+X11 = 0+1+10+11 = 22 */
    int16_t w9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    int32_t x36[36], y4[4], yn4[4];
    for (int k = 0; k < 36; k++) x36[k] = 10 * (k / 6) + k % 6;
    WaiLayer l3 = mk_conv(WAI_LAYER_CONV, 1, 1, 3, 3, 4, 1, 0, w9, sh, b);
    run_conv(&l3, x36, 6, 6, y4, 2, 2);
    naive_conv(&l3, x36, 6, 6, yn4);
    CHECK_EQ(y4[0], 22);
    /* (1,1): rows 3..5, cols 3..5: 9 * 44 (mean of X over the block) = 396 */
    CHECK_EQ(y4[3], 396);
    for (int k = 0; k < 4; k++) CHECK_EQ(y4[k], yn4[k]);
}

/* ---- transposed conv -------------------------------------------------------------------- */

static void test_convt_hand(void)
{
    /* 2x2 input [1 2; 3 4], k5 s2 p2 op1: Ho = (2-1)*2 - 4 + 5 + 1 = 4.
     * w[ky][kx] = 5ky + kx + 1. Scatter: oy = 2iy - 2 + ky, so ky = oy + 2 - 2iy.
     *  (0,0): ky in {2 (iy 0), 0 (iy 1)}, kx likewise:
     *         1*w22 + 2*w20 + 3*w02 + 4*w00 = 13 + 22 + 9 + 4 = 48
     *  (3,3): only iy = ix = 1 with ky = kx = 3: 4*w33 = 4*19 = 76
     *  (1,2): ky {3, 1}, kx {4, 2}: 1*w34 + 2*w32 + 3*w14 + 4*w12 = 20 + 36 + 30 + 32 = 118
     *  (0,3): ky {2, 0}, kx {-, 3}: 2*w23 + 4*w03 = 28 + 16 = 44 */
    static const int32_t x[4] = { 1, 2, 3, 4 };
    int16_t w[25];
    for (int k = 0; k < 25; k++) w[k] = (int16_t)(k + 1);
    uint8_t sh[1] = { 0 };
    int64_t b[1] = { 0 };
    WaiLayer l = mk_conv(WAI_LAYER_CONVT, 1, 1, 5, 5, 2, 2, 1, w, sh, b);
    int32_t y[16], yn[16];
    run_conv(&l, x, 2, 2, y, 4, 4);
    naive_convt(&l, x, 2, 2, yn);
    CHECK_EQ(y[0 * 4 + 0], 48);
    CHECK_EQ(y[3 * 4 + 3], 76);
    CHECK_EQ(y[1 * 4 + 2], 118);
    CHECK_EQ(y[0 * 4 + 3], 44);
    CHECK_EQ(yn[0], 48);
    CHECK_EQ(yn[15], 76);
    for (int k = 0; k < 16; k++) CHECK_EQ(y[k], yn[k]);

    /* with bias 3 and shift 2: (48 + 3)/4 = 12.75 -> 13, (76 + 3)/4 = 19.75 -> 20,
     * (44 + 3)/4 = 11.75 -> 12 */
    sh[0] = 2;
    b[0] = 3;
    run_conv(&l, x, 2, 2, y, 4, 4);
    CHECK_EQ(y[0], 13);
    CHECK_EQ(y[15], 20);
    CHECK_EQ(y[3], 12);
}

static void test_convt_kernel_below_stride(void)
{
    /* k1 s2 op1 on 2x3: Ho = (2-1)*2 + 1 + 1 = 4, Wo = 6. Y[2iy][2ix] = 2 X + 1 (bias 1);
     * every other position has no tap and is the bias alone. */
    static const int32_t x[6] = { 1, 2, 3, 4, 5, 6 };
    int16_t w[1] = { 2 };
    uint8_t sh[1] = { 0 };
    int64_t b[1] = { 1 };
    WaiLayer l = mk_conv(WAI_LAYER_CONVT, 1, 1, 1, 1, 2, 0, 1, w, sh, b);
    int32_t y[24], yn[24];
    run_conv(&l, x, 2, 3, y, 4, 6);
    naive_convt(&l, x, 2, 3, yn);
    static const int32_t expect[24] = { 3, 1, 5, 1, 7, 1,
                                        1, 1, 1, 1, 1, 1,
                                        9, 1, 11, 1, 13, 1,
                                        1, 1, 1, 1, 1, 1 };
    for (int k = 0; k < 24; k++) CHECK_EQ(y[k], expect[k]);
    for (int k = 0; k < 24; k++) CHECK_EQ(yn[k], expect[k]);

    /* k3 s4 p1 op2 on 2x2: Ho = 4 - 2 + 3 + 2 = 7; input (iy, ix) reaches oy = 4iy - 1 + ky,
     * rows {0, 1} from iy 0 (ky 1, 2) and {3, 4, 5} from iy 1; rows 2 and 6 get no tap. */
    int16_t w9[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    static const int32_t x4[4] = { 10, 20, 30, 40 };
    int64_t b0[1] = { 0 };
    WaiLayer l3 = mk_conv(WAI_LAYER_CONVT, 1, 1, 3, 3, 4, 1, 2, w9, sh, b0);
    int32_t y49[49], yn49[49];
    run_conv(&l3, x4, 2, 2, y49, 7, 7);
    naive_convt(&l3, x4, 2, 2, yn49);
    for (int k = 0; k < 49; k++) CHECK_EQ(y49[k], yn49[k]);
    for (int c = 0; c < 7; c++) CHECK_EQ(y49[2 * 7 + c], 0);
    for (int c = 0; c < 7; c++) CHECK_EQ(y49[6 * 7 + c], 0);
    /* (0,0): iy = ix = 0, ky = kx = 1: 10 * w11 = 50; (4,4): iy = ix = 1, ky = kx = 1:
     * 40 * 5 = 200; (5,3): iy 1 ky 2, ix 1 kx 0: 40 * w20 = 280 */
    CHECK_EQ(y49[0], 50);
    CHECK_EQ(y49[4 * 7 + 4], 200);
    CHECK_EQ(y49[5 * 7 + 3], 280);
}

/* ---- leaky ReLU, IGDN ------------------------------------------------------------------- */

static void test_lrelu(void)
{
    /* slope 0.5: -3 -> -1.5 -> -1, -1 -> -0.5 -> 0, -5 -> -2.5 -> -2, -4 -> -2;
     * positives and 0 unchanged */
    int32_t x[7] = { -3, -1, -5, -4, 0, 7, WAI_ACT_MAX };
    dsp.lrelu(x, 7, 32768);
    static const int32_t e[7] = { -1, 0, -2, -2, 0, 7, WAI_ACT_MAX };
    for (int k = 0; k < 7; k++) CHECK_EQ(x[k], e[k]);

    /* slope 6554/65536: -100 -> (-655400 + 32768) >> 16 = floor(-9.5006) = -10;
     * -7 -> (-45878 + 32768) >> 16 = floor(-0.2) = -1 */
    int32_t x2[2] = { -100, -7 };
    dsp.lrelu(x2, 2, 6554);
    CHECK_EQ(x2[0], -10);
    CHECK_EQ(x2[1], -1);

    /* slope 1.0 keeps ACT_MIN; slope 0 is ReLU */
    int32_t x3[2] = { WAI_ACT_MIN, -12345 };
    dsp.lrelu(x3, 1, 65536);
    dsp.lrelu(x3 + 1, 1, 0);
    CHECK_EQ(x3[0], WAI_ACT_MIN);
    CHECK_EQ(x3[1], 0);
}

static void test_igdn_hand(void)
{
    /* C = 2, g = 8: beta at 2^20 (1.0 each), gamma at 2^8 = [[1, 0], [0.25, 0.5]].
     * Output shift 6 + 4 = 10. Positions (x0, x1):
     * p0 = (4096, -8192): x2 = (4096, 16384).
     *   n0 = 2^20 + 256*4096 = 2097152, isqrt = 1448 (1448^2 = 2096704), 4096*1448/1024 = 5792
     *   n1 = 2^20 + 64*4096 + 128*16384 = 3407872, isqrt = 1846 (1846^2 = 3407716,
     *   1847^2 = 3411409), -8192*1846/1024 = -14768
     * p1 = (1000, -8192): x2_0 = (10^6 + 2048) >> 12 = 244.
     *   n0 = 2^20 + 256*244 = 1111040, isqrt = 1054 (1054^2 = 1110916, 1055^2 = 1113025),
     *   rshr(1054000, 10) = (1054000 + 512) >> 10 = 1029
     *   n1 = 2^20 + 64*244 + 128*16384 = 3161344, isqrt = 1778, -8*1778 = -14224 */
    int64_t beta[2] = { 1 << 20, 1 << 20 };
    int32_t gamma[4] = { 256, 0, 64, 128 };
    WaiLayer l;
    memset(&l, 0, sizeof(l));
    l.type = WAI_LAYER_IGDN;
    l.cin = l.cout = 2;
    l.gamma_shift = 8;
    l.beta = beta;
    l.gamma = gamma;
    int32_t x[4] = { 4096, 1000, -8192, -8192 }; /* [c][1][2] */
    dsp.igdn(&l, x, 1, 2, 0, 1);
    CHECK_EQ(x[0], 5792);
    CHECK_EQ(x[1], 1029);
    CHECK_EQ(x[2], -14768);
    CHECK_EQ(x[3], -14224);

    /* clamp: beta 2^60 -> r = 2^30; x * 2^30 >> 10 is far beyond the range */
    int64_t beta2[2] = { INT64_C(1) << 60, INT64_C(1) << 60 };
    int32_t gamma0[4] = { 0, 0, 0, 0 };
    l.beta = beta2;
    l.gamma = gamma0;
    int32_t xc[4] = { WAI_ACT_MAX, 1, WAI_ACT_MIN, 0 };
    dsp.igdn(&l, xc, 1, 2, 0, 1);
    CHECK_EQ(xc[0], WAI_ACT_MAX);
    CHECK_EQ(xc[1], 1 << 20);
    CHECK_EQ(xc[2], WAI_ACT_MIN);
    CHECK_EQ(xc[3], 0);

    /* rows outside [y0, y1) are untouched: 2 channels x 3 rows x 1, only row 1 */
    l.beta = beta;
    l.gamma = gamma;
    int32_t xr[6] = { 77, 4096, 78, 79, -8192, 80 };
    dsp.igdn(&l, xr, 3, 1, 1, 2);
    CHECK_EQ(xr[0], 77);
    CHECK_EQ(xr[1], 5792);
    CHECK_EQ(xr[2], 78);
    CHECK_EQ(xr[3], 79);
    CHECK_EQ(xr[4], -14768);
    CHECK_EQ(xr[5], 80);
}

/* Spec 5.5 per position, written out directly. */
static void naive_igdn(const WaiLayer *l, int32_t *x, int h, int w)
{
    const int C = l->cin;
    const size_t plane = (size_t)h * w;
    int64_t *x2 = malloc(sizeof(*x2) * C);
    int32_t *y = malloc(sizeof(*y) * C);
    for (size_t p = 0; p < plane; p++) {
        for (int j = 0; j < C; j++) x2[j] = ((int64_t)x[j * plane + p] * x[j * plane + p] + 2048) >> 12;
        for (int i = 0; i < C; i++) {
            int64_t n = l->beta[i];
            for (int j = 0; j < C; j++) n += (int64_t)l->gamma[i * C + j] * x2[j];
            y[i] = spec_out((int64_t)x[i * plane + p] * bitwise_isqrt((uint64_t)n),
                            6 + (unsigned)l->gamma_shift / 2);
        }
        for (int i = 0; i < C; i++) x[i * plane + p] = y[i];
    }
    free(x2);
    free(y);
}

static void test_igdn_random(void)
{
    uint64_t s = 99;
    for (int t = 0; t < 40; t++) {
        /* include C above the kernel's position tile split (4096 / C < 64) */
        const int C = t == 0 ? 512 : t == 1 ? 100 : (int)tu_range(&s, 1, 40);
        const int h = (int)tu_range(&s, 1, 4), w = (int)tu_range(&s, 1, t < 2 ? 9 : 80);
        WaiLayer l;
        memset(&l, 0, sizeof(l));
        l.type = WAI_LAYER_IGDN;
        l.cin = l.cout = C;
        l.gamma_shift = 2 * (int)tu_range(&s, 4, 12);
        l.beta = malloc(sizeof(int64_t) * C);
        l.gamma = malloc(sizeof(int32_t) * C * C);
        for (int i = 0; i < C; i++) l.beta[i] = tu_range(&s, 0, INT64_C(1) << tu_range(&s, 0, 60));
        for (int i = 0; i < C * C; i++) l.gamma[i] = (int32_t)tu_range(&s, 0, (1 << 17) - 1);
        const size_t n = (size_t)C * h * w;
        int32_t *x = rand_tensor(&s, n), *a = malloc(n * 4), *b = malloc(n * 4);
        memcpy(a, x, n * 4);
        memcpy(b, x, n * 4);
        naive_igdn(&l, a, h, w);
        /* in chunks of rows: the same as one call */
        for (int y0 = 0; y0 < h;) {
            int y1 = y0 + (int)tu_range(&s, 1, 2);
            if (y1 > h) y1 = h;
            dsp.igdn(&l, b, h, w, y0, y1);
            y0 = y1;
        }
        CHECK(!memcmp(a, b, n * 4));
        free(x); free(a); free(b); free(l.beta); free(l.gamma);
    }
}

/* ---- random comparisons and row partitioning -------------------------------------------- */

static void compare_random(int type, int trials, uint64_t seed)
{
    uint64_t s = seed;
    int done = 0;
    while (done < trials) {
        const int kh = (int)tu_range(&s, 1, 7), kw = (int)tu_range(&s, 1, 7);
        const int stride = (int)tu_range(&s, 1, 5);
        const int pmax = (kh < kw ? kh : kw) - 1;
        const int pad = (int)tu_range(&s, 0, pmax);
        const int op = type == WAI_LAYER_CONVT ? (int)tu_range(&s, 0, stride - 1) : 0;
        const int cin = (int)tu_range(&s, 1, 4), cout = (int)tu_range(&s, 1, 4);
        const int h = (int)tu_range(&s, 1, 7), w = (int)tu_range(&s, 1, 7);
        TLayer t;
        rand_layer(&t, &s, type, cin, cout, kh, kw, stride, pad, op);
        int oh, ow;
        if (type == WAI_LAYER_CONV) {
            if (h + 2 * pad - kh < 0 || w + 2 * pad - kw < 0) { free_layer(&t); continue; }
        }
        oh = conv_dim(&t.l, h, kh);
        ow = conv_dim(&t.l, w, kw);
        if (oh < 1 || ow < 1) { free_layer(&t); continue; }
        const size_t nin = (size_t)cin * h * w, nout = (size_t)cout * oh * ow;
        int32_t *x = rand_tensor(&s, nin);
        int32_t *a = malloc(nout * 4), *b = malloc(nout * 4), *c = malloc(nout * 4);
        (type == WAI_LAYER_CONV ? naive_conv : naive_convt)(&t.l, x, h, w, a);
        run_conv(&t.l, x, h, w, b, oh, ow);
        /* rows in random chunks */
        memset(c, 0x55, nout * 4);
        for (int y0 = 0; y0 < oh;) {
            int y1 = y0 + (int)tu_range(&s, 0, 3);
            if (y1 > oh) y1 = oh;
            (type == WAI_LAYER_CONV ? dsp.conv : dsp.convt)(&t.l, x, h, w, c, oh, ow, y0, y1);
            y0 = y1;
        }
        int ok = !memcmp(a, b, nout * 4) && !memcmp(b, c, nout * 4);
        if (!ok)
            fprintf(stderr, "type %d cin %d cout %d k %dx%d s %d p %d op %d in %dx%d\n", type,
                    cin, cout, kh, kw, stride, pad, op, h, w);
        CHECK(ok);
        free(x); free(a); free(b); free(c);
        free_layer(&t);
        done++;
    }
}

/* Rows wider than the kernels' column tile. */
static void test_wide(void)
{
    uint64_t s = 5;
    static const int cfg[][6] = { /* type, k, stride, pad, out_pad, width */
        { WAI_LAYER_CONV, 3, 1, 1, 0, 600 }, { WAI_LAYER_CONV, 5, 2, 2, 0, 700 },
        { WAI_LAYER_CONVT, 5, 2, 2, 1, 300 }, { WAI_LAYER_CONVT, 3, 3, 1, 2, 255 },
        { WAI_LAYER_CONVT, 4, 1, 0, 0, 257 },
    };
    for (size_t k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
        TLayer t;
        rand_layer(&t, &s, cfg[k][0], 2, 2, cfg[k][1], cfg[k][1], cfg[k][2], cfg[k][3], cfg[k][4]);
        const int h = 3, w = cfg[k][5];
        const int oh = conv_dim(&t.l, h, t.l.kh), ow = conv_dim(&t.l, w, t.l.kw);
        const size_t nin = (size_t)2 * h * w, nout = (size_t)2 * oh * ow;
        int32_t *x = rand_tensor(&s, nin), *a = malloc(nout * 4), *b = malloc(nout * 4);
        (cfg[k][0] == WAI_LAYER_CONV ? naive_conv : naive_convt)(&t.l, x, h, w, a);
        run_conv(&t.l, x, h, w, b, oh, ow);
        CHECK(!memcmp(a, b, nout * 4));
        free(x); free(a); free(b);
        free_layer(&t);
    }
}

/* Peak resident kB since the last reset_peak() (VmHWM), or -1 where Linux cannot say. */
static long peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return -1;
    const int r = fputs("5", f) < 0;
    return fclose(f) || r ? -1 : 0;
}

/* Built with a sanitizer: its shadow memory counts in the resident peak. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZER_SHADOW 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define SANITIZER_SHADOW 1
#endif
#endif
#ifndef SANITIZER_SHADOW
#define SANITIZER_SHADOW 0
#endif

/* The AMX set's packed input planes are capped per call (x86/dsp_avx512amx.c,
 * AMX_SCRATCH_MAX, 8 MiB): a layer whose whole chunk would want far more (1x15 taps over 2,048
 * channels, two halves: about 105 MB) runs in narrower chunks, to the same integers. */
static void test_amx_scratch_bound(void)
{
    WaiDsp amx;
    if (wai_dsp_init(&amx, WAI_KERNELS_AVX512AMX) != 0) {
        printf("test_ops: no AMX set here: the scratch bound is not checked\n");
        return;
    }
    uint64_t s = 424242;
    TLayer t;
    rand_layer(&t, &s, WAI_LAYER_CONV, 2048, 16, 1, 15, 1, 0, 0);
    const int h = 8, w = 144, oh = 8, ow = w - 14; /* a whole band: every packed row touched */
    const size_t nin = (size_t)2048 * h * w, nout = (size_t)16 * oh * ow;
    int32_t *x = malloc(nin * 4), *a = malloc(nout * 4), *b = malloc(nout * 4);
    for (size_t k = 0; k < nin; k++) x[k] = (int32_t)tu_range(&s, -(1 << 23), 1 << 23); /* two halves */
    memset(a, 0, nout * 4);
    memset(b, 0, nout * 4);
    run_conv(&t.l, x, h, w, a, oh, ow);
    if (SANITIZER_SHADOW) {
        /* shadow memory (TSan: 4x each touched byte) grows the peak with the scratch itself */
        printf("test_ops: under a sanitizer: the scratch bound is not checked\n");
    } else if (reset_peak() || peak_rss_kb() < 0) {
        printf("test_ops: no VmHWM reset here: the scratch bound is not checked\n");
    } else {
        const long before = peak_rss_kb();
        amx.conv(&t.l, x, h, w, b, oh, ow, 0, oh);
        const long grown = peak_rss_kb() - before;
        printf("test_ops: AMX conv 2048->16 k1x15: peak resident +%ld kB\n", grown);
        CHECK(grown < 16 * 1024); /* the cap and some slack; uncapped: about 95 MB */
        CHECK(!memcmp(a, b, nout * 4));
    }
    free(x); free(a); free(b);
    free_layer(&t);
}

static void test_dsp_init(void)
{
    WaiDsp d;
    CHECK_EQ(wai_dsp_init(&d, WAI_KERNELS_REFERENCE), 0);
    CHECK(d.conv == dsp.conv && d.convt == dsp.convt && d.igdn == dsp.igdn && d.lrelu == dsp.lrelu);
    CHECK_EQ(wai_dsp_init(&d, WAI_KERNELS_AUTO), 0);
    CHECK(d.conv && d.convt && d.igdn && d.lrelu);
    CHECK_EQ(wai_dsp_init(&d, WAI_KERNELS_C), 0);
    /* a SIMD set is either available here or refused; never anything else */
    static const WaiKernels simd[] = { WAI_KERNELS_AVX2, WAI_KERNELS_AVX512, WAI_KERNELS_NEON,
                                       WAI_KERNELS_AVX512VNNI, WAI_KERNELS_SIMD128,
                                       WAI_KERNELS_AVX512AMX };
    for (size_t i = 0; i < sizeof(simd) / sizeof(simd[0]); i++) {
        const WaiKernels k = simd[i];
        int r = wai_dsp_init(&d, k);
        CHECK(r == 0 || r == WAI_ERR_UNSUPPORTED);
        CHECK(d.conv && d.convt && d.igdn && d.lrelu);
    }
#if defined(__x86_64__) || defined(__i386__)
    CHECK_EQ(wai_dsp_init(&d, WAI_KERNELS_NEON), WAI_ERR_UNSUPPORTED);
#endif
    CHECK_EQ(wai_dsp_init(&d, (WaiKernels)77), WAI_ERR_INVALID_ARG);
}

int main(void)
{
    test_amx_grant_lazy();
    wai_dsp_init_ref(&dsp);
    test_dsp_init();
    test_isqrt();
    test_conv_1x1();
    test_conv_rounding();
    test_conv_clamp();
    test_conv_3x3_stride2();
    test_conv_kernel_below_stride();
    test_convt_hand();
    test_convt_kernel_below_stride();
    test_lrelu();
    test_igdn_hand();
    test_igdn_random();
    compare_random(WAI_LAYER_CONV, 400, 1);
    compare_random(WAI_LAYER_CONVT, 600, 2);
    test_wide();
    test_amx_scratch_bound();
    return tu_finish("test_ops");
}
