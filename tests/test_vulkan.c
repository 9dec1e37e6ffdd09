/* The Vulkan backend (libwai-core/src/vulkan) against the reference kernels, element by element:
 * every layer type on random shapes and operands at the format's bounds, chains, the parameter
 * cache, the CPU fallback, the tiny model's h_s and g_s, and every conformance vector decoded
 * through the backend against its pinned hash.
 *
 *   test_vulkan [--device N] [--vectors-only] [--cpu-times] [--repeat N] [--rgb-cpu] [MANIFEST]
 *
 * This test exists only in builds with Vulkan, so a missing device is a failure (exit 1), never
 * a skip. MANIFEST (default $WAI_SOURCE_ROOT/vectors/manifest.txt) may be absent: then the
 * vector part says so and is not run. --vectors-only, --cpu-times (also time the reference
 * kernels) and --repeat (report the fastest of N decodes, each checked) are for
 * tools/gpu-check.sh; --rgb-cpu decodes the vectors with the RGB8 output on the CPU (the int32
 * g_s output read back), to time the path without the RGB8 pass. */
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "payload.h"
#include "stream.h"
#include "vulkan/vk.h"
#include "testutil.h"

#define ACT_MIN (-(1 << 23))
#define ACT_MAX ((1 << 23) - 1)

static WaiDsp ref, gpu, fast; /* fast: the CPU's best kernels and threads (timings only) */
static WaiVk *vk;
static int rgb_cpu; /* --rgb-cpu */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- comparing one layer list ----------------------------------------------------------- */

/* Runs the list through the reference kernels and through the backend; every element must be
 * equal. Returns the mismatching elements (0 when equal). */
static size_t compare_run(const char *what, const WaiLayer *layers, uint32_t n, const int32_t *in,
                          WaiShape s)
{
    int32_t *a = NULL, *b = NULL;
    WaiShape sa = { 0, 0, 0 }, sb = { 0, 0, 0 };
    const int ra = wai_run_layers(&ref, layers, n, in, s, &a, &sa);
    const int rb = wai_run_layers(&gpu, layers, n, in, s, &b, &sb);
    size_t bad = 0;
    CHECK_EQ(ra, 0);
    CHECK_EQ(rb, ra);
    if (ra || rb) {
        fprintf(stderr, "  %s: ref %d, vulkan %d\n", what, ra, rb);
        bad = 1;
    } else {
        CHECK(sa.c == sb.c && sa.h == sb.h && sa.w == sb.w);
        const size_t ne = (size_t)sa.c * sa.h * sa.w;
        for (size_t k = 0; k < ne; k++) {
            if (a[k] == b[k]) continue;
            if (!bad++)
                fprintf(stderr, "  %s: element %zu (c %zu y %zu x %zu) ref %d vulkan %d\n", what, k,
                        k / ((size_t)sa.h * sa.w), k / sa.w % sa.h, k % sa.w, a[k], b[k]);
        }
        tu_checks++;
        if (bad) {
            tu_failures++;
            fprintf(stderr, "  %s: %zu of %zu elements differ (%dx%dx%d)\n", what, bad, ne, sa.c,
                    sa.h, sa.w);
        }
    }
    free(a);
    free(b);
    return bad;
}

/* ---- random layers and tensors ---------------------------------------------------------- */

typedef struct TLayer {
    WaiLayer l;
} TLayer;

static void free_tlayer(TLayer *t)
{
    free(t->l.weight);
    free(t->l.shift);
    free(t->l.bias);
    free(t->l.beta);
    free(t->l.gamma);
    memset(t, 0, sizeof(*t));
}

/* Weights: uniform, or only the extremes -2048 / 2047 (sometimes mixed with 0). */
static int16_t rand_weight(uint64_t *s, int mode)
{
    if (mode == 0) return (int16_t)tu_range(s, -2048, 2047);
    const int k = (int)tu_range(s, 0, 3);
    return (int16_t)(k == 0 ? 0 : k & 1 ? -2048 : 2047);
}

static void make_conv(TLayer *t, uint64_t *s, int type, int cin, int cout, int kh, int kw,
                      int stride, int pad, int out_pad)
{
    WaiLayer *l = &t->l;
    memset(t, 0, sizeof(*t));
    l->type = type;
    l->cin = cin; l->cout = cout; l->kh = kh; l->kw = kw;
    l->stride = stride; l->pad = pad; l->out_pad = out_pad;
    const size_t nw = (size_t)cout * cin * kh * kw;
    l->weight = malloc(nw * sizeof(*l->weight));
    l->shift = malloc((size_t)cout);
    l->bias = malloc((size_t)cout * sizeof(*l->bias));
    const int wmode = (int)tu_range(s, 0, 2) == 2;
    for (size_t k = 0; k < nw; k++) l->weight[k] = rand_weight(s, wmode);
    for (int o = 0; o < cout; o++) {
        l->shift[o] = (uint8_t)tu_range(s, 0, 32);
        const int bm = (int)tu_range(s, 0, 3);
        l->bias[o] = bm == 0 ? tu_range(s, -(INT64_C(1) << 52), INT64_C(1) << 52)
                   : bm == 1 ? (tu_range(s, 0, 1) ? INT64_C(1) << 52 : -(INT64_C(1) << 52))
                             : tu_range(s, -100000, 100000);
    }
}

static void make_igdn(TLayer *t, uint64_t *s, int c, int g)
{
    WaiLayer *l = &t->l;
    memset(t, 0, sizeof(*t));
    l->type = WAI_LAYER_IGDN;
    l->cin = l->cout = c;
    l->gamma_shift = g;
    l->beta = malloc((size_t)c * sizeof(*l->beta));
    l->gamma = malloc((size_t)c * c * sizeof(*l->gamma));
    const int mode = (int)tu_range(s, 0, 2);
    for (int i = 0; i < c; i++)
        l->beta[i] = mode == 0 ? tu_range(s, 0, INT64_C(1) << 60)
                   : mode == 1 ? INT64_C(1) << 60 : tu_range(s, 1, INT64_C(1) << (12 + g));
    for (size_t k = 0; k < (size_t)c * c; k++)
        l->gamma[k] = mode == 1 ? (1 << 17) - 1 : (int32_t)tu_range(s, 0, (1 << 17) - 1);
}

static void make_lrelu(TLayer *t, uint64_t *s)
{
    memset(t, 0, sizeof(*t));
    t->l.type = WAI_LAYER_LRELU;
    const int k = (int)tu_range(s, 0, 3);
    t->l.slope_q16 = k == 0 ? 0 : k == 1 ? 65536 : (int32_t)tu_range(s, 0, 65536);
}

/* Activations: uniform over the whole Q12 range, only the bounds (and 0, +-1), or small. */
static int32_t *rand_tensor(uint64_t *s, WaiShape sh)
{
    const size_t n = (size_t)sh.c * sh.h * sh.w;
    int32_t *x = malloc(n * sizeof(*x));
    const int mode = (int)tu_range(s, 0, 3);
    for (size_t k = 0; k < n; k++) {
        if (mode == 0) {
            x[k] = (int32_t)tu_range(s, ACT_MIN, ACT_MAX);
        } else if (mode == 1) {
            static const int32_t v[] = { ACT_MIN, ACT_MAX, 0, 1, -1, ACT_MIN + 1, ACT_MAX - 1 };
            x[k] = v[tu_range(s, 0, 6)];
        } else if (mode == 2) {
            x[k] = (int32_t)tu_range(s, -8192, 8192);
        } else {
            x[k] = (int32_t)tu_range(s, -(1 << 16), 1 << 16);
        }
    }
    return x;
}

