/*
 * wai-mkvectors: make the conformance vectors from seeded integer latents.
 *
 *   wai-mkvectors --model MODEL.whm [--model RULE-MODEL.whm ...] --out-dir DIR [--manifest FILE]
 *
 * The first model makes v01..v10 (seeded latents). The rule vectors (v11..) each name a
 * hand-set model of wai-mkmodel (--topology rule-*), found among the other --model files by
 * its name field, and carry it embedded; their z and y values are chosen one by one (except
 * rule-graph's, which are seeded) to sit on the ties, bounds and thresholds of the rule they
 * pin (vectors/README.md, "Rule vectors").
 *
 * No trained model is needed: z and y values are drawn from the integer PRNG (prng.h), the
 * library's integer h_s decides the tables, the entropy encoder writes the payloads, and the
 * reference decoder gives the pinned hash of the decoded RGB8. Output is byte-identical on
 * every rerun (integers only).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsp.h"
#include "graph.h"
#include "model.h"
#include "payload.h"
#include "prng.h"
#include "rans.h"
#include "stream.h"

typedef struct VectorSpec {
    const char *name;
    const char *what;
    uint32_t width, height;
    uint32_t dx, dy, dw, dh;    /* display window; dw == 0: whole picture */
    uint32_t frames;
    uint32_t fps_num, fps_den;
    int embed_model;
    int escapes;                /* per mille of y values forced far out of range */
    int zeros;                  /* zero-heavy latents */
    uint64_t seed;
    const char *model;          /* NULL: the first --model; else the name of a rule model */
    /* chosen latents: fills z[c][y][x] and y[c][y][x] (geometry g); NULL: seeded */
    void (*fill)(const WaiGeometry *g, int32_t *z, int32_t *y);
    int long_nb;                /* bypass lengths above the least (spec 7.2: allowed) */
    /* variable-rate vectors (spec 1.1): frame f is WIH2 with rate frame_rate[f] (-1: WIH1);
     * fill_rate chooses its values */
    const int *frame_rate;
    void (*fill_rate)(const WaiModel *m, const WaiGeometry *g, int rate, int32_t *z, int32_t *y);
} VectorSpec;

/* ---- chosen latents for the rule vectors ----
 * In the rule models (except rule-scale, rule-zhat, rule-graph) the mean is the z value v_z
 * itself (median 0, mean = rshr(4096 v_z, 12)), so y_hat = 4096 v_y + v_z: set_hat() splits a
 * wanted y_hat into the two values, v_z in [-2048, 2047]. */
static void set_hat(const WaiGeometry *g, int32_t *z, int32_t *y, int c, int row, int col, int32_t a)
{
    int32_t r = ((a % 4096) + 4096) % 4096;
    if (r >= 2048) r -= 4096;
    size_t i = ((size_t)c * g->y.h + (size_t)row) * g->y.w + (size_t)col;
    z[i] = r;
    y[i] = (a - r) / 4096;
}

/* v11: rshr ties for shifts 1 (channel 0), 12 (channel 1) and 32 (channel 2: the
 * accumulator is -2^31 + 1024 x), and shift 0 in the amplifier. Results in -3..3. */
static void fill_rshr(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    static const int32_t v[3][8] = {
        { -5, -3, -1, 1, 3, 5, 2, -2 },                         /* -2 -1 0 1 2 3 1 -1 */
        { -6144, -2048, 2048, 6144, -2049, 2047, 4095, -4097 }, /* -1 0 1 2 -1 0 1 -1 */
        { 0, 1 << 22, -(1 << 22), (1 << 22) - 1, (1 << 23) - 1, -(1 << 23), 1, -1 },
                                                                /* 0 1 -1 0 1 -2 0 -1 */
    };
    for (int c = 0; c < 3; c++)
        for (int x = 0; x < 8; x++) set_hat(g, z, y, c, 0, x, v[c][x]);
}

