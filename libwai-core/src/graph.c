/* Running h_s and g_s (spec 4.3, 6), the scale index (7.4), the RGB8 output (8) and the
 * memory estimate (9.2). Shapes are validated for the whole list before anything runs. */
#include <stdlib.h>

#include "graph.h"
#include "threadpool.h"

/* Largest tensor dimension accepted (an implementation limit, spec 9.2): keeps every index
 * expression of the kernels (oy * stride + kh, ...) far inside int. */
#define WAI_DIM_MAX (1 << 24)

static int add_size(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a) return WAI_ERR_LIMIT;
    *out = a + b;
    return 0;
}

/* Elements of a (positive, bounded) shape; also guarantees that the bytes of an int32
 * tensor of that many elements fit in size_t. */
static int shape_elems(WaiShape s, size_t *n)
{
    size_t hw, chw, bytes;
    int r;
    if ((r = wai_mul_size((size_t)s.h, (size_t)s.w, &hw)) < 0) return r;
    if ((r = wai_mul_size(hw, (size_t)s.c, &chw)) < 0) return r;
    if ((r = wai_mul_size(chw, sizeof(int32_t), &bytes)) < 0) return r;
    *n = chw;
    return 0;
}

static int shape_eq(WaiShape a, WaiShape b) { return a.c == b.c && a.h == b.h && a.w == b.w; }

/* A dimension computed per 5.2 / 5.3: must be positive (4.3), and within the limit. */
static int check_dim(int64_t d, int *out)
{
    if (d < 1) return WAI_ERR_MODEL_INVALID;
    if (d > WAI_DIM_MAX) return WAI_ERR_LIMIT;
    *out = (int)d;
    return 0;
}

/* Output shape of one layer for input `in` (spec 4.3, 5.2, 5.3). Besides the spec's shape
 * rules, parameters the kernels rely on (stride >= 1, C <= 512, ...) are re-checked here:
 * model.c validates them too, but a hand-built model must not crash a kernel. */
static int layer_out_shape(const WaiLayer *l, WaiShape in, WaiShape *out)
{
    int64_t h, w;
    int r;

    switch (l->type) {
    case WAI_LAYER_CONV:
    case WAI_LAYER_CONVT:
        if (l->cin != in.c || l->cout < 1 || l->kh < 1 || l->kh > 15 || l->kw < 1 ||
            l->kw > 15 || l->stride < 1 || l->stride > 8 || l->pad < 0 || l->pad > 14 ||
            l->out_pad < 0)
            return WAI_ERR_MODEL_INVALID;
        if (l->type == WAI_LAYER_CONV) {
            if (l->out_pad) return WAI_ERR_MODEL_INVALID;
            const int64_t nh = (int64_t)in.h + 2 * l->pad - l->kh;
            const int64_t nw = (int64_t)in.w + 2 * l->pad - l->kw;
            /* floor(negative / stride) + 1 <= 0: not a positive shape */
            if (nh < 0 || nw < 0) return WAI_ERR_MODEL_INVALID;
            h = nh / l->stride + 1;
            w = nw / l->stride + 1;
        } else {
            if (l->out_pad >= l->stride) return WAI_ERR_MODEL_INVALID;
            h = ((int64_t)in.h - 1) * l->stride - 2 * l->pad + l->kh + l->out_pad;
            w = ((int64_t)in.w - 1) * l->stride - 2 * l->pad + l->kw + l->out_pad;
        }
        out->c = l->cout;
        if ((r = check_dim(h, &out->h)) < 0 || (r = check_dim(w, &out->w)) < 0) return r;
        return 0;
    case WAI_LAYER_LRELU:
        *out = in;
        return 0;
    case WAI_LAYER_IGDN:
        if (l->cin != in.c || l->cin > 512 || l->gamma_shift < 0 || l->gamma_shift > 48 ||
            (l->gamma_shift & 1))
            return WAI_ERR_MODEL_INVALID;
        *out = in;
        return 0;
    }
    return WAI_ERR_MODEL_INVALID;
}

/* Walks a layer list from shape s: the final shape and the largest (input + output)
 * elements over its layers (spec 9.2). */
static int walk_shapes(const WaiLayer *layers, uint32_t n, WaiShape s, WaiShape *os,
                       size_t *max_pair)
{
    size_t best = 0, ne_in, ne_out, pair;
    int r;

    if (s.c < 1 || s.h < 1 || s.w < 1) return WAI_ERR_MODEL_INVALID;
    if (s.h > WAI_DIM_MAX || s.w > WAI_DIM_MAX) return WAI_ERR_LIMIT;
    if ((r = shape_elems(s, &ne_in)) < 0) return r;
    for (uint32_t k = 0; k < n; k++) {
        WaiShape ns;
        if ((r = layer_out_shape(&layers[k], s, &ns)) < 0) return r;
        if ((r = shape_elems(ns, &ne_out)) < 0) return r;
        if ((r = add_size(ne_in, ne_out, &pair)) < 0) return r;
        if (pair > best) best = pair;
        s = ns;
        ne_in = ne_out;
    }
    *os = s;
    *max_pair = best;
    return 0;
}

int wai_geometry(const WaiModel *m, uint32_t width, uint32_t height, WaiGeometry *g)
{
    memset(g, 0, sizeof(*g));
    if (!width || !height) return WAI_ERR_INVALID_ARG;
    const uint32_t pm = m->pad_multiple;
    if (!pm || !m->y_down || !m->z_down || !m->n_z || !m->n_y || m->n_z > 1024 || m->n_y > 1024)
        return WAI_ERR_MODEL_INVALID;

    const uint64_t wp = ((uint64_t)width + pm - 1) / pm * pm;
    const uint64_t hp = ((uint64_t)height + pm - 1) / pm * pm;
    if (wp > WAI_DIM_MAX || hp > WAI_DIM_MAX) return WAI_ERR_LIMIT;
    if (wp % m->z_down || hp % m->z_down || wp % m->y_down || hp % m->y_down)
        return WAI_ERR_MODEL_INVALID;

    g->width = width;
    g->height = height;
    g->wp = (uint32_t)wp;
    g->hp = (uint32_t)hp;
    g->z = (WaiShape){ (int)m->n_z, (int)(hp / m->z_down), (int)(wp / m->z_down) };
    g->y = (WaiShape){ (int)m->n_y, (int)(hp / m->y_down), (int)(wp / m->y_down) };

    WaiShape hs_out, gs_out;
    size_t pair_hs, pair_gs;
    int r;
    if ((r = walk_shapes(m->hs, m->n_hs, g->z, &hs_out, &pair_hs)) < 0) return r;
    if (!shape_eq(hs_out, (WaiShape){ 2 * g->y.c, g->y.h, g->y.w })) return WAI_ERR_MODEL_INVALID;
    if ((r = walk_shapes(m->gs, m->n_gs, g->y, &gs_out, &pair_gs)) < 0) return r;
    if (!shape_eq(gs_out, (WaiShape){ 3, (int)hp, (int)wp }))
        return WAI_ERR_MODEL_INVALID;

    g->pair_hs = pair_hs;
    g->pair_gs = pair_gs;
    return 0;
}