/* A random conv or convT whose output shape is positive for input ih x iw. */
static void rand_conv(TLayer *t, uint64_t *s, int type, int cin, int ih, int iw)
{
    const int big = tu_range(s, 0, 7) == 0;
    const int kh = (int)tu_range(s, 1, big ? 15 : 7), kw = (int)tu_range(s, 1, big ? 15 : 7);
    const int stride = (int)tu_range(s, 1, big ? 8 : 4);
    int pad = (int)tu_range(s, 0, (kh < kw ? kh : kw) - 1);
    if (pad > 14) pad = 14;
    int out_pad = type == WAI_LAYER_CONVT ? (int)tu_range(s, 0, stride - 1) : 0;
    if (type == WAI_LAYER_CONV) {
        /* need ih + 2 pad >= kh: grow pad within its bounds, else use a smaller kernel */
        while (ih + 2 * pad < kh || iw + 2 * pad < kw) {
            if (pad + 1 < (kh < kw ? kh : kw) && pad < 14) pad++;
            else break;
        }
        int kh2 = kh, kw2 = kw;
        if (ih + 2 * pad < kh2) kh2 = ih + 2 * pad;
        if (iw + 2 * pad < kw2) kw2 = iw + 2 * pad;
        if (pad >= kh2 || pad >= kw2) pad = (kh2 < kw2 ? kh2 : kw2) - 1;
        make_conv(t, s, type, cin, (int)tu_range(s, 1, 9), kh2, kw2, stride, pad, 0);
        return;
    }
    /* convT: (ih - 1) stride - 2 pad + kh + out_pad >= 1 */
    while (((ih - 1) * stride - 2 * pad + kh + out_pad) < 1 ||
           ((iw - 1) * stride - 2 * pad + kw + out_pad) < 1)
        pad--;
    make_conv(t, s, type, cin, (int)tu_range(s, 1, 9), kh, kw, stride, pad, out_pad);
}

static int conv_out(const WaiLayer *l, int in, int k)
{
    return l->type == WAI_LAYER_CONV ? (in + 2 * l->pad - k) / l->stride + 1
                                     : (in - 1) * l->stride - 2 * l->pad + k + l->out_pad;
}

/* ---- per layer type --------------------------------------------------------------------- */

static void test_conv_random(int type, int cases)
{
    uint64_t s = type == WAI_LAYER_CONV ? 0xC0417 : 0xC0472;
    size_t bad = 0;
    for (int c = 0; c < cases; c++) {
        const WaiShape in = { (int)tu_range(&s, 1, tu_range(&s, 0, 3) ? 6 : 40),
                              (int)tu_range(&s, 1, 24), (int)tu_range(&s, 1, 24) };
        TLayer t;
        rand_conv(&t, &s, type, in.c, in.h, in.w);
        int32_t *x = rand_tensor(&s, in);
        const int wide = c % 6 == 5; /* beyond the activation range: the kernels stay exact */
        if (wide)
            for (size_t k = 0; k < (size_t)in.c * in.h * in.w; k++)
                x[k] = (int32_t)(uint32_t)tu_rand(&s);
        char what[160];
        snprintf(what, sizeof(what), "%s case %d: %dx%dx%d k %dx%d s %d p %d op %d cout %d%s",
                 type == WAI_LAYER_CONV ? "conv" : "convT", c, in.c, in.h, in.w, t.l.kh, t.l.kw,
                 t.l.stride, t.l.pad, t.l.out_pad, t.l.cout, wide ? " int32 inputs" : "");
        bad += compare_run(what, &t.l, 1, x, in) != 0;
        free(x);
        free_tlayer(&t);
    }
    printf("%s: %d random layers, %zu differ\n", type == WAI_LAYER_CONV ? "conv" : "convT", cases, bad);
}

/* The extreme accumulators of spec 5.1: cin kh kw = 65475 taps (cin 291, 15x15), every input
 * at ACT_MIN or ACT_MAX, every weight -2048 or 2047, |bias| = 2^52, shifts 0 and 32. */
static void test_conv_extremes(void)
{
    uint64_t s = 0xE77;
    for (int type = WAI_LAYER_CONV; type <= WAI_LAYER_CONVT; type++) {
        for (int v = 0; v < 4; v++) {
            TLayer t;
            const int pad = type == WAI_LAYER_CONV ? 7 : 0;
            make_conv(&t, &s, type, 291, 4, 15, 15, type == WAI_LAYER_CONV ? 1 : 2, pad, 0);
            const size_t nw = (size_t)4 * 291 * 225;
            for (size_t k = 0; k < nw; k++)
                t.l.weight[k] = (int16_t)(v & 1 ? -2048 : (k % 7 == 3 ? -2048 : 2047));
            for (int o = 0; o < 4; o++) {
                t.l.shift[o] = (uint8_t)(o == 0 ? 0 : o == 1 ? 32 : o == 2 ? 12 : 31);
                t.l.bias[o] = (o + v) & 1 ? INT64_C(1) << 52 : -(INT64_C(1) << 52);
            }
            const WaiShape in = { 291, type == WAI_LAYER_CONV ? 15 : 8, type == WAI_LAYER_CONV ? 15 : 8 };
            const size_t ne = (size_t)in.c * in.h * in.w;
            int32_t *x = malloc(ne * sizeof(*x));
            for (size_t k = 0; k < ne; k++)
                x[k] = v < 2 ? (v ? ACT_MIN : ACT_MAX) : (k & 1 ? ACT_MIN : ACT_MAX);
            char what[64];
            snprintf(what, sizeof(what), "%s extremes %d", type == WAI_LAYER_CONV ? "conv" : "convT", v);
            compare_run(what, &t.l, 1, x, in);
            free(x);
            free_tlayer(&t);
        }
    }
}

/* Every tap of a convT reaches the right output: a single 1 at each input position in turn
 * against the spec's scatter rule, computed here (catches parity and edge errors exactly). */
static void test_convt_taps(void)
{
    uint64_t s = 0x7A95;
    const int cfg[][5] = { /* k, stride, pad, out_pad, in */
        { 5, 2, 2, 1, 3 }, { 4, 3, 1, 2, 4 }, { 3, 1, 1, 0, 4 }, { 7, 4, 3, 3, 3 }, { 2, 2, 0, 1, 3 },
    };
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        const int k = cfg[c][0], st = cfg[c][1], pad = cfg[c][2], op = cfg[c][3], n = cfg[c][4];
        TLayer t;
        make_conv(&t, &s, WAI_LAYER_CONVT, 1, 1, k, k, st, pad, op);
        for (int j = 0; j < k * k; j++) t.l.weight[j] = (int16_t)(j + 1);
        t.l.shift[0] = 0;
        t.l.bias[0] = 0;
        const WaiShape in = { 1, n, n };
        const int on = conv_out(&t.l, n, k);
        for (int p = 0; p < n * n; p++) {
            int32_t x[64] = { 0 };
            x[p] = 1;
            int32_t *y = NULL;
            WaiShape os;
            CHECK_EQ(wai_run_layers(&gpu, &t.l, 1, x, in, &y, &os), 0);
            if (!y) continue;
            CHECK_EQ(os.h, on);
            int bad = 0;
            for (int oy = 0; oy < on; oy++)
                for (int ox = 0; ox < on; ox++) {
                    const int ky = oy - (p / n) * st + pad, kx = ox - (p % n) * st + pad;
                    const int want = ky >= 0 && ky < k && kx >= 0 && kx < k ? ky * k + kx + 1 : 0;
                    bad += y[oy * on + ox] != want;
                }
            CHECK_EQ(bad, 0);
            free(y);
        }
        free_tlayer(&t);
    }
}