/* v12: leaky ReLU slope 3/4: ties (-2, -6), roundings up (-1, -5), positives unchanged. */
static void fill_lrelu(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    static const int32_t v[3][8] = {
        { -1, -2, -3, -4, -6, 0, 1, 3 },      /* -1 -1 -2 -3 -4 0 1 3 */
        { -2, -6, -5, -7, -1, 4, -8, 2 },     /* -1 -4 -4 -5 -1 4 -6 2 */
        { -3, -4, -1, -2, -6, -5, -7, 0 },
    };
    for (int c = 0; c < 3; c++)
        for (int x = 0; x < 8; x++) set_hat(g, z, y, c, 0, x, v[c][x]);
}

/* v13: the IGDN inputs that turn an off-by-one root into an off-by-one output (see
 * wai-mkmodel's rule-isqrt). */
static void fill_isqrt(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    static const int32_t v[3] = { 1, 584, 2979 };
    for (int c = 0; c < 3; c++) set_hat(g, z, y, c, 0, 0, v[c]);
}

/* v18: IGDN gamma_shift 8 inputs (see wai-mkmodel's rule-igdn8). */
static void fill_igdn8(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    static const int32_t v[3] = { 1101, 2000, 3001 };
    for (int c = 0; c < 3; c++) set_hat(g, z, y, c, 0, 0, v[c]);
}

/* v19: escapes of every bypass length with leading zero nibbles (written by
 * padded_payload()): y values just outside the table (u = 0, 1), far (+-65535) and between. */
static void fill_nb(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    static const int32_t yv[16] = { 3, -3, 4, -4, 65535, -65535, 100, -100,
                                    3, -3, 1000, -1000, 12345, -54321, 0, 2 };
    for (int x = 0; x < 16; x++) {
        z[x] = x % 8 - 2;
        y[x] = yv[x];
    }
    (void)g;
}

/* rANS queue entries as rans.c's encoder makes them (start << 16 | (freq - 1)) */
static int q_push(WaiRansEnc *e, uint32_t start, uint32_t freq)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 256;
        uint32_t *s = realloc(e->sym, cap * sizeof(*s));
        if (!s) return e->err = WAI_ERR_NOMEM;
        e->sym = s;
        e->cap = cap;
    }
    e->sym[e->n++] = start << 16 | (freq - 1);
    return 0;
}

/* A payload like wai_payload_encode()'s, except that the k-th escape of the y stream writes
 * its bypass length as nb_min + k mod (9 - nb_min): the least length, then with 1, 2, ... up to
 * 8 - nb_min leading zero nibbles (spec 7.2: "a larger nb <= 8 ... decodes normally"). */