/* One layer on the current tensor. Conv and convT write a new tensor; leaky ReLU and IGDN
 * work in place. With a pool, the output rows (elements for leaky ReLU) are split into bands
 * that run in parallel; the kernels define any split to give the same tensor as one call. */
typedef struct LayerWork {
    const WaiDsp *dsp;
    const WaiLayer *l;
    const int32_t *in;
    WaiShape s, os;
    int32_t *out;
    size_t n_out;
    int row0, rows;   /* output rows [row0, row0 + rows) are computed (leaky ReLU: every element) */
    int n_jobs;
} LayerWork;

/* Bands per thread: more than one evens out threads slowed by other load on the machine. */
#define BANDS_PER_THREAD 4

/* Start of job j of n over `total` rows (or elements): total * (1 - (1 - j/n)^2), rounded
 * down, so job sizes fall linearly from about 2/n of the work to about 1/n^2 of it. The pool
 * hands jobs out in order, so the large ones go first and the last ones, which decide how long
 * the other threads wait at the end of a layer, are small ("guided" scheduling). Exact in
 * 64 bits for n <= 256 (n^4 <= 2^32): total = q n^2 + r. Any split gives the same bytes. */
static size_t job_start(size_t total, int n, int j)
{
    const uint64_t nn = (uint64_t)n * (uint64_t)n, m = (uint64_t)(n - j) * (uint64_t)(n - j);
    const uint64_t q = (uint64_t)total / nn, r = (uint64_t)total % nn;
    return total - (size_t)(q * m + r * m / nn);
}
/* Below this many multiply-adds (or elements) a layer runs on the calling thread alone. */
#define MIN_PARALLEL_WORK (1 << 18)

static void layer_band(void *ctx, int j)
{
    const LayerWork *w = ctx;
    const WaiLayer *l = w->l;
    const int n = w->n_jobs;
    const int y0 = w->row0 + (int)job_start((size_t)w->rows, n, j);
    int y1 = w->row0 + (int)job_start((size_t)w->rows, n, j + 1);
#ifdef WAI_PLANTED_FAULT_FAST_BAND
    if (y1 == w->row0 + w->rows && y1 > y0) y1--; /* planted: the band ending the layer misses a row */
#endif
    if (y0 >= y1 && l->type != WAI_LAYER_LRELU) return; /* an empty job (rows < jobs) */

    switch (l->type) {
    case WAI_LAYER_CONV:
        w->dsp->conv(l, w->in, w->s.h, w->s.w, w->out, w->os.h, w->os.w, y0, y1);
        break;
    case WAI_LAYER_CONVT:
        w->dsp->convt(l, w->in, w->s.h, w->s.w, w->out, w->os.h, w->os.w, y0, y1);
        break;
    case WAI_LAYER_LRELU: {
        const size_t a = job_start(w->n_out, n, j), b = job_start(w->n_out, n, j + 1);
        if (a < b) w->dsp->lrelu(w->out + a, b - a, l->slope_q16);
        break;
    }
    case WAI_LAYER_IGDN:
        w->dsp->igdn(l, w->out, w->os.h, w->os.w, y0, y1);
        break;
    }
}

/* Work of a layer in multiply-adds (elements for leaky ReLU), saturating. */
static double layer_work(const WaiLayer *l, WaiShape os, size_t n_out)
{
    switch (l->type) {
    case WAI_LAYER_CONV: return (double)n_out * l->cin * l->kh * l->kw;
    case WAI_LAYER_CONVT:
        return (double)n_out * l->cin * l->kh * l->kw / ((double)l->stride * l->stride);
    case WAI_LAYER_IGDN: return (double)n_out * os.c;
    default: return (double)n_out;
    }
}

/* How many jobs a piece of work is split into: 1 unless there are threads and the work (in
 * multiply-adds or elements) is worth it; then BANDS_PER_THREAD per thread of *pool (started
 * here at the first such piece), at most max_jobs when max_jobs >= 0 (rows to split). If the
 * pool cannot start, the work runs on the calling thread, with the same result. */
static int split_jobs(const WaiDsp *dsp, WaiPool **pool, double work, int64_t max_jobs)
{
    if (dsp->threads <= 1 || work < MIN_PARALLEL_WORK) return 1;
    if (!*pool && wai_pool_create(pool, dsp->threads) < 0) *pool = NULL;
    const int bands = wai_pool_threads(*pool) * BANDS_PER_THREAD;
    return max_jobs >= 0 && max_jobs < bands ? (int)max_jobs : bands;
}

/* The kernel set's preparation of a conv or convT layer (WaiDsp.prep_layer), or NULL. */
static void *layer_prep(const WaiDsp *dsp, const WaiLayer *l)
{
    if (!dsp->prep_layer || !dsp->prep_free ||
        (l->type != WAI_LAYER_CONV && l->type != WAI_LAYER_CONVT))
        return NULL;
    return dsp->prep_layer(l);
}

/* *pool is started at the first layer worth splitting (a small list never starts threads);
 * if it cannot start, every layer runs on the calling thread, with the same result. Output
 * rows [row0, row1) of conv, convT and IGDN are computed; leaky ReLU does all n_out. kept: a
 * slot for the layer's preparation that the caller keeps (across stripes) and frees, made
 * here while it is NULL; or NULL: the preparation is made and freed here. */
static void run_layer_kept(const WaiDsp *dsp, WaiPool **pool, const WaiLayer *l,
                           const int32_t *in, WaiShape s, int32_t *out, WaiShape os,
                           size_t n_out, int row0, int row1, void **kept)
{
    LayerWork w = { dsp, l, in, s, os, out, n_out, row0, row1 - row0, 1 };
    /* the preparation is shared by the bands (in a copy of the layer) */
    WaiLayer lc;
    if (kept && !*kept) *kept = layer_prep(dsp, l);
    void *prep = kept ? *kept : layer_prep(dsp, l);
    if (prep) {
        lc = *l;
        lc.prep = prep;
        w.l = &lc;
    }
    const double part = os.h ? (double)(row1 - row0) / os.h : 0;
    w.n_jobs = split_jobs(dsp, pool, layer_work(l, os, n_out) * (l->type == WAI_LAYER_LRELU ? 1 : part),
                          l->type == WAI_LAYER_LRELU ? -1 : (int64_t)(row1 - row0));
    wai_pool_run(*pool, layer_band, &w, w.n_jobs);
    if (prep && !kept) dsp->prep_free(prep);
}

static void run_layer(const WaiDsp *dsp, WaiPool **pool, const WaiLayer *l, const int32_t *in,
                      WaiShape s, int32_t *out, WaiShape os, size_t n_out, int row0, int row1)
{
    run_layer_kept(dsp, pool, l, in, s, out, os, n_out, row0, row1, NULL);
}

/* wai_run_layers() with the caller's pool: *pool may be started here (run_layer) and is left
 * running for the caller's own split work; the caller destroys it. */