static void test_lrelu_random(void)
{
    uint64_t s = 0x1E1;
    for (int c = 0; c < 12; c++) {
        TLayer t;
        make_lrelu(&t, &s);
        const WaiShape in = { (int)tu_range(&s, 1, 5), (int)tu_range(&s, 1, 40), (int)tu_range(&s, 1, 40) };
        int32_t *x = rand_tensor(&s, in);
        char what[64];
        snprintf(what, sizeof(what), "lrelu case %d slope %d", c, t.l.slope_q16);
        compare_run(what, &t.l, 1, x, in);
        free(x);
    }
    /* hand-computed: (-3 * 32768 + 2^15) >> 16 = -1; (-1 * 1 + 2^15) >> 16 = 0 */
    TLayer t;
    memset(&t, 0, sizeof(t));
    t.l.type = WAI_LAYER_LRELU;
    t.l.slope_q16 = 32768;
    int32_t x[4] = { -3, 5, ACT_MIN, -1 };
    int32_t *y = NULL;
    WaiShape os;
    CHECK_EQ(wai_run_layers(&gpu, &t.l, 1, x, (WaiShape){ 1, 1, 4 }, &y, &os), 0);
    if (y) {
        CHECK_EQ(y[0], -1);
        CHECK_EQ(y[1], 5);
        CHECK_EQ(y[2], ACT_MIN / 2);
        CHECK_EQ(y[3], 0);
        free(y);
    }
}

static void test_igdn_random(void)
{
    uint64_t s = 0x16D;
    size_t bad = 0;
    const int cases = 24;
    for (int c = 0; c < cases; c++) {
        const int C = c == 0 ? 512 : c == 1 ? 64 : (int)tu_range(&s, 1, 48);
        const int g = 8 + 2 * (int)tu_range(&s, 0, 8);
        TLayer t;
        make_igdn(&t, &s, C, g);
        const WaiShape in = { C, c < 2 ? 3 : (int)tu_range(&s, 1, 20), c < 2 ? 5 : (int)tu_range(&s, 1, 20) };
        int32_t *x = rand_tensor(&s, in);
        char what[64];
        snprintf(what, sizeof(what), "igdn case %d C %d g %d", c, C, g);
        bad += compare_run(what, &t.l, 1, x, in) != 0;
        free(x);
        free_tlayer(&t);
    }
    printf("igdn: %d random layers, %zu differ\n", cases, bad);
}

/* isqrt at and around perfect squares: gamma = 0 makes n = beta; g = 8 and x = 1024 make
 * Y = rshr(1024 r, 10) = r exactly (for r < 2^23), so each output is the root itself. */
static void test_igdn_isqrt(void)
{
    uint64_t s = 0x5027;
    enum { N = 96 };
    TLayer t;
    memset(&t, 0, sizeof(t));
    t.l.type = WAI_LAYER_IGDN;
    t.l.cin = t.l.cout = N;
    t.l.gamma_shift = 8;
    t.l.beta = malloc(N * sizeof(*t.l.beta));
    t.l.gamma = calloc((size_t)N * N, sizeof(*t.l.gamma));
    int64_t root[N];
    for (int i = 0; i < N; i++) {
        const int64_t r = i < 8 ? i : tu_range(&s, 1, (INT64_C(1) << tu_range(&s, 2, 22)) - 1);
        const int64_t off[4] = { -1, 0, r, 2 * r }; /* r^2 - 1, r^2, r^2 + r, r^2 + 2r */
        const int64_t d = off[i % 4];
        t.l.beta[i] = r * r + d;
        root[i] = d < 0 ? r - 1 : r;
        if (t.l.beta[i] < 0) { t.l.beta[i] = 0; root[i] = 0; }
    }
    int32_t x[N];
    for (int i = 0; i < N; i++) x[i] = 1024;
    int32_t *y = NULL;
    WaiShape os;
    CHECK_EQ(wai_run_layers(&gpu, &t.l, 1, x, (WaiShape){ N, 1, 1 }, &y, &os), 0);
    if (y) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            if (y[i] != root[i] && bad++ < 3)
                fprintf(stderr, "  isqrt(%lld): vulkan %d, expected %lld\n", (long long)t.l.beta[i],
                        y[i], (long long)root[i]);
        CHECK_EQ(bad, 0);
        free(y);
    }
    /* the largest n: beta 2^60 plus 512 terms of (2^17 - 1) * 2^34 */
    compare_run("isqrt cases vs ref", &t.l, 1, x, (WaiShape){ N, 1, 1 });
    free_tlayer(&t);
}

/* Random chains of every layer type, the way h_s and g_s mix them. */
static void test_chains(void)
{
    uint64_t s = 0xC4A1;
    for (int c = 0; c < 10; c++) {
        TLayer t[6];
        WaiLayer layers[6];
        const int nl = (int)tu_range(&s, 2, 6);
        const WaiShape in = { (int)tu_range(&s, 1, 8), (int)tu_range(&s, 2, 12), (int)tu_range(&s, 2, 12) };
        WaiShape cur = in;
        for (int k = 0; k < nl; k++) {
            const int kind = (int)tu_range(&s, 0, 3);
            if (kind < 2) {
                rand_conv(&t[k], &s, kind ? WAI_LAYER_CONVT : WAI_LAYER_CONV, cur.c, cur.h, cur.w);
                const WaiShape next = { t[k].l.cout, conv_out(&t[k].l, cur.h, t[k].l.kh),
                                        conv_out(&t[k].l, cur.w, t[k].l.kw) };
                if (next.h > 64 || next.w > 64) { /* keep chains small: a 1x1 conv instead */
                    free_tlayer(&t[k]);
                    make_conv(&t[k], &s, WAI_LAYER_CONV, cur.c, (int)tu_range(&s, 1, 6), 1, 1, 1, 0, 0);
                    cur.c = t[k].l.cout;
                } else {
                    cur = next;
                }
            } else if (kind == 2) {
                make_lrelu(&t[k], &s);
            } else {
                make_igdn(&t[k], &s, cur.c, 8 + 2 * (int)tu_range(&s, 0, 8));
            }
            layers[k] = t[k].l;
        }
        int32_t *x = rand_tensor(&s, in);
        char what[48];
        snprintf(what, sizeof(what), "chain %d (%d layers)", c, nl);
        compare_run(what, layers, (uint32_t)nl, x, in);
        free(x);
        for (int k = 0; k < nl; k++) free_tlayer(&t[k]);
    }
}

