/* Fast conv / convT / IGDN kernels, one source for every kernel set (not compiled alone):
 * dsp_c.c, x86/dsp_avx2.c, x86/dsp_avx512.c and arm/dsp_neon.c include it after defining
 *   VLEN               doubles per vector (GCC vector extensions; the set's -m flags decide
 *                      the instructions)
 *   NB_MAIN, MB_MAIN   register tile: NB output channels x MB vectors of output positions
 *   NB_SMALL, MB_SMALL the tile for layers with few output channels (the last g_s layer)
 *   INIT_FN            the name of the table initialiser, e.g. wai_dsp_init_avx2
 *
 * Why the integers are the reference's (spec 5.1): every product x * w is an integer of at
 * most 34 bits and every partial sum is a sum of some of the terms, so while
 * max|x| * max|w| * terms <= 2^53 each is an integer a double holds exactly, and every
 * addition (in any order, fused or not) is exact. The bound is checked on the ACTUAL operands
 * of each call (max |x| over the input rows the call reads, max |w| over the layer); where it
 * fails, or the geometry is outside what this path handles, the call runs the reference.
 * The double sum is converted to int64 exactly and the bias, rshr and clamp are done in int64
 * as in the reference. Zero padding is explicit zeros, which add 0 * w = 0 terms.
 *
 * Transposed conv runs in polyphase form: output rows oy = s*qy + py and columns
 * ox = s*m + px of one phase (py, px) take the taps ky = py + pad (mod s), kx likewise, from
 * input row qy + (py + pad - ky)/s and column m + (px + pad - kx)/s: a stride-1 conv over
 * contiguous input columns. Conv with stride 1 is the single phase with offsets k - pad.
 *
 * The packed weights (and max |w|) depend only on the layer: WaiDsp.prep_layer makes them once
 * per layer run for all of graph.c's row bands (conv_prep_layer); a call without a matching
 * preparation (another layer's, another set's, or none) packs them itself. */
#include <math.h>
#if VLEN == 8 && defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h> /* igdn_out's AVX-512 form */
#endif
#include <stdlib.h>
#include <string.h>

#include "dsp.h"

typedef double vd __attribute__((vector_size(VLEN * 8)));

#if defined(__clang__)
#define UNROLL _Pragma("unroll")
#else
#define UNROLL _Pragma("GCC unroll 32")
#endif

/* Output positions (m) per packed column chunk, and output rows per packed row chunk. */
#define COL_CHUNK 128
#define ROW_CHUNK 8
/* Above these the call runs the reference (memory for packed copies stays bounded). */
#define MAX_WPACK ((size_t)256 << 20)
/* 2^52, not 2^53: the bound itself is computed in double and may round; a factor 2 of
 * margin makes the check safe (real layers are below 2^45). */
#define EXACT_MAX ((double)((int64_t)1 << 52))
#define BIAS_MAX ((int64_t)1 << 60)

#define MAXS 8   /* stride bound (graph.c) */
#define MAXK 15  /* kernel size bound (graph.c) */

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

/* A scalar times a vector is a splat. x87 evaluates a double as long double (C11 excess
 * precision), which GCC refuses to splat into a double vector: there, element by element
 * (it would give the same integers; elsewhere it would cost masked broadcasts). */
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ == 2
#define SPLAT(v, x) vd v; for (int e_ = 0; e_ < VLEN; e_++) v[e_] = (x)
#else
#define SPLAT(v, x) const double v = (x)
#endif

/* Bytes a tile stores of its vector b of MB. */
#ifdef PLANTED_TILE_EDGE
/* planted (arm/dsp_neon.c defines it, for that set only): a tile's last position is not stored */
#define TILE_STORE(b, MB) (sizeof(vd) - ((b) == (MB) - 1) * sizeof(double))
#else
#define TILE_STORE(b, MB) sizeof(vd)
#endif

/* res[n * ldr + t] = sum_k wp[k * NB + n] * xb[off[k] + t] for n < NB, t < MB * VLEN. */
#define DEF_TILE(NAME, NB, MB)                                                                \
static void NAME(const double *restrict wp, const ptrdiff_t *restrict off, int K, \
                             const double *restrict xb, double *restrict res, int ldr)        \
{                                                                                             \
    vd acc[NB][MB];                                                                           \
    UNROLL for (int n = 0; n < NB; n++)                                                       \
        UNROLL for (int b = 0; b < MB; b++) acc[n][b] = (vd){ 0 };                            \
    for (int k = 0; k < K; k++) {                                                             \
        const double *x = xb + off[k];                                                        \
        const double *w = wp + (size_t)k * NB;                                                \
        vd xv[MB];                                                                            \
        UNROLL for (int b = 0; b < MB; b++) memcpy(&xv[b], x + b * VLEN, sizeof(vd));        \
        UNROLL for (int n = 0; n < NB; n++) {                                                 \
            SPLAT(wn, w[n]);                                                                  \
            UNROLL for (int b = 0; b < MB; b++) acc[n][b] += xv[b] * wn;                      \
        }                                                                                     \
    }                                                                                         \
    UNROLL for (int n = 0; n < NB; n++)                                                       \
        UNROLL for (int b = 0; b < MB; b++)                                                   \
            memcpy(res + (size_t)n * ldr + b * VLEN, &acc[n][b], TILE_STORE(b, MB));          \
}

DEF_TILE(tile_main, NB_MAIN, MB_MAIN)
DEF_TILE(tile_small, NB_SMALL, MB_SMALL)