static int run_layers_pool(const WaiDsp *dsp, WaiPool **pool, const WaiLayer *layers, uint32_t n,
                           const int32_t *in, WaiShape s, int32_t **out, WaiShape *os)
{
    WaiShape fs;
    size_t pair, ne;
    int r;

    *out = NULL;
    if ((r = walk_shapes(layers, n, s, &fs, &pair)) < 0) return r;
    if (dsp->run_layers) {
        const int shape[3] = { s.c, s.h, s.w };
        int o[3] = { 0, 0, 0 };
        if ((r = dsp->run_layers(dsp->backend, layers, n, in, shape, out, o)) < 0) return r;
        *os = (WaiShape){ o[0], o[1], o[2] };
        if (!shape_eq(*os, fs)) { free(*out); *out = NULL; return WAI_ERR_INTERNAL; }
        return 0;
    }

    /* Peak memory is one (input, output) pair: each output is allocated, then the input
     * freed. The caller's input is never written: an in-place first layer copies it. */
    const int32_t *cur = in;
    int32_t *owned = NULL;
    for (uint32_t k = 0; k < n; k++) {
        const WaiLayer *l = &layers[k];
        WaiShape ns;
        if ((r = layer_out_shape(l, s, &ns)) < 0 || (r = shape_elems(ns, &ne)) < 0) goto fail;
        const int in_place = l->type == WAI_LAYER_LRELU || l->type == WAI_LAYER_IGDN;
        int32_t *dst = owned;
        if (!in_place || !owned) {
            if (!(dst = malloc(ne * sizeof(*dst)))) { r = WAI_ERR_NOMEM; goto fail; }
            if (in_place) memcpy(dst, cur, ne * sizeof(*dst));
        }
        run_layer(dsp, pool, l, cur, s, dst, ns, ne, 0, ns.h);
        if (dst != owned) free(owned);
        cur = owned = dst;
        s = ns;
    }
    if (!owned) { /* an empty list: the output is a copy */
        if ((r = shape_elems(s, &ne)) < 0) return r;
        if (!(owned = malloc(ne * sizeof(*owned)))) return WAI_ERR_NOMEM;
        memcpy(owned, in, ne * sizeof(*owned));
    }
    *out = owned;
    *os = s;
    return 0;
fail:
    free(owned);
    return r;
}

int wai_run_layer_in_place(const WaiDsp *dsp, const WaiLayer *l, int32_t *x, WaiShape s)
{
    size_t ne;
    int r;
    if ((l->type != WAI_LAYER_LRELU && l->type != WAI_LAYER_IGDN) || dsp->run_layers)
        return WAI_ERR_INVALID_ARG;
    if ((r = shape_elems(s, &ne)) < 0) return r;
    WaiPool *pool = NULL;
    run_layer(dsp, &pool, l, x, s, x, s, ne, 0, s.h);
    wai_pool_destroy(&pool);
    return 0;
}

int wai_run_layers(const WaiDsp *dsp, const WaiLayer *layers, uint32_t n, const int32_t *in,
                   WaiShape s, int32_t **out, WaiShape *os)
{
    WaiPool *pool = NULL; /* threads live for this call (run_layer starts them) */
    const int r = run_layers_pool(dsp, &pool, layers, n, in, s, out, os);
    wai_pool_destroy(&pool);
    return r;
}

/* Element-wise work after the layers (scale index, RGB8 conversion), split into row ranges
 * on the pool the layers used (started here if they did not and the work is large enough).
 * Each element's result depends only on its own inputs: any split gives the same bytes. */
typedef struct RowsWork {
    void (*fn)(void *ctx, uint32_t r0, uint32_t r1);
    void *ctx;
    uint32_t rows;
    int n_jobs;
} RowsWork;

static void rows_job(void *ctx, int j)
{
    const RowsWork *w = ctx;
    const uint32_t r0 = (uint32_t)job_start(w->rows, w->n_jobs, j);
    const uint32_t r1 = (uint32_t)job_start(w->rows, w->n_jobs, j + 1);
    if (r0 < r1) w->fn(w->ctx, r0, r1);
}

static void run_rows(const WaiDsp *dsp, WaiPool **pool, uint32_t rows, double work,
                     void (*fn)(void *ctx, uint32_t r0, uint32_t r1), void *ctx)
{
    RowsWork w = { fn, ctx, rows, rows > 1 ? split_jobs(dsp, pool, work, rows) : 1 };
    wai_pool_run(*pool, rows_job, &w, w.n_jobs);
}

/* Spec 7.4: the least k in [0, n_scales - 1) with s <= threshold[k], else n_scales - 1. The
 * thresholds strictly increase, so that k is the count of thresholds below s: a lower bound by
 * halving, each step's move added under a mask rather than taken by a branch. A branching
 * binary search mispredicts about every other step, and h_s asks this for every element of y
 * (the masked form is 3-5x faster in a loop over a q5 model's 63 thresholds). This is the rule
 * for the unit quantisation step qs = 4096 (WIH1 frames, spec 1.0); scale_index_q() below is the
 * general one. */
#if defined(WAI_PLANTED_FAULT_GRAPH_SCALE_INDEX) || defined(WAI_PLANTED_FAULT_VEC_SCALE_STRICT)
#define SCALE_BELOW(t, s) ((t) <= (s))   /* planted: s == threshold goes one up */
#else
#define SCALE_BELOW(t, s) ((t) < (s))
#endif
static inline int scale_index(const WaiModel *m, int32_t scale_q12)
{
    const int32_t *t = m->thresholds_q12, *b = t;
    size_t n = m->n_scales ? m->n_scales - 1 : 0;
    if (!n) return 0;
    while (n > 1) {
        const size_t half = n / 2;
        b += half & (0 - (size_t)SCALE_BELOW(b[half - 1], scale_q12));
        n -= half;
    }
    int lo = (int)(b - t) + SCALE_BELOW(*b, scale_q12);
#ifdef WAI_PLANTED_FAULT_VEC_SCALE_LAST
    /* planted: a scale above the last threshold takes the last threshold's table */
    if (m->n_scales > 1 && lo == (int)m->n_scales - 1) lo--;
#endif
    return lo;
}

/* Spec 7.4 (version 1.1) with the channel's quantisation step qs (Q12, 1..2^24): the least k
 * with s * 4096 <= threshold[k] * qs, exact in int64 (|s| < 2^31 gives |s * 4096| < 2^43,
 * |threshold * qs| < 2^55), else n_scales - 1. qs > 0 keeps the products strictly increasing
 * in k, so the same masked lower bound counts the thresholds with threshold * qs < s * 4096.
 * qs == 4096 is scale_index() (the same k: both sides carry the factor 4096). */
static inline int scale_index_q(const WaiModel *m, int32_t scale_q12, uint32_t qs)
{
    if (qs == 4096) return scale_index(m, scale_q12);
    const int32_t *t = m->thresholds_q12, *b = t;
    size_t n = m->n_scales ? m->n_scales - 1 : 0;
    if (!n) return 0;
    const int64_t sv = (int64_t)scale_q12 * 4096, q = (int64_t)qs;
    while (n > 1) {
        const size_t half = n / 2;
        b += half & (0 - (size_t)SCALE_BELOW((int64_t)b[half - 1] * q, sv));
        n -= half;
    }
    int lo = (int)(b - t) + SCALE_BELOW((int64_t)*b * q, sv);
#ifdef WAI_PLANTED_FAULT_VEC_SCALE_LAST
    if (m->n_scales > 1 && lo == (int)m->n_scales - 1) lo--;
#endif
    return lo;
}