/* The parameter cache: one upload per layer, none on a rerun, a fresh one when the same
 * WaiLayer (same pointer) gets new contents, as when a model is freed and another one is
 * parsed at the same addresses. And the CPU fallback beyond the device's buffer limit. */
static void test_cache_and_fallback(void)
{
    uint64_t s = 0xCAC4E;
    TLayer t;
    make_conv(&t, &s, WAI_LAYER_CONVT, 6, 5, 5, 5, 2, 2, 1);
    const WaiShape in = { 6, 9, 7 };
    int32_t *x = rand_tensor(&s, in);
    WaiVkStats a, b;

    wai_vk_get_stats(vk, &a);
    compare_run("cache: first run", &t.l, 1, x, in);
    wai_vk_get_stats(vk, &b);
    CHECK_EQ(b.uploads - a.uploads, 1);
    CHECK_EQ(b.gpu_runs - a.gpu_runs, 2 - 1); /* compare_run runs the backend once */

    compare_run("cache: rerun", &t.l, 1, x, in);
    wai_vk_get_stats(vk, &a);
    CHECK_EQ(a.uploads - b.uploads, 0);

    /* new weights, shifts, biases behind the same pointers */
    const size_t nw = (size_t)5 * 6 * 25;
    for (size_t k = 0; k < nw; k++) t.l.weight[k] = (int16_t)(t.l.weight[k] ^ 0x155);
    compare_run("cache: weights changed", &t.l, 1, x, in);
    t.l.bias[3] += 12345;
    compare_run("cache: bias changed", &t.l, 1, x, in);
    t.l.shift[1] = (uint8_t)(t.l.shift[1] ^ 1);
    compare_run("cache: shift changed", &t.l, 1, x, in);
    wai_vk_get_stats(vk, &b);
    CHECK_EQ(b.uploads - a.uploads, 3);

    /* two layers with the same parameters (two entries) in one list */
    TLayer sq;
    make_conv(&sq, &s, WAI_LAYER_CONV, 4, 4, 3, 3, 1, 1, 0);
    const WaiLayer list[2] = { sq.l, sq.l };
    int32_t *x4 = rand_tensor(&s, (WaiShape){ 4, 6, 6 });
    compare_run("cache: same parameters twice", list, 2, x4, (WaiShape){ 4, 6, 6 });

    /* fallback: tensors above the limit run on the kept CPU kernels, with the same result */
    wai_vk_get_stats(vk, &a);
    wai_vk_set_buffer_limit(vk, 1024);
    compare_run("fallback", &t.l, 1, x, in);
    wai_vk_set_buffer_limit(vk, 0);
    wai_vk_get_stats(vk, &b);
    CHECK_EQ(b.cpu_fallbacks - a.cpu_fallbacks, 1);
    CHECK_EQ(b.gpu_runs - a.gpu_runs, 0);
    compare_run("after fallback", &t.l, 1, x, in);
    wai_vk_get_stats(vk, &a);
    CHECK_EQ(a.gpu_runs - b.gpu_runs, 1);

    /* layers beyond the spec's bounds the shaders rely on also fall back: a 13-bit weight,
     * more than 2^16 taps per output (300 x 15 x 15) */
    t.l.weight[7] = 4095;
    compare_run("fallback: 13-bit weight", &t.l, 1, x, in);
    TLayer big;
    make_conv(&big, &s, WAI_LAYER_CONV, 300, 2, 15, 15, 1, 0, 0);
    int32_t *xb = rand_tensor(&s, (WaiShape){ 300, 16, 15 });
    compare_run("fallback: 67500 taps", &big.l, 1, xb, (WaiShape){ 300, 16, 15 });
    wai_vk_get_stats(vk, &b);
    CHECK_EQ(b.cpu_fallbacks - a.cpu_fallbacks, 2);
    CHECK_EQ(b.gpu_runs - a.gpu_runs, 0);
    free(xb);
    free_tlayer(&big);

    /* eviction: with a tiny budget (it becomes twice one run), the third of three layers of
     * one size evicts the least recently used one, which then uploads again, exactly */
    TLayer e3[3];
    for (int k = 0; k < 3; k++) make_conv(&e3[k], &s, WAI_LAYER_CONV, 4, 4, 3, 3, 1, 1, 0);
    wai_vk_set_cache_budget(vk, 1);
    wai_vk_get_stats(vk, &a);
    compare_run("evict: A", &e3[0].l, 1, x4, (WaiShape){ 4, 6, 6 });
    compare_run("evict: B", &e3[1].l, 1, x4, (WaiShape){ 4, 6, 6 });
    compare_run("evict: C", &e3[2].l, 1, x4, (WaiShape){ 4, 6, 6 });
    wai_vk_get_stats(vk, &b);
    CHECK(b.param_bytes > 0);
    compare_run("evict: A again", &e3[0].l, 1, x4, (WaiShape){ 4, 6, 6 });
    compare_run("evict: A once more", &e3[0].l, 1, x4, (WaiShape){ 4, 6, 6 });
    wai_vk_get_stats(vk, &b);
    CHECK_EQ(b.uploads - a.uploads, 4);
    wai_vk_set_cache_budget(vk, 0);
    for (int k = 0; k < 3; k++) free_tlayer(&e3[k]);

    free(x);
    free(x4);
    free_tlayer(&t);
    free_tlayer(&sq);
}

/* ---- the RGB8 output (synthesis_rgb) ---------------------------------------------------- */

/* Spec 8, written out here (not graph.c's): clamp((v 255 + 2^11) >> 12, 0, 255) in int64. */
static uint8_t spec_rgb8(int32_t v)
{
    const int64_t c = ((int64_t)v * 255 + 2048) >> 12;
    return (uint8_t)(c < 0 ? 0 : c > 255 ? 255 : c);
}

/* x with x 255 + 2048 = 0 mod 4096, the rounding ties (x 255 / 4096 ends in exactly .5):
 * 255 is odd, so these are x = 2048 mod 4096; 2048 -> 128 is the one inside [0, 255]. */
static int32_t rgb_tie(uint64_t *s)
{
    return (int32_t)(2048 + 4096 * (tu_range(s, 0, 1) ? 0 : tu_range(s, -4, 5)));
}

/* g_s outputs for the RGB8 tests: ties and their neighbours, the ACT bounds, the clamp edges
 * (-9 is the first value clamped to 0, 4105 the first clamped to 255), the usual range, and
 * all of int32. */
static int32_t rgb_value(uint64_t *s)
{
    switch (tu_range(s, 0, 7)) {
    case 0: return rgb_tie(s);
    case 1: return rgb_tie(s) + (int32_t)tu_range(s, -1, 1);
    case 2: return tu_range(s, 0, 1) ? ACT_MIN : ACT_MAX;
    case 3: return (int32_t)tu_range(s, -11, -6);
    case 4: return (int32_t)tu_range(s, 4080, 4110);
    case 5: return (int32_t)(uint32_t)tu_rand(s);
    default: return (int32_t)tu_range(s, -4096, 8192);
    }
}

/* One window through the reference path and through the backend: byte-equal buffers (so the
 * row padding, filled with a canary, is untouched by both), equal to the spec's formula, and
 * only the window's bytes (rounded up to a word) came back from the device. The g_s list is
 * one leaky ReLU of slope 1 (65536): the identity on every int32, so x is the g_s output. */