typedef void (*TileFn)(const double *, const ptrdiff_t *, int, const double *, double *, int);

static inline int32_t out_val(double acc, int64_t bias, unsigned shift)
{
    return wai_clamp_act(wai_rshr((int64_t)acc + bias, shift));
}

/* One axis of the polyphase form: for each phase p < s, the taps k and input offsets d. */
typedef struct Phases {
    int s, n[MAXS], k[MAXS][MAXK], d[MAXS][MAXK];
    int dmin, dmax;
} Phases;

static void phases_init(Phases *ph, int transposed, int s, int ksize, int pad)
{
    ph->s = s;
    ph->dmin = 1 << 30;
    ph->dmax = -(1 << 30);
    for (int p = 0; p < s; p++) {
        ph->n[p] = 0;
        for (int k = 0; k < ksize; k++) {
            int d;
            if (transposed) {
                const int num = p + pad - k; /* small: p < 8, pad <= 14, k < 15 */
                if (num % s) continue;
                d = num / s; /* exact, also for num < 0 */
            } else {
#ifdef WAI_PLANTED_FAULT_FAST_TAP
                d = k - pad + (k == ksize - 1); /* planted: the last tap reads one too far */
#else
                d = k - pad;
#endif
            }
            ph->k[p][ph->n[p]] = k;
            ph->d[p][ph->n[p]++] = d;
            ph->dmin = imin(ph->dmin, d);
            ph->dmax = imax(ph->dmax, d);
        }
    }
    if (ph->dmin > ph->dmax) ph->dmin = ph->dmax = 0; /* no taps at all (kernel < stride) */
}

typedef struct ConvCall {
    const WaiLayer *l;
    Phases py, px;
    int nb, tw, cw;          /* tile channels, tile width (positions), column chunk */
    TileFn tile;
    int nob;                 /* output channel blocks */
    int wpk, prmax;          /* packed row length and rows */
    size_t cs;               /* packed channel stride */
    double *wpack;           /* per phase (py, px), per block: [K][nb] */
    size_t wphase[MAXS][MAXS];
    ptrdiff_t *off[MAXS][MAXS];
    int K[MAXS][MAXS];
    double *xpack;
    double *res;
    int wpack_shared;        /* wpack belongs to a ConvPrep, not to this call */
} ConvCall;

static void conv_call_free(ConvCall *c)
{
    if (!c->wpack_shared) free(c->wpack);
    free(c->xpack);
    free(c->res);
    for (int a = 0; a < MAXS; a++)
        for (int b = 0; b < MAXS; b++) free(c->off[a][b]);
}

/* Packs the weights per phase and block and returns max |w| (or -1 on failure). */
static int pack_weights(ConvCall *c)
{
    const WaiLayer *l = c->l;
    const int cin = l->cin, kh = l->kh, kw = l->kw;
    size_t total = 0;
    for (int a = 0; a < c->py.s; a++)
        for (int b = 0; b < c->px.s; b++) {
            c->K[a][b] = cin * c->py.n[a] * c->px.n[b];
            c->wphase[a][b] = total;
            total += (size_t)c->K[a][b] * c->nb * c->nob;
        }
    if (total > MAX_WPACK / sizeof(double)) return -1;
    if (!(c->wpack = malloc((total ? total : 1) * sizeof(double)))) return -1;
    int wmax = 0;
    for (int a = 0; a < c->py.s; a++)
        for (int b = 0; b < c->px.s; b++) {
            double *dst = c->wpack + c->wphase[a][b];
            const int K = c->K[a][b];
            for (int ob = 0; ob < c->nob; ob++)
                for (int i = 0, k = 0; i < cin; i++)
                    for (int ty = 0; ty < c->py.n[a]; ty++)
                        for (int tx = 0; tx < c->px.n[b]; tx++, k++)
                            for (int n = 0; n < c->nb; n++) {
                                const int o = ob * c->nb + n;
                                int w = 0;
                                if (o < l->cout)
                                    w = l->weight[(((size_t)o * cin + i) * kh + c->py.k[a][ty]) * kw +
                                                  c->px.k[b][tx]];
                                wmax = imax(wmax, w < 0 ? -w : w);
                                dst[((size_t)ob * K + k) * c->nb + n] = w;
                            }
        }
    return wmax;
}

/* Offsets of every (i, ky, kx) term into a packed block, relative to the block row of qy. */
static int make_offsets(ConvCall *c)
{
    for (int a = 0; a < c->py.s; a++)
        for (int b = 0; b < c->px.s; b++) {
            const int K = c->K[a][b];
            ptrdiff_t *off = c->off[a][b] = malloc((size_t)(K ? K : 1) * sizeof(ptrdiff_t));
            if (!off) return -1;
            for (int i = 0, k = 0; i < c->l->cin; i++)
                for (int ty = 0; ty < c->py.n[a]; ty++)
                    for (int tx = 0; tx < c->px.n[b]; tx++, k++)
                        off[k] = (ptrdiff_t)(i * c->cs) +
                                 (ptrdiff_t)(c->py.d[a][ty] - c->py.dmin) * c->wpk +
                                 (c->px.d[b][tx] - c->px.dmin);
        }
    return 0;
}

