/* Graph execution (spec 3, 4.3, 6, 7.4, 8, 9.2) on small models built in memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "testutil.h"

static WaiDsp dsp;

static WaiLayer conv(int type, int cin, int cout, int k, int stride, int pad, int out_pad)
{
    WaiLayer l;
    memset(&l, 0, sizeof(l));
    l.type = type;
    l.cin = cin; l.cout = cout; l.kh = l.kw = k;
    l.stride = stride; l.pad = pad; l.out_pad = out_pad;
    return l;
}

static WaiLayer act(int type, int c)
{
    WaiLayer l;
    memset(&l, 0, sizeof(l));
    l.type = type;
    l.cin = l.cout = c;
    l.gamma_shift = 8;
    return l;
}

/* The shape of the real topologies at toy widths: z at 1/64, y at 1/16.
 * h_s: convT 2->5 s2, lrelu, convT 5->5 s2, lrelu, conv3 5->8 (= 2 n_y)
 * g_s: 4 x (convT s2 k5 p2 op1) with IGDN between: 4 -> 6 -> 6 -> 6 -> 3 */
static WaiLayer hs[5], gs[7];
static WaiModel geo;

static void build_geo(void)
{
    hs[0] = conv(WAI_LAYER_CONVT, 2, 5, 5, 2, 2, 1);
    hs[1] = act(WAI_LAYER_LRELU, 5);
    hs[2] = conv(WAI_LAYER_CONVT, 5, 5, 5, 2, 2, 1);
    hs[3] = act(WAI_LAYER_LRELU, 5);
    hs[4] = conv(WAI_LAYER_CONV, 5, 8, 3, 1, 1, 0);
    gs[0] = conv(WAI_LAYER_CONVT, 4, 6, 5, 2, 2, 1);
    gs[1] = act(WAI_LAYER_IGDN, 6);
    gs[2] = conv(WAI_LAYER_CONVT, 6, 6, 5, 2, 2, 1);
    gs[3] = act(WAI_LAYER_IGDN, 6);
    gs[4] = conv(WAI_LAYER_CONVT, 6, 6, 5, 2, 2, 1);
    gs[5] = act(WAI_LAYER_IGDN, 6);
    gs[6] = conv(WAI_LAYER_CONVT, 6, 3, 5, 2, 2, 1);
    memset(&geo, 0, sizeof(geo));
    geo.n_z = 2; geo.n_y = 4;
    geo.pad_multiple = 64; geo.y_down = 16; geo.z_down = 64;
    geo.n_hs = 5; geo.n_gs = 7;
    geo.hs = hs; geo.gs = gs;
}

static void check_geo(uint32_t w, uint32_t h, uint32_t wp, uint32_t hp, int zw, int yw,
                      size_t pair_hs, size_t pair_gs)
{
    WaiGeometry g;
    CHECK_EQ(wai_geometry(&geo, w, h, &g), 0);
    CHECK_EQ(g.width, w);
    CHECK_EQ(g.height, h);
    CHECK_EQ(g.wp, wp);
    CHECK_EQ(g.hp, hp);
    CHECK_EQ(g.z.c, 2);
    CHECK_EQ(g.z.h, (int)hp / 64);
    CHECK_EQ(g.z.w, zw);
    CHECK_EQ(g.y.c, 4);
    CHECK_EQ(g.y.h, (int)hp / 16);
    CHECK_EQ(g.y.w, yw);
    CHECK_EQ(g.pair_hs, pair_hs);
    CHECK_EQ(g.pair_gs, pair_gs);
}

static int fake_run_layers(void *backend, const WaiLayer *layers, uint32_t n, const int32_t *in,
                           const int shape[3], int32_t **out, int out_shape[3])
{
    (void)backend; (void)layers; (void)n; (void)in; (void)shape; (void)out; (void)out_shape;
    return WAI_ERR_INTERNAL;
}

/* Spec 9.2's work for display rows [dy, dy + dh) of a w x h picture, with the CPU kernels in
 * stripes of `rows` (0: automatic), or (whole) a backend running g_s whole. */
static size_t work_of(uint32_t w, uint32_t h, uint32_t dy, uint32_t dh, int rows, int whole)
{
    WaiGeometry g;
    WaiDsp d;
    size_t work = 0;
    wai_dsp_init_ref(&d);
    d.stripe_rows = rows;
    if (whole) d.run_layers = fake_run_layers; /* only tested for NULL by the estimate */
    CHECK_EQ(wai_geometry(&geo, w, h, &g), 0);
    CHECK_EQ(wai_decode_work(&geo, &d, &g, dy, dh, &work), 0);
    return work;
}