int wai_scale_index(const WaiModel *m, int32_t scale_q12)
{
    return scale_index(m, scale_q12);
}

int wai_scale_index_q(const WaiModel *m, int32_t scale_q12, uint32_t qstep_q12)
{
    return scale_index_q(m, scale_q12, qstep_q12);
}

/* h_s output rows [y0, y0 + rows) of every channel (p: 2 n_y planes of `rows` rows each, a
 * stripe or the whole tensor) into the index and the mean of y. A job's row t is channel
 * t / rows, row t % rows. */
typedef struct HyperOut {
    const WaiModel *m;
    const uint32_t *qstep;  /* [n_y] quantisation steps of the frame's rate; NULL: 4096 each */
    const int32_t *p;
    uint8_t *y_index;
    int32_t *y_mean;
    size_t hy, w;          /* y's rows and columns */
    uint32_t n_y, y0, rows;
} HyperOut;

static void hyper_rows(void *ctx, uint32_t r0, uint32_t r1)
{
    const HyperOut *h = ctx;
    const size_t plane = (size_t)h->rows * h->w;
    for (uint32_t t = r0; t < r1; t++) {
        const uint32_t c = t / h->rows, row = t % h->rows;
        const int32_t *scale = h->p + (size_t)c * plane + (size_t)row * h->w;
        const int32_t *mean = scale + (size_t)h->n_y * plane;
        const size_t e0 = ((size_t)c * h->hy + h->y0 + row) * h->w;
        /* scale_index_q() takes the int32 search itself for the unit step */
        const uint32_t qs = h->qstep ? h->qstep[c] : 4096;
        for (size_t x = 0; x < h->w; x++) {
#ifdef WAI_PLANTED_FAULT_VEC_HS_ORDER
            /* planted: means first, then scales */
            h->y_index[e0 + x] = (uint8_t)scale_index_q(h->m, mean[x], qs);
            h->y_mean[e0 + x] = scale[x];
#else
            h->y_index[e0 + x] = (uint8_t)scale_index_q(h->m, scale[x], qs);
            h->y_mean[e0 + x] = mean[x];
#endif
        }
    }
}

static inline uint8_t to_rgb8(int32_t v)
{
#if defined(WAI_PLANTED_FAULT_VEC_OUT_NOROUND)
    const int64_t c = ((int64_t)v * 255) >> 12;            /* planted: no rounding term */
#elif defined(WAI_PLANTED_FAULT_VEC_OUT_SHIFT4)
    const int64_t c = (int64_t)v >> 4;                      /* planted: v / 16 for v * 255 / 4096 */
#else
    const int64_t c = ((int64_t)v * 255 + (1 << 11)) >> 12;
#endif
    return (uint8_t)(c < 0 ? 0 : c > 255 ? 255 : c);
}

/* ---- h_s and g_s in horizontal stripes (spec 10, informative) ----
 * A stripe is a range of a layer list's output rows (g_s: picture rows; h_s: rows of y). Each
 * layer runs on a window of its input rows as if that window were the whole tensor (the
 * kernels' own zero padding at its ends), which gives exactly the full tensor's values at
 * every output row whose terms all lie in the window; the window is chosen so that the rows
 * the next layer needs are such rows. Memory then grows with the stripe, not the picture; the
 * bytes are the same for any stripe height. */

/* For output rows [o0, o1) of layer l (input shape in, 0 <= o0 < o1 <= its output height):
 * the input window [*i0, *i1) whose run on its own gives them exactly, and *base, the full
 * output row of that run's row 0. Returns WAI_ERR_INTERNAL only if the arithmetic is broken. */
static int stripe_window(const WaiLayer *l, WaiShape in, int o0, int o1, int *i0, int *i1, int *base)
{
    const int ih = in.h;
    const int s = l->stride, p = l->pad, k = l->kh;
    int a, b;
    switch (l->type) {
    case WAI_LAYER_CONV:
        /* spec 5.2: output oy reads input rows oy s - p + ky, ky in [0, kh); a window starting
         * at a multiple of the stride keeps the output grid (its row 0 is full row a / s) */
        a = o0 * s - p;
        if (a > ih - 1) a = ih - 1; /* rows of padding only: any window */
        if (a < 0) a = 0;
        a -= a % s;
        b = (o1 - 1) * s - p + k;
        break;
    case WAI_LAYER_CONVT:
        /* spec 5.3 (gather): output oy reads input rows (oy + p - ky) / s; the window's row 0
         * lands on full output row a s, which must not be below o0 */
#ifdef WAI_PLANTED_FAULT_STRIPE_OVERLAP
        a = wai_ceil_div(o0 + p - k + 1 + s, s);   /* planted: one input row too few above */
#else
        a = wai_ceil_div(o0 + p - k + 1, s);
#endif
        if (a > o0 / s) a = o0 / s;
        if (a > ih - 1) a = ih - 1; /* rows of bias only (kernel shorter than the stride) */
        if (a < 0) a = 0;
        b = wai_floor_div(o1 - 1 + p, s) + 1;
        break;
    default: /* leaky ReLU, IGDN: position by position */
        *i0 = o0;
        *i1 = o1;
        *base = o0;
        return 0;
    }
    if (b > ih) b = ih;
    if (b <= a) b = a + 1;
    /* grow the window downwards until its own output reaches o1 (at b = ih it is the full
     * tensor's tail, which always does) */
    for (;;) {
        WaiShape ws;
        const int first = l->type == WAI_LAYER_CONV ? a / s : a * s;
        if (layer_out_shape(l, (WaiShape){ in.c, b - a, in.w }, &ws) == 0 && first + ws.h >= o1) {
            *i0 = a;
            *i1 = b;
            *base = first;
            return first <= o0 ? 0 : WAI_ERR_INTERNAL;
        }
        if (b >= ih) return WAI_ERR_INTERNAL;
        b++;
    }
}

/* Kept rows (g_s): neighbouring stripes' windows overlap. The rows of a conv's input window
 * that the next stripe's window shares are kept for it (the carry of that level), so a stripe
 * computes only the rows its predecessor did not: every conv, IGDN and leaky ReLU output row
 * once. Levels that keep rows: the input of a conv or convT layer with another conv or convT
 * before it in the list (the first conv's input is read from the whole input again). */
typedef struct Stripes {
    const WaiLayer *layers;
    uint32_t n;            /* layers */
    WaiShape *shape;       /* shape[k]: input of layer k; shape[n]: the list's output */
    int *r0, *r1, *base;   /* per layer input k: rows [r0, r1); base: see stripe_window */
    size_t cap;            /* int32 elements of each of the two stripe buffers */
    void **prep;           /* run_stripes: layer k's kernel preparation, made at its first
                            * stripe and kept for the others (NULL: none) */
    int keep;              /* rows are kept between stripes (the comment above) */
    int *ns;               /* per level: the first row this stripe computes ([r0, ns): kept) */
    int *nr0;              /* per level: the next stripe's window start (r1: no next stripe) */
    int *cr0, *cr1;        /* per level: the rows its carry holds */
    int *t1, *tb;          /* scratch for the next stripe's plan */
    size_t *kcap;          /* per level: its carry's int32 elements (0: it keeps none) */
    size_t kept;           /* their sum: spec 9.2's K_gs */
    int32_t **carry;       /* run_stripes: per level, kcap elements */
} Stripes;