/* Largest |x| over input rows [r0, r1) of every channel. */
static int64_t max_abs_rows(const int32_t *in, int cin, int ih, int iw, int r0, int r1)
{
    int64_t m = 0;
    r0 = imax(r0, 0);
    r1 = imin(r1, ih);
    for (int i = 0; i < cin && r0 < r1; i++) {
        const int32_t *p = in + ((size_t)i * ih + r0) * iw;
        const size_t n = (size_t)(r1 - r0) * iw;
        int32_t lo = 0, hi = 0;
        for (size_t e = 0; e < n; e++) {
            lo = p[e] < lo ? p[e] : lo;
            hi = p[e] > hi ? p[e] : hi;
        }
        if (-(int64_t)lo > m) m = -(int64_t)lo;
        if (hi > m) m = hi;
    }
    return m;
}

/* Packs input rows [rlo, rlo + prmax) and columns [cbase, cbase + wpk) of every channel,
 * zeros outside the tensor. */
static void pack_input(const ConvCall *c, const int32_t *in, int ih, int iw, int rlo, int cbase)
{
    const int cin = c->l->cin;
#ifdef WAI_PLANTED_FAULT_FAST_EDGE
    /* planted: a column chunk's last packed column is left zero */
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk - 1);
#else
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk);
#endif
    for (int i = 0; i < cin; i++)
        for (int r = 0; r < c->prmax; r++) {
            double *dst = c->xpack + i * c->cs + (size_t)r * c->wpk;
            const int iy = rlo + r;
            if (iy < 0 || iy >= ih || x0 >= x1) {
                memset(dst, 0, (size_t)c->wpk * sizeof(double));
                continue;
            }
            const int32_t *src = in + ((size_t)i * ih + iy) * iw;
            int p = 0;
            for (; p < x0 - cbase; p++) dst[p] = 0;
            for (int x = x0; x < x1; x++, p++) dst[p] = src[x];
            for (; p < c->wpk; p++) dst[p] = 0;
        }
}

/* Output row oy of phase column px, positions m in [m0, m1) of one column chunk. */
static void conv_row(ConvCall *c, int32_t *out, int oh, int ow, int oy, int px, int rlo,
                     int mc0, int m1)
{
    const WaiLayer *l = c->l;
    const int s = c->py.s, py = oy % s, qy = oy / s;
    const int K = c->K[py][px];
    const double *base = c->xpack + (size_t)(qy + c->py.dmin - rlo) * c->wpk;
    for (int ob = 0; ob < c->nob; ob++) {
        const double *wp = c->wpack + c->wphase[py][px] + (size_t)ob * K * c->nb;
        const int nn = imin(c->nb, l->cout - ob * c->nb);
        for (int m0 = mc0; m0 < m1; m0 += c->tw) {
#ifdef WAI_PLANTED_FAULT_FAST_TAIL
            const int nt = imin(c->tw, m1 - m0) - (m1 - m0 < c->tw); /* planted: tail short */
#else
            const int nt = imin(c->tw, m1 - m0);
#endif
            if (K) {
                c->tile(wp, c->off[py][px], K, base + (m0 - mc0), c->res, c->tw);
            } else {
                for (int e = 0; e < c->nb * c->tw; e++) c->res[e] = 0;
            }
            for (int n = 0; n < nn; n++) {
                const int o = ob * c->nb + n;
                const int64_t b = l->bias[o];
                const unsigned sh = l->shift[o];
                const double *r = c->res + (size_t)n * c->tw;
                int32_t *dst = out + ((size_t)o * oh + oy) * ow + (size_t)m0 * s + px;
                for (int t = 0; t < nt; t++) dst[(size_t)t * s] = out_val(r[t], b, sh);
            }
        }
    }
}

/* The call-independent part of a ConvCall; -1 for geometry this path does not take. */
static int conv_setup(ConvCall *c, const WaiLayer *l, int transposed)
{
    const int s = transposed ? l->stride : 1;
    if ((!transposed && l->stride != 1) || s < 1 || s > MAXS || l->kh > MAXK || l->kw > MAXK ||
        l->kh < 1 || l->kw < 1 || l->pad < 0 || l->pad > 14)
        return -1;
    memset(c, 0, sizeof(*c));
    c->l = l;
    phases_init(&c->py, transposed, s, l->kh, l->pad);
    phases_init(&c->px, transposed, s, l->kw, l->pad);
    const int small = l->cout <= NB_SMALL;
    c->nb = small ? NB_SMALL : NB_MAIN;
    c->tw = (small ? MB_SMALL : MB_MAIN) * VLEN;
    c->tile = small ? tile_small : tile_main;
    c->nob = (l->cout + c->nb - 1) / c->nb;
    c->cw = (COL_CHUNK + c->tw - 1) / c->tw * c->tw;
    c->wpk = c->cw + c->px.dmax - c->px.dmin;
    c->prmax = (ROW_CHUNK - 1) / s + 2 + c->py.dmax - c->py.dmin;
    c->cs = (size_t)c->prmax * c->wpk;
    return 0;
}

/* Per-layer preparation (WaiDsp.prep_layer): the packed weights and max |w|, shared by the
 * row bands of one layer run. owner tells this set's preparations from another set's. */
static const char prep_owner;
typedef struct ConvPrep {
    const void *owner;
    const int16_t *weight;   /* the layer it was made from */
    int cin, cout, kh, kw, stride, pad, transposed;
    int K[MAXS][MAXS];
    size_t wphase[MAXS][MAXS];
    double *wpack;
    int wmax;
} ConvPrep;

static void conv_prep_free(void *p)
{
    ConvPrep *v = p;
    if (v) free(v->wpack);
    free(v);
}