static int padded_payload(const WaiModel *m, const WaiGeometry *g, const int32_t *z,
                          const int32_t *y, const uint8_t *idx, uint8_t **out, size_t *size)
{
    WaiRansEnc ez, ey;
    wai_rans_enc_init(&ez);
    wai_rans_enc_init(&ey);
    uint8_t *zb = NULL, *yb = NULL;
    size_t zn = 0, yn = 0;
    int r = 0, k = 0;
    const size_t plane = (size_t)g->z.h * g->z.w, ny = (size_t)g->y.c * g->y.h * g->y.w;
    for (uint32_t c = 0; !r && c < (uint32_t)g->z.c; c++)
        for (size_t i = 0; !r && i < plane; i++)
            r = wai_rans_enc_value(&ez, &m->z_tables[c], z[c * plane + i]);
    for (size_t i = 0; !r && i < ny; i++) {
        const WaiTable *t = &m->y_tables[idx[i]];
        int64_t d = (int64_t)y[i] - t->offset;
        if (d >= 0 && d < (int64_t)t->length) {
            r = wai_rans_enc_value(&ey, t, y[i]);
            continue;
        }
        uint64_t u = d < 0 ? (uint64_t)(-2 * d - 1) : (uint64_t)(2 * (d - (int64_t)t->length));
        uint32_t nb = 0;
        while (u >> (4 * nb)) nb++;
        nb += (uint32_t)(k++ % (9 - (int)nb));
        r = q_push(&ey, t->cdf[t->length], t->cdf[t->length + 1] - t->cdf[t->length]);
        if (!r) r = q_push(&ey, nb * 4096, 4096);
        for (uint32_t j = 0; !r && j < nb; j++) r = q_push(&ey, (uint32_t)((u >> (4 * j)) & 15) * 4096, 4096);
    }
    if (!r && !(r = wai_rans_enc_finish(&ez, &zb, &zn))) r = wai_rans_enc_finish(&ey, &yb, &yn);
    if (!r) {
        *size = 20 + zn + yn;
        uint8_t *p = *out = malloc(*size);
        if (!p) r = WAI_ERR_NOMEM;
        else {
            memcpy(p, "WIH1", 4);
            wai_wr32(p + 4, g->width);
            wai_wr32(p + 8, g->height);
            wai_wr32(p + 12, (uint32_t)zn);
            wai_wr32(p + 16, (uint32_t)yn);
            memcpy(p + 20, zb, zn);
            memcpy(p + 20 + zn, yb, yn);
        }
    }
    wai_rans_enc_free(&ez);
    wai_rans_enc_free(&ey);
    free(zb);
    free(yb);
    return r;
}

/* v14: scales (z_hat = 4096 z) -8192 .. 20480: on each threshold and above the last; y values
 * at both table edges (escape u = 0 and u = 1), at +-65535 (the y_hat clamp) and in range. */
static void fill_scale(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    static const int32_t zv[8] = { -2, -1, 0, 1, 2, 3, 4, 5 };
    static const int32_t yv[8] = { 2, -2, 1, -1, 65535, -65535, -4, 3 };
    (void)g;
    for (int x = 0; x < 8; x++) { z[x] = zv[x]; y[x] = yv[x]; }
}

/* v15: z values against medians 2^31 - 1, -2^31 and 2^23 - 11288; y values 0. */
static void fill_zhat(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    static const int32_t zv[3][8] = {
        { 65535, -65535, 0, 1, -1, 7, 2, -2 },
        { 65535, -65535, 0, 1, -1, 7, 2, -2 },
        { 2, 3, 4, 1, 0, 65535, -1, 5 },
    };
    (void)g;
    for (int c = 0; c < 3; c++)
        for (int x = 0; x < 8; x++) { z[c * 8 + x] = zv[c][x]; y[c * 8 + x] = 0; }
}

/* v16: R = y_hat + k in channel k: inside the display window a ramp -64, -61, ... 4253 over
 * the window's pixels in raster order (every value -64 .. 4255 in one channel or another),
 * outside it 0. */
static void fill_output(const WaiGeometry *g, int32_t *z, int32_t *y)
{
    for (int row = 0; row < g->y.h; row++)
        for (int col = 0; col < g->y.w; col++) {
            int in = row >= 3 && row < 23 && col >= 2 && col < 74;
            set_hat(g, z, y, 0, row, col, in ? -64 + 3 * ((row - 3) * 72 + (col - 2)) : 0);
        }
}

/* v20 (rule-rates, spec 1.1): z values -2 .. 9 put the scales 4096 v_z on the thresholds after
 * each rate's quantisation step (see wai-mkmodel's rule-rates); odd columns code y values +-1
 * (in every table), even columns the value an encoder codes for a target y_hat T (a ramp
 * -450000 .. 450000, negated in channel 1): v = round((T - mean) / rs), within +-65535, so the
 * reconstruction step shows in the picture (rs = 1 runs into the value bound, 2^24 into the
 * y_hat clamp or to 0). */
