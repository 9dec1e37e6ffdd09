/* The WAI encoder (public API in wai/encoder.h): float analysis g_a, h_a from an `.ana` file
 * (docs/spec/wai-encoder-weights.md), then the decoder's own integer h_s (wai_hyper) for the
 * tables and means, so that encoder and decoder agree bit for bit on every y table index and
 * mean. The float part is plain C loops: deterministic for a given binary. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "wai/encoder.h"

#include "common.h"
#include "dsp.h"
#include "encoder_internal.h"
#include "graph.h"
#include "model.h"
#include "payload.h"
#include "stream.h"
#include "threadpool.h"

#ifndef WAI_MODEL_DIR
#define WAI_MODEL_DIR "/usr/local/share/wai/models"
#endif

#define ANA_HEADER 128
#define ANA_MAX_LAYERS 64
#define ANA_K_MAX 15      /* largest kernel size a .ana layer may have (conv_f's tap arrays) */
#define MODEL_MAX_BYTES ((size_t)512 << 20)

enum { ANA_CONV = 1, ANA_LRELU = 3, ANA_GDN = 5 };
/* header flags: the conv weights are IEEE binary16 (wai-encoder-weights.md); no other bit */
#define ANA_FLAG_F16_WEIGHTS 1u

typedef struct AnaLayer {
    int type;
    int cin, cout, k, stride, pad;
    float *w, *b;         /* conv, as read: [cout][cin][k][k], [cout] (freed once packed) */
    float slope;          /* leaky ReLU */
    float *beta, *gamma;  /* GDN, as read: [C], [C][C] (effective values; freed once packed) */
    /* what the encoder keeps, for the kernels (WaiAnaConv), WAI_ANA_NO_MAX zero channels after
     * cout: conv weights [cin][k][k][cout + pad] and bias; GDN gamma transposed [C][C + pad]
     * and beta */
    float *wt, *bt;
} AnaLayer;

struct WaiEncoder {
    WaiModel *model;
    uint8_t *whm;         /* the WHM1 bytes, kept only when embedding */
    size_t whm_size;
    AnaLayer *layers;     /* g_a then h_a */
    uint32_t n_ga, n_ha;
    /* the files model, whm and layers came from; borrowed: they belong to another encoder
     * of the same rate control (qualities that are rates of one model load it once) */
    char *whm_path, *ana_path;
    int borrowed;
    WaiDsp dsp;
    WaiEncoderSettings s;
    WaiBuf frames;
    uint32_t n_frames, width, height;
    int streamed;         /* a unit went out through wai_encode_picture_unit() */
    size_t last_z, last_y;
    WaiFrameStats last;
    /* rate control (settings.target_*): one encoder per available quality, ascending */
    WaiEncoder *sub[WAI_ENCODER_MAX_QUALITY];
    int qual[WAI_ENCODER_MAX_QUALITY], n_qual;
    int hdr_i;            /* index of the quality wai_encoder_header() names */
    int start_i;          /* index of the quality of the stream's first header: the one
                             wai_encoder_header() gave before the first picture, else the
                             first picture's */
    int cur_i;            /* index of the model in force for the next frame; -1: none yet */
    char msg[512];
};

/* the message of the last failed wai_encoder_open() of this thread */
static _Thread_local char open_msg[512];

static int fail(WaiEncoder *e, int err, const char *what)
{
    if (e) snprintf(e->msg, sizeof(e->msg), "%s", what);
    return err;
}

void wai_encoder_default_settings(WaiEncoderSettings *s)
{
    if (!s) return;
    memset(s, 0, sizeof(*s));
    s->quality = 3;
    s->fps_num = 25;
    s->fps_den = 1;
    s->mean_correction = 2;
    s->rate = -1;
}

/* ---- .ana parsing (bounded; every field checked) ---- */

static void free_layers(AnaLayer *l, uint32_t n)
{
    for (uint32_t i = 0; l && i < n; i++) {
        free(l[i].w);
        free(l[i].b);
        free(l[i].beta);
        free(l[i].gamma);
        free(l[i].wt);
        free(l[i].bt);
    }
    free(l);
}

/* n floats stored as binary32 (half = 0) or binary16 (half = 1), each finite */
static float *read_floats(WaiReader *r, size_t n, int half)
{
    size_t bytes;
    if (wai_mul_size(n, half ? 2 : 4, &bytes) || wai_reader_left(r) < bytes) {
        r->err = WAI_ERR_TRUNCATED;
        return NULL;
    }
    float *f = malloc(n ? n * sizeof(*f) : 1);
    if (!f) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (half) {
#ifdef WAI_PLANTED_FAULT_ANA_F16   /* planted: the exponent bias off by one */
            f[i] = 2 * wai_half_to_float(wai_read16(r));
#else
            f[i] = wai_half_to_float(wai_read16(r));
#endif
        } else {
            uint32_t u = wai_read32(r);
            memcpy(&f[i], &u, 4);
        }
        if (!isfinite(f[i])) r->err = WAI_ERR_MODEL_INVALID;
    }
    return f;
}

/* One record; *ch is the channel count flowing in, updated. Returns 0 or a negative code. */
static int parse_layer(WaiReader *r, AnaLayer *l, int *ch, uint32_t flags)
{
    l->type = wai_read8(r);
    if (wai_read8(r) | wai_read8(r) | wai_read8(r)) return WAI_ERR_MODEL_INVALID;
    if (l->type == ANA_CONV) {
        uint32_t cin = wai_read32(r), cout = wai_read32(r);
        int kh = wai_read8(r), kw = wai_read8(r), st = wai_read8(r), pad = wai_read8(r);
        if (r->err) return WAI_ERR_MODEL_INVALID;
        if (cin < 1 || cin > 1024 || cout < 1 || cout > 1024 || kh != kw || kh < 1 ||
            kh > ANA_K_MAX || st < 1 || st > 8 || pad >= kh || (int)cin != *ch)
            return WAI_ERR_MODEL_INVALID;
        l->cin = (int)cin; l->cout = (int)cout; l->k = kh; l->stride = st; l->pad = pad;
        l->w = read_floats(r, (size_t)cout * cin * (size_t)(kh * kh), (flags & ANA_FLAG_F16_WEIGHTS) != 0);
        if (!l->w) return r->err ? WAI_ERR_MODEL_INVALID : WAI_ERR_NOMEM;
        l->b = read_floats(r, cout, 0);
        if (!l->b) return r->err ? WAI_ERR_MODEL_INVALID : WAI_ERR_NOMEM;
        const size_t cw = cout + WAI_ANA_NO_MAX, kk = (size_t)(kh * kh);
        l->wt = calloc(cin * kk * cw, sizeof(float));
        l->bt = calloc(cw, sizeof(float));
        if (!l->wt || !l->bt) return WAI_ERR_NOMEM;
        for (size_t o = 0; o < cout; o++) {
            l->bt[o] = l->b[o];
            for (size_t i = 0; i < cin; i++)
                for (size_t t = 0; t < kk; t++)
                    l->wt[(i * kk + t) * cw + o] = wai_ana_operand(l->w[(o * cin + i) * kk + t]);
        }
        free(l->w);
        free(l->b);
        l->w = l->b = NULL;
        *ch = (int)cout;
    } else if (l->type == ANA_LRELU) {
        uint32_t u = wai_read32(r);
        memcpy(&l->slope, &u, 4);
        if (!isfinite(l->slope)) return WAI_ERR_MODEL_INVALID;
        l->cin = l->cout = *ch;
    } else if (l->type == ANA_GDN) {
        uint32_t c = wai_read32(r);
        if (r->err || (int)c != *ch || c > 1024) return WAI_ERR_MODEL_INVALID;
        l->cin = l->cout = (int)c;
        l->beta = read_floats(r, c, 0);
        if (!l->beta) return r->err ? WAI_ERR_MODEL_INVALID : WAI_ERR_NOMEM;
        l->gamma = read_floats(r, (size_t)c * c, 0);
        if (!l->gamma) return r->err ? WAI_ERR_MODEL_INVALID : WAI_ERR_NOMEM;
        for (uint32_t i = 0; i < c; i++)   /* the norm must stay positive */
            if (!(l->beta[i] > 0)) return WAI_ERR_MODEL_INVALID;
        for (size_t i = 0; i < (size_t)c * c; i++)
            if (l->gamma[i] < 0) return WAI_ERR_MODEL_INVALID;
        const size_t cw = c + WAI_ANA_NO_MAX;
        l->wt = calloc(c * cw, sizeof(float));
        l->bt = calloc(cw, sizeof(float));
        if (!l->wt || !l->bt) return WAI_ERR_NOMEM;
        for (size_t i = 0; i < c; i++) {
            l->bt[i] = l->beta[i];
            for (size_t j = 0; j < c; j++) l->wt[j * cw + i] = wai_ana_operand(l->gamma[i * c + j]);
        }
        free(l->beta);
        free(l->gamma);
        l->beta = l->gamma = NULL;
    } else {
        return WAI_ERR_MODEL_INVALID;
    }
    return r->err ? WAI_ERR_MODEL_INVALID : 0;
}

static int parse_ana(WaiEncoder *e, const uint8_t *buf, size_t size)
{
    const WaiModel *m = e->model;
    if (size < ANA_HEADER + 4 || memcmp(buf, "WAA1", 4) || wai_rd32(buf + 4) != 1 ||
        wai_rd32(buf + 8) != size || (wai_rd32(buf + 12) & ~ANA_FLAG_F16_WEIGHTS))
        return fail(e, WAI_ERR_MODEL_INVALID, "analysis file: bad header (magic, version, size, flags)");
    const uint32_t flags = wai_rd32(buf + 12);
    if (wai_crc32(buf, size - 4) != wai_rd32(buf + size - 4))
        return fail(e, WAI_ERR_MODEL_INVALID, "analysis file: CRC mismatch");
    if (wai_rd32(buf + 80) != m->n_z || wai_rd32(buf + 84) != m->n_y)
        return fail(e, WAI_ERR_MODEL_INVALID, "analysis file: N, M differ from the model's");
    if (memcmp(buf + 96, m->sha256, 32))
        return fail(e, WAI_ERR_MODEL_INVALID, "analysis file: made for another WHM1 model");
    uint32_t n_ga = wai_rd32(buf + 88), n_ha = wai_rd32(buf + 92);
    if (!n_ga || !n_ha || n_ga > ANA_MAX_LAYERS || n_ha > ANA_MAX_LAYERS)
        return fail(e, WAI_ERR_MODEL_INVALID, "analysis file: layer counts");
    e->layers = calloc(n_ga + n_ha, sizeof(*e->layers));
    if (!e->layers) return fail(e, WAI_ERR_NOMEM, "out of memory");
    e->n_ga = n_ga;
    e->n_ha = n_ha;
    WaiReader r;
    wai_reader_init(&r, buf + ANA_HEADER, size - ANA_HEADER - 4);
    int ch = 3;
    for (uint32_t i = 0; i < n_ga + n_ha; i++) {
        if (i == n_ga && ch != (int)m->n_y)
            return fail(e, WAI_ERR_MODEL_INVALID, "analysis file: g_a does not end with M channels");
        int ret = parse_layer(&r, &e->layers[i], &ch, flags);
        if (ret < 0) return fail(e, ret, "analysis file: bad layer record");
    }
    if (ch != (int)m->n_z || wai_reader_left(&r))
        return fail(e, WAI_ERR_MODEL_INVALID, "analysis file: h_a channels or trailing bytes");
    return 0;
}