static void *conv_prep_layer(const WaiLayer *l)
{
    if (l->type != WAI_LAYER_CONV && l->type != WAI_LAYER_CONVT) return NULL;
    const int transposed = l->type == WAI_LAYER_CONVT;
    ConvCall c;
    if (conv_setup(&c, l, transposed) < 0) return NULL;
    ConvPrep *v = calloc(1, sizeof(*v));
    if (!v) return NULL;
    if ((v->wmax = pack_weights(&c)) < 0) {
        free(c.wpack);
        free(v);
        return NULL;
    }
    v->owner = &prep_owner;
    v->weight = l->weight;
    v->cin = l->cin; v->cout = l->cout; v->kh = l->kh; v->kw = l->kw;
    v->stride = l->stride; v->pad = l->pad; v->transposed = transposed;
    memcpy(v->K, c.K, sizeof(v->K));
    memcpy(v->wphase, c.wphase, sizeof(v->wphase));
    v->wpack = c.wpack;
    return v;
}

/* Returns 0 when done, -1 when the caller must run the reference. */
static int conv_fast(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out,
                     int oh, int ow, int oy0, int oy1, int transposed)
{
    if (oy0 >= oy1) return 0;
    for (int o = 0; o < l->cout; o++)
        if (l->bias[o] > BIAS_MAX || l->bias[o] < -BIAS_MAX) return -1;

    ConvCall c;
    if (conv_setup(&c, l, transposed) < 0) return -1;
    const int s = c.py.s;
    /* another set's preparation or another layer's is ignored (every preparation begins
     * with a const void * owner tag) */
    const ConvPrep *pp = l->prep;
    const void *tag = NULL;
    if (pp) memcpy(&tag, pp, sizeof(tag));
#ifdef WAI_PLANTED_FAULT_FAST_PREP_STALE
    if (pp && (tag != &prep_owner || pp->cin != l->cin || /* planted: weights not compared */
#else
    if (pp && (tag != &prep_owner || pp->weight != l->weight || pp->cin != l->cin ||
#endif
               pp->cout != l->cout || pp->kh != l->kh || pp->kw != l->kw ||
               pp->stride != l->stride || pp->pad != l->pad || pp->transposed != transposed))
        pp = NULL;

    /* the bound, on the rows this call reads */
    const int r0 = oy0 / s + c.py.dmin, r1 = (oy1 - 1) / s + c.py.dmax + 1;
    const double xmax = (double)max_abs_rows(in, l->cin, ih, iw, r0, r1);
    int r = -1;
    int wmax;
    if (pp) { /* the layer's packed weights (the same as pack_weights would make) */
        memcpy(c.K, pp->K, sizeof(c.K));
        memcpy(c.wphase, pp->wphase, sizeof(c.wphase));
        c.wpack = pp->wpack;
        c.wpack_shared = 1;
        wmax = pp->wmax;
    } else {
        wmax = pack_weights(&c);
    }
    const double terms = (double)l->cin * l->kh * l->kw;
#ifdef WAI_PLANTED_FAULT_FAST_BOUND
    (void)xmax; (void)terms; /* planted: the exactness bound is not checked */
    if (wmax < 0) goto end;
#else
    if (wmax < 0 || xmax * wmax * terms > EXACT_MAX) goto end;
#endif
    if (make_offsets(&c) < 0) goto end;
    if (!(c.xpack = malloc((size_t)l->cin * c.cs * sizeof(double)))) goto end;
    if (!(c.res = malloc((size_t)c.nb * c.tw * sizeof(double)))) goto end;

    const int mtot = (ow + s - 1) / s;
    for (int ya = oy0; ya < oy1; ya += ROW_CHUNK) {
        const int yb = imin(oy1, ya + ROW_CHUNK);
        const int rlo = ya / s + c.py.dmin;
        for (int mc0 = 0; mc0 < mtot; mc0 += c.cw) {
            pack_input(&c, in, ih, iw, rlo, mc0 + c.px.dmin);
            for (int oy = ya; oy < yb; oy++)
                for (int px = 0; px < s; px++) {
                    const int mpx = px < ow ? (ow - px + s - 1) / s : 0;
                    const int m1 = imin(mpx, mc0 + c.cw);
                    if (mc0 < m1) conv_row(&c, out, oh, ow, oy, px, rlo, mc0, m1);
                }
        }
    }
    r = 0;
end:
    conv_call_free(&c);
    return r;
}

/* The reference kernels, for the calls this path does not take. */
static WaiDsp ref_table(void)
{
    WaiDsp t;
    wai_dsp_init_ref(&t);
    return t;
}

static void conv_k(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out, int oh,
                   int ow, int oy0, int oy1)
{
    if (conv_fast(l, in, ih, iw, out, oh, ow, oy0, oy1, 0) < 0)
        ref_table().conv(l, in, ih, iw, out, oh, ow, oy0, oy1);
}

static void convt_k(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out, int oh,
                    int ow, int oy0, int oy1)
{
    if (conv_fast(l, in, ih, iw, out, oh, ow, oy0, oy1, 1) < 0)
        ref_table().convt(l, in, ih, iw, out, oh, ow, oy0, oy1);
}

/* IGDN (spec 5.5) as a product gamma[C][C] x x2[C][positions]: the same tile kernel with one
 * term per input channel, in chunks of IGDN_CHUNK positions. Exact in double while the
 * chunk's max x2 * max gamma * C <= 2^52; a chunk above it takes the reference's int64 sums.
 * Trained gamma is mostly zeros (83-97 % in the shipped models): where at most half of it is
 * nonzero, each output channel sums only its nonzero terms (a zero gamma adds an exact 0 in
 * the reference), IGDN_SP_MB vectors of positions at a time. */
#define IGDN_CHUNK 256
#define IGDN_PREFETCH 8 /* channels ahead (igdn_chunk_load; speed only) */
#define IGDN_SP_MB 8

/* floor(sqrt(n)) for 0 <= n < 2^62, the same integer as wai_isqrt64 (there is one floor).
 * (double)n is within 2^-53 relative of n, so the truncated root is within 1 of the floor
 * (below it only when n is a perfect square whose root rounded down); one step each way
 * corrects it. r <= 2^31 + 1: r * r does not overflow. Branch-free, so loops vectorise. */
static inline int64_t isqrt_small(int64_t n)
{
    int64_t r = (int64_t)sqrt((double)n);
    r -= r * r > n;
    r += (r + 1) * (r + 1) <= n;
    return r;
}

/* The epilogue of spec 5.5 for nt positions: x = clamp(rshr(x * isqrt(sum + beta), shift)),
 * sum the exact gamma x x2 sum of each position (a double holding an integer < 2^52). */
static inline void igdn_out(int32_t *restrict xi, const double *restrict rn, int nt, int64_t beta,
                            unsigned shift)
{
#if VLEN == 8 && defined(__AVX512F__) && defined(__AVX512DQ__)
    /* floor(sqrt(n)) and the product with x, eight lanes at a time. n = rn + beta with
     * rn < 2^52 (the chunk bound) and 0 <= beta <= 2^60, so 0 <= n < 2^61.
     * The root: an estimate e with |e - sqrt(n)| < 1 truncates to floor(sqrt(n)) or one
     * either side of it, and the two corrections of isqrt_small (r * r > n: down one;
     * (r + 1)^2 <= n: up one) then give the floor exactly. The estimate, for n >= 1:
     * d = (double)n (relative error <= 2^-53), y0 = vrsqrt14pd(d) (|y0 sqrt(d) - 1| <
     * 2^-14), two Newton steps y' = y + y (1/2 - (d/2) y^2) (exactly, a relative error u
     * becomes -3u^2/2 - u^3/2: 2^-14 -> < 2^-27 -> < 2^-53; each step's own roundings add
     * under 2^-51), and e = d * y2 rounded: a relative error under 2^-49, so |e - sqrt(n)| <
     * 2^30.5 * 2^-49 < 2^-18. n = 0 (y0 infinite) gives r = 0. The sqrt it replaces (vsqrtpd)
     * bounded the epilogue; the estimate costs a few multiply-adds.
     * The multiplies: r and r + 1 are in [0, 2^31), so r * r and (r + 1)^2 are the unsigned
     * products of their low 32 bits (_mm512_mul_epu32, one micro-op where GCC emits a
     * three-micro-op 64-bit multiply), and x * r, x an int32, is the signed one
     * (_mm512_mul_epi32). (int64_t) of a double truncates (vcvttpd2qq) as in C, (double) of an
     * int64 rounds to nearest (vcvtqq2pd, MXCSR's default) as in C. */
    const __m512i vbeta = _mm512_set1_epi64(beta), one = _mm512_set1_epi64(1);
    const __m512d half = _mm512_set1_pd(0.5);
    const __m512i rnd = _mm512_set1_epi64((int64_t)1 << (shift - 1)); /* shift >= 6 */
    const __m512i vlo = _mm512_set1_epi64(WAI_ACT_MIN), vhi = _mm512_set1_epi64(WAI_ACT_MAX);
    const __m128i vsh = _mm_cvtsi32_si128((int)shift);
    for (int t = 0; t < nt; t += 8) {
        const __mmask8 mk = (__mmask8)(nt - t >= 8 ? 0xff : (1u << (nt - t)) - 1);
        const __m512i n = _mm512_add_epi64(_mm512_cvttpd_epi64(_mm512_maskz_loadu_pd(mk, rn + t)), vbeta);
        const __m512d d = _mm512_cvtepi64_pd(n), hd = _mm512_mul_pd(d, half);
        __m512d y = _mm512_rsqrt14_pd(d);
        for (int it = 0; it < 2; it++)
            y = _mm512_fmadd_pd(y, _mm512_fnmadd_pd(hd, _mm512_mul_pd(y, y), half), y);
        __m512i r = _mm512_maskz_mov_epi64(_mm512_test_epi64_mask(n, n),
                                           _mm512_cvttpd_epi64(_mm512_mul_pd(d, y)));
#ifdef WAI_PLANTED_FAULT_FAST_IGDN_ISQRT
        r = _mm512_mask_sub_epi64(r, _mm512_cmpgt_epi64_mask(_mm512_mul_epu32(r, r), _mm512_add_epi64(n, one)), r, one); /* planted */
#else
        r = _mm512_mask_sub_epi64(r, _mm512_cmpgt_epi64_mask(_mm512_mul_epu32(r, r), n), r, one);
#endif
        const __m512i r1 = _mm512_add_epi64(r, one);
#ifndef WAI_PLANTED_FAULT_FAST_IGDN_ROOT_UP /* planted: the estimate's root never raised */
        r = _mm512_mask_mov_epi64(r, _mm512_cmple_epi64_mask(_mm512_mul_epu32(r1, r1), n), r1);
#endif
        const __m512i xv = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(mk, xi + t));
        __m512i v = _mm512_sra_epi64(_mm512_add_epi64(_mm512_mul_epi32(xv, r), rnd), vsh);
        v = _mm512_min_epi64(_mm512_max_epi64(v, vlo), vhi);
        _mm256_mask_storeu_epi32(xi + t, mk, _mm512_cvtepi64_epi32(v));
    }
#else
    for (int t = 0; t < nt; t++) {
        const int64_t rt = isqrt_small((int64_t)rn[t] + beta); /* < 2^60 + 2^52: it holds */
        xi[t] = wai_clamp_act(wai_rshr((int64_t)xi[t] * rt, shift));
    }
#endif
}

/* A chunk whose sums could pass 2^52 (see igdn_chunk_load): the reference's int64
 * arithmetic, on the chunk's copy xc of x. */
static void igdn_chunk_exact(const WaiLayer *l, int32_t *x, size_t plane, size_t pa, int np, int P,
                             const int32_t *xc, unsigned shift)
{
    const int C = l->cin;
    for (int i = 0; i < C; i++)
        for (int t = 0; t < np; t++) {
            int64_t acc = l->beta[i];
            for (int j = 0; j < C; j++) {
                const int64_t xj = xc[(size_t)j * P + t];
                acc += (int64_t)l->gamma[(size_t)i * C + j] * ((xj * xj + (1 << 11)) >> 12);
            }
            const int64_t r = wai_isqrt64((uint64_t)acc);
            x[i * plane + pa + t] = wai_clamp_act(wai_rshr(xc[(size_t)i * P + t] * r, shift));
        }
}

/* A chunk of positions [pa, pa + np) of every channel j: x2 (spec 5.5) into xp[j][0..P),
 * zeros after np. The chunk's largest x2, found in the same pass (the bound costs no pass of
 * its own over the tensor), decides whether its double sums are exact: if
 * max x2 * gmax * C > 2^52, the chunk is computed here with the reference's int64 sums
 * (igdn_chunk_exact, from a copy xc of x: its outputs overwrite inputs that later outputs
 * read) and 1 is returned; else 0, and the caller computes it from xp, each output channel
 * in place from its own x (read before it is written; a copy of x for every chunk cost more,
 * session 27). */
static int igdn_chunk_load(const WaiLayer *l, int32_t *x, size_t plane, size_t pa, int np, int P,
                           double gmax, unsigned shift, double *restrict xp, int32_t *restrict xc)
{
    const int C = l->cin;
    int32_t lo = 0, hi = 0;
#ifdef WAI_PLANTED_FAULT_FAST_IGDN_CHUNK_BOUND
    int32_t lo0 = 0, hi0 = 0;
#endif
    for (int j = 0; j < C; j++) {
        const int32_t *src = x + j * plane + pa;
        double *dst = xp + (size_t)j * P;
        /* the chunk's rows of C channels are C short streams, more than the hardware
         * prefetcher follows: ask for channel j + IGDN_PREFETCH's lines now */
        if (j + IGDN_PREFETCH < C)
            for (int t = 0; t < np; t += 16)
                __builtin_prefetch(src + IGDN_PREFETCH * plane + t);
        int t = 0;
#if VLEN == 8 && defined(__AVX512F__) && defined(__AVX512DQ__)
        /* x * x as the signed product of two int32 (_mm512_mul_epi32, one micro-op where GCC
         * emits a three-micro-op 64-bit multiply): the same integer, |x| <= 2^31 */
        {
            __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
            const __m512i r11 = _mm512_set1_epi64(1 << 11);
            for (; t < np; t += 8) {
                const __mmask8 mk = (__mmask8)(np - t >= 8 ? 0xff : (1u << (np - t)) - 1);
                const __m256i v = _mm256_maskz_loadu_epi32(mk, src + t); /* zeros: no effect */
                vlo = _mm256_min_epi32(vlo, v);
                vhi = _mm256_max_epi32(vhi, v);
                const __m512i w = _mm512_cvtepi32_epi64(v);
                const __m512i x2 = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(w, w), r11), 12);
                _mm512_mask_storeu_pd(dst + t, mk, _mm512_cvtepi64_pd(x2));
            }
            int32_t l8[8], h8[8];
            _mm256_storeu_si256((__m256i *)l8, vlo);
            _mm256_storeu_si256((__m256i *)h8, vhi);
            for (int e = 0; e < 8; e++) {
                lo = l8[e] < lo ? l8[e] : lo;
                hi = h8[e] > hi ? h8[e] : hi;
            }
            t = np;
        }
#endif
        for (; t < np; t++) {
            lo = src[t] < lo ? src[t] : lo;
            hi = src[t] > hi ? src[t] : hi;
            dst[t] = (double)(((int64_t)src[t] * src[t] + (1 << 11)) >> 12);
        }
        for (; t < P; t++) dst[t] = 0;
#ifdef WAI_PLANTED_FAULT_FAST_IGDN_CHUNK_BOUND
        if (j == 0) {
            lo0 = lo;
            hi0 = hi;
        }
#endif
    }