static void test_geometry(void)
{
    build_geo();
    /* 1x1: Wp = Hp = 64, z 2x1x1, y 4x4x4.
     * h_s tensors: 2, 5x2x2 = 20, 20, 5x4x4 = 80, 80, 8x4x4 = 128: largest pair 80 + 128 = 208
     * g_s tensors: 64, 6x8x8 = 384, 384, 1536, 1536, 6144, 6144, 3x64x64 = 12288:
     *   largest pair 6144 + 12288 = 18432 */
    check_geo(1, 1, 64, 64, 1, 4, 208, 18432);
    check_geo(64, 64, 64, 64, 1, 4, 208, 18432);
    /* 65x1: Wp 128: every tensor twice as wide */
    check_geo(65, 1, 128, 64, 2, 8, 416, 36864);
    /* 1000x8: Wp = 16 * 64 = 1024, 16 times 1x1's latents */
    check_geo(1000, 8, 1024, 64, 16, 64, 3328, 294912);

    /* The estimate: 3 w h + 4 |y| + max(4 |z| + |y| + H, G), H = 4 P_hs whole, 8 Q_hs in
     * stripes. 1x1, h_s phase whole 4 * 2 + 64 + 4 * 208 = 904. g_s whole: G = 4 * 18432 =
     * 73728: 3 + 256 + 73728 */
    CHECK_EQ(work_of(1, 1, 0, 1, 0, 1), 73987);
    /* In stripes: one stripe, output row [0, 1). Windows (spec 10) from the last layer back:
     * each convT s2 k5 p2 needs input rows [0, 2) for output rows [0, 1) or [0, 2), whose own
     * output is 4 rows: layer 6 in 6x2x32 = 384, out 3x4x64 = 768; layer 4 in 6x2x16, out
     * 6x4x32 = 768; layer 2 out 6x4x16 = 384; layer 0 in 4x2x4, out 6x4x8 = 192. Q = 768,
     * G = 8 * 768 = 6144: 3 + 256 + 6144 */
    CHECK_EQ(work_of(1, 1, 0, 1, 0, 0), 6403);
    CHECK_EQ(work_of(1, 1, 0, 1, 1, 0), 6403);
    /* 64x64, one stripe of all 64 rows (automatic: 48 MiB hold every row): the windows are the
     * whole tensors, Q the largest one, 3x64x64: 12288 + 256 + 8 * 12288 */
    CHECK_EQ(work_of(64, 64, 0, 64, 0, 0), 110848);
    /* 1000x8 in 1-row stripes, at 16x the width. The widest windows: stripe [6, 7) needs
     * layer 6 input rows [2, 5) (3 rows: output 6 rows), and those need layer 4 input rows
     * [0, 4), whose output is 8 rows: 6x8x512 = 24576 = Q. The kept rows (K_gs): the inputs of
     * layers 2, 4 and 6 (convT with another before them). Layer 2's windows are [0, 2) in
     * stripes 0-1 and [0, 3) in 2-7: at most 3 rows shared, 6x3x128 = 2304; layer 4's
     * [0, 3) (stripes 2-5) and [0, 4): 3 rows, 6x3x256 = 4608; layer 6's [1, 4) then [2, 4):
     * 2 rows, 6x2x512 = 6144. K = 13056, G = 8 Q + 4 K = 196608 + 52224 (the h_s phase,
     * 4 (32 + 3328) + 1024, is smaller): 24000 + 4096 + 248832. The tools/wai-py estimate
     * (graph.py, written from the spec's text) gives the same figures for every case here. */
    CHECK_EQ(work_of(1000, 8, 0, 8, 1, 0), 276928);
    /* display rows [3, 5) of 64x64, 1-row stripes: stripe [3, 4) needs layer 6 input [1, 3),
     * then layer 4 input [0, 3) (output 6 rows: 6x6x32 = 1152 = Q). Kept: layers 2 and 4 share
     * 3 rows between the two stripes (6x3x8 = 144, 6x3x16 = 288), layer 6 ([1, 3), [1, 4)) 2
     * rows (6x2x32 = 384): K = 816, 12288 + 256 + 9216 + 3264 */
    CHECK_EQ(work_of(64, 64, 3, 2, 1, 0), 25024);
    /* h_s larger than g_s's stripes: its middle layer 5 -> 3000 channels. 64x64: tensors 2,
     * 5x2x2 = 20, 3000x4x4 = 48000, 48000 (leaky ReLU in place), 8x4x4 = 128; P_hs = 96000.
     * Automatic R_hs = min(4, 8 MiB * 4 / (4 * 96000)) = 4, a multiple of z_down / y_down = 4:
     * one stripe, windows the whole tensors, Q_hs = 48000, H = 384000; h_s phase 8 + 64 +
     * 384000 beats G = 98304: 12288 + 256 + 384072. In 1-row stripes (R_hs = 1 / 16, at least
     * 1) every row of y needs the convT's whole output: Q_hs the same. Whole: 4 P_hs, again
     * 384000, beside G = 4 * 18432. */
    hs[2] = conv(WAI_LAYER_CONVT, 5, 3000, 5, 2, 2, 1);
    hs[3] = act(WAI_LAYER_LRELU, 3000);
    hs[4] = conv(WAI_LAYER_CONV, 3000, 8, 3, 1, 1, 0);
    CHECK_EQ(work_of(64, 64, 0, 64, 0, 0), 396616);
    CHECK_EQ(work_of(64, 64, 0, 64, 1, 0), 396616);
    CHECK_EQ(work_of(64, 64, 0, 64, 0, 1), 396616);
    build_geo();
    {
        WaiGeometry g;
        WaiDsp d;
        size_t work = 1;
        wai_dsp_init_ref(&d);
        CHECK_EQ(wai_geometry(&geo, 64, 64, &g), 0);
        CHECK_EQ(wai_decode_work(&geo, &d, &g, 60, 5, &work), WAI_ERR_INVALID_ARG);
        CHECK_EQ(work, 0);
        CHECK_EQ(wai_decode_work(&geo, &d, &g, 0, 0, &work), WAI_ERR_INVALID_ARG);
    }

    WaiGeometry g;
    CHECK_EQ(wai_geometry(&geo, 0, 5, &g), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_geometry(&geo, 5, 0, &g), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_geometry(&geo, UINT32_MAX, 1, &g), WAI_ERR_LIMIT);
    CHECK_EQ(wai_geometry(&geo, 1, UINT32_MAX, &g), WAI_ERR_LIMIT);

    /* z_down must divide the padded size */
    geo.pad_multiple = 32;
    CHECK_EQ(wai_geometry(&geo, 1, 1, &g), WAI_ERR_MODEL_INVALID);
    geo.pad_multiple = 0;
    CHECK_EQ(wai_geometry(&geo, 1, 1, &g), WAI_ERR_MODEL_INVALID);
    geo.pad_multiple = 64;
}