/* ---- float operators ---- */

typedef struct FT { float *d; int c, h, w; } FT;

/* The conv and GDN sums run on the kernel set's ana_conv (dsp.h, WaiAnaConv): every output
 * is bias, then input channel, ky, kx in this order, one add per term of a product of two
 * analysis operands (wai_ana_operand: the weights and gamma as read, each conv's input in its
 * phase copy, the GDN's squares), which is exact, so a set may fuse the multiply and add
 * and the floats are the same for every set, thread count and stripe height. Edge columns,
 * where a tap falls outside the input and is left out, are summed here in the same order.
 * This file's own loops are not contracted (the pragma below): the GDN's divisions, the
 * means and the rest are plain float operations, each rounded. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off", "no-math-errno")
#endif

/* A conv layer on a c x h x w input: its output shape, and the buffers conv_f allocates, the
 * input split into s column phases (rows of prow = s * pw floats, WAI_ANA_SLACK floats after
 * the last, which the kernels may read) and the output. The .ana sets the channel counts, so
 * every size is checked (a 32-bit size_t wraps for 1024 channels at 1024x1024, and a wrapped
 * size would allocate too little). WAI_ERR_MODEL_INVALID if the kernel is larger than the
 * padded input, WAI_ERR_LIMIT if a size overflows. */
typedef struct ConvSizes {
    size_t oh, ow, pw, prow;
    size_t plane, pplane;     /* output plane, phase-copy plane (floats) */
    size_t ph_bytes, y_bytes; /* the phase copy and the output */
} ConvSizes;

static int conv_sizes(const AnaLayer *l, size_t c, size_t h, size_t w, ConvSizes *z)
{
    const size_t k = (size_t)l->k, s = (size_t)l->stride, p2 = 2 * (size_t)l->pad;
    if (h + p2 < k || w + p2 < k) return WAI_ERR_MODEL_INVALID;
    z->oh = (h + p2 - k) / s + 1;
    z->ow = (w + p2 - k) / s + 1;
    z->pw = (w + s - 1) / s;
    z->prow = s * z->pw;
    if (wai_mul_size(z->oh, z->ow, &z->plane) || wai_mul_size(h, z->prow, &z->pplane) ||
        wai_mul_size(c, z->pplane, &z->ph_bytes) ||
        wai_add_size(z->ph_bytes, WAI_ANA_SLACK, &z->ph_bytes) ||
        wai_mul_size(z->ph_bytes, sizeof(float), &z->ph_bytes) ||
        wai_mul_size((size_t)l->cout, z->plane, &z->y_bytes) ||
        wai_mul_size(z->y_bytes, sizeof(float), &z->y_bytes))
        return WAI_ERR_LIMIT;
    return 0;
}

/* Jobs of a layer: 4 per thread (evens out threads slowed by other load), at most `units`. */
static int ana_jobs(WaiPool *pool, size_t units)
{
    const int threads = pool ? wai_pool_threads(pool) : 1;
    if (threads <= 1) return 1;
    return (size_t)(4 * threads) < units ? 4 * threads : (int)(units ? units : 1);
}

/* The work of conv_f split by output rows (each output element is computed by the same
 * operations in the same order whichever job or thread computes it). */
typedef struct ConvJob {
    const WaiDsp *dsp;
    const AnaLayer *l;
    const FT *x;
    FT *y;
    const float *ph;
    size_t prow, plane, pplane;
    const size_t *rr;
    const int *lo, *hi, *mm;
    int LO, HI, n_jobs;
    int oy0;      /* y's row 0 is this output row of the conv on x */
    float *acc;   /* per job: cout floats */
} ConvJob;

static void conv_job(void *ctx, int job)
{
    const ConvJob *c = ctx;
    const AnaLayer *l = c->l;
    const FT *x = c->x;
    FT *y = c->y;
    const int k = l->k, s = l->stride, p = l->pad, kk = k * k;
    const size_t cw = (size_t)l->cout + WAI_ANA_NO_MAX; /* l->wt's row: padded channels */
    ptrdiff_t toff[ANA_K_MAX * ANA_K_MAX];
    int widx[ANA_K_MAX * ANA_K_MAX];
    const int oy_end = (int)((int64_t)(job + 1) * y->h / c->n_jobs);
    for (int oy = (int)((int64_t)job * y->h / c->n_jobs); oy < oy_end; oy++) {
        /* the taps whose input row (oy0 + oy)*s - p + ky is inside, in (ky, kx) order */
        int nt = 0;
        for (int ky = 0; ky < k; ky++) {
#ifdef WAI_PLANTED_FAULT_ENC_CONV_ROWS
            const int iy = (c->oy0 + oy + (c->oy0 > 0)) * s - p + ky; /* planted: a row low */
#else
            const int iy = (c->oy0 + oy) * s - p + ky;
#endif
            if (iy < 0 || iy >= x->h) continue;
            for (int kx = 0; kx < k; kx++, nt++) {
                toff[nt] = (ptrdiff_t)((size_t)iy * c->prow + c->rr[kx]) + c->mm[kx];
                widx[nt] = ky * k + kx;
            }
        }
        float *orow = y->d + (size_t)oy * y->w;
        if (c->LO <= c->HI) { /* the columns where every tap is inside */
            const WaiAnaConv a = { c->ph + c->LO, c->pplane, l->cin, nt, kk, toff, widx,
                                   l->wt, cw, l->bt, l->cout, c->HI - c->LO + 1,
                                   orow + c->LO, c->plane };
            c->dsp->ana_conv(&a);
        }
        /* the other columns one at a time, leaving out the taps outside: every output channel
         * at once (the weights of a tap are contiguous over them), each in the same order */
        float *acc = c->acc + (size_t)job * l->cout;
        for (int ox = 0; ox < y->w; ox++) {
            if (ox == c->LO && c->LO <= c->HI) ox = c->HI + 1;
            if (ox >= y->w) break;
            for (int o = 0; o < l->cout; o++) acc[o] = l->bt[o];
            for (int i = 0; i < l->cin; i++) {
                const float *in = c->ph + (size_t)i * c->pplane;
                for (int t = 0; t < nt; t++) {
                    const int kx = widx[t] % k;
#ifdef WAI_PLANTED_FAULT_ENC_CONV_EDGE
                    if (kx == k - 1) continue;   /* planted: the last tap is lost */
#endif
                    if (ox < c->lo[kx] || ox > c->hi[kx]) continue;
                    const float xv = in[toff[t] + ox];
                    const float *wr = l->wt + ((size_t)i * kk + widx[t]) * cw;
                    for (int o = 0; o < l->cout; o++) {
                        const float pr = wr[o] * xv; /* rounded to float (x87: here) */
                        acc[o] = acc[o] + pr;
                    }
                }
            }
            for (int o = 0; o < l->cout; o++) orow[(size_t)o * c->plane + ox] = acc[o];
        }
    }
}

/* Buffers the analysis of a picture reuses from stripe to stripe and layer to layer (fresh
 * large allocations would be fresh pages, faulted in on every first touch): the conv's phase
 * copy, two tensors the layers alternate between, the per-job scratch. Grown, never shrunk. */
typedef struct AnaWork {
    float *buf[4];
    size_t cap[4];
} AnaWork;
enum { WORK_PH, WORK_T0, WORK_T1, WORK_JOBS };

/* *slot with at least `bytes`; new memory is zeroed (the kernels may read stale floats past
 * the values they use, never uninitialised memory). NULL: out of memory. */
static float *work_get(AnaWork *w, int slot, size_t bytes)
{
    if (w->cap[slot] < bytes) {
        free(w->buf[slot]);
        w->buf[slot] = calloc(1, bytes);
        w->cap[slot] = w->buf[slot] ? bytes : 0;
    }
    return w->buf[slot];
}

static void work_free(AnaWork *w)
{
    for (int i = 0; i < 4; i++) free(w->buf[i]);
    memset(w, 0, sizeof(*w));
}

/* y = rows [o0, o1) of conv l of x (o1 < 0: every row; each row the same floats whichever
 * rows are asked for). y->d is malloc'ed, or with `work`, the tensor slot x->d is not in (the
 * caller then frees neither). */
static int conv_f(const WaiDsp *dsp, const AnaLayer *l, const FT *x, FT *y, WaiPool *pool,
                  AnaWork *work, int o0, int o1)
{
    const int k = l->k, s = l->stride, p = l->pad;
    ConvSizes z;
    const int ret = conv_sizes(l, (size_t)x->c, (size_t)x->h, (size_t)x->w, &z);
    if (ret < 0) return ret;
    if (o1 < 0) o0 = 0, o1 = (int)z.oh;
    if (o0 < 0 || o1 > (int)z.oh || o0 > o1) return WAI_ERR_INTERNAL;
    y->c = l->cout;
    y->h = o1 - o0;
    y->w = (int)z.ow;
    z.plane = (size_t)y->h * z.ow; /* <= the whole output's: no overflow */
    z.y_bytes = (size_t)l->cout * z.plane * sizeof(float);
    const size_t iplane = (size_t)x->h * (size_t)x->w; /* x's own size: it was allocated */
    /* the input split into s column phases: ph[i][iy][r][j] = x[i][iy][j * s + r], so that a
     * tap's samples for consecutive ox are contiguous; as analysis operands (dsp.h), which
     * every sum below reads */
    const int pw = (int)z.pw;
    const size_t prow = z.prow, plane = z.plane, pplane = z.pplane;
    const int n_jobs = ana_jobs(pool, (size_t)y->h);
    const size_t acc_bytes = (size_t)n_jobs * (size_t)l->cout * sizeof(float);
    float *ph, *acc;
    AnaWork own = { { NULL }, { 0 } };
    AnaWork *w = work ? work : &own;
    ph = work_get(w, WORK_PH, z.ph_bytes);
    acc = work_get(w, WORK_JOBS, acc_bytes);
    if (work)
        y->d = work_get(w, x->d == w->buf[WORK_T0] ? WORK_T1 : WORK_T0, z.y_bytes);
    else
        y->d = malloc(z.y_bytes);
    if (!y->d || !ph || !acc) {
        if (!work) free(y->d);
        work_free(&own);
        y->d = NULL;
        return WAI_ERR_NOMEM;
    }
    for (int i = 0; i < x->c; i++)
        for (int iy = 0; iy < x->h; iy++) {
            const float *row = x->d + (size_t)i * iplane + (size_t)iy * x->w;
            float *dst = ph + (size_t)i * pplane + (size_t)iy * prow;
#ifdef WAI_PLANTED_FAULT_ENC_ANA_UNROUNDED /* planted: the input as it is */
#define OPERAND(v) (v)
#else
#define OPERAND(v) wai_ana_operand(v)
#endif
            /* the copy and the rounding in one pass; strides 1 and 2 (every shipped conv)
             * with the stride known, so that the loops vectorise */
            if (s == 1) {
                for (int j = 0; j < x->w; j++) dst[j] = OPERAND(row[j]);
            } else if (s == 2) {
                float *d1 = dst + pw;
                for (int j = 0; 2 * j + 1 < x->w; j++) {
                    dst[j] = OPERAND(row[2 * j]);
                    d1[j] = OPERAND(row[2 * j + 1]);
                }
                if (x->w % 2) dst[x->w / 2] = OPERAND(row[x->w - 1]);
            } else {
                for (int r = 0; r < s; r++)
                    for (int j = 0; j * s + r < x->w; j++)
                        dst[(size_t)r * pw + j] = OPERAND(row[j * s + r]);
            }
#undef OPERAND
        }
    /* per tap kx: the ox range lo..hi with 0 <= ox*s - p + kx < W, and the phase row r and
     * shift m with ox*s - p + kx = (ox + m)*s + r, 0 <= r < s; LO..HI: all taps inside */
    size_t rr[ANA_K_MAX];
    int lo[ANA_K_MAX], hi[ANA_K_MAX], mm[ANA_K_MAX], LO = 0, HI = y->w - 1;
    for (int kx = 0; kx < k; kx++) {
        lo[kx] = p - kx > 0 ? (p - kx + s - 1) / s : 0;
        hi[kx] = (x->w - 1 + p - kx) >= 0 ? (x->w - 1 + p - kx) / s : -1;
        if (hi[kx] > y->w - 1) hi[kx] = y->w - 1;
        const int q = kx - p, r = ((q % s) + s) % s;
        mm[kx] = (q - r) / s;
        rr[kx] = (size_t)r * pw;
        if (lo[kx] > LO) LO = lo[kx];
        if (hi[kx] < HI) HI = hi[kx];
    }
    ConvJob job = { dsp, l, x, y, ph, prow, plane, pplane, rr, lo, hi, mm, LO, HI, n_jobs, o0, acc };
    wai_pool_run(pool, conv_job, &job, job.n_jobs);
    work_free(&own);
    return 0;
}