#ifdef WAI_PLANTED_FAULT_FAST_IGDN_CHUNK_BOUND
    lo = lo0; /* planted: the bound from channel 0 alone */
    hi = hi0;
#endif
    const int64_t amax = -(int64_t)lo > hi ? -(int64_t)lo : hi; /* <= 2^31 */
    const double x2max = (double)((amax * amax + (1 << 11)) >> 12);
    if (x2max * gmax * C <= EXACT_MAX) return 0;
    for (int j = 0; j < C; j++) /* x as it was, for the outputs written before its own */
        memcpy(xc + (size_t)j * P, x + j * plane + pa, (size_t)np * sizeof(*xc));
    igdn_chunk_exact(l, x, plane, pa, np, P, xc, shift);
    return 1;
}

/* igdn_fast's sparse form (bounds checked by the caller): per output channel i, the sum over
 * its nonzero gamma[i][j] only, in order of j. */
static int igdn_sparse(const WaiLayer *l, int32_t *x, int h, int w, int y0, int y1, size_t nnz,
                       double gmax)
{
    const int C = l->cin, tw = IGDN_SP_MB * VLEN;
    const int P = (IGDN_CHUNK + tw - 1) / tw * tw;
    const size_t plane = (size_t)h * w;
    const unsigned shift = 6 + (unsigned)l->gamma_shift / 2;
    int *rs = malloc(((size_t)C + 1) * sizeof(int));
    int *sj = malloc((nnz ? nnz : 1) * sizeof(int));
    double *sg = malloc((nnz ? nnz : 1) * sizeof(double));
    double *xp = malloc((size_t)C * P * sizeof(double));
    int32_t *xc = malloc((size_t)C * P * sizeof(int32_t)); /* igdn_chunk_load */
    int r = -1;
    if (!rs || !sj || !sg || !xp || !xc) goto end;
    rs[0] = 0;
    for (int i = 0, e = 0; i < C; i++) {
        for (int j = 0; j < C; j++) {
            const int32_t g = l->gamma[(size_t)i * C + j];
            if (g) {
                sj[e] = j;
                sg[e++] = g;
            }
        }
#ifdef WAI_PLANTED_FAULT_FAST_IGDN_SPARSE
        if (e > rs[i]) e--; /* planted: each row's last nonzero gamma is dropped */
#endif
        rs[i + 1] = e;
    }
    const size_t p0 = (size_t)y0 * w, p1 = (size_t)y1 * w;
    for (size_t pa = p0; pa < p1; pa += P) {
        const int np = (int)(p1 - pa < (size_t)P ? p1 - pa : (size_t)P);
        if (igdn_chunk_load(l, x, plane, pa, np, P, gmax, shift, xp, xc)) continue;
        for (int i = 0; i < C; i++)
            for (int t0 = 0; t0 < np; t0 += tw) {
                vd acc[IGDN_SP_MB];
                UNROLL for (int b = 0; b < IGDN_SP_MB; b++) acc[b] = (vd){ 0 };
                for (int e = rs[i]; e < rs[i + 1]; e++) {
                    const double *xj = xp + (size_t)sj[e] * P + t0;
                    SPLAT(g, sg[e]);
                    UNROLL for (int b = 0; b < IGDN_SP_MB; b++) {
                        vd xv;
                        memcpy(&xv, xj + b * VLEN, sizeof(vd));
                        acc[b] += xv * g;
                    }
                }
                double res[IGDN_SP_MB * VLEN];
                memcpy(res, acc, sizeof(res));
                igdn_out(x + i * plane + pa + t0, res, imin(tw, np - t0),
                         l->beta[i], shift);
            }
    }
    r = 0;
end:
    free(rs);
    free(sj);
    free(sg);
    free(xp);
    free(xc);
    return r;
}