/* Each broken variant of the geometry model must give MODEL_INVALID (or LIMIT). */
static void test_graph_checks(void)
{
    WaiGeometry g;
    WaiLayer save;

    build_geo();
    CHECK_EQ(wai_geometry(&geo, 100, 100, &g), 0);

#define BREAK(arr, i, stmt, err) do { save = arr[i]; stmt; \
        CHECK_EQ(wai_geometry(&geo, 100, 100, &g), err); arr[i] = save; } while (0)
    BREAK(hs, 2, hs[2].cin = 4, WAI_ERR_MODEL_INVALID);           /* wrong cin */
    BREAK(hs, 0, hs[0].cin = 3, WAI_ERR_MODEL_INVALID);           /* cin != n_z */
    BREAK(hs, 4, hs[4].out_pad = 1, WAI_ERR_MODEL_INVALID);       /* conv out_pad */
    BREAK(hs, 0, hs[0].out_pad = 2, WAI_ERR_MODEL_INVALID);       /* out_pad >= stride */
    BREAK(hs, 4, hs[4].cout = 7, WAI_ERR_MODEL_INVALID);          /* h_s not 2 n_y channels */
    BREAK(hs, 4, hs[4].stride = 2, WAI_ERR_MODEL_INVALID);        /* h_s wrong size */
    BREAK(hs, 1, hs[1].type = 9, WAI_ERR_MODEL_INVALID);          /* unknown layer type */
    BREAK(gs, 1, gs[1].cin = 5, WAI_ERR_MODEL_INVALID);           /* IGDN channels */
    BREAK(gs, 6, gs[6].cout = 4, WAI_ERR_MODEL_INVALID);          /* g_s not 3 channels */
    BREAK(gs, 6, gs[6].out_pad = 0, WAI_ERR_MODEL_INVALID);       /* g_s not Hp x Wp */
    BREAK(gs, 0, gs[0].stride = 0, WAI_ERR_MODEL_INVALID);        /* kernels need stride >= 1 */
    /* conv k7 p0 on the 1/64 z of 100x100 (2x2): (2 - 7)/1 + 1 <= 0 */
    BREAK(hs, 0, (hs[0] = conv(WAI_LAYER_CONV, 2, 5, 7, 1, 0, 0)), WAI_ERR_MODEL_INVALID);
    /* a g_s that grows by 8 per layer: the tensors pass the dimension limit */
    {
        WaiLayer big[12];
        for (int k = 0; k < 12; k++) big[k] = conv(WAI_LAYER_CONVT, 4, 4, 8, 8, 0, 0);
        WaiLayer *sv = geo.gs;
        uint32_t sn = geo.n_gs;
        geo.gs = big;
        geo.n_gs = 12;
        CHECK_EQ(wai_geometry(&geo, 100, 100, &g), WAI_ERR_LIMIT);
        geo.gs = sv;
        geo.n_gs = sn;
    }
#undef BREAK
    CHECK_EQ(wai_geometry(&geo, 100, 100, &g), 0);

    /* run_layers makes the same checks before running anything */
    int32_t z[2 * 2 * 2] = { 0 }, dummy = 0, *out = &dummy;
    WaiShape os;
    hs[2].cin = 4;
    CHECK_EQ(wai_run_layers(&dsp, hs, 5, z, (WaiShape){ 2, 2, 2 }, &out, &os), WAI_ERR_MODEL_INVALID);
    CHECK(out == NULL);
    hs[2].cin = 5;
    CHECK_EQ(wai_run_layers(&dsp, hs, 5, z, (WaiShape){ 3, 2, 2 }, &out, &os), WAI_ERR_MODEL_INVALID);
}

static void test_run_layers(void)
{
    /* conv 1x1 1->2 (w 1 and -1) then ReLU: x = [5, -3, 0] -> [5, 0, 0] and [0, 3, 0] */
    int16_t w[2] = { 1, -1 };
    uint8_t sh[2] = { 0, 0 };
    int64_t b[2] = { 0, 0 };
    WaiLayer l[2];
    l[0] = conv(WAI_LAYER_CONV, 1, 2, 1, 1, 0, 0);
    l[0].weight = w; l[0].shift = sh; l[0].bias = b;
    l[1] = act(WAI_LAYER_LRELU, 2);
    l[1].slope_q16 = 0;
    const int32_t x[3] = { 5, -3, 0 };
    int32_t *y;
    WaiShape os;
    CHECK_EQ(wai_run_layers(&dsp, l, 2, x, (WaiShape){ 1, 1, 3 }, &y, &os), 0);
    CHECK(os.c == 2 && os.h == 1 && os.w == 3);
    static const int32_t e[6] = { 5, 0, 0, 0, 3, 0 };
    for (int k = 0; k < 6; k++) CHECK_EQ(y[k], e[k]);
    free(y);

    /* an in-place first layer must not write the caller's input */
    int32_t xi[2] = { -4, 4 };
    l[1].slope_q16 = 32768;
    CHECK_EQ(wai_run_layers(&dsp, &l[1], 1, xi, (WaiShape){ 2, 1, 1 }, &y, &os), 0);
    CHECK_EQ(y[0], -2);
    CHECK_EQ(y[1], 4);
    CHECK_EQ(xi[0], -4);
    free(y);

    /* no layers: a copy */
    CHECK_EQ(wai_run_layers(&dsp, l, 0, xi, (WaiShape){ 1, 1, 2 }, &y, &os), 0);
    CHECK(y != xi && y[0] == -4 && y[1] == 4 && os.c == 1 && os.w == 2);
    free(y);
}

static int32_t thr[3] = { 100, 200, 300 };