static void rgb_case(const char *what, const WaiLayer *id, const int32_t *x, uint32_t hp,
                     uint32_t wp, uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh, size_t stride)
{
    WaiModel m;
    memset(&m, 0, sizeof(m));
    m.gs = (WaiLayer *)id;
    m.n_gs = 1;
    WaiGeometry g;
    memset(&g, 0, sizeof(g));
    g.width = wp;
    g.height = hp;
    g.wp = wp;
    g.hp = hp;
    g.y = (WaiShape){ 3, (int)hp, (int)wp };
    const size_t size = stride * dh + 5; /* 5 bytes past the last row: also untouched */
    uint8_t *a = malloc(size), *b = malloc(size);
    memset(a, 0xA5, size);
    memset(b, 0xA5, size);
    WaiVkStats s0, s1;
    wai_vk_get_stats(vk, &s0);
    CHECK_EQ(wai_synthesis(&m, &ref, &g, x, dx, dy, dw, dh, a, (ptrdiff_t)stride), 0);
    CHECK_EQ(wai_synthesis(&m, &gpu, &g, x, dx, dy, dw, dh, b, (ptrdiff_t)stride), 0);
    wai_vk_get_stats(vk, &s1);
    CHECK_EQ(s1.rgb_runs - s0.rgb_runs, 1);
    CHECK_EQ(s1.readback_bytes - s0.readback_bytes, ((uint64_t)3 * dw * dh + 3) / 4 * 4);
    size_t bad = 0, first = 0;
    for (size_t k = 0; k < size; k++)
        if (a[k] != b[k] && !bad++) first = k;
    tu_checks++;
    if (bad) {
        tu_failures++;
        fprintf(stderr, "  %s: %zu bytes differ, first at %zu (row %zu byte %zu): "
                "ref %u vulkan %u\n", what, bad, first, first / stride, first % stride, a[first], b[first]);
    }
    size_t off = 0; /* the reference against the formula, and the canary */
    for (uint32_t r = 0; r < dh; r++, off += stride)
        for (size_t k = 0; k < stride; k++) {
            const size_t at = (k % 3) * (size_t)hp * wp + (size_t)(dy + r) * wp + dx + k / 3;
            const uint8_t want = k < (size_t)dw * 3 ? spec_rgb8(x[at]) : 0xA5;
            if (a[off + k] != want) bad++;
        }
    for (size_t k = stride * dh; k < size; k++) bad += a[k] != 0xA5;
    CHECK_EQ(bad, 0);
    free(a);
    free(b);
}

static void test_rgb(void)
{
    uint64_t s = 0x4C6B;
    TLayer id;
    memset(&id, 0, sizeof(id));
    id.l.type = WAI_LAYER_LRELU;
    id.l.slope_q16 = 65536;

    /* hand-computed (4 pixels, planes R, G, B): the ACT bounds; 8 -> 4088 / 4096 -> 0 and
     * 9 -> 4343 / 4096 -> 1; the tie 2048 -> 524288 / 4096 = 128 exactly and its neighbours
     * 2047 -> 127, 2049 -> 128; 4087 -> 254; -9 -> -1 and -2048 -> -127 clamp to 0;
     * 4104 -> 255 (255.998), 4105 -> 256 clamps to 255 */
    const int32_t hand[3][4] = { { ACT_MIN, ACT_MAX, 8, 9 }, { 2047, 2048, 2049, 4087 },
                                 { -9, 4104, 4105, -2048 } };
    const uint8_t want[12] = { 0, 127, 0, 255, 128, 255, 0, 128, 255, 1, 254, 0 };
    {
        WaiModel m;
        memset(&m, 0, sizeof(m));
        m.gs = &id.l;
        m.n_gs = 1;
        WaiGeometry g;
        memset(&g, 0, sizeof(g));
        g.width = g.wp = 4;
        g.height = g.hp = 1;
        g.y = (WaiShape){ 3, 1, 4 };
        uint8_t out[16];
        memset(out, 0xEE, sizeof(out));
        CHECK_EQ(wai_synthesis(&m, &gpu, &g, &hand[0][0], 0, 0, 4, 1, out, 16), 0);
        for (int k = 0; k < 12; k++) CHECK_EQ(out[k], want[k]);
        for (int k = 12; k < 16; k++) CHECK_EQ(out[k], 0xEE);
        for (int k = 0; k < 12; k++) CHECK_EQ(want[k], spec_rgb8(hand[k % 3][k / 3]));

        /* the hook checks the window again, and the shape check comes first */
        CHECK_EQ(gpu.synthesis_rgb(gpu.backend, &id.l, 1, &hand[0][0], (const int[3]){ 3, 1, 4 },
                                   1, 0, 4, 1, out, 12), WAI_ERR_INVALID_ARG);
        CHECK_EQ(gpu.synthesis_rgb(gpu.backend, &id.l, 1, &hand[0][0], (const int[3]){ 3, 1, 4 },
                                   0, 0, 4, 1, out, 11), WAI_ERR_INVALID_ARG);
        CHECK_EQ(gpu.synthesis_rgb(gpu.backend, &id.l, 1, &hand[0][0], (const int[3]){ 2, 1, 4 },
                                   0, 0, 4, 1, out, 12), WAI_ERR_INVALID_ARG);
        g.y.c = 2; /* g_s output 2 x 1 x 4: the same error as the CPU path */
        const int32_t *h0 = &hand[0][0];
        CHECK_EQ(wai_synthesis(&m, &gpu, &g, h0, 0, 0, 4, 1, out, 16), WAI_ERR_MODEL_INVALID);
        CHECK_EQ(wai_synthesis(&m, &ref, &g, h0, 0, 0, 4, 1, out, 16), WAI_ERR_MODEL_INVALID);
        g.y.c = 3;
        CHECK_EQ(wai_synthesis(&m, &gpu, &g, h0, 1, 0, 4, 1, out, 16), WAI_ERR_INVALID_ARG);
    }

    /* every width 1..9 (row bytes 3..27: each remainder mod 4), odd offsets, 1..5 rows,
     * strides of the row, the row + 1..7, and rounded up to 4 or 64 */
    int cases = 0;
    for (uint32_t dw = 1; dw <= 9; dw++)
        for (int v = 0; v < 4; v++) {
            const uint32_t dh = (uint32_t)tu_range(&s, 1, 5);
            const uint32_t dx = (uint32_t)(v & 1 ? 2 * tu_range(&s, 0, 3) + 1 : tu_range(&s, 0, 2));
            const uint32_t dy = (uint32_t)tu_range(&s, 0, 3);
            const uint32_t wp = dx + dw + (uint32_t)tu_range(&s, 0, 3);
            const uint32_t hp = dy + dh + (uint32_t)tu_range(&s, 0, 2);
            const size_t row = (size_t)dw * 3;
            const size_t stride = v == 0 ? row : v == 1 ? row + (size_t)tu_range(&s, 1, 7)
                                : v == 2 ? (row + 3) / 4 * 4 : (row + 63) / 64 * 64 + 64;
            const size_t ne = (size_t)3 * hp * wp;
            int32_t *x = malloc(ne * sizeof(*x));
            for (size_t k = 0; k < ne; k++) x[k] = rgb_value(&s);
            char what[96];
            snprintf(what, sizeof(what), "rgb %ux%u window %u,%u %ux%u stride %zu", wp, hp, dx, dy,
                     dw, dh, stride);
            rgb_case(what, &id.l, x, hp, wp, dx, dy, dw, dh, stride);
            free(x);
            cases++;
        }
    /* every value from -4200 to 8399 once (each step of the output, each rounding edge and
     * clamp), 3 x 60 x 70, with a window of 69 x 59 (207-byte rows) */
    {
        const size_t ne = (size_t)3 * 60 * 70;
        int32_t *x = malloc(ne * sizeof(*x));
        for (size_t k = 0; k < ne; k++) x[k] = (int32_t)k - 4200;
        rgb_case("rgb sweep -4200..8399", &id.l, x, 60, 70, 0, 0, 70, 60, 210);
        rgb_case("rgb sweep -4200..8399, window", &id.l, x, 60, 70, 1, 1, 69, 59, 207);
        free(x);
        cases += 2;
    }
    /* larger pictures: many words per row, rows not a multiple of 4 bytes, many groups */
    const uint32_t big[][6] = { /* hp, wp, dx, dy, dw, dh */
        { 67, 131, 3, 1, 127, 65 }, { 40, 256, 0, 0, 256, 40 }, { 33, 97, 5, 7, 91, 26 },
        { 300, 17, 0, 0, 17, 300 }, { 8, 1000, 1, 0, 999, 8 },
    };
    for (size_t c = 0; c < sizeof(big) / sizeof(big[0]); c++) {
        const uint32_t *b = big[c];
        const size_t ne = (size_t)3 * b[0] * b[1];
        int32_t *x = malloc(ne * sizeof(*x));
        for (size_t k = 0; k < ne; k++) x[k] = rgb_value(&s);
        char what[96];
        snprintf(what, sizeof(what), "rgb %ux%u window %u,%u %ux%u", b[1], b[0], b[2], b[3], b[4],
                 b[5]);
        rgb_case(what, &id.l, x, b[0], b[1], b[2], b[3], b[4], b[5], (size_t)b[4] * 3 + (c & 1));
        free(x);
        cases++;
    }
    printf("rgb: %d windows, widths 1..9 and larger, equal to the reference and spec 8\n", cases);
}