static int igdn_fast(const WaiLayer *l, int32_t *x, int h, int w, int y0, int y1)
{
    if (y0 >= y1) return 0;
    const int C = l->cin;
    if (C < 1 || C > 512 || l->gamma_shift < 0 || l->gamma_shift > 48) return -1;
    int64_t gmax = 0;
    size_t nnz = 0;
    for (size_t e = 0; e < (size_t)C * C; e++) {
        if (l->gamma[e] < 0) return -1;
        gmax = gmax > l->gamma[e] ? gmax : l->gamma[e];
        nnz += l->gamma[e] != 0;
    }
    for (int i = 0; i < C; i++)
        if (l->beta[i] < 0 || l->beta[i] > BIAS_MAX) return -1;
    const size_t plane = (size_t)h * w;
    /* each chunk checks its own x2 bound (igdn_chunk_load) */
    if (nnz * 2 <= (size_t)C * C) return igdn_sparse(l, x, h, w, y0, y1, nnz, (double)gmax);

    const int small = C <= NB_SMALL;
    const int nb = small ? NB_SMALL : NB_MAIN, tw = (small ? MB_SMALL : MB_MAIN) * VLEN;
    const TileFn tile = small ? tile_small : tile_main;
    const int nob = (C + nb - 1) / nb;
    const int P = (IGDN_CHUNK + tw - 1) / tw * tw;
    const unsigned shift = 6 + (unsigned)l->gamma_shift / 2;
    double *gp = malloc((size_t)nob * C * nb * sizeof(double));
    double *xp = malloc((size_t)C * P * sizeof(double));
    double *res = malloc((size_t)nb * tw * sizeof(double));
    ptrdiff_t *off = malloc((size_t)C * sizeof(ptrdiff_t));
    int32_t *xc = malloc((size_t)C * P * sizeof(int32_t));
    int r = -1;
    if (!gp || !xp || !res || !off || !xc) goto end;
    for (int ob = 0; ob < nob; ob++)
        for (int j = 0; j < C; j++)
            for (int n = 0; n < nb; n++) {
                const int i = ob * nb + n;
                gp[((size_t)ob * C + j) * nb + n] = i < C ? l->gamma[(size_t)i * C + j] : 0;
            }
    for (int j = 0; j < C; j++) off[j] = (ptrdiff_t)j * P;

    const size_t p0 = (size_t)y0 * w, p1 = (size_t)y1 * w;
    for (size_t pa = p0; pa < p1; pa += P) {
        const int np = (int)(p1 - pa < (size_t)P ? p1 - pa : (size_t)P);
        if (igdn_chunk_load(l, x, plane, pa, np, P, (double)gmax, shift, xp, xc)) continue;
        for (int ob = 0; ob < nob; ob++) {
            const int nn = imin(nb, C - ob * nb);
            for (int t0 = 0; t0 < np; t0 += tw) {
                tile(gp + (size_t)ob * C * nb, off, C, xp + t0, res, tw);
                const int nt = imin(tw, np - t0);
                for (int n = 0; n < nn; n++) {
                    const int i = ob * nb + n;
                    igdn_out(x + i * plane + pa + t0, res + (size_t)n * tw, nt, l->beta[i], shift);
                }
            }
        }
    }
    r = 0;
end:
    free(xc);
    free(gp);
    free(xp);
    free(res);
    free(off);
    return r;
}