static void test_scale_index(void)
{
    WaiModel m;
    memset(&m, 0, sizeof(m));
    m.n_scales = 4;
    m.thresholds_q12 = thr;
    CHECK_EQ(wai_scale_index(&m, INT32_MIN), 0);
    CHECK_EQ(wai_scale_index(&m, -5), 0);     /* below the first */
    CHECK_EQ(wai_scale_index(&m, 99), 0);
    CHECK_EQ(wai_scale_index(&m, 100), 0);    /* s == threshold: that index */
    CHECK_EQ(wai_scale_index(&m, 101), 1);    /* just above */
    CHECK_EQ(wai_scale_index(&m, 200), 1);
    CHECK_EQ(wai_scale_index(&m, 201), 2);
    CHECK_EQ(wai_scale_index(&m, 300), 2);
    CHECK_EQ(wai_scale_index(&m, 301), 3);    /* above the last: n_scales - 1 */
    CHECK_EQ(wai_scale_index(&m, INT32_MAX), 3);
    m.n_scales = 1;                            /* no thresholds at all */
    CHECK_EQ(wai_scale_index(&m, 0), 0);
    CHECK_EQ(wai_scale_index(&m, INT32_MAX), 0);

    /* against a linear search of 7.4 over random tables of every size */
    uint64_t s = 3;
    int32_t t[255];
    int bad = 0;
    for (int trial = 0; trial < 300; trial++) {
        m.n_scales = (uint32_t)tu_range(&s, 1, 256);
        int32_t v = (int32_t)tu_range(&s, -1000, 0);
        for (uint32_t k = 0; k + 1 < m.n_scales; k++) t[k] = v += (int32_t)tu_range(&s, 1, 50);
        m.thresholds_q12 = t;
        for (int q = 0; q < 50; q++) {
            int32_t sc = (int32_t)tu_range(&s, -1100, v + 100);
            if (q < (int)m.n_scales - 1) sc = t[q]; /* every threshold exactly */
            uint32_t k = 0;
            while (k < m.n_scales - 1 && sc > t[k]) k++;
            bad += wai_scale_index(&m, sc) != (int)k;
        }
    }
    CHECK_EQ(bad, 0);
}

/* Spec 7.4 (1.1) with a quantisation step: the least k with s * 4096 <= threshold[k] * qs. */
static void test_scale_index_q(void)
{
    WaiModel m;
    memset(&m, 0, sizeof(m));
    m.n_scales = 4;
    m.thresholds_q12 = thr;                    /* 100, 200, 300 */
    CHECK_EQ(wai_scale_index_q(&m, 50, 2048), 0);    /* 50 * 4096 == 100 * 2048: on threshold 0 */
    CHECK_EQ(wai_scale_index_q(&m, 51, 2048), 1);
    CHECK_EQ(wai_scale_index_q(&m, 150, 2048), 2);   /* on threshold 2 */
    CHECK_EQ(wai_scale_index_q(&m, 151, 2048), 3);
    CHECK_EQ(wai_scale_index_q(&m, 400, 8192), 1);   /* 400 * 4096 == 200 * 8192 */
    CHECK_EQ(wai_scale_index_q(&m, 401, 8192), 2);
    CHECK_EQ(wai_scale_index_q(&m, 1, 1), 3);        /* 4096 > 300 */
    CHECK_EQ(wai_scale_index_q(&m, 0, 1), 0);
    CHECK_EQ(wai_scale_index_q(&m, (1 << 23) - 1, 1u << 24), 3);   /* products beyond 2^32 */
    CHECK_EQ(wai_scale_index_q(&m, 409600, 1u << 24), 0);
    CHECK_EQ(wai_scale_index_q(&m, 100 * 4096, 1u << 24), 0);      /* on threshold 0 */
    CHECK_EQ(wai_scale_index_q(&m, 100 * 4096 + 1, 1u << 24), 1);
    CHECK_EQ(wai_scale_index_q(&m, INT32_MIN, 3), 0);
    CHECK_EQ(wai_scale_index_q(&m, INT32_MAX, 1u << 24), 3);
    for (int32_t sc = -500; sc <= 500; sc++)     /* qs 4096 is the 1.0 rule */
        CHECK_EQ(wai_scale_index_q(&m, sc, 4096), wai_scale_index(&m, sc));

    /* against a linear search over random tables, steps and scales (boundaries included) */
    uint64_t s = 5;
    int32_t t[255];
    int bad = 0;
    for (int trial = 0; trial < 300; trial++) {
        m.n_scales = (uint32_t)tu_range(&s, 1, 256);
        int32_t v = (int32_t)tu_range(&s, -2000000, 0);
        for (uint32_t k = 0; k + 1 < m.n_scales; k++) t[k] = v += (int32_t)tu_range(&s, 1, 20000);
        m.thresholds_q12 = t;
        for (int q = 0; q < 50; q++) {
            const uint32_t qs = q % 5 == 0 ? 1 : q % 5 == 1 ? 1u << 24
                              : q % 5 == 2 ? 4096 * (uint32_t)tu_range(&s, 1, 4096)
                                           : (uint32_t)tu_range(&s, 1, 1 << 24);
            int32_t sc = (int32_t)tu_range(&s, -(1 << 23), (1 << 23) - 1);
            if (q % 3 == 0 && m.n_scales > 1) {
                /* a scale exactly on a threshold after the scaling: t * qs divisible by 4096 */
                const uint32_t k = (uint32_t)tu_range(&s, 0, m.n_scales - 2);
                sc = t[k];
                if (qs % 4096 == 0) sc = (int32_t)((int64_t)t[k] * (qs / 4096));
                if (sc > (1 << 23) - 1 || sc < -(1 << 23)) sc = t[k];
            }
            uint32_t k = 0;
            while (k < m.n_scales - 1 && (int64_t)sc * 4096 > (int64_t)t[k] * qs) k++;
            bad += wai_scale_index_q(&m, sc, qs) != (int)k;
        }
    }
    CHECK_EQ(bad, 0);
}