static int is_conv(const WaiLayer *l)
{
    return l->type == WAI_LAYER_CONV || l->type == WAI_LAYER_CONVT;
}

/* Whether level k (the input of layer k) keeps rows for the next stripe. */
static int keeps_rows(const Stripes *st, uint32_t k)
{
    if (!st->keep || k >= st->n || !is_conv(&st->layers[k])) return 0;
    for (uint32_t j = 0; j < k; j++)
        if (is_conv(&st->layers[j])) return 1;
    return 0;
}

/* The windows [r0[k], r1[k]) (and base[k]) of every level for output rows [y0, y1). */
static int plan_windows(const Stripes *st, int y0, int y1, int *r0, int *r1, int *base)
{
    const uint32_t n = st->n;
    r0[n] = y0;
    r1[n] = y1;
    for (uint32_t k = n; k-- > 0;) {
        int r = stripe_window(&st->layers[k], st->shape[k], r0[k + 1], r1[k + 1], &r0[k], &r1[k],
                              &base[k]);
        if (r < 0) return r;
    }
    return 0;
}

/* The windows of every layer for output rows [y0, y1), and the largest buffer they need. */
static int stripe_plan(Stripes *st, int y0, int y1, size_t *need)
{
    const WaiLayer *layers = st->layers;
    const uint32_t n = st->n;
    int r = plan_windows(st, y0, y1, st->r0, st->r1, st->base);
    if (r < 0) return r;
    size_t most = 0;
    for (uint32_t k = 0; k <= n; k++) {
        WaiShape in = { st->shape[k].c, st->r1[k] - st->r0[k], st->shape[k].w }, out;
        size_t e;
        if ((r = shape_elems(in, &e)) < 0) return r;
        if (e > most) most = e;
        if (k == n) break;
        if ((r = layer_out_shape(&layers[k], in, &out)) < 0 || (r = shape_elems(out, &e)) < 0)
            return r;
        if (e > most) most = e;
    }
    *need = most;
    return 0;
}

/* g_s output rows per stripe when the caller leaves it to us: the stripes' two buffers stay
 * within about WAI_STRIPE_BYTES, in whole multiples of the model's y_down (so every stripe's
 * windows have the same shape), at least y_down rows. */
#define WAI_STRIPE_BYTES ((size_t)48 << 20)

static int auto_stripe_rows(const WaiModel *m, const WaiGeometry *g)
{
    /* the largest pair holds 4 * pair_gs / hp bytes per g_s output row (every layer's rows
     * are a fixed multiple of the output's) */
    const uint64_t hp = g->hp, pair = g->pair_gs ? (uint64_t)g->pair_gs : 1;
    const uint64_t unit = m->y_down ? m->y_down : 16;
    uint64_t rows = (uint64_t)WAI_STRIPE_BYTES * hp / (4 * pair); /* < 2^50 / 4 */
    if (rows > hp) rows = hp;
    rows = rows / unit * unit;
    return (int)(rows < unit ? unit : rows);
}

/* h_s's stripes: rows of y. Set: stripe_rows / y_down (the y rows under a g_s stripe), at
 * least 1. Automatic: the largest pair within about WAI_HS_STRIPE_BYTES (small enough for the
 * caches; h_s's windows overlap little), in multiples of z_down / y_down (the y rows of one z
 * row), at least one such multiple. */
#define WAI_HS_STRIPE_BYTES ((size_t)8 << 20)

static int hs_stripe_rows(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g)
{
    const uint64_t hy = (uint64_t)g->y.h, yd = m->y_down ? m->y_down : 1;
    if (dsp->stripe_rows > 0) {
        const uint64_t rows = (uint64_t)dsp->stripe_rows / yd;
        return rows < 1 ? 1 : (int)rows;
    }
    const uint64_t pair = g->pair_hs ? (uint64_t)g->pair_hs : 1;
    const uint64_t unit = m->z_down >= yd && m->z_down % yd == 0 ? m->z_down / yd : 1;
    uint64_t rows = (uint64_t)WAI_HS_STRIPE_BYTES * hy / (4 * pair); /* < 2^47 / 4 */
    if (rows > hy) rows = hy;
    rows = rows / unit * unit;
    return (int)(rows < unit ? unit : rows);
}

typedef struct RgbOut {
    const int32_t *p;
    size_t plane;
    uint32_t wp, dx, dy, dw;
    uint8_t *rgb;
    ptrdiff_t stride;
} RgbOut;

static void rgb_rows(void *ctx, uint32_t r0, uint32_t r1)
{
    const RgbOut *o = ctx;
    for (uint32_t row = r0; row < r1; row++) {
#ifdef WAI_PLANTED_FAULT_VEC_CROP_ORIGIN
        const int32_t *src = o->p + (size_t)row * o->wp;   /* planted: the window at (0, 0) */
#else
        const int32_t *src = o->p + (size_t)(o->dy + row) * o->wp + o->dx;
#endif
        uint8_t *dst = o->rgb + (ptrdiff_t)row * o->stride;
#ifdef WAI_PLANTED_FAULT_FAST_RGB_BAND
        if (row == r1 - 1 && r0 > 0) continue; /* planted: a later band's last row is skipped */
#endif
        for (uint32_t col = 0; col < o->dw; col++)
            for (int k = 0; k < 3; k++)
                dst[3 * col + k] = to_rgb8(src[k * o->plane + col]);
    }
}

/* Level k's kept rows: put the carried rows [r0, ns) at the top of its window x (planes of
 * r1 - r0 rows), then keep rows [nr0, r1) of the whole window for the next stripe. */
static int carry_rows(Stripes *st, uint32_t k, int32_t *x)
{
    const WaiShape sh = st->shape[k];
    const int r0 = st->r0[k], r1 = st->r1[k], ns = st->ns[k];
    const size_t w = (size_t)sh.w, win = (size_t)(r1 - r0) * w;
    if (ns > r0) {
        const size_t held = (size_t)(st->cr1[k] - st->cr0[k]) * w;
        for (int c = 0; c < sh.c; c++)
            memcpy(x + c * win, st->carry[k] + c * held, (size_t)(ns - r0) * w * sizeof(*x));
    }
    const int s0 = st->nr0[k] > r0 ? st->nr0[k] : r0; /* the first row saved */
    st->cr0[k] = st->cr1[k] = 0;
    if (s0 >= r1) return 0;
    const size_t rows = (size_t)(r1 - s0);
    if ((size_t)sh.c * rows * w > st->kcap[k]) return WAI_ERR_INTERNAL; /* stripes_setup's */
#ifdef WAI_PLANTED_FAULT_STRIPE_CARRY_ROWS
    const size_t skip = (size_t)(s0 - r0) - (s0 > r0); /* planted: kept from a row higher */
#else
    const size_t skip = (size_t)(s0 - r0);
#endif
    for (int c = 0; c < sh.c; c++)
        memcpy(st->carry[k] + c * rows * w, x + c * win + skip * w, rows * w * sizeof(*x));
    st->cr0[k] = s0;
    st->cr1[k] = r1;
    return 0;
}