/* The RGB8 pass where the device declines: beyond the buffer limit synthesis_rgb declines and
 * run_layers falls back to the CPU kernels; with wai_vk_set_rgb(vk, 0) the int32 tensor is read
 * back and the CPU converts. Both give the same bytes. */
static void test_rgb_fallback(void)
{
    uint64_t s = 0xFA11;
    TLayer id;
    memset(&id, 0, sizeof(id));
    id.l.type = WAI_LAYER_LRELU;
    id.l.slope_q16 = 65536;
    WaiModel m;
    memset(&m, 0, sizeof(m));
    m.gs = &id.l;
    m.n_gs = 1;
    WaiGeometry g;
    memset(&g, 0, sizeof(g));
    g.width = g.wp = 13;
    g.height = g.hp = 11;
    g.y = (WaiShape){ 3, 11, 13 };
    int32_t x[3 * 11 * 13];
    for (size_t k = 0; k < sizeof(x) / sizeof(x[0]); k++) x[k] = rgb_value(&s);
    uint8_t a[11 * 40], b[11 * 40], c[11 * 40];
    memset(a, 0x3C, sizeof(a));
    memset(b, 0x3C, sizeof(b));
    memset(c, 0x3C, sizeof(c));
    CHECK_EQ(wai_synthesis(&m, &ref, &g, x, 2, 1, 11, 9, a, 40), 0);

    WaiVkStats s0, s1;
    wai_vk_get_stats(vk, &s0);
    wai_vk_set_buffer_limit(vk, 1024); /* the 1716-byte tensor does not fit */
    CHECK_EQ(wai_synthesis(&m, &gpu, &g, x, 2, 1, 11, 9, b, 40), 0);
    wai_vk_set_buffer_limit(vk, 0);
    wai_vk_get_stats(vk, &s1);
    CHECK_EQ(s1.cpu_fallbacks - s0.cpu_fallbacks, 1);
    CHECK_EQ(s1.rgb_runs - s0.rgb_runs, 0);
    CHECK(!memcmp(a, b, sizeof(a)));

    wai_vk_set_rgb(vk, 0);
    CHECK_EQ(wai_synthesis(&m, &gpu, &g, x, 2, 1, 11, 9, c, 40), 0);
    wai_vk_set_rgb(vk, 1);
    wai_vk_get_stats(vk, &s0);
    CHECK_EQ(s0.gpu_runs - s1.gpu_runs, 1);
    CHECK_EQ(s0.rgb_runs - s1.rgb_runs, 0);
    CHECK_EQ(s0.readback_bytes - s1.readback_bytes, sizeof(x)); /* the int32 tensor */
    CHECK(!memcmp(a, c, sizeof(a)));
}

/* ---- the tiny model --------------------------------------------------------------------- */

static WaiModel *load_tiny(void)
{
    const char *dir = getenv("WAI_MODEL_PATH");
    char path[4096];
    snprintf(path, sizeof(path), "%s/wai-tiny-n64m96.whm", dir ? dir : ".");
    uint8_t *buf;
    size_t size;
    WaiModel *m = NULL;
    char msg[256] = "";
    int r = wai_read_file(path, (size_t)1 << 28, &buf, &size);
    if (r < 0) {
        fprintf(stderr, "test_vulkan: cannot read %s (%d)\n", path, r);
        CHECK(0);
        return NULL;
    }
    r = wai_model_parse(&m, buf, size, msg, sizeof(msg));
    free(buf);
    if (r < 0) {
        fprintf(stderr, "test_vulkan: %s: %s\n", path, msg);
        CHECK(0);
        return NULL;
    }
    return m;
}

