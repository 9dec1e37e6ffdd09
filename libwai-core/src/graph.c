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

    /* Spec 9.2: 4 * (pair_hs + pair_gs + hs_out) + 8 * |z| + 13 * |y| + 3 * width * height.
     * |z|: decoded values and z_hat; |y|: values, y_hat, mean (int32) and the index (u8). */
    size_t nz, ny, nhs, t, total = 0;
    if ((r = shape_elems(g->z, &nz)) < 0 || (r = shape_elems(g->y, &ny)) < 0 ||
        (r = shape_elems(hs_out, &nhs)) < 0)
        return r;
    if ((r = add_size(pair_hs, pair_gs, &t)) < 0 || (r = add_size(t, nhs, &t)) < 0 ||
        (r = wai_mul_size(t, 4, &total)) < 0)
        return r;
    if ((r = wai_mul_size(nz, 8, &t)) < 0 || (r = add_size(total, t, &total)) < 0) return r;
    if ((r = wai_mul_size(ny, 13, &t)) < 0 || (r = add_size(total, t, &total)) < 0) return r;
    if ((r = wai_mul_size((size_t)width, height, &t)) < 0 || (r = wai_mul_size(t, 3, &t)) < 0 ||
        (r = add_size(total, t, &total)) < 0)
        return r;
    g->work_bytes = total;
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
    const int y0 = (int)job_start((size_t)w->os.h, n, j);
    int y1 = (int)job_start((size_t)w->os.h, n, j + 1);
#ifdef WAI_PLANTED_FAULT_FAST_BAND
    if (y1 == w->os.h && y1 > y0) y1--; /* planted: the band ending the layer misses a row */
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

/* *pool is started at the first layer worth splitting (a small list never starts threads);
 * if it cannot start, every layer runs on the calling thread, with the same result. */
static void run_layer(const WaiDsp *dsp, WaiPool **pool, const WaiLayer *l, const int32_t *in,
                      WaiShape s, int32_t *out, WaiShape os, size_t n_out)
{
    LayerWork w = { dsp, l, in, s, os, out, n_out, 1 };
    /* the kernel set's per-layer preparation, shared by the bands (in a copy of the layer) */
    WaiLayer lc;
    void *prep = NULL;
    if (dsp->prep_layer && dsp->prep_free &&
        (l->type == WAI_LAYER_CONV || l->type == WAI_LAYER_CONVT) && (prep = dsp->prep_layer(l))) {
        lc = *l;
        lc.prep = prep;
        w.l = &lc;
    }
    w.n_jobs = split_jobs(dsp, pool, layer_work(l, os, n_out),
                          l->type == WAI_LAYER_LRELU ? -1 : (int64_t)os.h);
    wai_pool_run(*pool, layer_band, &w, w.n_jobs);
    if (prep) dsp->prep_free(prep);
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
        run_layer(dsp, pool, l, cur, s, dst, ns, ne);
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

int wai_scale_index(const WaiModel *m, int32_t scale_q12)
{
    /* least k in [0, n_scales - 1) with s <= threshold[k], else n_scales - 1; thresholds
     * strictly increase, so binary search for the first threshold >= s */
    uint32_t lo = 0, hi = m->n_scales ? m->n_scales - 1 : 0;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
#if defined(WAI_PLANTED_FAULT_GRAPH_SCALE_INDEX) || defined(WAI_PLANTED_FAULT_VEC_SCALE_STRICT)
        if (scale_q12 < m->thresholds_q12[mid]) /* planted: s == threshold goes one up */
#else
        if (scale_q12 <= m->thresholds_q12[mid])
#endif
            hi = mid;
        else
            lo = mid + 1;
    }
#ifdef WAI_PLANTED_FAULT_VEC_SCALE_LAST
    /* planted: a scale above the last threshold takes the last threshold's table */
    if (m->n_scales > 1 && lo == m->n_scales - 1) lo--;
#endif
    return (int)lo;
}

typedef struct HyperOut {
    const WaiModel *m;
    const int32_t *p;
    uint8_t *y_index;
    int32_t *y_mean;
    size_t ny, w;
} HyperOut;

static void hyper_rows(void *ctx, uint32_t r0, uint32_t r1)
{
    const HyperOut *h = ctx;
    for (size_t e = (size_t)r0 * h->w; e < (size_t)r1 * h->w; e++) {
#ifdef WAI_PLANTED_FAULT_VEC_HS_ORDER
        /* planted: means first, then scales */
        h->y_index[e] = (uint8_t)wai_scale_index(h->m, h->p[h->ny + e]);
        h->y_mean[e] = h->p[e];
#else
        h->y_index[e] = (uint8_t)wai_scale_index(h->m, h->p[e]);
        h->y_mean[e] = h->p[h->ny + e];
#endif
    }
}

int wai_hyper(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, const int32_t *z_hat,
              uint8_t *y_index, int32_t *y_mean)
{
    int32_t *p;
    WaiShape ps;
    WaiPool *pool = NULL;
    int r = run_layers_pool(dsp, &pool, m->hs, m->n_hs, z_hat, g->z, &p, &ps);
    if (r < 0) goto end;
    if (!shape_eq(ps, (WaiShape){ 2 * g->y.c, g->y.h, g->y.w })) {
        free(p);
        r = WAI_ERR_MODEL_INVALID;
        goto end;
    }
    /* spec 6: channels [0, n_y) are scales, [n_y, 2 n_y) means; split by rows of all
     * channels (row = channel * Hy + y) */
    HyperOut h = { m, p, y_index, y_mean, (size_t)g->y.c * g->y.h * g->y.w, (size_t)g->y.w };
    run_rows(dsp, &pool, (uint32_t)g->y.c * (uint32_t)g->y.h, (double)h.ny * 8, hyper_rows, &h);
    free(p);
end:
    wai_pool_destroy(&pool);
    return r;
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

int wai_synthesis(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, const int32_t *y_hat,
                  uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh, uint8_t *rgb, ptrdiff_t stride)
{
    if (!dw || !dh || (uint64_t)dx + dw > g->width || (uint64_t)dy + dh > g->height ||
        stride < 0 || (uint64_t)stride < (uint64_t)dw * 3)
        return WAI_ERR_INVALID_ARG;

    int32_t *p;
    WaiShape ps;
    int r;
    if (dsp->synthesis_rgb) { /* a backend converting on its device: the same checks first */
        size_t pair;
        if ((r = walk_shapes(m->gs, m->n_gs, g->y, &ps, &pair)) < 0) return r;
        if (!shape_eq(ps, (WaiShape){ 3, (int)g->hp, (int)g->wp })) return WAI_ERR_MODEL_INVALID;
        const int shape[3] = { g->y.c, g->y.h, g->y.w };
        r = dsp->synthesis_rgb(dsp->backend, m->gs, m->n_gs, y_hat, shape, dx, dy, dw, dh, rgb,
                               stride);
        if (r <= 0) return r; /* 1: declined, the path below */
    }
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