static void test_hyper(void)
{
    /* n_z = n_y = 1, no downsampling; h_s = conv 1x1 1->2 with w (1, -1): scale = z_hat,
     * mean = -z_hat. Thresholds 100, 200, 300. */
    int16_t w[2] = { 1, -1 }, wg[3] = { 1, 1, 1 };
    uint8_t sh[3] = { 0, 0, 0 };
    int64_t b[3] = { 0, 0, 0 };
    WaiLayer h = conv(WAI_LAYER_CONV, 1, 2, 1, 1, 0, 0), gl = conv(WAI_LAYER_CONV, 1, 3, 1, 1, 0, 0);
    h.weight = w; h.shift = sh; h.bias = b;
    gl.weight = wg; gl.shift = sh; gl.bias = b;
    WaiModel m;
    memset(&m, 0, sizeof(m));
    m.n_z = m.n_y = 1;
    m.pad_multiple = m.y_down = m.z_down = 1;
    m.n_hs = m.n_gs = 1;
    m.hs = &h;
    m.gs = &gl;
    m.n_scales = 4;
    m.thresholds_q12 = thr;
    WaiGeometry g;
    CHECK_EQ(wai_geometry(&m, 4, 1, &g), 0);
    const int32_t zh[4] = { 100, 101, 301, -7 };
    uint8_t idx[4];
    int32_t mean[4];
    CHECK_EQ(wai_hyper(&m, &dsp, &g, zh, idx, mean), 0);
    CHECK_EQ(idx[0], 0);
    CHECK_EQ(idx[1], 1);
    CHECK_EQ(idx[2], 3);
    CHECK_EQ(idx[3], 0);
    CHECK_EQ(mean[0], -100);
    CHECK_EQ(mean[1], -101);
    CHECK_EQ(mean[2], -301);
    CHECK_EQ(mean[3], 7);

    /* h_s giving the wrong channel count, against a geometry made for the good one */
    h.cout = 1;
    CHECK_EQ(wai_hyper(&m, &dsp, &g, zh, idx, mean), WAI_ERR_MODEL_INVALID);
}

/* A model with g_s the identity 1x1 conv (3 -> 3 channels) and h_s one 1x1 conv (1 -> 6
 * channels, weights wh0, wh1, 0...), n_z 1, n_y 3, no down-sampling; the layers and their
 * arrays live in the struct (m points into it: do not copy the struct, copy m). */
typedef struct IdentityModel {
    int16_t w[9], wh[6];
    uint8_t sh[6];
    int64_t b[6];
    WaiLayer gl, h;
    WaiModel m;
} IdentityModel;

static void identity_model(IdentityModel *t, int16_t wh0, int16_t wh1, uint32_t pad_multiple)
{
    memset(t, 0, sizeof(*t));
    t->w[0] = t->w[4] = t->w[8] = 1;
    t->wh[0] = wh0;
    t->wh[1] = wh1;
    t->gl = conv(WAI_LAYER_CONV, 3, 3, 1, 1, 0, 0);
    t->h = conv(WAI_LAYER_CONV, 1, 6, 1, 1, 0, 0);
    t->gl.weight = t->w; t->gl.shift = t->sh; t->gl.bias = t->b;
    t->h.weight = t->wh; t->h.shift = t->sh; t->h.bias = t->b;
    t->m.n_z = 1; t->m.n_y = 3;
    t->m.pad_multiple = pad_multiple; t->m.y_down = t->m.z_down = 1;
    t->m.n_hs = t->m.n_gs = 1;
    t->m.hs = &t->h; t->m.gs = &t->gl;
}

static void test_synthesis(void)
{
    /* n_y = 3, pad_multiple 2: a 3x2 picture is coded 4x2; g_s is the identity 1x1 conv */
    IdentityModel im;
    identity_model(&im, 0, 0, 2);
    WaiModel m = im.m;
    WaiLayer *gl = &im.gl;
    WaiGeometry g;
    CHECK_EQ(wai_geometry(&m, 3, 2, &g), 0);
    CHECK_EQ(g.wp, 4);
    CHECK_EQ(g.hp, 2);

    /* (v * 255 + 2048) >> 12 clamped:
     *   0 -> 0.5 -> 0; 4096 -> 255.5 -> 255; -1 -> 0.44 -> 0; 2048 -> 128.0 (tie) -> 128;
     *   2047 -> 127.94 -> 127; 16 -> 1.496 -> 1; 8 -> 0.998 -> 0; 9 -> 1.06 -> 1;
     *   -5000 -> 0; 4112 -> 256.5 -> 255; ACT_MAX -> 255; ACT_MIN -> 0; 1000 -> 62;
     *   2000 -> 125; 3000 -> 187; 4095 -> 255; 4080 -> 254.504 -> 254
     * column 3 is padding (never output). */
    const int32_t y[24] = {
        /* R */ 0, 4096, -1, 77777, 2048, 2047, 16, 77777,
        /* G */ 8, 9, -5000, 77777, 4112, WAI_ACT_MAX, WAI_ACT_MIN, 77777,
        /* B */ 1000, 2000, 3000, 77777, 4095, 4080, 9, 77777,
    };
    static const uint8_t full[2][9] = {
        { 0, 0, 62, 255, 1, 125, 0, 0, 187 },
        { 128, 255, 255, 127, 255, 254, 1, 0, 1 },
    };
    uint8_t rgb[2 * 11];
    memset(rgb, 0xEE, sizeof(rgb));
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 0, 0, 3, 2, rgb, 11), 0);
    for (int r = 0; r < 2; r++) {
        for (int k = 0; k < 9; k++) CHECK_EQ(rgb[r * 11 + k], full[r][k]);
        CHECK_EQ(rgb[r * 11 + 9], 0xEE); /* stride padding untouched */
        CHECK_EQ(rgb[r * 11 + 10], 0xEE);
    }

    /* the window (1, 1, 2, 1): row 1, columns 1 and 2 */
    memset(rgb, 0xEE, sizeof(rgb));
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 1, 1, 2, 1, rgb, 6), 0);
    for (int k = 0; k < 6; k++) CHECK_EQ(rgb[k], full[1][3 + k]);
    CHECK_EQ(rgb[6], 0xEE);
    /* the window (2, 0, 1, 2): column 2 of both rows */
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 2, 0, 1, 2, rgb, 3), 0);
    for (int k = 0; k < 3; k++) CHECK_EQ(rgb[k], full[0][6 + k]);
    for (int k = 0; k < 3; k++) CHECK_EQ(rgb[3 + k], full[1][6 + k]);

    /* windows outside the picture (the padding column is not part of it) */
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 2, 0, 2, 1, rgb, 6), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 0, 1, 1, 2, rgb, 6), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 0, 0, 0, 1, rgb, 6), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, UINT32_MAX, 0, 2, 1, rgb, 6), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 0, 0, 3, 1, rgb, 8), WAI_ERR_INVALID_ARG);

    /* g_s not ending in 3 x Hp x Wp */
    gl->cout = 2;
    CHECK_EQ(wai_synthesis(&m, &dsp, &g, y, 0, 0, 3, 2, rgb, 11), WAI_ERR_MODEL_INVALID);
}