/* Leaky ReLU on rows [y0, s.h) of x (shape s): the whole tensor, or plane by plane. */
static void lrelu_rows(const WaiDsp *dsp, WaiPool **pool, const WaiLayer *l, int32_t *x, WaiShape s,
                       int y0)
{
    if (!y0) {
        run_layer(dsp, pool, l, x, s, x, s, (size_t)s.c * s.h * s.w, 0, s.h);
        return;
    }
    const WaiShape ps = { 1, s.h - y0, s.w };
    for (int c = 0; c < s.c; c++) {
        int32_t *p = x + ((size_t)c * s.h + y0) * s.w;
        run_layer(dsp, pool, l, p, ps, p, ps, (size_t)ps.h * ps.w, 0, ps.h);
    }
}

/* One stripe: output rows [st->r0[n], st->r1[n]) (planned by stripe_plan; with kept rows,
 * st->ns and st->nr0 too) of the list on the whole input `in` (shape st->shape[0]), in the two
 * buffers: *out, of shape *os, lies in one of them (not necessarily at its start). */
static int run_stripe(const WaiDsp *dsp, WaiPool **pool, Stripes *st, const int32_t *in,
                      int32_t *buf[2], const int32_t **out, WaiShape *os_out)
{
    const WaiLayer *layers = st->layers;
    const uint32_t n = st->n;
    WaiShape s = { st->shape[0].c, st->r1[0] - st->r0[0], st->shape[0].w };
    const size_t full_plane = (size_t)st->shape[0].h * s.w, rows_plane = (size_t)s.h * s.w;
    int cb = 0; /* cur lies in buf[cb] */
    int32_t *cur = buf[0];
    for (int c = 0; c < s.c; c++)
        memcpy(cur + c * rows_plane, in + c * full_plane + (size_t)st->r0[0] * s.w,
               rows_plane * sizeof(*cur));

    for (uint32_t k = 0; k < n; k++) {
        const WaiLayer *l = &layers[k];
        const int y0 = st->ns[k] - st->r0[k]; /* rows [0, y0) of this level are kept ones */
        WaiShape os;
        size_t ne;
        int r;
        if ((r = layer_out_shape(l, s, &os)) < 0 || (r = shape_elems(os, &ne)) < 0) return r;
        if (y0 < 0 || y0 > s.h) return WAI_ERR_INTERNAL;
        if (l->type == WAI_LAYER_IGDN) {
            run_layer(dsp, pool, l, cur, s, cur, os, ne, y0, os.h);
            continue;
        }
        if (l->type == WAI_LAYER_LRELU) {
            if (y0 < s.h) lrelu_rows(dsp, pool, l, cur, s, y0);
            continue;
        }
        if (keeps_rows(st, k) && (r = carry_rows(st, k, cur)) < 0) return r;
        /* rows [a, b) of the window's output are the next window, of which [a2, b) are
         * computed (the rest are the next level's kept rows). The kernel is given planes of
         * b - a rows (dsp.h: oh is the planes' stride), so row y of plane c lands at
         * spare + (c (b - a) + y) w: the window, contiguous from spare + a w, with no move
         * afterwards. It ends at (os.c (b - a) + a) w <= os.c os.h w = ne elements, as
         * a <= os.h - (b - a): within the buffer. */
        const int a = st->r0[k + 1] - st->base[k], b = st->r1[k + 1] - st->base[k];
        const int a2 = st->ns[k + 1] - st->base[k];
        if (a < 0 || b > os.h || a >= b || a2 < a || a2 > b) return WAI_ERR_INTERNAL;
        int32_t *spare = buf[1 - cb];
        const WaiShape ks = { os.c, b - a, os.w };
#ifdef WAI_PLANTED_FAULT_STRIPE_KEPT_ROWS
        int32_t *next = spare + (size_t)(a - (a > 0)) * os.w; /* planted: a row too high */
#else
        int32_t *next = spare + (size_t)a * os.w;
#endif
        if (a2 < b)
            run_layer_kept(dsp, pool, l, cur, s, spare, ks, (size_t)ks.c * ks.h * ks.w, a2, b,
                           st->prep ? &st->prep[k] : NULL);
        cb = 1 - cb;
        cur = next;
        s = ks;
    }
    *out = cur;
    *os_out = s;
    return 0;
}

/* Before the stripe ending at row y1 of [.., y_end) runs (its windows planned): where each
 * level's computed rows start (st->ns: after the rows its carry holds, passed back through
 * leaky ReLU and IGDN to the conv that makes them), and the next stripe's window starts
 * (st->nr0). */
static int stripe_keep_plan(Stripes *st, int y1, int y_end, int rows)
{
    const uint32_t n = st->n;
    if (st->keep && y1 < y_end) {
        const int y2 = y_end - y1 < rows ? y_end : y1 + rows;
        int r = plan_windows(st, y1, y2, st->nr0, st->t1, st->tb);
        if (r < 0) return r;
    } else
        for (uint32_t k = 0; k <= n; k++) st->nr0[k] = st->r1[k];
    st->ns[n] = st->r0[n];
    for (uint32_t k = n; k-- > 0;) {
        const WaiLayer *l = &st->layers[k];
        if (l->type == WAI_LAYER_IGDN || l->type == WAI_LAYER_LRELU)
            st->ns[k] = st->ns[k + 1];
        else if (keeps_rows(st, k) && st->cr1[k] > st->cr0[k] && st->cr0[k] == st->r0[k] &&
                 st->cr1[k] <= st->r1[k])
            st->ns[k] = st->cr1[k];
        else
            st->ns[k] = st->r0[k];
    }
    return 0;
}

/* The stripes of output rows [y0, y_end) of a list on input shape `in`, `rows` rows each: the
 * shapes (st->shape, st->r0.. allocated here; stripes_free) and st->cap, the largest window
 * tensor over every stripe (spec 9.2's Q). */
static int stripes_setup(const WaiLayer *layers, uint32_t n, WaiShape in, int y0, int y_end,
                         int rows, int keep, Stripes *st)
{
    int r;
    *st = (Stripes){ .layers = layers, .n = n, .keep = keep };
    st->shape = malloc((n + 1) * sizeof(*st->shape));
    st->r0 = malloc((n + 1) * 10 * sizeof(int));
    st->kcap = calloc(n + 1, sizeof(*st->kcap));
    if (!st->shape || !st->r0 || !st->kcap) return WAI_ERR_NOMEM;
    st->r1 = st->r0 + (n + 1);
    st->base = st->r0 + 2 * (n + 1);
    st->ns = st->r0 + 3 * (n + 1);
    st->nr0 = st->r0 + 4 * (n + 1);
    st->cr0 = st->r0 + 5 * (n + 1);
    st->cr1 = st->r0 + 6 * (n + 1);
    st->t1 = st->r0 + 7 * (n + 1);
    st->tb = st->r0 + 8 * (n + 1);
    int *prev_r1 = st->r0 + 9 * (n + 1);
    for (uint32_t k = 0; k <= n; k++) st->cr0[k] = st->cr1[k] = 0;
    st->shape[0] = in;
    for (uint32_t k = 0; k < n; k++)
        if ((r = layer_out_shape(&layers[k], st->shape[k], &st->shape[k + 1])) < 0) return r;
    /* every stripe's plan: the buffers are allocated once, for the largest; each level's
     * carry for the most rows two neighbouring stripes share there */
    for (int a = y0; a < y_end; a += rows) {
        const int b = y_end - a < rows ? y_end : a + rows;
        size_t need;
        if ((r = stripe_plan(st, a, b, &need)) < 0) return r;
        if (need > st->cap) st->cap = need;
        for (uint32_t k = 0; a > y0 && k < n; k++)
            if (keeps_rows(st, k) && prev_r1[k] > st->r0[k]) {
                size_t e;
                const WaiShape kw = { st->shape[k].c, prev_r1[k] - st->r0[k], st->shape[k].w };
                if ((r = shape_elems(kw, &e)) < 0) return r;
                if (e > st->kcap[k]) st->kcap[k] = e;
            }
        for (uint32_t k = 0; k <= n; k++) prev_r1[k] = st->r1[k];
    }
    for (uint32_t k = 0; k < n; k++)
        if ((r = add_size(st->kept, st->kcap[k], &st->kept)) < 0) return r;
    return 0;
}