static void igdn_k(const WaiLayer *l, int32_t *x, int h, int w, int y0, int y1)
{
    if (igdn_fast(l, x, h, w, y0, y1) < 0) ref_table().igdn(l, x, h, w, y0, y1);
}

/* The encoder's float sums (dsp.h, WaiAnaConv): a register tile of ANA_NO output channels x
 * ANA_MV vectors of columns, over which each term is added per element in the stated order,
 * as wai_ana_conv_ref does: the same floats. The products of analysis operands are exact, so
 * the compiler may fuse each multiply and add (this file's -ffp-contract=fast; clang's =on
 * contracts within the one expression) where the set has fused multiply-adds. */
#define ANA_FL (VLEN * 2) /* floats per vector */
#ifndef ANA_NO
#define ANA_NO 4
#endif
#ifndef ANA_MV
#define ANA_MV 3
#endif
typedef float vfl __attribute__((vector_size(ANA_FL * 4)));
/* what a call may read past its operands (dsp.h) */
_Static_assert(ANA_MV * ANA_FL <= WAI_ANA_SLACK, "ana_conv_k reads past WAI_ANA_SLACK");
_Static_assert(ANA_NO <= WAI_ANA_NO_MAX, "ana_conv_k reads past WAI_ANA_NO_MAX channels");
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ == 2 /* as SPLAT above */
#define ANA_SPLAT(v, x) vfl v; for (int e_ = 0; e_ < ANA_FL; e_++) v[e_] = (x)
#else
#define ANA_SPLAT(v, x) const float v = (x)
#endif