/* The element-wise steps after the layers (scale index and mean of wai_hyper, RGB8 of
 * wai_synthesis) split into row ranges at 2 and 3 threads: the same bytes as the formula, for
 * a picture large enough to be split, and a window that is not the whole picture. */
static void test_split_rows(void)
{
    enum { W = 400, H = 300 };
    uint64_t rs = 99;
    IdentityModel im;
    identity_model(&im, 1, -1, 1);
    WaiModel m = im.m;
    WaiLayer *gl = &im.gl, *h = &im.h;
    m.n_scales = 4;
    m.thresholds_q12 = thr;
    WaiGeometry g;
    CHECK_EQ(wai_geometry(&m, W, H, &g), 0);
    const size_t plane = (size_t)W * H;
    int32_t *y = malloc(3 * plane * sizeof(*y));
    for (size_t e = 0; e < 3 * plane; e++) y[e] = (int32_t)tu_range(&rs, -600, 4700);
    const uint32_t dx = 5, dy = 7, dw = 390, dh = 290;
    const ptrdiff_t stride = 3 * dw + 5;
    uint8_t *rgb = malloc((size_t)stride * dh);
    static const int threads[] = { 1, 2, 3 };
    for (int t = 0; t < 3; t++) {
        WaiDsp d = dsp;
        wai_dsp_set_threads(&d, threads[t]);
        memset(rgb, 0xEE, (size_t)stride * dh);
        CHECK_EQ(wai_synthesis(&m, &d, &g, y, dx, dy, dw, dh, rgb, stride), 0);
        int bad = 0;
        for (uint32_t r = 0; r < dh; r++)
            for (uint32_t c = 0; c < dw; c++)
                for (int k = 0; k < 3; k++) {
                    const int64_t v = ((int64_t)y[k * plane + (size_t)(dy + r) * W + dx + c] * 255 +
                                       2048) >> 12;
                    bad += rgb[r * stride + 3 * c + k] != (v < 0 ? 0 : v > 255 ? 255 : v);
                }
        for (uint32_t r = 0; r < dh; r++) bad += rgb[r * stride + 3 * dw] != 0xEE;
        CHECK_EQ(bad, 0);
    }
    /* h_s: scale = z_hat, mean = -z_hat over W x H (z is 1 x H x W here) */
    m.n_y = 1;
    h->cout = 2;
    gl->cin = 1;
    CHECK_EQ(wai_geometry(&m, W, H, &g), 0);
    uint8_t *idx = malloc(plane);
    int32_t *mean = malloc(plane * sizeof(*mean));
    for (int t = 0; t < 3; t++) {
        WaiDsp d = dsp;
        wai_dsp_set_threads(&d, threads[t]);
        memset(idx, 0xEE, plane);
        CHECK_EQ(wai_hyper(&m, &d, &g, y, idx, mean), 0);
        int bad = 0;
        for (size_t e = 0; e < plane; e++) {
            const int32_t z = y[e];
            const int k = z <= 100 ? 0 : z <= 200 ? 1 : z <= 300 ? 2 : 3;
            bad += idx[e] != k || mean[e] != -z;
        }
        CHECK_EQ(bad, 0);
    }
    free(idx);
    free(mean);
    free(rgb);
    free(y);
}

/* ---- striped g_s (graph.c, spec 10): any stripe height, kernel set and thread count gives
 * the whole-tensor result. Random layer lists (conv and convT of every stride, kernel, pad and
 * out_pad the checks allow, kernels smaller than the stride, IGDN, leaky ReLU) on random
 * shapes; the expected RGB8 comes from wai_run_layers() on the whole tensor. */
enum { SL_MAX = 6 };
typedef struct StripeCase {
    WaiLayer l[SL_MAX];
    int16_t w[SL_MAX][6 * 6 * 7 * 7];
    uint8_t sh[SL_MAX][6];
    int64_t b[SL_MAX][6];
    int64_t beta[SL_MAX][6];
    int32_t gamma[SL_MAX][36];
    int n;
} StripeCase;