/* g_s's stripes over display rows [dy, dy + dh): dsp->stripe_rows rows, or automatic. */
static int gs_stripes_setup(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, uint32_t dy,
                            uint32_t dh, Stripes *st, int *rows)
{
    int h = dsp->stripe_rows > 0 ? dsp->stripe_rows : auto_stripe_rows(m, g);
    if ((uint32_t)h > dh) h = (int)dh;
    *rows = h;
    return stripes_setup(m->gs, m->n_gs, g->y, (int)dy, (int)(dy + dh), h, 1, st);
}

static int hs_stripes_setup(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, Stripes *st,
                            int *rows)
{
    int h = hs_stripe_rows(m, dsp, g);
    if (h > g->y.h) h = g->y.h;
    *rows = h;
    return stripes_setup(m->hs, m->n_hs, g->z, 0, g->y.h, h, 0, st);
}

static void stripes_free(Stripes *st)
{
    free(st->shape);
    free(st->r0);
    free(st->kcap);
    st->shape = NULL;
    st->r0 = NULL;
    st->kcap = NULL;
}

/* What a stripe's output goes to: out (shape os) holds output rows [y0, y0 + os.h). */
typedef int (*StripeSink)(void *ctx, WaiPool **pool, const int32_t *out, WaiShape os, int y0);

/* Runs the list of st on the whole input `in` in stripes of `rows` output rows over
 * [y_start, y_end) (the range st was set up for), in two buffers allocated once, and hands each
 * stripe's output to sink. Frees st. */
static int run_stripes(const WaiDsp *dsp, WaiPool **pool, Stripes *st, const int32_t *in,
                       int y_start, int y_end, int rows, StripeSink sink, void *ctx)
{
    int32_t *buf[2] = { malloc(st->cap * sizeof(int32_t)), malloc(st->cap * sizeof(int32_t)) };
    int r = buf[0] && buf[1] ? 0 : WAI_ERR_NOMEM;
    /* without it every stripe prepares its layers itself (the same result) */
    st->prep = calloc(st->n ? st->n : 1, sizeof(*st->prep));
    st->carry = calloc(st->n + 1, sizeof(*st->carry));
    if (!st->carry) r = WAI_ERR_NOMEM;
    for (uint32_t k = 0; !r && k < st->n; k++)
        if (st->kcap[k] && !(st->carry[k] = malloc(st->kcap[k] * sizeof(int32_t)))) r = WAI_ERR_NOMEM;
    for (int y0 = y_start; !r && y0 < y_end; y0 += rows) {
        const int y1 = y_end - y0 < rows ? y_end : y0 + rows;
        const int32_t *out;
        WaiShape os;
        size_t need;
        if ((r = stripe_plan(st, y0, y1, &need)) < 0 ||
            (r = stripe_keep_plan(st, y1, y_end, rows)) < 0 ||
            (r = run_stripe(dsp, pool, st, in, buf, &out, &os)) < 0)
            break;
        r = os.h == y1 - y0 ? sink(ctx, pool, out, os, y0) : WAI_ERR_INTERNAL;
    }
    free(buf[0]);
    free(buf[1]);
    for (uint32_t k = 0; st->carry && k < st->n; k++) free(st->carry[k]);
    free(st->carry);
    st->carry = NULL;
    if (st->prep)
        for (uint32_t k = 0; k < st->n; k++)
            if (st->prep[k]) dsp->prep_free(st->prep[k]);
    free(st->prep);
    st->prep = NULL;
    stripes_free(st);
    return r;
}

typedef struct RgbSink {
    const WaiDsp *dsp;
    uint32_t dx, dy, dw;
    uint8_t *rgb;
    ptrdiff_t stride;
} RgbSink;

/* A g_s stripe: its rows of the display window, in RGB8 */
static int rgb_sink(void *ctx, WaiPool **pool, const int32_t *out, WaiShape os, int y0)
{
    const RgbSink *k = ctx;
    RgbOut o = { out, (size_t)os.h * os.w, (uint32_t)os.w, k->dx, 0, k->dw,
                 k->rgb + (ptrdiff_t)((uint32_t)y0 - k->dy) * k->stride, k->stride };
    run_rows(k->dsp, pool, (uint32_t)os.h, (double)k->dw * os.h * 3, rgb_rows, &o);
    return 0;
}

static int synthesis_striped(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g,
                             const int32_t *y_hat, uint32_t dx, uint32_t dy, uint32_t dw,
                             uint32_t dh, uint8_t *rgb, ptrdiff_t stride)
{
    Stripes st;
    WaiPool *pool = NULL;
    int rows, r;

#ifdef WAI_PLANTED_FAULT_VEC_CROP_ORIGIN
    dx = dy = 0; /* planted: the window at (0, 0) */
#endif
    RgbSink k = { dsp, dx, dy, dw, rgb, stride };
    if ((r = gs_stripes_setup(m, dsp, g, dy, dh, &st, &rows)) < 0)
        stripes_free(&st);
    else
        r = run_stripes(dsp, &pool, &st, y_hat, (int)dy, (int)(dy + dh), rows, rgb_sink, &k);
    wai_pool_destroy(&pool);
    return r;
}

typedef struct HyperSink {
    const WaiDsp *dsp;
    HyperOut h;
} HyperSink;

/* An h_s stripe: the index and the mean of its rows of y (all of y, whole) */
static int hyper_sink(void *ctx, WaiPool **pool, const int32_t *out, WaiShape os, int y0)
{
    HyperSink *k = ctx;
    if (os.c != 2 * (int)k->h.n_y) return WAI_ERR_INTERNAL;
    k->h.p = out;
    k->h.y0 = (uint32_t)y0;
    k->h.rows = (uint32_t)os.h;
    run_rows(k->dsp, pool, k->h.n_y * k->h.rows, (double)k->h.w * 8 * k->h.n_y * k->h.rows,
             hyper_rows, &k->h);
    return 0;
}

/* h_s on z_hat: whole on a backend with run_layers, else in stripes of y rows (spec 10), each
 * turned into the index and the mean of its rows at once. */