static void ana_conv_k(const WaiAnaConv *a)
{
    const int span = ANA_MV * ANA_FL;
    for (int x0 = 0; x0 < a->nx; x0 += span) {
        const int nv = imin(span, a->nx - x0);
        for (int o = 0; o < a->no; o += ANA_NO) {
            vfl acc[ANA_NO][ANA_MV];
            UNROLL for (int n = 0; n < ANA_NO; n++) {
                const float b = a->bias[o + n]; /* padded past no (dsp.h) */
                UNROLL for (int m = 0; m < ANA_MV; m++)
                    UNROLL for (int e = 0; e < ANA_FL; e++) acc[n][m][e] = b;
            }
            for (int i = 0; i < a->cin; i++) {
                const float *ib = a->in + (size_t)i * a->cstride + x0;
                const float *wi = a->w + (size_t)i * a->kk * a->wstride + o;
                for (int t = 0; t < a->ntaps; t++) {
                    const float *xp = ib + a->toff[t];
                    const float *wt = wi + (size_t)a->widx[t] * a->wstride;
                    vfl xv[ANA_MV];
                    UNROLL for (int m = 0; m < ANA_MV; m++)
                        memcpy(&xv[m], xp + m * ANA_FL, sizeof(vfl));
                    UNROLL for (int n = 0; n < ANA_NO; n++) {
                        ANA_SPLAT(wn, wt[n]);
                        UNROLL for (int m = 0; m < ANA_MV; m++)
                            acc[n][m] = acc[n][m] + wn * xv[m];
                    }
                }
            }
            const int nn = imin(ANA_NO, a->no - o);
            for (int n = 0; n < nn; n++) {
                float *op = a->out + (size_t)(o + n) * a->ostride + x0;
                if (nv == span)
                    memcpy(op, acc[n], sizeof(acc[n]));
                else
                    memcpy(op, acc[n], (size_t)nv * sizeof(float));
            }
        }
    }
}
void INIT_FN(WaiDsp *dsp)
{
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ == 2
    /* x87 (i386 without SSE): vector operations lowered to x87 need not round each sum to
     * float as C's assignments do; the reference's loop is the one that does */
    (void)ana_conv_k;
    dsp->ana_conv = wai_ana_conv_ref;
#else
    dsp->ana_conv = ana_conv_k;
#endif
    dsp->conv = conv_k;
    dsp->convt = convt_k;
    dsp->igdn = igdn_k;
    /* conv / convT are replaced: so is the preparation hook of a set below */
    dsp->prep_layer = conv_prep_layer;
    dsp->prep_free = conv_prep_free;
}