static void test_tiny_model(WaiModel *m, uint32_t width, uint32_t height)
{
    WaiGeometry g;
    CHECK_EQ(wai_geometry(m, width, height, &g), 0);
    uint64_t s = 0x7171 + width * 1000 + height;
    const size_t nz = (size_t)g.z.c * g.z.h * g.z.w, ny = (size_t)g.y.c * g.y.h * g.y.w;
    int32_t *z_hat = malloc(nz * sizeof(*z_hat)), *y_hat = malloc(ny * sizeof(*y_hat));
    const size_t zplane = (size_t)g.z.h * g.z.w;
    for (size_t k = 0; k < nz; k++) {
        const int64_t v = (int64_t)tu_range(&s, -6, 6) * 4096 + m->z_median_q12[k / zplane];
        z_hat[k] = v < ACT_MIN ? ACT_MIN : v > ACT_MAX ? ACT_MAX : (int32_t)v;
    }
    char what[64];
    snprintf(what, sizeof(what), "tiny h_s %ux%u", width, height);
    double t0 = now_ms();
    compare_run(what, m->hs, m->n_hs, z_hat, g.z);
    double t1 = now_ms();

    /* y_hat as the decoder makes it: values plus the means h_s gives */
    int32_t *p = NULL;
    WaiShape ps;
    CHECK_EQ(wai_run_layers(&ref, m->hs, m->n_hs, z_hat, g.z, &p, &ps), 0);
    for (size_t k = 0; k < ny; k++) {
        const int64_t v = (int64_t)tu_range(&s, -12, 12) * 4096 + (p ? p[ny + k] : 0);
        y_hat[k] = v < ACT_MIN ? ACT_MIN : v > ACT_MAX ? ACT_MAX : (int32_t)v;
    }
    free(p);
    snprintf(what, sizeof(what), "tiny g_s %ux%u", width, height);
    double t2 = now_ms();
    compare_run(what, m->gs, m->n_gs, y_hat, g.y);
    double t3 = now_ms();
    printf("tiny model %ux%u: h_s and g_s equal (ref + vulkan: h_s %.1f ms, g_s %.1f ms)\n", width,
           height, t1 - t0, t3 - t2);

    /* the RGB8 output of the real g_s: a window at an odd offset, a stride beyond the row; on
     * the device (synthesis_rgb), and with the int32 tensor read back and converted on the CPU */
    const uint32_t dx = 1, dy = 2, dw = width - 4, dh = height - 3;
    const size_t stride = (size_t)dw * 3 + 7, size = stride * dh;
    uint8_t *want = malloc(size), *got = malloc(size), *cpu = malloc(size);
    memset(want, 0x5A, size);
    memset(got, 0x5A, size);
    memset(cpu, 0x5A, size);
    CHECK_EQ(wai_synthesis(m, &ref, &g, y_hat, dx, dy, dw, dh, want, (ptrdiff_t)stride), 0);
    WaiVkStats s0, s1, s2;
    wai_vk_get_stats(vk, &s0);
    const double t4 = now_ms();
    CHECK_EQ(wai_synthesis(m, &gpu, &g, y_hat, dx, dy, dw, dh, got, (ptrdiff_t)stride), 0);
    const double t5 = now_ms();
    wai_vk_get_stats(vk, &s1);
    wai_vk_set_rgb(vk, 0);
    CHECK_EQ(wai_synthesis(m, &gpu, &g, y_hat, dx, dy, dw, dh, cpu, (ptrdiff_t)stride), 0);
    wai_vk_set_rgb(vk, 1);
    const double t6 = now_ms();
    wai_vk_get_stats(vk, &s2);
    CHECK(!memcmp(want, got, size));
    CHECK(!memcmp(want, cpu, size));
    CHECK_EQ(s1.rgb_runs - s0.rgb_runs, 1);
    CHECK_EQ(s1.readback_bytes - s0.readback_bytes, ((uint64_t)3 * dw * dh + 3) / 4 * 4);
    CHECK_EQ(s2.readback_bytes - s1.readback_bytes, (uint64_t)12 * g.hp * g.wp);
    printf("tiny g_s + RGB8 %ux%u, window %ux%u: RGB8 on the device %.1f ms (%llu bytes read "
           "back), int32 read back + CPU RGB8 %.1f ms (%llu bytes)\n", width, height, dw, dh,
           t5 - t4, (unsigned long long)(s1.readback_bytes - s0.readback_bytes), t6 - t5,
           (unsigned long long)(s2.readback_bytes - s1.readback_bytes));
    free(want);
    free(got);
    free(cpu);
    free(z_hat);
    free(y_hat);
}

/* ---- conformance vectors ---------------------------------------------------------------- */

typedef struct ModelSlot {
    uint8_t sha[32];
    WaiModel *m;
} ModelSlot;

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decode every frame of one stream through dsp; SHA-256 of the RGB8 and the frame count. */
static int decode_stream(const uint8_t *buf, size_t size, const WaiDsp *dsp, ModelSlot *models,
                         size_t *n_models, uint8_t sha[32], uint32_t *frames, uint32_t *w, uint32_t *h)
{
    WaiSequenceInfo info;
    const uint8_t *emb = NULL;
    int r = wai_seqhdr_parse(buf, size, &info, &emb);
    if (r < 0) return r;
    WaiModel *m = NULL, *own = NULL;
    if (emb) {
        if ((r = wai_model_parse(&own, emb, info.model_size, NULL, 0)) < 0) return r;
        m = own;
    } else {
        for (size_t k = 0; k < *n_models && !m; k++)
            if (!memcmp(models[k].sha, info.model_sha256, 32)) m = models[k].m;
        if (!m) {
            uint8_t *mb;
            size_t ms;
            if ((r = wai_model_find(NULL, info.model_sha256, SIZE_MAX, &mb, &ms)) < 0) return r;
            r = wai_model_parse(&m, mb, ms, NULL, 0);
            free(mb);
            if (r < 0) return r;
            if (*n_models < 8) {
                memcpy(models[*n_models].sha, info.model_sha256, 32);
                models[(*n_models)++].m = m;
            } else {
                own = m;
            }
        }
    }
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    *w = info.disp_w;
    *h = info.disp_h;
    *frames = 0;
    const size_t row = (size_t)info.disp_w * 3;
    uint8_t *rgb = malloc(row * info.disp_h);
    size_t off = info.unit_size;
    r = rgb ? 0 : WAI_ERR_NOMEM;
    while (!r && off < size) {
        uint32_t idx;
        const uint8_t *pl;
        size_t pls;
        if ((r = wai_frame_parse(buf + off, size - off, &idx, &pl, &pls)) < 0) break;
        r = wai_payload_decode(m, dsp, pl, pls, info.width, info.height, info.disp_x, info.disp_y,
                               info.disp_w, info.disp_h, rgb, (ptrdiff_t)row);
        if (r < 0) break;
        sha256_update(&ctx, row * info.disp_h, rgb);
        (*frames)++;
        off += WAI_FRAME_OVERHEAD + pls;
    }
    sha256_digest(&ctx, 32, sha);
    free(rgb);
    wai_model_free(own);
    return r;
}