int wai_hyper(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, const int32_t *z_hat,
              uint8_t *y_index, int32_t *y_mean)
{
    return wai_hyper_rate(m, dsp, g, z_hat, -1, y_index, y_mean);
}

const uint32_t *wai_rate_qsteps(const WaiModel *m, int rate)
{
    if (rate < 0 || !m->qstep_q12) return NULL;
#ifdef WAI_PLANTED_FAULT_RATES_INDEX_RSTEP
    return m->rstep_q12 + (size_t)rate * m->n_y;   /* planted: 7.4 with the reconstruction step */
#endif
    return m->qstep_q12 + (size_t)rate * m->n_y;
}

const uint32_t *wai_rate_rsteps(const WaiModel *m, int rate)
{
    if (rate < 0 || !m->rstep_q12) return NULL;
    return m->rstep_q12 + (size_t)rate * m->n_y;
}

int wai_hyper_rate(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g,
                   const int32_t *z_hat, int rate, uint8_t *y_index, int32_t *y_mean)
{
    WaiPool *pool = NULL;
    WaiShape ps;
    Stripes st;
    int rows, r;
    if (rate >= 0 && (uint32_t)rate >= m->n_rates) return WAI_ERR_INVALID_ARG;
    HyperSink k = { dsp, { m, wai_rate_qsteps(m, rate), NULL, y_index, y_mean, (size_t)g->y.h,
                           (size_t)g->y.w, (uint32_t)g->y.c, 0, 0 } };

    if ((r = walk_shapes(m->hs, m->n_hs, g->z, &ps, &(size_t){ 0 })) < 0) return r;
    if (!shape_eq(ps, (WaiShape){ 2 * g->y.c, g->y.h, g->y.w })) return WAI_ERR_MODEL_INVALID;
    if (dsp->run_layers) { /* the whole tensor (run_layers_pool checks its shape is ps) */
        int32_t *p;
        if ((r = run_layers_pool(dsp, &pool, m->hs, m->n_hs, z_hat, g->z, &p, &ps)) == 0) {
            r = hyper_sink(&k, &pool, p, ps, 0);
            free(p);
        }
    } else if ((r = hs_stripes_setup(m, dsp, g, &st, &rows)) < 0) {
        stripes_free(&st);
    } else {
        r = run_stripes(dsp, &pool, &st, z_hat, 0, g->y.h, rows, hyper_sink, &k);
    }
    wai_pool_destroy(&pool);
    return r;
}

/* The bytes of the two buffers of a stripes setup that returned r (an error passes through);
 * frees st. */
static int stripe_bytes(int r, Stripes *st, size_t *bytes)
{
    const size_t cap = st->cap, kept = st->kept;
    size_t kb;
    stripes_free(st);
    if (r < 0 || (r = wai_mul_size(cap, 8, bytes)) < 0 || (r = wai_mul_size(kept, 4, &kb)) < 0)
        return r;
    return add_size(*bytes, kb, bytes);
}

/* Spec 9.2: 3 * width * height + 4 * |y| + max(4 * |z| + |y| + H, G). In stripes (the CPU
 * kernels): H = 8 * Q_hs and G = 8 * Q_gs + 4 * K_gs, two buffers of the largest window tensor
 * of each list's stripes, and g_s's kept rows (Stripes.kept); a backend running the lists
 * whole: H = 4 * P_hs, G = 4 * P_gs. The phases: h_s (z_hat, y_index and the means beside
 * h_s's buffers), the y decode (the index and y_hat: within the first), g_s (y_hat beside its
 * buffers); the picture throughout. */
int wai_decode_work(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, uint32_t dy,
                    uint32_t dh, size_t *work)
{
    size_t nz, ny, t, h_s, hyper, synth, total;
    int r;
    *work = 0;
    if (!dh || (uint64_t)dy + dh > g->height) return WAI_ERR_INVALID_ARG;
    if ((r = shape_elems(g->z, &nz)) < 0 || (r = shape_elems(g->y, &ny)) < 0) return r;
    if (dsp->run_layers) {
        if ((r = wai_mul_size(g->pair_hs, 4, &h_s)) < 0 ||
            (r = wai_mul_size(g->pair_gs, 4, &synth)) < 0)
            return r;
    } else {
        Stripes hs, gs;
        int rows;
        if ((r = stripe_bytes(hs_stripes_setup(m, dsp, g, &hs, &rows), &hs, &h_s)) < 0 ||
            (r = stripe_bytes(gs_stripes_setup(m, dsp, g, dy, dh, &gs, &rows), &gs, &synth)) < 0)
            return r;
    }
    /* hyper = 4 |z| + |y| + H */
    if ((r = wai_mul_size(nz, 4, &t)) < 0 || (r = add_size(t, ny, &t)) < 0 ||
        (r = add_size(t, h_s, &hyper)) < 0)
        return r;
    if ((r = wai_mul_size((size_t)g->width, g->height, &t)) < 0 || (r = wai_mul_size(t, 3, &total)) < 0 ||
        (r = wai_mul_size(ny, 4, &t)) < 0 || (r = add_size(total, t, &total)) < 0 ||
        (r = add_size(total, hyper > synth ? hyper : synth, &total)) < 0)
        return r;
    *work = total;
    return 0;
}

int wai_synthesis(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, const int32_t *y_hat,
                  uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh, uint8_t *rgb, ptrdiff_t stride)
{
    if (!dw || !dh || (uint64_t)dx + dw > g->width || (uint64_t)dy + dh > g->height ||
        stride < 0 || (uint64_t)stride < (uint64_t)dw * 3)
        return WAI_ERR_INVALID_ARG;

    int32_t *p;
    WaiShape ps;
    size_t pair;
    int r;
    /* the whole list's checks first, for every path */
    if ((r = walk_shapes(m->gs, m->n_gs, g->y, &ps, &pair)) < 0) return r;
    if (!shape_eq(ps, (WaiShape){ 3, (int)g->hp, (int)g->wp })) return WAI_ERR_MODEL_INVALID;
    if (dsp->synthesis_rgb) { /* a backend converting on its device */
        const int shape[3] = { g->y.c, g->y.h, g->y.w };
        r = dsp->synthesis_rgb(dsp->backend, m->gs, m->n_gs, y_hat, shape, dx, dy, dw, dh, rgb,
                               stride);
        if (r <= 0) return r; /* 1: declined, the paths below */
    }
    if (!dsp->run_layers) /* the CPU kernels: in stripes */
        return synthesis_striped(m, dsp, g, y_hat, dx, dy, dw, dh, rgb, stride);

    WaiPool *pool = NULL;
    if ((r = run_layers_pool(dsp, &pool, m->gs, m->n_gs, y_hat, g->y, &p, &ps)) < 0) goto end;
    if (!shape_eq(ps, (WaiShape){ 3, (int)g->hp, (int)g->wp })) {
        free(p);
        r = WAI_ERR_MODEL_INVALID;
        goto end;
    }
    /* spec 8: the display window of the top-left width x height, interleaved; split by rows */
    RgbOut o = { p, (size_t)g->hp * g->wp, g->wp, dx, dy, dw, rgb, stride };
    run_rows(dsp, &pool, dh, (double)dw * dh * 3, rgb_rows, &o);
    free(p);
end:
    wai_pool_destroy(&pool);
    return r;
}