static void fill_rates(const WaiModel *m, const WaiGeometry *g, int rate, int32_t *z, int32_t *y)
{
    static const int32_t zv[8] = { -2, 0, 1, 2, 3, 4, 6, 9 };
    const uint32_t *rs = wai_rate_rsteps(m, rate);
    for (int c = 0; c < 3; c++)
        for (int x = 0; x < 8; x++) {
            const size_t i = (size_t)c * g->y.w + (size_t)x;
            z[i] = zv[x];
            if (x & 1) {
                y[i] = x % 4 == 1 ? 1 : -1;
                continue;
            }
            const int64_t step = rs ? rs[c] : 4096, mean = zv[x];
            const int64_t t = (int64_t)(x - 3) * 150000 * (c == 1 ? -1 : 1) - mean;
            /* round half up: floor((2 t + step) / (2 step)) */
            const int64_t num = 2 * t + step, den = 2 * step;
            int64_t v = num >= 0 ? num / den : -((-num + den - 1) / den);
            if (v > WAI_VALUE_MAX) v = WAI_VALUE_MAX;
            if (v < -WAI_VALUE_MAX) v = -WAI_VALUE_MAX;
            y[i] = (int32_t)v;
        }
}

static const int rates_frames[4] = { 0, 1, 2, -1 };