static void stripe_case(StripeCase *t, uint64_t *rs, int cin, int last_cout)
{
    memset(t, 0, sizeof(*t));
    t->n = (int)tu_range(rs, 1, SL_MAX);
    int c = cin;
    for (int k = 0; k < t->n; k++) {
        WaiLayer *l = &t->l[k];
        const int last = k == t->n - 1;
        const int kind = last ? (int)tu_range(rs, 0, 1) : (int)tu_range(rs, 0, 3);
        if (kind <= 1) {
            const int cout = last ? last_cout : (int)tu_range(rs, 1, 6);
            const int kk = (int)tu_range(rs, 1, 7), st = (int)tu_range(rs, 1, kind ? 4 : 3);
            if (kind) /* convT */
                *l = conv(WAI_LAYER_CONVT, c, cout, kk, st, (int)tu_range(rs, 0, (kk - 1) / 2),
                          (int)tu_range(rs, 0, st - 1));
            else
                *l = conv(WAI_LAYER_CONV, c, cout, kk, st, (int)tu_range(rs, 0, kk / 2), 0);
            l->weight = t->w[k];
            l->shift = t->sh[k];
            l->bias = t->b[k];
            for (int e = 0; e < cout * c * kk * kk; e++) t->w[k][e] = (int16_t)tu_range(rs, -600, 600);
            for (int o = 0; o < cout; o++) {
                t->sh[k][o] = (uint8_t)tu_range(rs, 9, 12);
                t->b[k][o] = tu_range(rs, -(1 << 22), 1 << 22);
            }
            c = cout;
        } else if (kind == 2) {
            *l = act(WAI_LAYER_IGDN, c);
            l->beta = t->beta[k];
            l->gamma = t->gamma[k];
            for (int i = 0; i < c; i++) t->beta[k][i] = tu_range(rs, 1 << 18, 1 << 21);
            for (int i = 0; i < c * c; i++) t->gamma[k][i] = (int32_t)tu_range(rs, 0, 300);
        } else {
            *l = act(WAI_LAYER_LRELU, c);
            l->slope_q16 = (int32_t)tu_range(rs, 0, 65536);
        }
    }
}

/* Elements of the largest tensor of the list on ys, or 0 if a shape is not positive. */
static double stripe_case_size(const StripeCase *t, WaiShape ys)
{
    double h = ys.h, w = ys.w, most = (double)ys.c * h * w;
    for (int k = 0; k < t->n; k++) {
        const WaiLayer *l = &t->l[k];
        if (l->type == WAI_LAYER_CONV) {
            h = floor((h + 2 * l->pad - l->kh) / l->stride) + 1;
            w = floor((w + 2 * l->pad - l->kw) / l->stride) + 1;
        } else if (l->type == WAI_LAYER_CONVT) {
            h = (h - 1) * l->stride - 2 * l->pad + l->kh + l->out_pad;
            w = (w - 1) * l->stride - 2 * l->pad + l->kw + l->out_pad;
        }
        if (h < 1 || w < 1) return 0;
        if ((double)l->cout * h * w > most) most = (double)l->cout * h * w;
    }
    return most;
}

static void print_layers(const StripeCase *t)
{
    for (int k = 0; k < t->n; k++)
        fprintf(stderr, "  layer %d: type %d k %d s %d p %d op %d\n", k, t->l[k].type, t->l[k].kh,
                t->l[k].stride, t->l[k].pad, t->l[k].out_pad);
}

/* The sets the stripe tests rotate through: the reference, C and automatic sets; where
 * WAI_KERNELS names a set (the cross builds under qemu, whose emulated C set is very slow on
 * i386), the reference and that set. */
static void stripe_sets(WaiDsp sets[3])
{
    WaiKernels env_k;
    const char *env = getenv("WAI_KERNELS");
    const int from_env = env && *env && wai_kernels_from_name(env, &env_k) == 0;
    wai_dsp_init_ref(&sets[0]);
    wai_dsp_init(&sets[1], from_env ? env_k : WAI_KERNELS_C);
    wai_dsp_init(&sets[2], from_env ? env_k : WAI_KERNELS_AUTO);
}