static void lrelu_f(const AnaLayer *l, FT *x)
{
    const size_t n = (size_t)x->c * x->h * x->w;
    for (size_t i = 0; i < n; i++)
        if (x->d[i] < 0) x->d[i] *= l->slope;
}

/* y_i = x_i / sqrt(beta_i + sum_j gamma_ij x_j^2), in place, GDN_CHUNK positions at a time:
 * the chunk's squares, then the sums (ana_conv with one tap; beta > 0 and every term >= 0, so
 * the sums are positive), then the divisions. Jobs split the positions. */
#define GDN_CHUNK 256
#define GDN_ROW (GDN_CHUNK + WAI_ANA_SLACK) /* a channel's squares in the chunk buffer */
typedef struct GdnJob {
    const WaiDsp *dsp;
    const AnaLayer *l;
    FT *x;
    float *buf;   /* per job: the squares [c][GDN_ROW], then the sums [c][GDN_CHUNK] */
    size_t plane;
    int n_jobs;
} GdnJob;

static size_t gdn_job_floats(size_t c) { return c * (GDN_ROW + GDN_CHUNK); }

static void gdn_job(void *ctx, int job)
{
    const GdnJob *g = ctx;
    const int c = g->x->c;
    const size_t plane = g->plane;
    float *sq = g->buf + (size_t)job * gdn_job_floats((size_t)c), *norm = sq + (size_t)c * GDN_ROW;
    const size_t p_end = (size_t)((uint64_t)(job + 1) * plane / (uint64_t)g->n_jobs);
    for (size_t p0 = (size_t)((uint64_t)job * plane / (uint64_t)g->n_jobs); p0 < p_end; p0 += GDN_CHUNK) {
        const int n = (int)(p_end - p0 < GDN_CHUNK ? p_end - p0 : GDN_CHUNK);
        for (int j = 0; j < c; j++) {
            const float *xj = g->x->d + (size_t)j * plane + p0;
            float *sj = sq + (size_t)j * GDN_ROW;
            for (int t = 0; t < n; t++) sj[t] = xj[t] * xj[t];
            wai_ana_operands(sj, (size_t)n);
        }
        static const ptrdiff_t toff0 = 0;
        static const int widx0 = 0;
        const WaiAnaConv a = { sq, GDN_ROW, c, 1, 1, &toff0, &widx0, g->l->wt,
                               (size_t)c + WAI_ANA_NO_MAX, g->l->bt, c, n, norm, GDN_CHUNK };
        g->dsp->ana_conv(&a);
        for (int i = 0; i < c; i++) {
            float *restrict xi = g->x->d + (size_t)i * plane + p0;
            const float *restrict ni = norm + (size_t)i * GDN_CHUNK;
            for (int t = 0; t < n; t++) xi[t] /= sqrtf(ni[t]);
        }
    }
}

static int gdn_f(const WaiDsp *dsp, const AnaLayer *l, FT *x, WaiPool *pool, AnaWork *work)
{
    const size_t plane = (size_t)x->h * x->w; /* c * plane floats: x's own size, allocated */
    GdnJob job = { dsp, l, x, NULL, plane, ana_jobs(pool, (plane + GDN_CHUNK - 1) / GDN_CHUNK) };
    AnaWork own = { { NULL }, { 0 } };
    /* c <= 1024 and jobs <= 256: no overflow */
    job.buf = work_get(work ? work : &own, WORK_JOBS,
                       (size_t)job.n_jobs * gdn_job_floats((size_t)x->c) * sizeof(float));
    if (!job.buf) return WAI_ERR_NOMEM;
    wai_pool_run(pool, gdn_job, &job, job.n_jobs);
    work_free(&own);
    return 0;
}

/* A bound on the float analysis's memory for a c x h x w input to layers l[0..n), plus `keep`
 * bytes held meanwhile, with `jobs` jobs per layer (4 per thread, 1 without threads): two
 * tensors (a layer's input and output, or AnaWork's two slots), the largest phase copy
 * (conv_sizes) and the largest per-job scratch (conv_f's sums of the edge columns, gdn_f's
 * chunk buffers). The .ana sets channel counts (up to 1024) and strides, so this runs before
 * anything is allocated and every size is checked. Shapes that conv_f refuses stop the walk
 * (conv_f reports them). WAI_ERR_LIMIT if a size overflows. */
static int analysis_peak(const AnaLayer *l, uint32_t n, size_t c, size_t h, size_t w,
                         size_t keep, int jobs, size_t *peak)
{
    size_t tmax, phmax = 0, jmax = 0, need;
    *peak = 0;
    if (wai_mul_size(h, w, &tmax) || wai_mul_size(tmax, c * sizeof(float), &tmax))
        return WAI_ERR_LIMIT;
    for (uint32_t i = 0; i < n; i++) {
        size_t scratch = 0;
        if (l[i].type == ANA_CONV) {
            ConvSizes z;
            const int r = conv_sizes(&l[i], c, h, w, &z);
            if (r == WAI_ERR_MODEL_INVALID) break;
            if (r < 0) return WAI_ERR_LIMIT;
            if (z.y_bytes > tmax) tmax = z.y_bytes;
            if (z.ph_bytes > phmax) phmax = z.ph_bytes;
            scratch = (size_t)jobs * (size_t)l[i].cout * sizeof(float);
            c = (size_t)l[i].cout, h = z.oh, w = z.ow;
        } else if (l[i].type == ANA_GDN) {
            scratch = (size_t)jobs * gdn_job_floats(c) * sizeof(float); /* c <= 1024 */
        }
        if (scratch > jmax) jmax = scratch;
    }
    if (wai_add_size(tmax, tmax, &need) || wai_add_size(need, phmax, &need) ||
        wai_add_size(need, jmax, &need) || wai_add_size(need, keep, &need))
        return WAI_ERR_LIMIT;
    *peak = need;
    return 0;
}