/* Returns the number of vectors checked, -1 if the manifest is absent. */
static int test_vectors(const char *manifest, int cpu_times, int repeat)
{
    FILE *f = fopen(manifest, "r");
    if (!f) {
        printf("vectors: no manifest at %s: not run\n", manifest);
        return -1;
    }
    const char *slash = strrchr(manifest, '/');
    const int dirlen = slash ? (int)(slash - manifest + 1) : 0;
    ModelSlot models[8];
    size_t n_models = 0;
    char line[1024];
    int n = 0, failed = 0;
    double total_gpu = 0, total_cpu = 0, total_fast = 0;
    while (fgets(line, sizeof(line), f)) {
        char file[512], hex[80], size[64];
        unsigned frames;
        if (line[0] == '#' || sscanf(line, "%511s %79s %u %63s", file, hex, &frames, size) != 4)
            continue;
        uint8_t want[32];
        int ok = strlen(hex) == 64;
        for (int i = 0; ok && i < 32; i++) {
            const int a = hexval(hex[2 * i]), b = hexval(hex[2 * i + 1]);
            ok = a >= 0 && b >= 0;
            want[i] = (uint8_t)(a << 4 | b);
        }
        unsigned ww = 0, hh = 0;
        if (!ok || sscanf(size, "%ux%u", &ww, &hh) != 2) {
            printf("FAIL %s: malformed manifest line\n", file);
            CHECK(0);
            continue;
        }
        char path[1100];
        snprintf(path, sizeof(path), "%.*s%s", dirlen, manifest, file);
        uint8_t *buf;
        size_t bs;
        if (wai_read_file(path, (size_t)1 << 30, &buf, &bs) < 0) {
            printf("FAIL %s: cannot read\n", path);
            CHECK(0);
            failed++;
            continue;
        }
        uint8_t got[32];
        uint32_t nf = 0, w = 0, h = 0;
        int r = 0;
        double tg = 1e300, tc = 1e300;
        WaiVkStats v0, v1;
        uint64_t gpu_frames = 0;
        wai_vk_get_stats(vk, &v0);
        for (int rep = 0; rep < repeat; rep++) { /* the fastest of `repeat` decodes */
            uint8_t again[32];
            const double t0 = now_ms();
            const int ri = decode_stream(buf, bs, &gpu, models, &n_models, rep ? again : got, &nf, &w, &h);
            const double t1 = now_ms() - t0;
            tg = t1 < tg ? t1 : tg;
            if (rep && !ri && memcmp(again, got, 32)) r = WAI_ERR_INTERNAL; /* not repeatable */
            if (!r) r = ri;
            gpu_frames += nf;
        }
        /* every frame's g_s and RGB8 ran on the device: only the window came back */
        wai_vk_get_stats(vk, &v1);
        CHECK_EQ(v1.rgb_runs - v0.rgb_runs, rgb_cpu ? 0 : gpu_frames);
        double tf = 1e300;
        for (int rep = 0; cpu_times && rep < repeat; rep++) {
            for (int set = 0; set < 2; set++) {
                uint8_t got2[32];
                uint32_t nf2, w2, h2;
                const double t2 = now_ms();
                const int r2 = decode_stream(buf, bs, set ? &fast : &ref, models, &n_models, got2,
                                             &nf2, &w2, &h2);
                const double t3 = now_ms() - t2;
                if (set) tf = t3 < tf ? t3 : tf;
                else tc = t3 < tc ? t3 : tc;
                CHECK_EQ(r2, 0);
                CHECK(!memcmp(got2, want, 32));
            }
        }
        free(buf);
        total_gpu += tg;
        if (cpu_times) {
            total_cpu += tc;
            total_fast += tf;
        }
        n++;
        const int pass = r == 0 && nf == frames && w == ww && h == hh && !memcmp(got, want, 32);
        tu_checks++;
        if (!pass) {
            tu_failures++;
            failed++;
        }
        if (cpu_times)
            printf("%s %-26s %u frame%s %4ux%-4u vulkan %8.1f ms  cpu reference %8.1f ms  "
                   "cpu auto %7.1f ms\n", pass ? "PASS" : "FAIL", file, nf, nf == 1 ? " " : "s",
                   w, h, tg, tc, tf);
        else
            printf("%s %-26s %u frame%s %4ux%-4u vulkan %8.1f ms%s\n", pass ? "PASS" : "FAIL", file,
                   nf, nf == 1 ? " " : "s", w, h, tg, r ? " (decode error)" : "");
        if (r) fprintf(stderr, "  %s: decode error %d (%s)\n", file, r, wai_strerror(r));
    }
    fclose(f);
    for (size_t k = 0; k < n_models; k++) wai_model_free(models[k].m);
    if (cpu_times)
        printf("vectors: %d checked, %d failed; total vulkan %.1f ms, cpu reference %.1f ms, "
               "cpu auto %.1f ms (%d threads)\n", n, failed, total_gpu, total_cpu, total_fast,
               fast.threads);
    else
        printf("vectors: %d checked, %d failed; total vulkan %.1f ms\n", n, failed, total_gpu);
    if (!n) {
        printf("vectors: the manifest lists no vector\n");
        CHECK(0);
    }
    return n;
}

int main(int argc, char **argv)
{
    int device = 0, vectors_only = 0, cpu_times = 0, repeat = 1;
    const char *manifest = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) device = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--vectors-only")) vectors_only = 1;
        else if (!strcmp(argv[i], "--cpu-times")) cpu_times = 1;
        else if (!strcmp(argv[i], "--rgb-cpu")) rgb_cpu = 1;
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
            repeat = atoi(argv[++i]);
            if (repeat < 1 || repeat > 100) repeat = 1;
        }
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: test_vulkan [--device N] [--vectors-only] [--cpu-times] "
                            "[--repeat N] [--rgb-cpu] [MANIFEST]\n");
            return 2;
        } else manifest = argv[i];
    }
    char def[4096];
    if (!manifest) {
        const char *root = getenv("WAI_SOURCE_ROOT");
        snprintf(def, sizeof(def), "%s/vectors/manifest.txt", root ? root : ".");
        manifest = def;
    }

    char msg[512] = "";
    const int r = wai_vk_open(&vk, device, msg, sizeof(msg));
    if (r < 0) {
        /* this test is built only with Vulkan: no device here is a failure, not a skip */
        fprintf(stderr, "test_vulkan: FAIL: built with Vulkan but device %d cannot be used: %s (%s)\n",
                device, msg, wai_strerror(r));
        printf("test_vulkan: 0 passed, 1 failed\n");
        return 1;
    }
    printf("Vulkan device %d: %s\n", device, wai_vk_device_name(vk));
    wai_dsp_init_ref(&ref);
    wai_dsp_init_ref(&gpu);
    if (wai_dsp_init(&fast, WAI_KERNELS_AUTO) < 0) wai_dsp_init_ref(&fast);
    wai_dsp_set_threads(&fast, 0);
    wai_vk_attach(vk, &gpu);
    CHECK(gpu.run_layers != NULL && gpu.backend == vk);

    if (!vectors_only) {
        test_convt_taps();
        test_lrelu_random();
        test_igdn_isqrt();
        test_conv_random(WAI_LAYER_CONV, 60);
        test_conv_random(WAI_LAYER_CONVT, 60);
        test_conv_extremes();
        test_igdn_random();
        test_chains();
        test_cache_and_fallback();
        test_rgb();
        test_rgb_fallback();
        WaiModel *m = load_tiny();
        if (m) {
            test_tiny_model(m, 64, 64);
            test_tiny_model(m, 100, 75);
            wai_model_free(m);
        }
    }
    if (rgb_cpu) wai_vk_set_rgb(vk, 0);
    test_vectors(manifest, cpu_times, repeat);
    wai_vk_set_rgb(vk, 1);

    WaiVkStats st;
    wai_vk_get_stats(vk, &st);
    printf("vulkan: %llu device runs (%llu with RGB8), %llu dispatches, %llu parameter uploads, "
           "%llu CPU fallbacks, %llu bytes read back\n",
           (unsigned long long)st.gpu_runs, (unsigned long long)st.rgb_runs,
           (unsigned long long)st.dispatches, (unsigned long long)st.uploads,
           (unsigned long long)st.cpu_fallbacks, (unsigned long long)st.readback_bytes);
    /* only the forced fallbacks of test_cache_and_fallback and test_rgb_fallback may have used
     * the CPU */
    CHECK_EQ(st.cpu_fallbacks, vectors_only ? 0 : 4);
    CHECK(st.gpu_runs > 0);
    wai_vk_close(vk);
    return tu_finish("test_vulkan");
}