static const VectorSpec vectors[] = {
    { "v01-64x64", "one 64x64 picture", 64, 64, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 1, NULL, NULL, 0, NULL, NULL },
    { "v02-1x1", "1x1 picture (padded to 64x64)", 1, 1, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 2, NULL, NULL, 0, NULL, NULL },
    { "v03-100x75", "sides not multiples of 64", 100, 75, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 3, NULL, NULL, 0, NULL, NULL },
    { "v04-wide-1000x8", "very wide picture", 1000, 8, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 4, NULL, NULL, 0, NULL, NULL },
    { "v05-tall-17x300", "tall picture, odd width", 17, 300, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 5, NULL, NULL, 0, NULL, NULL },
    { "v06-window-96x80", "display window 80x70 at (5,3)", 96, 80, 5, 3, 80, 70, 1, 25, 1, 0, 0, 0, 6, NULL, NULL, 0, NULL, NULL },
    { "v07-escapes-64x64", "many escaped (bypass) values", 64, 64, 0, 0, 0, 0, 1, 25, 1, 0, 50, 0, 7, NULL, NULL, 0, NULL, NULL },
    { "v08-zeros-128x64", "zero-heavy latents", 128, 64, 0, 0, 0, 0, 1, 25, 1, 0, 0, 1, 8, NULL, NULL, 0, NULL, NULL },
    { "v09-video-3x64x48", "3-frame intra video at 30000/1001 fps", 64, 48, 0, 0, 0, 0, 3, 30000, 1001, 0, 0, 0, 9, NULL, NULL, 0, NULL, NULL },
    { "v10-embedded-32x32", "model embedded in the stream", 32, 32, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 10, NULL, NULL, 0, NULL, NULL },
    /* rule vectors: hand-set models, embedded */
    { "v11-rshr-8x1", "rshr ties at shifts 0, 1, 12, 32", 8, 1, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-rshr", fill_rshr, 0, NULL, NULL },
    { "v12-lrelu-8x1", "leaky ReLU rounding and ties", 8, 1, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-lrelu", fill_lrelu, 0, NULL, NULL },
    { "v13-isqrt-1x1", "IGDN isqrt where double sqrt is off", 1, 1, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-isqrt", fill_isqrt, 0, NULL, NULL },
    { "v14-scale-8x1", "scales on thresholds, table edges, y_hat clamp", 8, 1, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-scale", fill_scale, 0, NULL, NULL },
    { "v15-zhat-8x1", "z_hat with extreme medians, int64 and clamp", 8, 1, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-zhat", fill_zhat, 0, NULL, NULL },
    { "v16-output-76x23", "RGB8 conversion ramp, window 72x20 at (2,3)", 76, 23, 2, 3, 72, 20, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-output", fill_output, 0, NULL, NULL },
    { "v17-graph-21x13", "strides 2-4, non-square kernels, IGDN g 8 and 24", 21, 13, 0, 0, 0, 0, 1, 25, 1, 1, 50, 0, 17,
      "wai-rule-graph", NULL, 0, NULL, NULL },
    { "v18-igdn8-1x1", "IGDN gamma_shift 8: x2 rounding, gamma orientation", 1, 1, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-igdn8", fill_igdn8, 0, NULL, NULL },
    { "v19-bypass-nb-16x1", "bypass lengths with leading zero nibbles", 16, 1, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 0,
      "wai-rule-output", fill_nb, 1, NULL, NULL },
    { "v20-rates-8x1", "variable rate: WIH2 rates 0, 1, 2 and a WIH1 frame", 8, 1, 0, 0, 0, 0, 4, 25, 1, 1, 0, 0, 0,
      "wai-rule-rates", NULL, 0, rates_frames, fill_rates },
};

static int fail(const char *what, int err)
{
    fprintf(stderr, "wai-mkvectors: %s: %s\n", what, wai_strerror(err));
    return 1;
}

/* A value near a zero-mean discrete distribution of about `scale` (Q12): the sum of two
 * uniforms, a triangle of half-width ~1.5 scale; integers only. */
static int32_t draw(WaiPrng *r, int64_t scale_q12)
{
    int64_t h = (scale_q12 * 3 / 2 + 2048) >> 12;
    if (h < 0) h = 0;
    return (int32_t)(wai_prng_range(r, -h, h) + wai_prng_range(r, -h, h)) / 2;
}

/* One picture's payload from seeded latents. */
static int make_payload(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g,
                        const VectorSpec *v, WaiPrng *r, uint8_t **out, size_t *size)
{
    size_t nz = (size_t)g->z.c * g->z.h * g->z.w, ny = (size_t)g->y.c * g->y.h * g->y.w;
    int32_t *z = malloc(nz * sizeof(*z)), *zh = malloc(nz * sizeof(*zh));
    int32_t *y = malloc(ny * sizeof(*y)), *mean = malloc(ny * sizeof(*mean));
    uint8_t *idx = malloc(ny);
    int err = WAI_ERR_NOMEM;
    if (!z || !zh || !y || !mean || !idx) goto end;

    if (v->fill) {
        /* chosen values (z and y have the same size in these models) */
        v->fill(g, z, y);
        wai_z_hat(m, g, z, zh);
        if ((err = wai_hyper(m, dsp, g, zh, idx, mean)) < 0) goto end;
        err = v->long_nb ? padded_payload(m, g, z, y, idx, out, size)
                         : wai_payload_encode(m, g, -1, z, y, idx, out, size);
        goto end;
    }
    for (size_t i = 0; i < nz; i++) {
        const WaiTable *t = &m->z_tables[i / ((size_t)g->z.h * g->z.w)];
        int32_t span = (int32_t)t->length;
        z[i] = v->zeros ? (wai_prng_range(r, 0, 3) == 0 ? 1 : 0)
                        : t->offset + span / 4 + (int32_t)wai_prng_range(r, 0, span / 2);
    }
    wai_z_hat(m, g, z, zh);
    if ((err = wai_hyper(m, dsp, g, zh, idx, mean)) < 0) goto end;
    for (size_t i = 0; i < ny; i++) {
        uint32_t k = idx[i];
        int64_t scale = k < m->n_scales - 1 ? m->thresholds_q12[k] : m->thresholds_q12[m->n_scales - 2] * 2;
        y[i] = v->zeros && wai_prng_range(r, 0, 7) ? 0 : draw(r, scale);
        if (v->escapes && wai_prng_range(r, 0, 999) < v->escapes) {
            /* far outside every table, both signs, up to the format's bound */
            int32_t mag = (int32_t)wai_prng_range(r, 300, WAI_VALUE_MAX);
            y[i] = wai_prng_range(r, 0, 1) ? mag : -mag;
        }
    }
    err = wai_payload_encode(m, g, -1, z, y, idx, out, size);
end:
    free(z); free(zh); free(y); free(mean); free(idx);
    return err;
}

/* One frame of a variable-rate vector: its rate's table indices (wai_hyper_rate), WIH2 (or
 * WIH1 for rate -1). */
static int make_rate_payload(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g,
                             const VectorSpec *v, int rate, uint8_t **out, size_t *size)
{
    size_t nz = (size_t)g->z.c * g->z.h * g->z.w, ny = (size_t)g->y.c * g->y.h * g->y.w;
    int32_t *z = malloc(nz * sizeof(*z)), *zh = malloc(nz * sizeof(*zh));
    int32_t *y = malloc(ny * sizeof(*y)), *mean = malloc(ny * sizeof(*mean));
    uint8_t *idx = malloc(ny);
    int err = WAI_ERR_NOMEM;
    if (z && zh && y && mean && idx) {
        v->fill_rate(m, g, rate, z, y);
        wai_z_hat(m, g, z, zh);
        if ((err = wai_hyper_rate(m, dsp, g, zh, rate, idx, mean)) >= 0)
            err = wai_payload_encode(m, g, rate, z, y, idx, out, size);
    }
    free(z); free(zh); free(y); free(mean); free(idx);
    return err;
}

static int make_vector(const WaiModel *m, const uint8_t *model_bytes, size_t model_size,
                       const WaiDsp *dsp, const VectorSpec *v, const char *dir, FILE *manifest)
{
    WaiGeometry g;
    int err = wai_geometry(m, v->width, v->height, &g);
    if (err < 0) return fail(v->name, err);

    WaiSequenceInfo info;
    memset(&info, 0, sizeof(info));
    info.width = v->width;
    info.height = v->height;
    info.disp_x = v->dx;
    info.disp_y = v->dy;
    info.disp_w = v->dw ? v->dw : v->width;
    info.disp_h = v->dw ? v->dh : v->height;
    info.fps_num = v->fps_num;
    info.fps_den = v->fps_den;
    info.frame_count = v->frames;
    info.colour_primaries = 1;
    info.transfer = 13;
    info.matrix = 0;
    info.full_range = 1;
    info.version_major = 1;
    memcpy(info.model_sha256, m->sha256, 32);

    WaiBuf stream;
    wai_buf_init(&stream);
    err = wai_seqhdr_write(&stream, &info, v->embed_model ? model_bytes : NULL,
                           v->embed_model ? model_size : 0);

    size_t rgb_size = (size_t)info.disp_w * info.disp_h * 3;
    uint8_t *rgb = malloc(rgb_size * v->frames);
    if (!rgb) err = WAI_ERR_NOMEM;

    WaiPrng r;
    wai_prng_seed(&r, v->seed);
    for (uint32_t f = 0; err >= 0 && f < v->frames; f++) {
        uint8_t *payload = NULL;
        size_t psize = 0;
        if ((err = v->fill_rate ? make_rate_payload(m, dsp, &g, v, v->frame_rate[f], &payload, &psize)
                                : make_payload(m, dsp, &g, v, &r, &payload, &psize)) < 0)
            break;
        err = wai_frame_write(&stream, f, payload, psize);
        /* the pinned hash comes from the reference decode of the bytes just written */
        if (err >= 0)
            err = wai_payload_decode(m, dsp, payload, psize, v->width, v->height, info.disp_x,
                                     info.disp_y, info.disp_w, info.disp_h, rgb + f * rgb_size,
                                     (ptrdiff_t)info.disp_w * 3);
        free(payload);
    }
    if (err >= 0 && stream.err) err = stream.err;
    if (err < 0) {
        free(rgb);
        wai_buf_free(&stream);
        return fail(v->name, err);
    }

    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.wai", dir, v->name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(stream.data, 1, stream.size, f) != stream.size || fclose(f)) {
        fprintf(stderr, "wai-mkvectors: cannot write %s\n", path);
        free(rgb);
        wai_buf_free(&stream);
        return 1;
    }
    uint8_t sha[32];
    char hex[65];
    wai_sha256(rgb, rgb_size * v->frames, sha);
    wai_sha256_hex(sha, hex);
    fprintf(manifest, "%s.wai %s %" PRIu32 " %" PRIu32 "x%" PRIu32 "\n", v->name, hex, v->frames,
            info.disp_w, info.disp_h);
    fprintf(stderr, "%-22s %8zu bytes  %s\n", v->name, stream.size, v->what);
    free(rgb);
    wai_buf_free(&stream);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: wai-mkvectors --model MODEL.whm [--model RULE.whm ...] --out-dir DIR [--manifest FILE]\n"
               "Writes the conformance vectors DIR/<name>.wai and their manifest lines\n"
               "(the rule vectors v11.. only for the rule models given, matched by name)\n"
               "(<file> <sha256 of decoded RGB8> <frames> <W>x<H>) to FILE or stdout.\n");
}

#define MAX_MODELS 16

int main(int argc, char **argv)
{
    const char *model_paths[MAX_MODELS], *dir = NULL, *manifest_path = NULL;
    int n_models = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { usage(stderr); return 2; }
        if (!strcmp(argv[i], "--model")) {
            if (n_models == MAX_MODELS) { usage(stderr); return 2; }
            model_paths[n_models++] = argv[++i];
        }
        else if (!strcmp(argv[i], "--out-dir")) dir = argv[++i];
        else if (!strcmp(argv[i], "--manifest")) manifest_path = argv[++i];
        else { usage(stderr); return 2; }
    }
    if (!n_models || !dir) { usage(stderr); return 2; }

    uint8_t *bytes[MAX_MODELS] = { 0 };
    size_t size[MAX_MODELS] = { 0 };
    WaiModel *m[MAX_MODELS] = { 0 };
    int rc = 0;
    for (int k = 0; k < n_models && !rc; k++) {
        int err = wai_read_file(model_paths[k], (size_t)512 << 20, &bytes[k], &size[k]);
        if (err < 0) { rc = fail(model_paths[k], err); break; }
        char msg[256] = "";
        if ((err = wai_model_parse(&m[k], bytes[k], size[k], msg, sizeof(msg))) < 0) {
            fprintf(stderr, "wai-mkvectors: %s: %s\n", model_paths[k], msg);
            rc = 1;
        }
    }
    WaiDsp dsp;
    wai_dsp_init_ref(&dsp);

    FILE *manifest = NULL;
    if (!rc) {
        manifest = manifest_path ? fopen(manifest_path, "w") : stdout;
        if (!manifest) { fprintf(stderr, "wai-mkvectors: cannot write %s\n", manifest_path); rc = 1; }
    }
    if (!rc) {
        char hex[65];
        wai_sha256_hex(m[0]->sha256, hex);
        fprintf(manifest, "# WAI conformance vectors: <file> <sha256 of decoded RGB8> <frames> <W>x<H>\n"
                          "# model %s (%s)\n", hex, m[0]->name);
        for (int k = 1; k < n_models; k++) {
            wai_sha256_hex(m[k]->sha256, hex);
            fprintf(manifest, "# rule model %s (%s, embedded in its vectors)\n", hex, m[k]->name);
        }
    }
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]) && !rc; i++) {
        const VectorSpec *v = &vectors[i];
        int k = 0;
        if (v->model) {
            for (k = 1; k < n_models && strcmp(m[k]->name, v->model); k++) {}
            if (k == n_models) continue;   /* its model was not given: not made */
        }
        rc = make_vector(m[k], bytes[k], size[k], &dsp, v, dir, manifest);
    }
    if (manifest && manifest != stdout && fclose(manifest)) rc = 1;
    for (int k = 0; k < n_models; k++) {
        wai_model_free(m[k]);
        free(bytes[k]);
    }
    return rc;
}