static int run_f(const WaiDsp *dsp, const AnaLayer *l, uint32_t n, FT *t, WaiPool *pool)
{
    for (uint32_t i = 0; i < n; i++) {
        int ret = 0;
        if (l[i].type == ANA_CONV) {
            FT y;
            ret = conv_f(dsp, &l[i], t, &y, pool, NULL, 0, -1);
            if (ret < 0) return ret;
            free(t->d);
            *t = y;
        } else if (l[i].type == ANA_LRELU) {
            lrelu_f(&l[i], t);
        } else {
            ret = gdn_f(dsp, &l[i], t, pool, NULL);
            if (ret < 0) return ret;
        }
    }
    return 0;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* Rows [y0, y1) of RGB8 -> [3][Hp][Wp] in [0, 1]: [3][y1 - y0][wp], each channel k moved by
 * -shift[k] levels (mean correction), edge pixels replicated into the padding. */
static void load_rows(const uint8_t *rgb, ptrdiff_t stride, uint32_t w, uint32_t h,
                      uint32_t wp, uint32_t y0, uint32_t y1, const float shift[3], float *x)
{
    const size_t plane = (size_t)wp * (y1 - y0);
    for (uint32_t yy = y0; yy < y1; yy++) {
#ifdef WAI_PLANTED_FAULT_ENC_PAD_ROW
        const uint8_t *row = rgb + (ptrdiff_t)(yy < h ? yy : 0) * stride;  /* planted: wrong row */
#else
        const uint8_t *row = rgb + (ptrdiff_t)(yy < h ? yy : h - 1) * stride;
#endif
        for (uint32_t xx = 0; xx < wp; xx++) {
            const uint8_t *px = row + 3 * (size_t)(xx < w ? xx : w - 1);
            for (int k = 0; k < 3; k++)
                x[k * plane + (size_t)(yy - y0) * wp + xx] = (px[k] - shift[k]) / 255.0f;
        }
    }
}

/* ---- g_a in horizontal stripes of y rows ----
 * As the decoder's g_s (graph.c; spec section 10): each layer runs on a window of its input
 * rows as if it were the whole input, and keeps the output rows the next layer needs. Every
 * output value is computed by the same operations in the same order as on the whole picture
 * (conv_f adds a tap only for input rows inside the input, and the window holds every input
 * row of the rows kept), so the floats, and the stream, are those of a whole-picture run,
 * while memory grows with the stripe, not the picture.
 * Neighbouring stripes' windows overlap (a conv's kernel reaches across the boundary, more so
 * at every stride-2 level below y). The rows of a conv's input that the next stripe's window
 * shares are kept (AnaCarry), and a stripe computes only the output rows the last one did not:
 * the window of those rows alone (ana_window) is again a window whose run gives exactly those
 * rows, so every float is still the whole picture's, computed once. */

/* g_a's memory per stripe: the largest conv's input, phase copy and output within about this */
#define ANA_STRIPE_BYTES ((size_t)48 << 20)

/* Input rows [*a, *b) of conv l (input height H) whose run on their own gives its output rows
 * [o0, o1), and *base, the full output row of that run's row 0 (a multiple of the stride
 * keeps the output grid). */
static int ana_window(const AnaLayer *l, int H, int o0, int o1, int *a, int *b, int *base)
{
    const int s = l->stride, p = l->pad, k = l->k;
#ifdef WAI_PLANTED_FAULT_ENC_STRIPE_OVERLAP
    int lo = o0 * s - p + s, hi = (o1 - 1) * s - p + k;   /* planted: a stride of rows short above */
#else
    int lo = o0 * s - p, hi = (o1 - 1) * s - p + k;
#endif
    if (lo > H - 1) lo = H - 1;
    if (lo < 0) lo = 0;
    lo -= lo % s;
    if (hi > H) hi = H;
    if (hi <= lo) hi = lo + 1;
    /* grow downwards until the window's own output reaches o1 (at hi = H it always does) */
    while (hi - lo + 2 * p < k || lo / s + (hi - lo + 2 * p - k) / s + 1 < o1) {
        if (hi >= H) return WAI_ERR_INTERNAL;
        hi++;
    }
    *a = lo;
    *b = hi;
    *base = lo / s;
    return 0;
}

/* Keep rows [r0, r1) of every channel of t, moved to the front (each move goes to a lower
 * address, so channel by channel in order is safe). */
static void keep_rows(FT *t, int r0, int r1)
{
    const size_t keep = (size_t)(r1 - r0) * t->w;
    if (r0 || r1 != t->h)
        for (int c = 0; c < t->c; c++)
            memmove(t->d + c * keep, t->d + ((size_t)c * t->h + r0) * t->w, keep * sizeof(float));
    t->h = r1 - r0;
}

/* Rows [r0, r1) of a conv's input level (every channel, [c][r1 - r0][w]) kept from one stripe
 * for the next; none where r1 <= r0. */
typedef struct AnaCarry {
    float *d;
    size_t cap;
    int r0, r1;
} AnaCarry;

/* t holds rows [lo, lo + t->h) of a level whose window starts at row r0 <= lo: put the carried
 * rows [r0, lo) above them, so t becomes the whole window. In t's own AnaWork slot (grown where
 * needed), so the two slots still alternate between a layer's input and output. */
static int ana_assemble(AnaWork *work, const AnaCarry *cy, int r0, int lo, FT *t)
{
    if (lo == r0) return 0;
    if (lo < r0 || cy->r0 != r0 || cy->r1 < lo) return WAI_ERR_INTERNAL;
    const size_t wr = (size_t)t->w, nc = (size_t)(lo - r0), h = nc + (size_t)t->h;
    const size_t held = (size_t)(cy->r1 - cy->r0) * wr; /* a channel's floats in the carry */
    const size_t bytes = (size_t)t->c * h * wr * sizeof(float); /* within the window's size */
    const int slot = t->d && t->d == work->buf[WORK_T1] ? WORK_T1 : WORK_T0;
    if (t->h && t->d != work->buf[slot]) return WAI_ERR_INTERNAL; /* t is a slot's front */
    if (work->cap[slot] < bytes) { /* grown with t's rows kept, the rest zeroed (work_get) */
        float *g = calloc(1, bytes);
        if (!g) return WAI_ERR_NOMEM;
        if (t->h) memcpy(g, t->d, (size_t)t->c * (size_t)t->h * wr * sizeof(float));
        free(work->buf[slot]);
        work->buf[slot] = g;
        work->cap[slot] = bytes;
    }
    float *f = work->buf[slot];
    /* each channel's rows move to a higher address: from the last channel, none is
     * overwritten before it has moved */
    if (t->h)
        for (size_t c = (size_t)t->c; c-- > 0;)
            memmove(f + (c * h + nc) * wr, f + c * (size_t)t->h * wr, (size_t)t->h * wr * sizeof(float));
    for (size_t c = 0; c < (size_t)t->c; c++)
        memcpy(f + c * h * wr, cy->d + c * held, nc * wr * sizeof(float));
    t->d = f;
    t->h = (int)h;
    return 0;
}

/* t holds rows [r0, r0 + t->h) of a level: keep rows [s0, r0 + t->h) for the next stripe. */
static int ana_carry_save(AnaCarry *cy, const FT *t, int r0, int s0)
{
    const int r1 = r0 + t->h;
    cy->r0 = cy->r1 = 0;
    if (s0 < r0) s0 = r0;
    if (s0 >= r1) return 0;
    const size_t wr = (size_t)t->w, rows = (size_t)(r1 - s0);
    const size_t bytes = (size_t)t->c * rows * wr * sizeof(float); /* within t's own size */
    if (cy->cap < bytes) {
        free(cy->d);
        cy->d = malloc(bytes);
        cy->cap = cy->d ? bytes : 0;
        if (!cy->d) return WAI_ERR_NOMEM;
    }
#ifdef WAI_PLANTED_FAULT_ENC_CARRY_ROWS
    const size_t skip = (size_t)(s0 - r0) - (s0 > r0); /* planted: kept from a row higher */
#else
    const size_t skip = (size_t)(s0 - r0);
#endif
    for (size_t c = 0; c < (size_t)t->c; c++)
        memcpy(cy->d + c * rows * wr, t->d + (c * (size_t)t->h + skip) * wr,
               rows * wr * sizeof(float));
    cy->r0 = s0;
    cy->r1 = r1;
    return 0;
}

/* The input rows of every layer for the y rows [o0, o1): r0[k], r1[k], base[k] (ana_window),
 * k = n - 1 down to 0, with r0[n] = o0, r1[n] = o1; hs[k]: layer k's input height. */
static int ana_stripe_windows(const AnaLayer *l, uint32_t n, const int *hs, int o0, int o1,
                              int *r0, int *r1, int *base)
{
    r0[n] = o0;
    r1[n] = o1;
    for (uint32_t k = n; k-- > 0;) {
        if (l[k].type != ANA_CONV) {
            r0[k] = r0[k + 1], r1[k] = r1[k + 1], base[k] = r0[k];
            continue;
        }
        const int ret = ana_window(&l[k], hs[k], r0[k + 1], r1[k + 1], &r0[k], &r1[k], &base[k]);
        if (ret < 0) return ret;
    }
    return 0;
}

/* The memory of the striped analysis in stripes of `step` y rows: analysis_peak on the
 * tallest stripe's input window (every layer's tensors in a stripe are at most those of the
 * whole-layer run on that window, since a conv's output grows with its input, and AnaWork's
 * buffers only grow to the largest stripe's), plus y itself (ybytes), held whole, plus the
 * carries (the largest each conv input level keeps for the next stripe; cs[k], ws[k]: layer
 * k's input channels and width). r0, r1, base and nr0, nr1, nbase: scratch plans. */
static int ana_stripes_peak(const AnaLayer *l, uint32_t n, const int *hs, const int *cs,
                            const int *ws, const WaiGeometry *g, int step, size_t ybytes,
                            int jobs, int *r0, int *r1, int *base, int *nr0, int *nr1,
                            int *nbase, size_t *need)
{
    const int H = hs[n];
    int rows = 0, ret;
    size_t carry = 0;
    for (int o0 = 0; o0 < H; o0 += step) {
        const int o1 = H - o0 < step ? H : o0 + step;
        if ((ret = ana_stripe_windows(l, n, hs, o0, o1, r0, r1, base)) < 0) return ret;
        if (r1[0] - r0[0] > rows) rows = r1[0] - r0[0];
        if (o1 >= H) break;
        if ((ret = ana_stripe_windows(l, n, hs, o1, H - o1 < step ? H : o1 + step, nr0, nr1, nbase)) < 0)
            return ret;
        size_t sum = 0;
        for (uint32_t k = 1; k < n; k++) /* level 0, the picture, is loaded again, not kept */
            if (l[k].type == ANA_CONV && nr0[k] < r1[k])
                sum += (size_t)cs[k] * (size_t)(r1[k] - (nr0[k] > r0[k] ? nr0[k] : r0[k])) *
                       (size_t)ws[k] * sizeof(float); /* within the window's own tensors */
        if (sum > carry) carry = sum;
    }
    if (wai_add_size(ybytes, carry, &ybytes)) return WAI_ERR_LIMIT;
    return analysis_peak(l, n, 3, (size_t)rows, g->wp, ybytes, jobs, need) < 0 ? WAI_ERR_LIMIT : 0;
}

/* g_a (layers l[0..n)) on the picture of geometry g moved by -shift: y (c x Hy x Wy) into *y.
 * y_step: y rows per stripe; 0: automatic, from peak, the whole picture's analysis peak
 * (analysis_peak): about ANA_STRIPE_BYTES per stripe, and smaller stripes where that would
 * exceed budget. Before anything is allocated, *need is set to the memory of the stripes
 * chosen (ana_stripes_peak); WAI_ERR_LIMIT when it exceeds budget. */
static int analysis_striped(const WaiDsp *dsp, const AnaLayer *l, uint32_t n, const uint8_t *rgb, ptrdiff_t stride,
                            const WaiGeometry *g, const float shift[3], size_t peak, int y_step,
                            uint64_t budget, int jobs, size_t *need, WaiPool *pool, FT *y)
{
    int ret = WAI_ERR_NOMEM;
    AnaWork work = { { NULL }, { 0 } }; /* every stripe's tensors and scratch */
    /* layer k's input height, channels and width, then this stripe's plan and the next's */
    int *hs = malloc((n + 1) * 9 * sizeof(int));
    AnaCarry *carry = calloc(n + 1, sizeof(AnaCarry)); /* by the level's first layer */
    y->d = NULL;
    *need = 0;
    if (!hs || !carry) goto end;
    int *cs = hs + n + 1, *ws = cs + n + 1, *r0 = ws + n + 1, *r1 = r0 + n + 1,
        *base = r1 + n + 1, *nr0 = base + n + 1, *nr1 = nr0 + n + 1, *nbase = nr1 + n + 1;
    hs[0] = (int)g->hp;
    int c = 3, wd = (int)g->wp;
    for (uint32_t k = 0; k < n; k++) {
        hs[k + 1] = hs[k];
        cs[k] = c;
        ws[k] = wd;
        if (l[k].type != ANA_CONV) continue;
        ConvSizes z;
        if ((ret = conv_sizes(&l[k], (size_t)c, (size_t)hs[k], (size_t)wd, &z)) < 0) goto end;
        hs[k + 1] = (int)z.oh;
        wd = (int)z.ow;
        c = l[k].cout;
    }
    cs[n] = c;
    ws[n] = wd;
    const int H = hs[n];
    size_t ny;
    if (wai_mul_size((size_t)c * (size_t)H, (size_t)wd * sizeof(float), &ny)) {
        ret = WAI_ERR_LIMIT;
        goto end;
    }
    /* y rows per stripe: the whole picture's peak scaled down to about ANA_STRIPE_BYTES */
    double rows = y_step > 0                ? y_step
                  : peak > ANA_STRIPE_BYTES ? (double)H * ANA_STRIPE_BYTES / (double)peak
                                            : H;
    int step = rows < 1 ? 1 : rows > H ? H : (int)rows;
    if ((ret = ana_stripes_peak(l, n, hs, cs, ws, g, step, ny, jobs, r0, r1, base, nr0, nr1,
                                nbase, need)) < 0)
        goto end;
    while (*need > budget && !y_step && step > 1) { /* automatic: smaller stripes, same floats */
        step = (step + 1) / 2;
        if ((ret = ana_stripes_peak(l, n, hs, cs, ws, g, step, ny, jobs, r0, r1, base, nr0, nr1,
                                    nbase, need)) < 0)
            goto end;
    }
#ifdef WAI_PLANTED_FAULT_ENC_BUDGET
    *need = 0; /* planted: the budget is never consulted */
#endif
    if (*need > budget) {
        ret = WAI_ERR_LIMIT;
        goto end;
    }
    if (!(y->d = malloc(ny))) { ret = WAI_ERR_NOMEM; goto end; }
    y->c = c;
    y->h = H;
    y->w = wd;
    for (int o0 = 0; o0 < H; o0 += step) {
        const int o1 = H - o0 < step ? H : o0 + step;
        if ((ret = ana_stripe_windows(l, n, hs, o0, o1, r0, r1, base)) < 0) goto end;
        const int next = o1 < H; /* the next stripe's plan: what to keep for it */
        if (next && (ret = ana_stripe_windows(l, n, hs, o1, H - o1 < step ? H : o1 + step, nr0,
                                              nr1, nbase)) < 0)
            goto end;
        FT t = { work_get(&work, WORK_T0, (size_t)3 * g->wp * (size_t)(r1[0] - r0[0]) * sizeof(float)),
                 3, r1[0] - r0[0], (int)g->wp };
        if (!t.d) { ret = WAI_ERR_NOMEM; goto end; }
        load_rows(rgb, stride, g->width, g->height, g->wp, (uint32_t)r0[0], (uint32_t)r1[0], shift, t.d);
        /* t: rows [lo, r1[k]) of layer k's input; the rows above, [r0[k], lo), are in
         * carry[lv], lv the first layer of t's level (0: the picture, loaded whole) */
        int lo = r0[0];
        uint32_t lv = 0;
        for (uint32_t k = 0; k < n; k++) {
            if (l[k].type == ANA_LRELU) {
                lrelu_f(&l[k], &t);
                continue;
            }
            if (l[k].type != ANA_CONV) {
                if (t.h && (ret = gdn_f(dsp, &l[k], &t, pool, &work)) < 0) goto end;
                continue;
            }
            /* the conv's whole input window; what of it the next stripe's window holds */
            if ((ret = ana_assemble(&work, &carry[lv], r0[k], lo, &t)) < 0) goto end;
            if (lv && (ret = ana_carry_save(&carry[lv], &t, r0[k], next ? nr0[k] : r1[k])) < 0)
                goto end;
            /* the output rows to compute: below those the next level's carry holds (kept by
             * the last stripe, whose next window is this one), from their own window */
            const AnaCarry *cn = &carry[k + 1];
            int n0 = r0[k + 1], a = r0[k], b = r1[k], at = base[k];
            if (cn->r1 > cn->r0 && cn->r0 == r0[k + 1] && cn->r1 > n0) {
                n0 = cn->r1 < r1[k + 1] ? cn->r1 : r1[k + 1];
                int a2, b2, at2;
                if (n0 < r1[k + 1]) {
                    if (ana_window(&l[k], hs[k], n0, r1[k + 1], &a2, &b2, &at2) == 0 && a2 >= a &&
                        b2 <= b)
                        a = a2, b = b2, at = at2;
                    else
                        n0 = r0[k + 1]; /* not within the window: the whole window's rows */
                }
            }
            FT u = { t.d, l[k].cout, 0, ws[k + 1] };
            if (n0 < r1[k + 1]) {
                keep_rows(&t, a - r0[k], b - r0[k]);
                /* only the rows kept (the window's run yields a row or two more) */
                if ((ret = conv_f(dsp, &l[k], &t, &u, pool, &work, n0 - at, r1[k + 1] - at)) < 0)
                    goto end;
            }
            t = u;
            lo = n0;
            lv = k + 1;
        }
        if (lo != o0) { /* y rows are never carried: stripes do not overlap there */
            ret = WAI_ERR_INTERNAL;
            goto end;
        }
        const size_t rows_plane = (size_t)(o1 - o0) * wd;
        for (int ch = 0; ch < c; ch++)
            memcpy(y->d + ((size_t)ch * H + o0) * wd, t.d + ch * rows_plane, rows_plane * sizeof(float));
    }
    ret = 0;
end:
    work_free(&work);
    if (carry)
        for (uint32_t k = 0; k <= n; k++) free(carry[k].d);
    free(carry);
    if (ret < 0) {
        free(y->d);
        y->d = NULL;
    }
    free(hs);
    return ret;
}


/* ---- model search (the order is documented in wai/encoder.h) ---- */

static int is_regular_file(const char *path)
{
    struct stat st;
    return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* What the search found for a quality: a model pair, and the rate a quality file names. */
typedef struct ModelPick {
    char whm[4096], ana[4096];
    char rate_file[4096];   /* the wai-q<N>.rate it came from, else "" */
    int rate;               /* from the quality file; -1 for a plain pair */
    char err[320];          /* a quality file that is there but unusable: why */
} ModelPick;

/* A model name of a quality file: a file name in the same directory, nothing else. */
static int model_name_ok(const char *n, size_t len)
{
    if (!len || len > 200 || n[0] == '.') return 0;
    for (size_t i = 0; i < len; i++) {
        const char c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* Parses a quality file (text: "model NAME" and "rate K" once each, '#' comments, blank
 * lines): 0 with name/rate set, else -1 with why in err. */
static int parse_quality_file(const uint8_t *buf, size_t size, char name[256], int *rate,
                              char *err, size_t errsz)
{
    int line = 0, have_model = 0, have_rate = 0;
    size_t pos = 0;
    while (pos < size) {
        size_t e = pos;
        while (e < size && buf[e] != '\n') e++;
        line++;
        const char *l = (const char *)buf + pos;
        size_t n = e - pos;
        pos = e + 1;
        for (size_t i = 0; i < n; i++)
            if (l[i] == '#') { n = i; break; }
        while (n && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r')) n--;
        while (n && (*l == ' ' || *l == '\t')) { l++; n--; }
        if (!n) continue;
        size_t k = 0;
        while (k < n && l[k] != ' ' && l[k] != '\t') k++;
        const char *v = l + k;
        size_t vn = n - k;
        while (vn && (*v == ' ' || *v == '\t')) { v++; vn--; }
        if (k == 5 && !memcmp(l, "model", 5) && !have_model) {
            if (!model_name_ok(v, vn)) {
                snprintf(err, errsz, "line %d: a model name (letters, digits, '-', '_', '.'; "
                         "a file of this directory) after \"model\"", line);
                return -1;
            }
            memcpy(name, v, vn);
            name[vn] = 0;
            have_model = 1;
        } else if (k == 4 && !memcmp(l, "rate", 4) && !have_rate) {
            long r = 0;
            size_t i = 0;
            while (i < vn && v[i] >= '0' && v[i] <= '9' && r <= 255) r = r * 10 + (v[i++] - '0');
            if (!vn || i != vn || r > 255) {
                snprintf(err, errsz, "line %d: a rate 0..255 after \"rate\"", line);
                return -1;
            }
            *rate = (int)r;
            have_rate = 1;
        } else {
            snprintf(err, errsz, "line %d: not \"model NAME\" or \"rate K\" (each once)", line);
            return -1;
        }
    }
    if (!have_model || !have_rate) {
        snprintf(err, errsz, "no \"%s\" line", have_model ? "rate" : "model");
        return -1;
    }
    return 0;
}

/* 1 if <dir> defines quality q: the pair wai-q<q>.whm + .ana, else a quality file
 * wai-q<q>.rate (its model pair and rate; p->err set when it is there but unusable); 0 if
 * neither is there. */
static int quality_in_dir(const char *dir, size_t dlen, int q, ModelPick *p)
{
    if (dlen > 3800) return 0;
    p->rate = -1;
    p->rate_file[0] = p->err[0] = 0;
    snprintf(p->whm, sizeof(p->whm), "%.*s/wai-q%d.whm", (int)dlen, dir, q);
    snprintf(p->ana, sizeof(p->ana), "%.*s/wai-q%d.ana", (int)dlen, dir, q);
#ifdef WAI_PLANTED_FAULT_ENC_PAIR_WHM_ONLY
    if (is_regular_file(p->whm)) return 1;   /* planted: the .ana is not required */
#else
    if (is_regular_file(p->whm) && is_regular_file(p->ana)) return 1;
#endif
    snprintf(p->rate_file, sizeof(p->rate_file), "%.*s/wai-q%d.rate", (int)dlen, dir, q);
    if (!is_regular_file(p->rate_file)) {
        p->rate_file[0] = 0;
        return 0;
    }
    uint8_t *buf = NULL;
    size_t size = 0;
    char name[256], why[200];
    int rate = -1;
    if (wai_read_file(p->rate_file, 4096, &buf, &size) < 0) {
        snprintf(p->err, sizeof(p->err), "cannot read %.200s (a text file of at most 4096 bytes)",
                 p->rate_file);
        return 1;
    }
    const int ret = parse_quality_file(buf, size, name, &rate, why, sizeof(why));
    free(buf);
    if (ret < 0) {
        snprintf(p->err, sizeof(p->err), "%.100s: %s", p->rate_file, why);
        return 1;
    }
    snprintf(p->whm, sizeof(p->whm), "%.*s/%s.whm", (int)dlen, dir, name);
    snprintf(p->ana, sizeof(p->ana), "%.*s/%s.ana", (int)dlen, dir, name);
#ifdef WAI_PLANTED_FAULT_ENC_QFILE_RATE
    p->rate = rate ? rate - 1 : 1;   /* planted: the neighbouring rate */
#else
    p->rate = rate;
#endif
    if (!is_regular_file(p->whm) || !is_regular_file(p->ana))
        snprintf(p->err, sizeof(p->err), "%.120s names model %.60s, but %.60s.whm and .ana are "
                 "not both in that directory", p->rate_file, name, name);
    return 1;
}

/* The first directory of the search path that defines quality q: 1 (p set; p->err when its
 * quality file is unusable) or 0. */
static int find_quality(const char *model_dir, int q, ModelPick *p)
{
    const char *lists[2] = { model_dir, NULL };
    if (!model_dir) {
        lists[0] = getenv("WAI_MODEL_PATH");
        lists[1] = WAI_MODEL_DIR;
    }
    for (int i = 0; i < 2; i++) {
        const char *list = lists[i], *dir;
        size_t len;
        while (wai_path_next(&list, &dir, &len))
            if (quality_in_dir(dir, len, q, p)) return 1;
    }
    return 0;
}

int wai_encoder_available_qualities(const char *model_dir, int *list, int max)
{
    if (max < 0 || (max > 0 && !list)) return WAI_ERR_INVALID_ARG;
    ModelPick *p = malloc(sizeof(*p));
    if (!p) return WAI_ERR_NOMEM;
    int n = 0;
    for (int q = 1; q <= WAI_ENCODER_MAX_QUALITY; q++) {
        if (!find_quality(model_dir, q, p) || p->err[0]) continue;
        if (n < max) list[n] = q;
        n++;
    }
    free(p);
    return n;
}

/* ---- open / close ---- */

static int open_one(WaiEncoder **out, const WaiEncoderSettings *s, WaiEncoder *const *donors,
                    int n_donors);

/* The settings' or the quality file's rate against the model's rate table. */
static int check_rate(WaiEncoder *e, const ModelPick *pick, const char *whm_path)
{
    if (e->s.rate < 0 || (uint32_t)e->s.rate < e->model->n_rates) return 0;
    const char *from = pick->rate_file[0] ? pick->rate_file : "";
    if (!e->model->n_rates)
        snprintf(e->msg, sizeof(e->msg),
                 "rate %d%s%.150s: model %.64s (%.150s) has no rate table", (int)e->s.rate,
                 *from ? " of " : "", from, e->model->name, whm_path);
    else
        snprintf(e->msg, sizeof(e->msg), "rate %d%s%.150s: model %.64s has %u rates (0..%u)",
                 (int)e->s.rate, *from ? " of " : "", from, e->model->name,
                 (unsigned)e->model->n_rates, (unsigned)e->model->n_rates - 1);
    return WAI_ERR_INVALID_ARG;
}

/* A rate-controlled encoder: one plain encoder per quality the search finds; qualities that
 * are rates of one model share it (open_one). */
static int open_rate(WaiEncoder *e, const WaiEncoderSettings *s, WaiEncoder **out)
{
    int ret = wai_encoder_available_qualities(s->model_dir, e->qual, WAI_ENCODER_MAX_QUALITY);
    if (ret <= 0) {
        const char *env = getenv("WAI_MODEL_PATH");
        snprintf(e->msg, sizeof(e->msg), "no model pair wai-q<N>.whm + wai-q<N>.ana (or quality "
                 "file wai-q<N>.rate) in %.360s",
                 s->model_dir ? s->model_dir : env && *env ? env : WAI_MODEL_DIR);
        ret = WAI_ERR_MODEL_NOT_FOUND;
        goto err;
    }
    e->n_qual = ret;
    WaiEncoderSettings one = *s;
    one.target_frame_bytes = 0;
    one.target_psnr = 0;
    for (int i = 0; i < e->n_qual; i++) {
        one.quality = e->qual[i];
        if ((ret = open_one(&e->sub[i], &one, e->sub, i)) < 0) goto err; /* open_msg says why */
        /* nearest to settings.quality, ties to the lower */
        if (abs(e->qual[i] - s->quality) < abs(e->qual[e->hdr_i] - s->quality)) e->hdr_i = i;
    }
    e->s.model_dir = e->s.model_file = e->s.analysis_file = NULL;  /* not kept */
    wai_buf_init(&e->frames);
    *out = e;
    return 0;
err:
    if (!e->msg[0]) snprintf(e->msg, sizeof(e->msg), "%s", open_msg);
    memcpy(open_msg, e->msg, sizeof(open_msg));
    wai_encoder_close(&e);
    return ret;
}

int wai_encoder_open(WaiEncoder **out, const WaiEncoderSettings *s)
{
    return open_one(out, s, NULL, 0);
}

/* wai_encoder_open(); a plain encoder whose model pair (the same two paths) one of donors
 * already loaded shares that one's model and analysis weights instead of loading them. */
static int open_one(WaiEncoder **out, const WaiEncoderSettings *s, WaiEncoder *const *donors,
                    int n_donors)
{
    if (!out) return WAI_ERR_INVALID_ARG;
    *out = NULL;
    if (!s || ((!s->model_file) != (!s->analysis_file)) ||
        (!s->model_file && (s->quality < 1 || s->quality > WAI_ENCODER_MAX_QUALITY)) || !s->fps_num || !s->fps_den ||
        s->threads < 0 || s->mean_correction < 0 || s->mean_correction > 4 || s->stripe_rows < 0)
        return WAI_ERR_INVALID_ARG;
    const int rate = s->target_frame_bytes || s->target_psnr != 0;
    if (rate && (s->model_file || (s->target_frame_bytes && s->target_psnr != 0) ||
                 !(s->target_psnr >= 0)))
        return WAI_ERR_INVALID_ARG;
    if (s->rate < -1 || (s->rate >= 0 && rate)) {
        snprintf(open_msg, sizeof(open_msg), s->rate < -1 ? "rate %d: not a rate (-1, or 0..n_rates-1 of a variable-rate model)"
                 : "rate %d: a fixed rate does not work with rate control (a target)", (int)s->rate);
        return WAI_ERR_INVALID_ARG;
    }
    WaiEncoder *e = calloc(1, sizeof(*e));
    if (!e) return WAI_ERR_NOMEM;
    e->s = *s;
    e->cur_i = -1;
    if (rate) return open_rate(e, s, out);
    if (!e->s.max_memory) e->s.max_memory = WAI_DEFAULT_MAX_MEMORY;
    e->s.model_dir = e->s.model_file = e->s.analysis_file = NULL;  /* not kept */
    if (s->model_file) e->s.quality = 0;   /* no quality: wai_encoder_last_frame() says 0 */
    wai_buf_init(&e->frames);
    int ret_nf = 0;
    ModelPick pick;
    char *const whm_path = pick.whm, *const ana_path = pick.ana;
    pick.rate = -1;
    pick.rate_file[0] = 0;
    if (s->model_file) {
        snprintf(whm_path, sizeof(pick.whm), "%s", s->model_file);
        snprintf(ana_path, sizeof(pick.ana), "%s", s->analysis_file);
    } else if (!find_quality(s->model_dir, s->quality, &pick)) {
        const char *env = getenv("WAI_MODEL_PATH");
        if (s->model_dir)
            snprintf(e->msg, sizeof(e->msg), "no model pair wai-q%d.whm + wai-q%d.ana (or quality "
                     "file wai-q%d.rate) in %.300s", s->quality, s->quality, s->quality, s->model_dir);
        else
            snprintf(e->msg, sizeof(e->msg),
                     "no model pair wai-q%d.whm + wai-q%d.ana (or quality file wai-q%d.rate) in "
                     "$WAI_MODEL_PATH (%.200s) or %.200s", s->quality, s->quality, s->quality,
                     env && *env ? env : "unset", WAI_MODEL_DIR);
        ret_nf = WAI_ERR_MODEL_NOT_FOUND;
    } else if (pick.err[0]) {
        snprintf(e->msg, sizeof(e->msg), "%s", pick.err);
        ret_nf = WAI_ERR_MODEL_NOT_FOUND;
    } else if (pick.rate_file[0]) {
        if (s->rate >= 0) {
            snprintf(e->msg, sizeof(e->msg), "rate %d: quality %d is already rate %d of a model "
                     "(%.300s)", (int)s->rate, s->quality, pick.rate, pick.rate_file);
            ret_nf = WAI_ERR_INVALID_ARG;
        }
        e->s.rate = pick.rate;
    }
    uint8_t *buf = NULL;
    size_t size = 0;
    char detail[256] = "";
    int ret = ret_nf;
    if (ret < 0) goto err;
    const WaiEncoder *donor = NULL;
    for (int i = 0; i < n_donors && !donor; i++)
        if (donors[i] && !donors[i]->borrowed && donors[i]->s.embed_model == s->embed_model &&
            !strcmp(donors[i]->whm_path, whm_path) && !strcmp(donors[i]->ana_path, ana_path))
            donor = donors[i];
    if (!(e->whm_path = strdup(whm_path)) || !(e->ana_path = strdup(ana_path))) {
        ret = WAI_ERR_NOMEM;
        goto err;
    }
    if (donor) {
#ifdef WAI_PLANTED_FAULT_ENC_SHARE_RATE
        e->s.rate = donor->s.rate;   /* planted: the donor's rate comes with its model */
#endif
        e->borrowed = 1;
        e->model = donor->model;
        e->whm = donor->whm;
        e->whm_size = donor->whm_size;
        e->layers = donor->layers;
        e->n_ga = donor->n_ga;
        e->n_ha = donor->n_ha;
        if ((ret = check_rate(e, &pick, whm_path)) < 0) goto err;
        goto kernels;
    }
    ret = wai_read_file(whm_path, MODEL_MAX_BYTES, &buf, &size);
    if (ret < 0) {
        snprintf(e->msg, sizeof(e->msg), "cannot read %.280s", whm_path);
        goto err;
    }
    ret = wai_model_parse(&e->model, buf, size, detail, sizeof(detail));
    if (ret < 0) {
        snprintf(e->msg, sizeof(e->msg), "%.200s: %.100s", whm_path, detail);
        free(buf);
        goto err;
    }
    if ((ret = check_rate(e, &pick, whm_path)) < 0) {
        free(buf);
        goto err;
    }
    if (s->embed_model) {
        e->whm = buf;
        e->whm_size = size;
    } else {
        free(buf);
    }
    ret = wai_read_file(ana_path, MODEL_MAX_BYTES, &buf, &size);
    if (ret < 0) {
        snprintf(e->msg, sizeof(e->msg), "cannot read %.280s", ana_path);
        goto err;
    }
    ret = parse_ana(e, buf, size);
    free(buf);
    if (ret < 0) goto err;
kernels:
    wai_dsp_init_ref(&e->dsp);
    if ((ret = wai_dsp_init(&e->dsp, s->kernels)) < 0) {
        snprintf(e->msg, sizeof(e->msg), "kernel set %s not available on this CPU",
                 wai_kernels_name(s->kernels));
        goto err;
    }
    if ((ret = wai_dsp_set_threads(&e->dsp, s->threads)) < 0) goto err;
    *out = e;
    return 0;
err:
    if (!e->msg[0]) snprintf(e->msg, sizeof(e->msg), "%s", wai_strerror(ret));
    memcpy(open_msg, e->msg, sizeof(open_msg));
    wai_encoder_close(&e);
    return ret;
}

void wai_encoder_close(WaiEncoder **pe)
{
    if (!pe || !*pe) return;
    WaiEncoder *e = *pe;
    for (int i = e->n_qual - 1; i >= 0; i--) wai_encoder_close(&e->sub[i]);  /* borrowers first */
    if (!e->borrowed) {
        wai_model_free(e->model);
        free(e->whm);
        free_layers(e->layers, e->n_ga + e->n_ha);
    }
    free(e->whm_path);
    free(e->ana_path);
    wai_buf_free(&e->frames);
    free(e);
    *pe = NULL;
}

const char *wai_encoder_last_error(WaiEncoder *e)
{
    return e ? e->msg : open_msg;
}

/* ---- one picture ---- */

static int32_t round_value(double v)
{
    double r = floor(v + 0.5);
    if (r != r) return 0;            /* NaN from a degenerate model: code 0, stay defined */
    return r > WAI_VALUE_MAX ? WAI_VALUE_MAX : r < -WAI_VALUE_MAX ? -WAI_VALUE_MAX : (int32_t)r;
}

static int budget_fail(WaiEncoder *e, size_t need, uint32_t w, uint32_t h)
{
    snprintf(e->msg, sizeof(e->msg), "the analysis needs %llu bytes for a %ux%u picture, "
             "more than max_memory (%llu)", (unsigned long long)need, (unsigned)w, (unsigned)h,
             (unsigned long long)e->s.max_memory);
    return WAI_ERR_LIMIT;
}

/* g_a and h_a of the picture moved by -shift (geometry *g): y into *t, z into *zt (floats,
 * malloc'ed, freed by the caller also on error). */
static int analyse(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t w, uint32_t h,
                   const float shift[3], WaiGeometry *g, FT *t, FT *zt)
{
    const WaiModel *m = e->model;
    int ret = wai_geometry(m, w, h, g);
    if (ret < 0) return fail(e, ret, "picture size not supported by the model");
    /* the analysis's memory, before any of it is allocated (the .ana decides it): g_a's in
     * stripes (analysis_striped checks it), h_a's on the whole y beside a copy of y */
    size_t pa = 0, ph = 0, ybytes;
    const int jobs = e->dsp.threads > 1 ? 4 * e->dsp.threads : 1; /* ana_jobs() at most */
    if (analysis_peak(e->layers, e->n_ga, 3, g->hp, g->wp, 0, jobs, &pa) < 0 ||
        wai_mul_size((size_t)g->y.c * g->y.h, (size_t)g->y.w * sizeof(float), &ybytes) < 0 ||
        analysis_peak(e->layers + e->n_ga, e->n_ha, (size_t)g->y.c, (size_t)g->y.h,
                      (size_t)g->y.w, ybytes, jobs, &ph) < 0)
        return fail(e, WAI_ERR_LIMIT, "the analysis's tensors for this picture size overflow");
#ifdef WAI_PLANTED_FAULT_ENC_BUDGET
    ph = 0; /* planted: the budget is never consulted */
#endif
    if (ph > e->s.max_memory) return budget_fail(e, ph, w, h);
    const int y_step = e->s.stripe_rows ? (int)(e->s.stripe_rows / m->y_down ? e->s.stripe_rows / m->y_down : 1) : 0;
    WaiPool *pool = NULL; /* the analysis's threads (e->dsp.threads); none if they cannot start */
    if (e->dsp.threads > 1 && wai_pool_create(&pool, e->dsp.threads) < 0) pool = NULL;
    size_t need = 0;
    if ((ret = analysis_striped(&e->dsp, e->layers, e->n_ga, rgb, stride, g, shift, pa, y_step,
                                e->s.max_memory, jobs, &need, pool, t)) < 0) {
        if (ret == WAI_ERR_LIMIT && need > e->s.max_memory) budget_fail(e, need, w, h);
        goto end;
    }
    if (t->c != g->y.c || t->h != g->y.h || t->w != g->y.w) {
        ret = fail(e, WAI_ERR_MODEL_INVALID, "g_a output shape differs from the model's y");
        goto end;
    }
    const size_t ny = (size_t)g->y.c * g->y.h * g->y.w;
    zt->d = malloc(ny * sizeof(float));
    if (!zt->d) { ret = WAI_ERR_NOMEM; goto end; }
    memcpy(zt->d, t->d, ny * sizeof(float));
    zt->c = t->c; zt->h = t->h; zt->w = t->w;
    if ((ret = run_f(&e->dsp, e->layers + e->n_ga, e->n_ha, zt, pool)) < 0) goto end;
    if (zt->c != g->z.c || zt->h != g->z.h || zt->w != g->z.w)
        ret = fail(e, WAI_ERR_MODEL_INVALID, "h_a output shape differs from the model's z");
end:
    wai_pool_destroy(&pool);
    return ret;
}

/* For the tests (encoder_internal.h): the picture's y and z floats as the encoder's
 * analysis computes them (no mean correction), malloc'ed into *y and *z, and their counts. */
int wai_encoder_analysis_floats(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t w,
                                uint32_t h, float **y, size_t *ny, float **z, size_t *nz)
{
    static const float shift[3] = { 0, 0, 0 };
    WaiGeometry g;
    FT t = { NULL, 0, 0, 0 }, zt = { NULL, 0, 0, 0 };
    const int ret = analyse(e, rgb, stride, w, h, shift, &g, &t, &zt);
    if (ret < 0) {
        free(t.d);
        free(zt.d);
        return ret;
    }
    *y = t.d;
    *ny = (size_t)t.c * t.h * t.w;
    *z = zt.d;
    *nz = (size_t)zt.c * zt.h * zt.w;
    return 0;
}

/* One pass: analysis of the picture moved by -shift, quantisation, entropy coding: *payload. */
static int encode_payload(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t w,
                          uint32_t h, const float shift[3], uint8_t **payload_out, size_t *psize_out)
{
    const WaiModel *m = e->model;
    WaiGeometry g;
    FT t = { NULL, 0, 0, 0 }, zt = { NULL, 0, 0, 0 };
    int32_t *z_sym = NULL, *z_hat = NULL, *y_mean = NULL, *y_sym = NULL;
    uint8_t *y_index = NULL, *payload = NULL;
    size_t psize = 0;
    int ret = analyse(e, rgb, stride, w, h, shift, &g, &t, &zt);
    if (ret < 0) goto end;
    const size_t ny = (size_t)g.y.c * g.y.h * g.y.w, nz = (size_t)g.z.c * g.z.h * g.z.w;
    z_sym = malloc(nz * sizeof(*z_sym));
    z_hat = malloc(nz * sizeof(*z_hat));
    y_sym = malloc(ny * sizeof(*y_sym));
    y_mean = malloc(ny * sizeof(*y_mean));
    y_index = malloc(ny);
    if (!z_sym || !z_hat || !y_sym || !y_mean || !y_index) { ret = WAI_ERR_NOMEM; goto end; }
    const size_t zplane = (size_t)g.z.h * g.z.w;
    for (size_t i = 0; i < nz; i++)   /* z rounded around the table's median */
        z_sym[i] = round_value((double)zt.d[i] - m->z_median_q12[i / zplane] / 4096.0);
    wai_z_hat(m, &g, z_sym, z_hat);
    const int rate = e->s.rate;
    if (rate < 0) {
        if ((ret = wai_hyper(m, &e->dsp, &g, z_hat, y_index, y_mean)) < 0) goto end;
        for (size_t i = 0; i < ny; i++)   /* y rounded around the integer h_s's mean */
#ifdef WAI_PLANTED_FAULT_ENC_NO_MEAN
            y_sym[i] = round_value((double)t.d[i]);   /* planted: the mean is not subtracted */
#else
            y_sym[i] = round_value(((double)t.d[i] * 4096.0 - y_mean[i]) / 4096.0);
#endif
    } else {
        /* a rate of a variable-rate model (spec 7.4, 7.5): the tables of the rate's qstep, y
         * in steps of qstep around the mean (the decoder reconstructs v * rstep + mean) */
        if ((ret = wai_hyper_rate(m, &e->dsp, &g, z_hat, rate, y_index, y_mean)) < 0) goto end;
#ifdef WAI_PLANTED_FAULT_ENC_RATE_RSTEP
        const uint32_t *qs = wai_rate_rsteps(m, rate);  /* planted: the reconstruction step */
#else
        const uint32_t *qs = wai_rate_qsteps(m, rate);
#endif
        const size_t yplane = (size_t)g.y.h * g.y.w;
        for (size_t i = 0; i < ny; i++)
            y_sym[i] = round_value(((double)t.d[i] * 4096.0 - y_mean[i]) / (double)qs[i / yplane]);
    }
    if ((ret = wai_payload_encode(m, &g, rate, z_sym, y_sym, y_index, &payload, &psize)) < 0) goto end;
    *payload_out = payload;
    *psize_out = psize;
    payload = NULL;
end:
    if (ret < 0 && !e->msg[0]) fail(e, ret, ret == WAI_ERR_NOMEM ? "out of memory" : "encoding failed");
    free(t.d);
    free(zt.d);
    free(z_sym);
    free(z_hat);
    free(y_sym);
    free(y_mean);
    free(y_index);
    free(payload);
    return ret;
}

/* Mean of each channel of the decoded picture minus the original's, in levels. */
static float mean_error(const uint8_t *rgb, ptrdiff_t stride, const uint8_t *dec, uint32_t w,
                        uint32_t h, float err[3])
{
    int64_t sum[3] = { 0, 0, 0 };
    for (uint32_t yy = 0; yy < h; yy++) {
        const uint8_t *a = rgb + (ptrdiff_t)yy * stride, *b = dec + (size_t)yy * w * 3;
        for (size_t i = 0; i < (size_t)w * 3; i++) sum[i % 3] += (int)b[i] - (int)a[i];
    }
    float worst = 0;
    for (int k = 0; k < 3; k++) {
        err[k] = (float)((double)sum[k] / ((double)w * h));
        if (fabsf(err[k]) > worst) worst = fabsf(err[k]);
    }
    return worst;
}

/* The analysis is float and the synthesis integer, so a picture can come back with a channel's
 * mean a level or more off (a visible cast on flat areas). The decode is exact, so the encoder
 * can see what every decoder will show: where the worst channel-mean error exceeds half a level,
 * it codes the picture again moved by the error (the synthesis answers a small shift of the
 * input almost one to one) and keeps the pass with the smallest worst error. */
#define MEAN_TOLERANCE 0.5f

/* PSNR in dB of the decoded picture against the original (RGB8, peak 255). */
static double psnr_rgb8(const uint8_t *rgb, ptrdiff_t stride, const uint8_t *dec, uint32_t w,
                        uint32_t h)
{
    uint64_t sse = 0;
    for (uint32_t yy = 0; yy < h; yy++) {
        const uint8_t *a = rgb + (ptrdiff_t)yy * stride, *b = dec + (size_t)yy * w * 3;
        for (size_t i = 0; i < (size_t)w * 3; i++) {
            const int d = (int)b[i] - (int)a[i];
            sse += (uint64_t)(d * d);
        }
    }
    if (!sse) return INFINITY;
    return 10.0 * log10(255.0 * 255.0 * 3.0 * w * h / (double)sse);
}

/* The picture's payload as the settings make it (mean-correction passes included) into *out
 * (malloc'ed); with psnr, also the decoded payload's PSNR. */
static int encode_best(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t w,
                       uint32_t h, uint8_t **out, size_t *out_size, double *psnr)
{
    float shift[3] = { 0, 0, 0 }, err[3], best_worst = 0;
    uint8_t *best = NULL, *dec = NULL;
    size_t best_size = 0;
    double best_psnr = -1;
    int passes = e->s.mean_correction, ret = 0;
    for (int pass = 0; pass <= passes; pass++) {
        uint8_t *p = NULL;
        size_t ps = 0;
        if ((ret = encode_payload(e, rgb, stride, w, h, shift, &p, &ps)) < 0) goto end;
        if (!passes && !psnr) { best = p; best_size = ps; break; }
        if (!dec && !(dec = malloc((size_t)w * h * 3))) {
            free(p);
            ret = fail(e, WAI_ERR_NOMEM, "out of memory");
            goto end;
        }
        ret = wai_payload_decode(e->model, &e->dsp, p, ps, w, h, 0, 0, w, h, dec, (ptrdiff_t)w * 3);
        if (ret < 0) {
            free(p);
            fail(e, ret, "decoding its own frame failed");
            goto end;
        }
        float worst = mean_error(rgb, stride, dec, w, h, err);
        if (!best || worst < best_worst) {
            free(best);
            best = p;
            best_size = ps;
            best_worst = worst;
            if (psnr) best_psnr = psnr_rgb8(rgb, stride, dec, w, h);
        } else {
            free(p);
        }
        if (!passes || best_worst <= MEAN_TOLERANCE) break;
#ifdef WAI_PLANTED_FAULT_ENC_MEAN_SIGN
        for (int k = 0; k < 3; k++) shift[k] -= err[k];   /* planted: moved the wrong way */
#else
        for (int k = 0; k < 3; k++) shift[k] += err[k];
#endif
    }
    *out = best;
    *out_size = best_size;
    if (psnr) *psnr = best_psnr;
    best = NULL;
end:
    free(best);
    free(dec);
    return ret;
}

static int write_header(const WaiEncoder *e, uint32_t w, uint32_t h, uint32_t frame_count,
                        WaiBuf *b);

/* Keep payload p (of size ps) as frame e->n_frames, after a sequence header of the model of
 * quality index qi when that differs from the model in force (rate control). */
static int keep_frame(WaiEncoder *e, int qi, const uint8_t *p, size_t ps, uint32_t w, uint32_t h)
{
    const size_t before = e->frames.size;
    int ret = 0;
#ifndef WAI_PLANTED_FAULT_ENC_RATE_NO_HEADER   /* planted: the frame goes out under the old model */
    if (e->n_qual && e->cur_i >= 0 && qi != e->cur_i)
        ret = write_header(e->sub[qi], w, h, 0, &e->frames);
#endif
    if (ret >= 0) ret = wai_frame_write(&e->frames, e->n_frames, p, ps);
    if (ret < 0) return fail(e, ret, "out of memory");
    e->last_z = wai_rd32(p + 12);
    e->last_y = wai_rd32(p + 16);
    e->last.bytes = e->frames.size - before;
    return 0;
}

/* Bytes of the sequence header unit of encoder e's model. */
static uint64_t header_bytes(const WaiEncoder *e)
{
    return WAI_SEQHDR_FIXED + (uint64_t)e->whm_size;
}

/* Rate control: the quality meeting the settings' target (see wai/encoder.h). The frame
 * cost (size target) or PSNR (PSNR target) is taken as monotonic in the quality, so a
 * bisection over the available qualities finds the boundary; with a model in force its
 * first candidate is that model's quality and its second that one's neighbour toward the
 * boundary, so a sequence of like pictures costs two candidates each. Candidates' payloads are kept until
 * the choice, so the one kept is never coded twice. */
static int encode_rate(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t w,
                       uint32_t h)
{
    const int n = e->n_qual, by_size = e->s.target_frame_bytes != 0;
    uint8_t *pay[WAI_ENCODER_MAX_QUALITY] = { NULL };
    size_t psz[WAI_ENCODER_MAX_QUALITY] = { 0 };
    double ps[WAI_ENCODER_MAX_QUALITY];
    uint64_t cost[WAI_ENCODER_MAX_QUALITY];
    /* by size: [0, lo] meet the target, [hi, n) do not; by PSNR: [0, lo] do not, [hi, n) do */
    int lo = -1, hi = n, probes = 0, ret = 0;
    /* with a model in force (a picture before, or the header wai_encoder_header() gave) the
     * search starts at its quality, then that one's neighbour; with none (the first picture
     * of a stream whose header comes after it) it bisects from the middle: at most
     * ceil(log2(n + 1)) codings */
    const int gallop = e->cur_i >= 0, first = gallop ? e->cur_i : 0;
    while (hi - lo > 1) {
        const int mid = gallop && probes == 0   ? first
                        : gallop && probes == 1 ? (lo == first ? lo + 1 : hi - 1)
                                                : lo + (hi - lo) / 2;
        WaiEncoder *sub = e->sub[mid];
        sub->msg[0] = 0;
        ret = encode_best(sub, rgb, stride, w, h, &pay[mid], &psz[mid], by_size ? NULL : &ps[mid]);
        if (ret < 0) {
            snprintf(e->msg, sizeof(e->msg), "quality %d: %.480s", e->qual[mid],
                     sub->msg[0] ? sub->msg : wai_strerror(ret));
            goto end;
        }
        probes++;
        int ok;
        if (by_size) {
            cost[mid] = 20 + (uint64_t)psz[mid] +
                        (e->cur_i >= 0 && mid != e->cur_i ? header_bytes(sub) : 0);
            ok = cost[mid] <= e->s.target_frame_bytes;
            if (ok) lo = mid; else hi = mid;
        } else {
            ok = ps[mid] >= e->s.target_psnr;
            if (ok) hi = mid; else lo = mid;
        }
    }
    int met, qi;
    if (by_size) {
        met = lo >= 0;
#ifdef WAI_PLANTED_FAULT_ENC_RATE_CHOICE
        qi = hi < n ? hi : n - 1;   /* planted: the first one over the target */
#else
        qi = met ? lo : 0;
#endif
        if (!met)   /* the cheapest candidate: staying may beat a change's header */
            for (int i = 0; i < n; i++)
                if (pay[i] && cost[i] < cost[qi]) qi = i;
    } else {
        met = hi < n;
        qi = met ? hi : n - 1;
    }
    if ((ret = keep_frame(e, qi, pay[qi], psz[qi], w, h)) < 0) goto end;
    if (e->cur_i < 0) e->start_i = qi;
    e->cur_i = qi;
    e->last.quality = e->qual[qi];
    e->last.target_met = met;
    e->last.psnr = by_size ? -1 : ps[qi];
    e->last.candidates = probes;
    e->last.rate = e->sub[qi]->s.rate;   /* -1, or the rate of a quality file */
end:
    for (int i = 0; i < n; i++) free(pay[i]);
    return ret;
}

static int encode(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t w, uint32_t h)
{
    if (e->n_qual) return encode_rate(e, rgb, stride, w, h);
    uint8_t *p = NULL;
    size_t ps = 0;
    int ret = encode_best(e, rgb, stride, w, h, &p, &ps, NULL);
    if (ret >= 0) ret = keep_frame(e, 0, p, ps, w, h);
    free(p);
    e->last.quality = e->s.quality;
    e->last.target_met = 1;
    e->last.psnr = -1;
    e->last.candidates = 1;
    e->last.rate = e->s.rate;
    return ret;
}

int wai_encode_picture(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t width,
                       uint32_t height)
{
    if (!e) return WAI_ERR_INVALID_ARG;
    e->msg[0] = 0;
    if (!rgb || !width || !height || width > 65536 || height > 65536 ||
        stride < (ptrdiff_t)width * 3)
        return fail(e, WAI_ERR_INVALID_ARG, "bad picture arguments");
    if (e->n_frames && (width != e->width || height != e->height))
        return fail(e, WAI_ERR_INVALID_ARG, "every picture of a stream must have the same size");
    if (e->n_frames == UINT32_MAX) return fail(e, WAI_ERR_LIMIT, "too many frames");
    size_t before = e->frames.size;
    int ret = encode(e, rgb, stride, width, height);
    if (ret < 0) {
        e->frames.size = before;  /* drop a partly written unit */
        e->frames.err = 0;
        return ret;
    }
    e->width = width;
    e->height = height;
    e->n_frames++;
    return 0;
}

int wai_encoder_set_target(WaiEncoder *e, uint64_t frame_bytes, double psnr)
{
    if (!e || !e->n_qual || !frame_bytes == !(psnr != 0) || !(psnr >= 0))
        return WAI_ERR_INVALID_ARG;
    e->s.target_frame_bytes = frame_bytes;
    e->s.target_psnr = psnr;
    return 0;
}

int wai_encoder_last_frame(WaiEncoder *e, WaiFrameStats *stats)
{
    if (!e || !e->n_frames || !stats) return WAI_ERR_INVALID_ARG;
    *stats = e->last;
    return 0;
}

int wai_encoder_last_sizes(WaiEncoder *e, size_t *z_bytes, size_t *y_bytes)
{
    if (!e || !e->n_frames) return WAI_ERR_INVALID_ARG;
    if (z_bytes) *z_bytes = e->last_z;
    if (y_bytes) *y_bytes = e->last_y;
    return 0;
}

/* The sequence header of the encoder's model and settings into b. */
static int write_header(const WaiEncoder *e, uint32_t w, uint32_t h, uint32_t frame_count,
                        WaiBuf *b)
{
    WaiSequenceInfo info;
    memset(&info, 0, sizeof(info));
    info.width = info.disp_w = w;
    info.height = info.disp_h = h;
    info.fps_num = e->s.fps_num;
    info.fps_den = e->s.fps_den;
    info.frame_count = frame_count;
    info.colour_primaries = 1;   /* BT.709 primaries, sRGB transfer, RGB samples, full range */
    info.transfer = 13;
    info.matrix = 0;
    info.full_range = 1;
    memcpy(info.model_sha256, e->model->sha256, 32);
    return wai_seqhdr_write(b, &info, e->whm, e->whm_size);
}

int wai_encoder_finish(WaiEncoder *e, uint8_t **out, size_t *size)
{
    if (!out || !size) return WAI_ERR_INVALID_ARG;
    *out = NULL;
    *size = 0;
    if (!e) return WAI_ERR_INVALID_ARG;
    if (e->streamed)
        return fail(e, WAI_ERR_INVALID_ARG, "frames were returned by wai_encode_picture_unit()");
    if (!e->n_frames) return fail(e, WAI_ERR_INVALID_ARG, "no picture was encoded");
    WaiBuf b;
    wai_buf_init(&b);
    int ret = write_header(e->n_qual ? e->sub[e->start_i] : e, e->width, e->height, e->n_frames, &b);
    if (ret >= 0) {
        wai_buf_put(&b, e->frames.data, e->frames.size);
        ret = b.err;
    }
    if (ret < 0) {
        wai_buf_free(&b);
        return fail(e, ret, "out of memory");
    }
    *out = b.data;
    *size = b.size;
    return 0;
}

int wai_encoder_header(WaiEncoder *e, uint32_t width, uint32_t height, uint32_t frame_count,
                       uint8_t **out, size_t *size)
{
    if (!out || !size) return WAI_ERR_INVALID_ARG;
    *out = NULL;
    *size = 0;
    if (!e) return WAI_ERR_INVALID_ARG;
    e->msg[0] = 0;
    if (!width || !height || width > 65536 || height > 65536)
        return fail(e, WAI_ERR_INVALID_ARG, "bad picture size");
    if (e->n_frames && (width != e->width || height != e->height))
        return fail(e, WAI_ERR_INVALID_ARG, "every picture of a stream must have the same size");
    /* rate control: before the first picture, the header of the quality nearest the
     * settings' (then in force); after it, the stream's first header again */
    const WaiEncoder *m = !e->n_qual ? e : e->sub[e->n_frames ? e->start_i : e->hdr_i];
    WaiGeometry g;
    int ret = wai_geometry(m->model, width, height, &g);
    if (ret < 0) return fail(e, ret, "picture size not supported by the model");
    WaiBuf b;
    wai_buf_init(&b);
    ret = write_header(m, width, height, frame_count, &b);
    if (ret >= 0) ret = b.err;
    if (ret < 0) {
        wai_buf_free(&b);
        return fail(e, ret, "out of memory");
    }
    if (e->n_qual && !e->n_frames) e->cur_i = e->start_i = e->hdr_i;   /* now in force */
    *out = b.data;
    *size = b.size;
    return 0;
}

int wai_encode_picture_unit(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t width,
                            uint32_t height, uint8_t **unit, size_t *size)
{
    if (!unit || !size) return WAI_ERR_INVALID_ARG;
    *unit = NULL;
    *size = 0;
    if (!e) return WAI_ERR_INVALID_ARG;
    const size_t before = e->frames.size;
    int ret = wai_encode_picture(e, rgb, stride, width, height);
    if (ret < 0) return ret;
    /* move the new unit out of the kept frames */
    const size_t n = e->frames.size - before;
    uint8_t *u = malloc(n);
    e->streamed = 1;
    if (u) memcpy(u, e->frames.data + before, n);
    e->frames.size = before;
    if (!u) {
        e->n_frames--;   /* the unit is lost: the next one takes its frame_index */
        return fail(e, WAI_ERR_NOMEM, "out of memory");
    }
    *unit = u;
    *size = n;
    return 0;
}