static void test_stripes(void)
{
    uint64_t rs = 2026;
    int cases = 0, bad = 0;
    WaiDsp sets[3];
    stripe_sets(sets);
    for (int iter = 0; iter < 400; iter++) {
        StripeCase t;
        const int cin = (int)tu_range(&rs, 1, 5);
        stripe_case(&t, &rs, cin, 3);
        const WaiShape ys = { cin, (int)tu_range(&rs, 1, 24), (int)tu_range(&rs, 1, 13) };
        /* a list that upsamples a lot makes large tensors: cases stay under 2^16 elements */
        const double size = stripe_case_size(&t, ys);
        if (size < 1 || size > 65536) continue;
        const size_t ny = (size_t)ys.c * ys.h * ys.w;
        int32_t *y = malloc(ny * sizeof(*y)), *full = NULL;
        for (size_t e = 0; e < ny; e++) y[e] = (int32_t)tu_range(&rs, -9000, 9000);
        WaiShape os;
        if (wai_run_layers(&sets[0], t.l, (uint32_t)t.n, y, ys, &full, &os) < 0) {
            free(y); /* an invalid random list (a non-positive shape): drawn again */
            continue;
        }
        cases++;
        WaiModel m;
        memset(&m, 0, sizeof(m));
        m.n_gs = (uint32_t)t.n;
        m.gs = t.l;
        m.y_down = (uint32_t)tu_range(&rs, 1, 16);
        WaiGeometry g;
        memset(&g, 0, sizeof(g));
        g.y = ys;
        g.wp = (uint32_t)os.w;
        g.hp = (uint32_t)os.h;
        g.width = (uint32_t)tu_range(&rs, 1, os.w);
        g.height = (uint32_t)tu_range(&rs, 1, os.h);
        const uint32_t dx = (uint32_t)tu_range(&rs, 0, g.width - 1),
                       dy = (uint32_t)tu_range(&rs, 0, g.height - 1);
        const uint32_t dw = (uint32_t)tu_range(&rs, 1, g.width - dx),
                       dh = (uint32_t)tu_range(&rs, 1, g.height - dy);
        const ptrdiff_t stride = 3 * (ptrdiff_t)dw + 1;
        uint8_t *want = malloc((size_t)stride * dh), *got = malloc((size_t)stride * dh);
        const size_t plane = (size_t)os.h * os.w;
        for (uint32_t r = 0; r < dh; r++)
            for (uint32_t col = 0; col < dw; col++)
                for (int k = 0; k < 3; k++) {
                    const int64_t v =
                        ((int64_t)full[k * plane + (size_t)(dy + r) * os.w + dx + col] * 255 + 2048) >> 12;
                    want[r * stride + 3 * col + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
        const int heights[] = { 0, 1, 2, 3, (int)tu_range(&rs, 1, os.h), 1 << 20 };
        for (size_t h = 0; h < sizeof(heights) / sizeof(heights[0]); h++) {
            WaiDsp d = sets[(iter + h) % 3];
            wai_dsp_set_threads(&d, 1 + (int)((iter + h) % 3));
            d.stripe_rows = heights[h];
            memset(got, 0xEE, (size_t)stride * dh);
            int r = wai_synthesis(&m, &d, &g, y, dx, dy, dw, dh, got, stride);
            int diff = r != 0;
            for (uint32_t row = 0; !diff && row < dh; row++)
                diff = memcmp(got + row * stride, want + row * stride, 3 * dw) ||
                       got[row * stride + 3 * dw] != 0xEE;
            if (diff && bad < 5)
                fprintf(stderr, "stripes: case %d (%d layers, y %dx%dx%d) stripe_rows %d: r %d, "
                        "bytes differ\n", iter, t.n, ys.c, ys.h, ys.w, heights[h], r);
            if (diff && bad < 5) print_layers(&t);
            bad += diff;
        }
        free(want);
        free(got);
        free(full);
        free(y);
    }
    printf("stripes: %d random layer lists\n", cases);
    CHECK(cases >= 200);
    CHECK_EQ(bad, 0);
}

/* ---- striped h_s (graph.c, spec 10): the same for wai_hyper(). Random lists ending in 2 n_y
 * channels; the expected index and mean come from wai_run_layers() on the whole tensor and
 * wai_scale_index(). The h_s stripe height is stripe_rows / y_down (at least 1), or automatic
 * from pair_hs, which is drawn here so that automatic heights vary too. */
static void test_hyper_stripes(void)
{
    uint64_t rs = 2027;
    int cases = 0, bad = 0;
    WaiDsp sets[3];
    stripe_sets(sets);
    int32_t hs_thr[15];
    for (int k = 0; k < 15; k++) hs_thr[k] = -(1 << 20) + k * (1 << 17);
    for (int iter = 0; iter < 300; iter++) {
        StripeCase t;
        const int cin = (int)tu_range(&rs, 1, 5), ny = (int)tu_range(&rs, 1, 3);
        stripe_case(&t, &rs, cin, 2 * ny);
        const WaiShape zs = { cin, (int)tu_range(&rs, 1, 12), (int)tu_range(&rs, 1, 9) };
        const double size = stripe_case_size(&t, zs);
        if (size < 1 || size > 65536) continue;
        const size_t nz = (size_t)zs.c * zs.h * zs.w;
        int32_t *z = malloc(nz * sizeof(*z)), *full = NULL;
        for (size_t e = 0; e < nz; e++) z[e] = (int32_t)tu_range(&rs, -9000, 9000);
        WaiShape os;
        if (wai_run_layers(&sets[0], t.l, (uint32_t)t.n, z, zs, &full, &os) < 0) {
            free(z);
            continue;
        }
        cases++;
        WaiModel m;
        memset(&m, 0, sizeof(m));
        m.n_hs = (uint32_t)t.n;
        m.hs = t.l;
        m.n_scales = 16;
        m.thresholds_q12 = hs_thr;
        m.y_down = (uint32_t)tu_range(&rs, 1, 16);
        m.z_down = m.y_down * (uint32_t)tu_range(&rs, 1, 4);
        WaiGeometry g;
        memset(&g, 0, sizeof(g));
        g.z = zs;
        g.y = (WaiShape){ ny, os.h, os.w };
        g.pair_hs = (size_t)tu_range(&rs, 1 << 20, 1 << 24);
        const size_t n_y = (size_t)ny * os.h * os.w;
        uint8_t *want_i = malloc(n_y), *got_i = malloc(n_y);
        int32_t *want_m = malloc(n_y * sizeof(int32_t)), *got_m = malloc(n_y * sizeof(int32_t));
        for (size_t e = 0; e < n_y; e++) {
            want_i[e] = (uint8_t)wai_scale_index(&m, full[e]);
            want_m[e] = full[n_y + e];
        }
        const int yd = (int)m.y_down;
        const int heights[] = { 0, 1, yd, 2 * yd, 3 * yd, yd * (int)tu_range(&rs, 1, os.h), 1 << 20 };
        for (size_t h = 0; h < sizeof(heights) / sizeof(heights[0]); h++) {
            WaiDsp d = sets[(iter + h) % 3];
            wai_dsp_set_threads(&d, 1 + (int)((iter + h) % 3));
            d.stripe_rows = heights[h];
            memset(got_i, 0xEE, n_y);
            memset(got_m, 0xEE, n_y * sizeof(int32_t));
            const int r = wai_hyper(&m, &d, &g, z, got_i, got_m);
            const int diff = r != 0 || memcmp(got_i, want_i, n_y) || memcmp(got_m, want_m, n_y * sizeof(int32_t));
            if (diff && bad < 5) {
                fprintf(stderr, "hyper stripes: case %d (%d layers, z %dx%dx%d, y_down %d) stripe_rows %d: "
                        "r %d, outputs differ\n", iter, t.n, zs.c, zs.h, zs.w, yd, heights[h], r);
                print_layers(&t);
            }
            bad += diff;
        }
        free(want_i);
        free(got_i);
        free(want_m);
        free(got_m);
        free(full);
        free(z);
    }
    printf("hyper stripes: %d random layer lists\n", cases);
    CHECK(cases >= 150);
    CHECK_EQ(bad, 0);
}

int main(void)
{
    wai_dsp_init_ref(&dsp);
    test_split_rows();
    test_geometry();
    test_graph_checks();
    test_run_layers();
    test_scale_index();
    test_scale_index_q();
    test_hyper();
    test_synthesis();
    test_stripes();
    test_hyper_stripes();
    return tu_finish("test_graph");
}
