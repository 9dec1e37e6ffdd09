/* AVX-512 VNNI set: conv (stride 1), convT and IGDN's gamma x x2 product with vpdpwssd
 * (16-bit x 16-bit products summed in pairs into 32-bit lanes); every call this path declines
 * uses the AVX-512 double path of dsp_tmpl.c (included below), which in turn declines to the
 * reference.
 * Built with -mavx512f -mavx512dq -mavx512bw -mavx512vl -mavx512vnni.
 *
 * Why the integers are the reference's (spec 5.1). The polyphase form, the packing and the
 * tap offsets are those of dsp_tmpl.c; only the arithmetic differs:
 *  - Activations are split into int16 halves on the ACTUAL operands of each packed chunk: if
 *    max |x| <= 32767 (over the chunk's input rows and columns that the call reads) x itself
 *    is one half; otherwise
 *    x = hi * 2^S + lo with lo in [-2^(S-1), 2^(S-1)) and hi = (x + 2^(S-1)) >> S, so
 *    |hi| <= (max|x| >> S) + 1, which must be <= 32767 (else the row chunk declines). Then
 *    sum w x = 2^S * sum w hi + sum w lo, an identity of integers.
 *  - Each half's sum over the K steps (pairs of terms) of an output is cut into chunks of P
 *    vpdpwssd steps (the last one shorter), and every partial sum inside a chunk must fit
 *    int32. Two bounds give a P, and the larger is taken (either alone suffices):
 *     - P = floor(floor(INT32_MAX / (max|w| * max|half|)) / 2), with max|w| over the layer's
 *       weights: a partial sum of a chunk is then a sum of at most INT32_MAX /
 *       (max|w| * max|half|) products of magnitude <= max|w| * max|half|;
 *     - the weights' own sizes: L(P), made once per layer, is the largest sum of |w| over the
 *       2P weights of one output channel in one chunk (chunks start at step 0, P, 2P, ...),
 *       over the channels, chunks and phases, for P a power of two or K; a partial sum is then
 *       at most L(P) * max|half|, so P qualifies when L(P) * max|half| <= INT32_MAX. Trained
 *       weights are far below max|w| on average, so chunks are 4-8x longer than the first
 *       bound gives and fewer accumulators are widened.
 *    With max|half| from the chunk's max |x| as above, no lane ever wraps and each chunk sum
 *    is the exact integer. Chunk sums are sign-extended and added in int64 (|sum| < 2^62
 *    for |x| < 2^30, |w| <= 2^15, K <= 512 * 225), then the halves are combined, bias, rshr
 *    and clamp done in int64 exactly as in the reference.
 *  - Outliers: where only a few activations of a packed chunk pass 32767 (at most 1 in
 *    VN_OUTLIER_DIV of the elements the call reads there), x = c + e with c = x clamped to
 *    [-32767, 32767] and e = x - c (nonzero for those few). The tiles take c as one half
 *    (max|half| = 32767 for the chunks); each e is added to the int64 sums of the outputs it
 *    has a term in, e * w for the same weight and tap the tile used for c: the same terms, so
 *    the same integer sum (every partial sum within 2^15 * 2^31 per term times at most
 *    2 * 512 * 225 terms < 2^63, as the reference's). A second full pass over a lo half is
 *    saved.
 *  - Zero padding and the channel / output-channel padding of the tiles are explicit zeros
 *    (terms 0 * w or x * 0). Any order of exact integer additions gives the same integer.
 *  - A row chunk with a packed chunk past both forms (|hi| > 32767) is computed again, all
 *    its outputs, by the AVX-512 double path (which declines in turn to the reference).
 * Weights are packed once per layer run (prep_layer, shared by the row bands of graph.c);
 * a call without that preparation packs them itself. */
#include <immintrin.h>
#include <stdint.h>

#include "dsp.h"
#include "dsp_fast.h"

/* the AVX-512 double path (fallback and IGDN) */
#define VLEN 8
#define NB_MAIN 12
#define MB_MAIN 2
#define NB_SMALL 3
#define MB_SMALL 8
/* the encoder's float tile: 8 output channels x 3 vectors, 24 of the 32 registers (10 %
 * faster than 4 x 3 on a 1080p encode with the N=128 model; the same floats) */
#define ANA_NO 8
#define ANA_MV 3
#define INIT_FN vnni_double_init
static void vnni_double_init(WaiDsp *dsp);
#include "dsp_tmpl.c"

/* Register tiles: NB output channels x MB vectors of 16 positions, 12 accumulators. In a
 * stand-alone loop of the tile on the development machine, 6x2 and 3x4 ran markedly faster
 * than 24-accumulator tiles (6x4, 3x8; register pressure, presumably); the shapes change
 * speed only. */
#define VN_NB 6
#define VN_MB 2
#define VN_NB_SMALL 3
#define VN_MB_SMALL 4
#define VN_COLS 128 /* positions per packed column chunk (a multiple of both tile widths) */
#define VN_ROWS 8   /* output rows per packed row chunk */
/* Relative cost of widening one accumulator to int64 against one vpdpwssd step (for the
 * choice between one and two halves; it changes speed only, never a result). */
#define VN_WIDEN_COST 6
/* chunk lengths of VnniPrep.chunk_l1: 2^0 .. 2^(VN_L1_STEPS - 2) steps, then a whole phase
 * (K <= 256 pairs * 15 * 15 taps < 2^16 steps). Those below 2^VN_L1_FIRST steps are not
 * computed and never qualify: with 12-bit weights and int16 halves the first bound gives at
 * least 16 steps. */
#define VN_L1_STEPS 18
#define VN_L1_FIRST 4
/* The outlier form is taken when at most 1 in VN_OUTLIER_DIV of the elements a call reads
 * pass 32767: each costs about the outputs it reaches times the taps in scalar steps, a
 * second half costs a whole vector pass (speed only, never a result). */
#define VN_OUTLIER_DIV 256
#define VN_PREFETCH 1 /* channel pairs ahead (vnni_pack_clamped; speed only) */

static const char vnni_owner; /* tags this set's preparations */
typedef struct VnniPrep {
    const void *owner;       /* first, as in every preparation (dsp_tmpl.c) */
    /* the layer this was made from (a stale or foreign preparation is ignored) */
    const int16_t *weight;
    int cin, cout, kh, kw, stride, pad, transposed;
    Phases py, px;
    int nb, nob, cp;         /* tile channels, channel blocks, input channel pairs */
    int K[MAXS][MAXS];       /* vpdpwssd steps (pairs of terms) per phase */
    size_t wphase[MAXS][MAXS];
    int32_t *wpack;          /* per phase, per block: [K][nb] int16 pairs */
    int64_t wmax;            /* max |w| over the layer */
    /* chunk_l1[j]: the largest sum of |w| over one output channel's weights in one chunk of
     * 2^j steps (j = VN_L1_STEPS - 1: of any length, a whole phase), over every channel,
     * chunk and phase (the top of the file) */
    int64_t chunk_l1[VN_L1_STEPS];
} VnniPrep;

static void vnni_prep_free(void *p)
{
    VnniPrep *v = p;
    if (!v) return;
    free(v->wpack);
    free(v);
}

static inline uint32_t pair16(int a, int b) { return (uint16_t)a | (uint32_t)(uint16_t)b << 16; }

/* NULL where this path does not take the layer (then nothing is prepared). */
static VnniPrep *vnni_prep_make(const WaiLayer *l, int transposed)
{
    const int s = transposed ? l->stride : 1;
    if ((!transposed && l->stride != 1) || s < 1 || s > MAXS || l->kh > MAXK || l->kw > MAXK ||
        l->kh < 1 || l->kw < 1 || l->pad < 0 || l->pad > 14 || l->cin < 1 || l->cout < 1)
        return NULL;
    VnniPrep *v = calloc(1, sizeof(*v));
    if (!v) return NULL;
    v->owner = &vnni_owner;
    v->weight = l->weight;
    v->cin = l->cin; v->cout = l->cout; v->kh = l->kh; v->kw = l->kw;
    v->stride = l->stride; v->pad = l->pad; v->transposed = transposed;
    phases_init(&v->py, transposed, s, l->kh, l->pad);
    phases_init(&v->px, transposed, s, l->kw, l->pad);
    v->nb = l->cout <= VN_NB_SMALL ? VN_NB_SMALL : VN_NB;
    v->nob = (l->cout + v->nb - 1) / v->nb;
    v->cp = (l->cin + 1) / 2;
    size_t total = 0;
    for (int a = 0; a < s; a++)
        for (int b = 0; b < s; b++) {
            v->K[a][b] = v->cp * v->py.n[a] * v->px.n[b];
            v->wphase[a][b] = total;
            total += (size_t)v->K[a][b] * v->nb * v->nob;
        }
    if (total > MAX_WPACK / sizeof(int32_t) ||
        !(v->wpack = malloc((total ? total : 1) * sizeof(int32_t)))) {
        vnni_prep_free(v);
        return NULL;
    }
    const int cin = l->cin, kh = l->kh, kw = l->kw;
    int64_t wmax = 0;
    for (size_t e = 0; e < (size_t)l->cout * cin * kh * kw; e++) {
        const int64_t a = l->weight[e] < 0 ? -(int64_t)l->weight[e] : l->weight[e];
        wmax = a > wmax ? a : wmax;
    }
    v->wmax = wmax;
    int kmax = 0;
    for (int a = 0; a < s; a++)
        for (int b = 0; b < s; b++) kmax = imax(kmax, v->K[a][b]);
    int64_t *pre = malloc(((size_t)kmax + 1) * sizeof(int64_t));
    if (!pre) {
        vnni_prep_free(v);
        return NULL;
    }
    for (int j = 0; j < VN_L1_FIRST; j++) v->chunk_l1[j] = INT64_MAX; /* not computed */
    for (int a = 0; a < s; a++)
        for (int b = 0; b < s; b++) {
            int32_t *dst = v->wpack + v->wphase[a][b];
            const int K = v->K[a][b];
            for (int ob = 0; ob < v->nob; ob++)
                for (int c = 0, k = 0; c < v->cp; c++)
                    for (int ty = 0; ty < v->py.n[a]; ty++)
                        for (int tx = 0; tx < v->px.n[b]; tx++, k++)
                            for (int n = 0; n < v->nb; n++) {
                                const int o = ob * v->nb + n;
                                int w0 = 0, w1 = 0;
                                if (o < l->cout) {
                                    const size_t base = ((size_t)o * cin + 2 * c) * kh * kw +
                                                        (size_t)v->py.k[a][ty] * kw + v->px.k[b][tx];
                                    w0 = l->weight[base];
                                    if (2 * c + 1 < cin) w1 = l->weight[base + (size_t)kh * kw];
                                }
                                dst[((size_t)ob * K + k) * v->nb + n] = (int32_t)pair16(w0, w1);
                            }
            for (int ob = 0; ob < v->nob; ob++)
                for (int n = 0; n < v->nb; n++) {
                    /* pre[k]: the sum of |w| over this channel's steps before k */
                    pre[0] = 0;
                    for (int k = 0; k < K; k++) {
                        const uint32_t pr = (uint32_t)dst[((size_t)ob * K + k) * v->nb + n];
                        const int a0 = (int16_t)(pr & 0xffff), a1 = (int16_t)(pr >> 16);
                        pre[k + 1] = pre[k] + (a0 < 0 ? -a0 : a0) + (a1 < 0 ? -a1 : a1);
                    }
                    for (int j = VN_L1_FIRST; j < VN_L1_STEPS; j++) {
                        const int P = j < VN_L1_STEPS - 1 ? 1 << j : K;
                        for (int k0 = 0; k0 < K; k0 += P) {
                            const int64_t sum = pre[imin(K, k0 + P)] - pre[k0];
                            if (sum > v->chunk_l1[j]) v->chunk_l1[j] = sum;
                        }
                    }
                }
        }
    free(pre);
    return v;
}

static int vnni_prep_matches(const VnniPrep *v, const WaiLayer *l, int transposed)
{
    const void *tag = NULL;
    if (v) memcpy(&tag, v, sizeof(tag)); /* another set's preparation may be here */
#ifdef WAI_PLANTED_FAULT_FAST_PREP_STALE
    return v && tag == &vnni_owner && v->cin == l->cin && /* planted: weights not compared */
#else
    return v && tag == &vnni_owner && v->weight == l->weight && v->cin == l->cin &&
#endif
           v->cout == l->cout && v->kh == l->kh && v->kw == l->kw && v->stride == l->stride &&
           v->pad == l->pad && v->transposed == transposed;
}

static void *vnni_prep_layer(const WaiLayer *l)
{
    if (l->type != WAI_LAYER_CONV && l->type != WAI_LAYER_CONVT) return NULL;
    return vnni_prep_make(l, l->type == WAI_LAYER_CONVT);
}

/* res[n][t] (= or +=) sum over the K steps of the pairs at wp[k][n] and xb[off[k] + t], for
 * t < MB * 16, in chunks of at most P steps, each summed in int32 and widened to int64. */
#define DEF_VTILE(NAME, NB, MB)                                                               \
static void NAME(const int32_t *restrict wp, const ptrdiff_t *restrict off, int K, int P,     \
                 const int32_t *restrict xb, int64_t *restrict res)                           \
{                                                                                             \
    const int TW = MB * 16;                                                                   \
    for (int k0 = 0; k0 < K; k0 += P) {                                                       \
        const int k1 = K - k0 < P ? K : k0 + P;                                               \
        __m512i acc[NB][MB];                                                                  \
        UNROLL for (int n = 0; n < NB; n++)                                                   \
            UNROLL for (int b = 0; b < MB; b++) acc[n][b] = _mm512_setzero_si512();           \
        for (int k = k0; k < k1; k++) {                                                       \
            const int32_t *x = xb + off[k];                                                   \
            const int32_t *w = wp + (size_t)k * NB;                                           \
            __m512i xv[MB];                                                                   \
            UNROLL for (int b = 0; b < MB; b++) xv[b] = _mm512_loadu_si512(x + b * 16);       \
            UNROLL for (int n = 0; n < NB; n++) {                                             \
                const __m512i wn = _mm512_set1_epi32(w[n]);                                   \
                UNROLL for (int b = 0; b < MB; b++)                                           \
                    acc[n][b] = _mm512_dpwssd_epi32(acc[n][b], xv[b], wn);                    \
            }                                                                                 \
        }                                                                                     \
        UNROLL for (int n = 0; n < NB; n++)                                                   \
            UNROLL for (int b = 0; b < MB; b++) {                                             \
                int64_t *r = res + (size_t)n * TW + b * 16;                                   \
                __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc[n][b]));        \
                __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc[n][b], 1));  \
                if (k0) {                                                                     \
                    lo = _mm512_add_epi64(lo, _mm512_loadu_si512(r));                         \
                    hi = _mm512_add_epi64(hi, _mm512_loadu_si512(r + 8));                     \
                }                                                                             \
                _mm512_storeu_si512(r, lo);                                                   \
                _mm512_storeu_si512(r + 8, hi);                                               \
            }                                                                                 \
    }                                                                                         \
    if (K <= 0)                                                                               \
        for (int e = 0; e < NB * TW; e++) res[e] = 0;                                         \
}

DEF_VTILE(vtile_main, VN_NB, VN_MB)
DEF_VTILE(vtile_small, VN_NB_SMALL, VN_MB_SMALL)

typedef void (*VTileFn)(const int32_t *, const ptrdiff_t *, int, int, const int32_t *, int64_t *);

/* An activation past the int16 range in the outlier form: its channel, its place in the
 * packed chunk (row and column), and e = x - clamp(x, -32767, 32767). */
typedef struct VnOutlier {
    int32_t ch, row, col, e;
} VnOutlier;

typedef struct VnniCall {
    const VnniPrep *v;
    const WaiLayer *l;
    int tw, wpk, prmax, halves, S;
    int orow0, orow1;        /* outlier form: input rows [orow0, orow1) are the call's */
    size_t ocap;             /* outlier form (> 0): the call's outliers, at most */
    VnOutlier *ol, *osort;   /* a chunk's outliers, as found and by bucket */
    int *obk;                /* bucket starts: bucket = packed row * nbk + column / tw */
    int nbk;
    int P[2];                /* chunk length (vpdpwssd steps) of each half */
    size_t cs;               /* packed channel-pair stride (int32 pairs) */
    VTileFn tile;
    ptrdiff_t *off[MAXS][MAXS];
    int32_t *xpack[2];       /* halves: [0] = x or hi, [1] = lo */
    int64_t *res[2];
} VnniCall;

static void vnni_call_free(VnniCall *c)
{
    free(c->ol);
    free(c->osort);
    free(c->obk);
    for (int h = 0; h < 2; h++) {
        free(c->xpack[h]);
        free(c->res[h]);
    }
    for (int a = 0; a < MAXS; a++)
        for (int b = 0; b < MAXS; b++) free(c->off[a][b]);
}

static int vnni_offsets(VnniCall *c)
{
    const VnniPrep *v = c->v;
    for (int a = 0; a < v->py.s; a++)
        for (int b = 0; b < v->px.s; b++) {
            const int K = v->K[a][b];
            ptrdiff_t *off = c->off[a][b] = malloc((size_t)(K ? K : 1) * sizeof(ptrdiff_t));
            if (!off) return -1;
            for (int i = 0, k = 0; i < v->cp; i++)
                for (int ty = 0; ty < v->py.n[a]; ty++)
                    for (int tx = 0; tx < v->px.n[b]; tx++, k++)
                        off[k] = (ptrdiff_t)(i * c->cs) +
                                 (ptrdiff_t)(v->py.d[a][ty] - v->py.dmin) * c->wpk +
                                 (v->px.d[b][tx] - v->px.dmin);
        }
    return 0;
}

/* The halves of one activation (halves == 1: x itself, |x| <= 32767 checked by the caller). */
static inline void split_x(int32_t x, int halves, int S, int *h0, int *h1)
{
    if (halves == 1) {
        *h0 = x;
        *h1 = 0;
    } else {
        const int32_t hi = (int32_t)(((int64_t)x + ((int64_t)1 << (S - 1))) >> S);
        *h0 = hi;
        *h1 = (int)((int64_t)x - (int64_t)hi * ((int64_t)1 << S)); /* in [-2^(S-1), 2^(S-1)) */
    }
}

/* x clamped to the outlier form's int16 range [-32767, 32767] */
static inline int32_t clamp16(int32_t x) { return x > 32767 ? 32767 : x < -32767 ? -32767 : x; }

/* Packs input rows [rlo, rlo + prmax) and columns [cbase, cbase + wpk) as channel pairs of
 * each half, zeros outside the tensor (and for the missing channel of an odd count). */
static void vnni_pack_input(const VnniCall *c, const int32_t *in, int ih, int iw, int rlo,
                            int cbase)
{
    size_t nol = 0; /* the chunk's outliers */
    const int cin = c->l->cin;
#ifdef WAI_PLANTED_FAULT_FAST_EDGE
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk - 1);
#else
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk);
#endif
    for (int i = 0; i < c->v->cp; i++)
        for (int r = 0; r < c->prmax; r++) {
            const size_t at = i * c->cs + (size_t)r * c->wpk;
            int32_t *d0 = c->xpack[0] + at, *d1 = c->halves > 1 ? c->xpack[1] + at : NULL;
            const int iy = rlo + r;
            if (iy < 0 || iy >= ih || x0 >= x1) {
                memset(d0, 0, (size_t)c->wpk * sizeof(int32_t));
                if (d1) memset(d1, 0, (size_t)c->wpk * sizeof(int32_t));
                continue;
            }
            const int32_t *s0 = in + ((size_t)(2 * i) * ih + iy) * iw;
            const int32_t *s1 = 2 * i + 1 < cin ? in + ((size_t)(2 * i + 1) * ih + iy) * iw : NULL;
            int p = 0;
            for (; p < x0 - cbase; p++) {
                d0[p] = 0;
                if (d1) d1[p] = 0;
            }
            if (c->ocap) {
                /* clamped, then (rarely) the outliers, kept for the call's rows only (the
                 * tiles read no others) */
                const int p0 = p;
                int32_t any = 0;
                if (s1)
                    for (int x = x0; x < x1; x++, p++) {
                        const int32_t a = s0[x], b = s1[x], ca = clamp16(a), cb = clamp16(b);
                        d0[p] = (int32_t)pair16(ca, cb);
                        any |= (a ^ ca) | (b ^ cb);
                    }
                else
                    for (int x = x0; x < x1; x++, p++) {
                        const int32_t a = s0[x], ca = clamp16(a);
                        d0[p] = (int32_t)pair16(ca, 0);
                        any |= a ^ ca;
                    }
                if (any && iy >= c->orow0 && iy < c->orow1)
                    for (int x = x0, q = p0; x < x1; x++, q++)
                        for (int h = 0; h < 2; h++) {
                            const int32_t a = h ? (s1 ? s1[x] : 0) : s0[x], ca = clamp16(a);
                            if (a != ca) c->ol[nol++] = (VnOutlier){ 2 * i + h, r, q, a - ca };
                        }
            } else if (c->halves == 1) {
                if (s1)
                    for (int x = x0; x < x1; x++, p++) d0[p] = (int32_t)pair16(s0[x], s1[x]);
                else
                    for (int x = x0; x < x1; x++, p++) d0[p] = (int32_t)pair16(s0[x], 0);
            } else {
                for (int x = x0; x < x1; x++, p++) {
                    int a0, a1, b0 = 0, b1 = 0;
                    split_x(s0[x], 2, c->S, &a0, &a1);
                    if (s1) split_x(s1[x], 2, c->S, &b0, &b1);
                    d0[p] = (int32_t)pair16(a0, b0);
                    d1[p] = (int32_t)pair16(a1, b1);
                }
            }
            for (; p < c->wpk; p++) {
                d0[p] = 0;
                if (d1) d1[p] = 0;
            }
        }
    if (c->ocap) { /* the chunk's outliers by bucket (a counting sort) */
        const int nbuck = c->prmax * c->nbk;
        for (int b = 0; b <= nbuck; b++) c->obk[b] = 0;
        for (size_t e = 0; e < nol; e++) c->obk[c->ol[e].row * c->nbk + c->ol[e].col / c->tw + 1]++;
        for (int b = 0; b < nbuck; b++) c->obk[b + 1] += c->obk[b];
        for (size_t e = 0; e < nol; e++) {
            const VnOutlier *o = &c->ol[e];
            c->osort[c->obk[o->row * c->nbk + o->col / c->tw]++] = *o;
        }
        for (int b = nbuck; b > 0; b--) c->obk[b] = c->obk[b - 1]; /* back to the starts */
        c->obk[0] = 0;
    }
}

/* The common case of vnni_pack_input, in the same pass as the bound: packs input rows
 * [rlo, rlo + prmax) and columns [cbase, cbase + wpk) as channel pairs of x clamped to
 * [-32767, 32767] (zeros outside the tensor), and returns max |x| over the elements it read.
 * Where that is <= 32767 the clamp changed nothing and this is the one-half packing; else the
 * caller packs the chunk again in the form its bound allows (vnni_conv). */
static int64_t vnni_pack_clamped(const VnniCall *c, const int32_t *in, int ih, int iw, int rlo,
                                 int cbase)
{
    const int cin = c->l->cin;
#ifdef WAI_PLANTED_FAULT_FAST_EDGE
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk - 1); /* planted (as vnni_pack_input) */
#else
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk);
#endif
    const __m512i c16 = _mm512_set1_epi32(32767), m16 = _mm512_set1_epi32(-32767);
    const __m512i lo16 = _mm512_set1_epi32(0xffff);
    __m512i vmin = _mm512_setzero_si512(), vmax = _mm512_setzero_si512();
    for (int i = 0; i < c->v->cp; i++)
        for (int r = 0; r < c->prmax; r++) {
            int32_t *d0 = c->xpack[0] + i * c->cs + (size_t)r * c->wpk;
            const int iy = rlo + r;
            if (iy < 0 || iy >= ih || x0 >= x1) {
                memset(d0, 0, (size_t)c->wpk * sizeof(int32_t));
                continue;
            }
            const int32_t *s0 = in + ((size_t)(2 * i) * ih + iy) * iw;
            const int32_t *s1 = 2 * i + 1 < cin ? in + ((size_t)(2 * i + 1) * ih + iy) * iw : NULL;
            /* the rows of a chunk are short streams in many planes, more than the hardware
             * prefetcher follows: ask for the same row of the pair VN_PREFETCH ahead */
            if (2 * (i + VN_PREFETCH) + 1 < cin)
                for (int x = x0; x < x1; x += 16) {
                    _mm_prefetch((const char *)(s0 + (size_t)2 * VN_PREFETCH * ih * iw + x), _MM_HINT_T0);
                    _mm_prefetch((const char *)(s0 + (size_t)(2 * VN_PREFETCH + 1) * ih * iw + x), _MM_HINT_T0);
                }
            memset(d0, 0, (size_t)(x0 - cbase) * sizeof(int32_t));
            for (int x = x0; x < x1; x += 16) {
                const __mmask16 mk = (__mmask16)(x1 - x >= 16 ? 0xffffu : (1u << (x1 - x)) - 1);
                const __m512i a = _mm512_maskz_loadu_epi32(mk, s0 + x);
                const __m512i b = s1 ? _mm512_maskz_loadu_epi32(mk, s1 + x) : _mm512_setzero_si512();
                vmin = _mm512_min_epi32(vmin, _mm512_min_epi32(a, b));
                vmax = _mm512_max_epi32(vmax, _mm512_max_epi32(a, b));
                const __m512i ca = _mm512_min_epi32(_mm512_max_epi32(a, m16), c16);
                const __m512i cb = _mm512_min_epi32(_mm512_max_epi32(b, m16), c16);
                _mm512_mask_storeu_epi32(d0 + (x - cbase), mk,
                                         _mm512_or_si512(_mm512_and_si512(ca, lo16), _mm512_slli_epi32(cb, 16)));
            }
            memset(d0 + (x1 - cbase), 0, (size_t)(cbase + c->wpk - x1) * sizeof(int32_t));
        }
    const int64_t lo = _mm512_reduce_min_epi32(vmin), hi = _mm512_reduce_max_epi32(vmax);
    return -lo > hi ? -lo : hi;
}

/* Over input rows [ra, rb) and columns [x0, x1) of every channel: max |x|, and in *count the
 * elements with |x| > 32767 (the outlier form's). */
static int64_t region_max(const int32_t *in, int cin, int ih, int iw, int ra, int rb, int x0,
                          int x1, size_t *count)
{
    int64_t m = 0;
    size_t n = 0;
    for (int i = 0; i < cin; i++)
        for (int y = ra; y < rb; y++) {
            const int32_t *p = in + ((size_t)i * ih + y) * iw;
            for (int x = x0; x < x1; x++) {
                const int64_t a = p[x] < 0 ? -(int64_t)p[x] : p[x];
                m = a > m ? a : m;
                n += a > 32767;
            }
        }
    *count = n;
    return m;
}

/* Outlier form: adds e * w to res[n][t] for every outlier e of the packed chunk with a term
 * in output m0 + t (t < nt) of the tile's row (phase py, input row qy) and phase px, the tap's
 * weight w of output channel ob * nb + n, as the tile's step k = (pair, ty, tx) read it. */
static void vnni_outliers(const VnniCall *c, const int32_t *wp, int py, int px, int qy, int rlo,
                          int m0c, int nt, int nn, int64_t *res)
{
    const VnniPrep *v = c->v;
    const int ny = v->py.n[py], nx = v->px.n[px], nb = v->nb, tw = c->tw;
    /* the tile reads packed columns [m0c, m0c + nt + span) */
    const int span = v->px.dmax - v->px.dmin;
    const int b0 = m0c / tw, b1 = imin(c->nbk - 1, (m0c + nt - 1 + span) / tw);
    for (int ty = 0; ty < ny; ty++) {
        const int row = qy + v->py.d[py][ty] - rlo;
        if (row < 0 || row >= c->prmax) continue;
        for (int e = c->obk[row * c->nbk + b0]; e < c->obk[row * c->nbk + b1 + 1]; e++) {
            const VnOutlier *o = &c->osort[e];
            const int pair = o->ch >> 1, odd = o->ch & 1;
            for (int tx = 0; tx < nx; tx++) {
#ifdef WAI_PLANTED_FAULT_FAST_VNNI_OUTLIER
                const int t = o->col - (v->px.d[px][tx] - v->px.dmin) - m0c + (tx == nx - 1); /* planted */
#else
                const int t = o->col - (v->px.d[px][tx] - v->px.dmin) - m0c;
#endif
                if (t < 0 || t >= nt) continue;
                const int32_t *w = wp + ((size_t)(pair * ny + ty) * nx + tx) * nb;
                for (int n = 0; n < nn; n++) {
                    const int32_t pr = w[n];
                    const int wv = odd ? (int16_t)((uint32_t)pr >> 16) : (int16_t)(pr & 0xffff);
                    res[(size_t)n * tw + t] += (int64_t)wv * o->e;
                }
            }
        }
    }
}

/* Outputs t < nt of a tile row, dst[t * s] for s = 1 or 2: clamp(rshr(r0[t] 2^S + r1[t] + b, sh))
 * (r1 NULL: r0[t] + b), eight at a time in int64 lanes. The same integers as the scalar
 * form: the sum, with rshr's rounding term added to b first, is the same exact int64 sum
 * (|r0 2^S + r1| < 2^62, |b| <= BIAS_MAX); the shift is arithmetic, min and max are the
 * clamp, and the clamped value fits int32. res rows hold tw >= nt rounded up to 16 values,
 * so the last group's loads stay inside them; its stores are masked to the outputs t < nt
 * (for s = 2 the even lanes of 16: the odd ones belong to the other column phase). */
static inline void vn_store(const int64_t *r0, const int64_t *r1, int S, int64_t b, unsigned sh,
                            int32_t *dst, int nt, int s)
{
    const __m512i vb = _mm512_set1_epi64(b + (sh ? (int64_t)1 << (sh - 1) : 0));
    const __m128i vsh = _mm_cvtsi32_si128((int)sh), vS = _mm_cvtsi32_si128(r1 ? S : 0);
    const __m512i vlo = _mm512_set1_epi64(WAI_ACT_MIN), vhi = _mm512_set1_epi64(WAI_ACT_MAX);
    for (int t = 0; t < nt; t += 8) {
        __m512i v = _mm512_loadu_si512(r0 + t);
        if (r1) v = _mm512_add_epi64(_mm512_sll_epi64(v, vS), _mm512_loadu_si512(r1 + t));
#ifdef WAI_PLANTED_FAULT_FAST_STORE_ROUND
        v = _mm512_sra_epi64(_mm512_add_epi64(v, _mm512_set1_epi64(b)), vsh); /* planted: no rounding term */
#else
        v = _mm512_sra_epi64(_mm512_add_epi64(v, vb), vsh);
#endif
        const __m256i v32 = _mm512_cvtepi64_epi32(_mm512_min_epi64(_mm512_max_epi64(v, vlo), vhi));
        const int k = nt - t < 8 ? nt - t : 8;
        if (s == 1) {
            _mm256_mask_storeu_epi32(dst + t, (__mmask8)((1u << k) - 1), v32);
        } else {
            const __m512i e = _mm512_maskz_expand_epi32(0x5555, _mm512_castsi256_si512(v32));
            _mm512_mask_storeu_epi32(dst + 2 * t, (__mmask16)(0x5555u & ((1u << (2 * k)) - 1)), e);
        }
    }
}

static void vnni_row(VnniCall *c, int32_t *out, int oh, int ow, int oy, int px, int rlo, int mc0,
                     int m1)
{
    const VnniPrep *v = c->v;
    const WaiLayer *l = c->l;
    const int s = v->py.s, py = oy % s, qy = oy / s;
    const int K = v->K[py][px], nb = v->nb, tw = c->tw;
    const size_t rowoff = (size_t)(qy + v->py.dmin - rlo) * c->wpk;
    const int64_t scale = c->halves > 1 ? (int64_t)1 << c->S : 1;
    for (int ob = 0; ob < v->nob; ob++) {
        const int32_t *wp = v->wpack + v->wphase[py][px] + (size_t)ob * K * nb;
        const int nn = imin(nb, l->cout - ob * nb);
        for (int m0 = mc0; m0 < m1; m0 += tw) {
#ifdef WAI_PLANTED_FAULT_FAST_TAIL
            const int nt = imin(tw, m1 - m0) - (m1 - m0 < tw);
#else
            const int nt = imin(tw, m1 - m0);
#endif
            for (int h = 0; h < c->halves; h++)
                c->tile(wp, c->off[py][px], K, c->P[h], c->xpack[h] + rowoff + (m0 - mc0),
                        c->res[h]);
            if (c->ocap) vnni_outliers(c, wp, py, px, qy, rlo, m0 - mc0, nt, nn, c->res[0]);
            for (int n = 0; n < nn; n++) {
                const int o = ob * nb + n;
                const int64_t *r0 = c->res[0] + (size_t)n * tw;
                const int64_t *r1 = c->halves > 1 ? c->res[1] + (size_t)n * tw : NULL;
                int32_t *dst = out + ((size_t)o * oh + oy) * ow + (size_t)m0 * s + px;
                if (s <= 2)
                    vn_store(r0, r1, c->S, l->bias[o], l->shift[o], dst, nt, s);
                else if (r1)
                    for (int t = 0; t < nt; t++)
                        dst[(size_t)t * s] =
                            wai_clamp_act(wai_rshr(r0[t] * scale + r1[t] + l->bias[o], l->shift[o]));
                else
                    for (int t = 0; t < nt; t++)
                        dst[(size_t)t * s] = wai_clamp_act(wai_rshr(r0[t] + l->bias[o], l->shift[o]));
            }
        }
    }
}

/* Chunk length in vpdpwssd steps for operands bounded by wmax and hmax (the first bound at
 * the top of the file). */
static int chunk_steps_max(int64_t wmax, int64_t hmax)
{
    const int64_t m = wmax * hmax; /* <= 2^15 * 2^15 */
    int64_t P = m ? (INT32_MAX / m) / 2 : INT32_MAX / 2;
#ifdef WAI_PLANTED_FAULT_FAST_VNNI_CHUNK
    P += 1; /* planted: one step too many per chunk */
#endif
    return P > INT32_MAX / 2 ? INT32_MAX / 2 : (int)P;
}

/* The same for a prepared conv layer: the larger of the two bounds. */
static int chunk_steps(const VnniPrep *v, int64_t hmax)
{
    int64_t P = chunk_steps_max(v->wmax, hmax);
    for (int j = VN_L1_STEPS - 1; j >= 0; j--)
#ifdef WAI_PLANTED_FAULT_FAST_VNNI_L1
        if (v->chunk_l1[j] <= (hmax ? (int64_t)INT32_MAX * 2 / hmax : INT64_MAX - 1)) { /* planted: twice the int32 range */
#else
        /* L * hmax <= INT32_MAX, without overflow (INT64_MAX: not computed) */
        if (v->chunk_l1[j] <= (hmax ? INT32_MAX / hmax : INT64_MAX - 1)) {
#endif
            const int64_t Pj = j == VN_L1_STEPS - 1 ? INT32_MAX / 2 : (int64_t)1 << j;
            P = Pj > P ? Pj : P;
            break;
        }
    return P > INT32_MAX / 2 ? INT32_MAX / 2 : (int)P;
}

/* The activations' form for operands of at most xmax in magnitude: the split shift S and the
 * halves' bounds (the top of the file), and which forms fit int16. It decides speed only; the
 * integers are exact in every form. */
typedef struct VnForm {
    int64_t xmax, hi_max, lo_max;
    int S, one_ok, two_ok;
} VnForm;

/* The halves for operands of at most xmax (0 <= xmax < 2^62) in magnitude: S, the halves'
 * bounds and which forms fit int16 (the top of the file). */
static void vn_halves(VnForm *f, int64_t xmax)
{
    f->xmax = xmax;
    int bits = 0;
    while (bits < 62 && ((int64_t)1 << bits) <= xmax) bits++; /* xmax < 2^bits */
    f->S = imax(1, imin(15, (bits + 1) / 2));
    f->hi_max = (xmax >> f->S) + 1;
    f->lo_max = (int64_t)1 << (f->S - 1);
    f->two_ok = f->hi_max <= 32767;
    f->one_ok = xmax <= 32767;
}

/* Returns 0 when done, -1 when the caller must take another path. */
static int vnni_conv(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out, int oh,
                     int ow, int oy0, int oy1, int transposed)
{
    if (oy0 >= oy1) return 0;
    for (int o = 0; o < l->cout; o++)
        if (l->bias[o] > BIAS_MAX || l->bias[o] < -BIAS_MAX) return -1;
    VnniCall c;
    memset(&c, 0, sizeof(c));
    VnniPrep *own = NULL;
    const VnniPrep *v = l->prep;
    if (!vnni_prep_matches(v, l, transposed)) {
        if (!(own = vnni_prep_make(l, transposed))) return -1;
        v = own;
    }
    c.v = v;
    c.l = l;
    const int s = v->py.s;
    const int small = v->nb == VN_NB_SMALL;
    c.tw = (small ? VN_MB_SMALL : VN_MB) * 16;
    c.tile = small ? vtile_small : vtile_main;
    c.wpk = VN_COLS + v->px.dmax - v->px.dmin;
    c.prmax = (VN_ROWS - 1) / s + 2 + v->py.dmax - v->py.dmin;
    c.cs = (size_t)c.prmax * c.wpk;

    /* The activations' form is decided per packed chunk, from the chunk's own bound, found in
     * the packing pass (vnni_pack_clamped): a pass of its own over the call's rows first cost
     * the 3-output last layer, which reads 64-128 channels, about a fifth of its time (session
     * 28). Chunks only repartition the outputs; every form is exact (the top of the file). */
    const int r0 = oy0 / s + v->py.dmin, r1 = (oy1 - 1) / s + v->py.dmax + 1;
    c.orow0 = imax(r0, 0); /* the input rows the tiles read */
    c.orow1 = imin(r1, ih);
    int r = -1;
    if (vnni_offsets(&c) < 0) goto end;
    for (int h = 0; h < 2; h++) {
        /* + 16 pairs: a tile's last vector may read past a row's tail (ignored columns) */
        if (!(c.xpack[h] = malloc(((size_t)v->cp * c.cs + 64) * sizeof(int32_t)))) goto end;
        memset(c.xpack[h] + (size_t)v->cp * c.cs, 0, 64 * sizeof(int32_t));
        if (!(c.res[h] = malloc((size_t)v->nb * c.tw * sizeof(int64_t)))) goto end;
    }
    /* the outlier form's lists: at most 1 in VN_OUTLIER_DIV of a chunk's elements */
    const size_t ocap = (size_t)l->cin * c.prmax * c.wpk / VN_OUTLIER_DIV + 1;
    c.nbk = (c.wpk + c.tw - 1) / c.tw;
    if (!(c.ol = malloc(ocap * sizeof(*c.ol))) || !(c.osort = malloc(ocap * sizeof(*c.osort))) ||
        !(c.obk = malloc(((size_t)c.prmax * c.nbk + 1) * sizeof(*c.obk))))
        goto end;

    const int mtot = (ow + s - 1) / s;
    for (int ya = oy0; ya < oy1; ya += VN_ROWS) {
        const int yb = imin(oy1, ya + VN_ROWS);
        const int rlo = ya / s + v->py.dmin;
        int declined = 0;
        for (int mc0 = 0; mc0 < mtot; mc0 += VN_COLS) {
            const int cbase = mc0 + v->px.dmin;
            const int64_t cmax = vnni_pack_clamped(&c, in, ih, iw, rlo, cbase);
            c.halves = 1;
            c.ocap = 0;
            if (cmax <= 32767) {
                c.P[0] = chunk_steps(v, cmax);
            } else {
                /* the bound over what the tiles read: the call's rows of the chunk */
                const int ra = imax(rlo, c.orow0), rb = imin(rlo + c.prmax, c.orow1);
                const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c.wpk);
                size_t nout = 0;
                VnForm f;
                vn_halves(&f, ra < rb && x0 < x1 ? region_max(in, l->cin, ih, iw, ra, rb, x0, x1,
                                                              &nout) : 0);
                if (f.one_ok) { /* only rows the tiles do not read pass 32767 */
                    c.P[0] = chunk_steps(v, f.xmax);
                } else if (nout * VN_OUTLIER_DIV <= (size_t)l->cin * (size_t)(rb - ra) * (size_t)(x1 - x0)) {
                    c.P[0] = chunk_steps(v, 32767); /* the outlier form */
                    c.ocap = nout;
                    vnni_pack_input(&c, in, ih, iw, rlo, cbase);
                } else if (f.two_ok) {
                    c.halves = 2;
                    c.S = f.S;
                    c.P[0] = chunk_steps(v, f.hi_max);
                    c.P[1] = chunk_steps(v, f.lo_max);
                    vnni_pack_input(&c, in, ih, iw, rlo, cbase);
                } else {
                    declined = 1; /* |hi| would pass int16: the row chunk goes to the double path */
                    break;
                }
            }
            if (c.P[0] < 1 || (c.halves > 1 && c.P[1] < 1)) {
                declined = 1;
                break;
            }
            for (int oy = ya; oy < yb; oy++)
                for (int px = 0; px < s; px++) {
                    const int mpx = px < ow ? (ow - px + s - 1) / s : 0;
                    const int m1 = imin(mpx, mc0 + VN_COLS);
                    if (mc0 < m1) vnni_row(&c, out, oh, ow, oy, px, rlo, mc0, m1);
                }
        }
        if (declined) { /* its outputs again, all of them, exactly (the same integers) */
            if (transposed) convt_k(l, in, ih, iw, out, oh, ow, ya, yb);
            else conv_k(l, in, ih, iw, out, oh, ow, ya, yb);
        }
    }
    r = 0;
end:
    vnni_call_free(&c);
    vnni_prep_free(own);
    return r;
}

static void vnni_conv_k(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out,
                        int oh, int ow, int oy0, int oy1)
{
    if (vnni_conv(l, in, ih, iw, out, oh, ow, oy0, oy1, 0) < 0)
        conv_k(l, in, ih, iw, out, oh, ow, oy0, oy1);
}

static void vnni_convt_k(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out,
                         int oh, int ow, int oy0, int oy1)
{
    if (vnni_conv(l, in, ih, iw, out, oh, ow, oy0, oy1, 1) < 0)
        convt_k(l, in, ih, iw, out, oh, ow, oy0, oy1);
}

/* IGDN (spec 5.5): sum_j gamma[i][j] * x2[j] is a 1x1 convolution of x2 with weights gamma,
 * done as above: gamma must fit int16 (max gamma <= 32767, checked on the layer) and x2 is
 * one half (max x2 <= 32767) or two (hi bound <= 32767), max x2 from the call's max |x|;
 * chunks bounded by max gamma * max |half|. The rest (beta, isqrt, rshr, clamp) as in the
 * double path, on the exact int64 sum. */
#define VN_IGDN_CHUNK 256 /* positions per chunk (a multiple of both tile widths) */

static int vnni_igdn(const WaiLayer *l, int32_t *x, int h, int w, int y0, int y1)
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
    /* a sparse gamma: dsp_tmpl.c's sparse double form does fewer steps than any dense tile */
    if (gmax > 32767 || nnz * 2 <= (size_t)C * C) return -1;
    for (int i = 0; i < C; i++)
        if (l->beta[i] < 0 || l->beta[i] > BIAS_MAX) return -1;
    const size_t plane = (size_t)h * w;
    const int64_t amax = max_abs_rows(x, C, h, w, y0, y1);
    VnForm f;
    vn_halves(&f, (amax * amax + (1 << 11)) >> 12); /* max x2; amax <= 2^31 */
    const int64_t x2max = f.xmax, hi_max = f.hi_max, lo_max = f.lo_max;
    const int S = f.S, one_ok = f.one_ok, two_ok = f.two_ok;
    if (!one_ok && !two_ok) return -1;
    int halves, P[2] = { 0, 0 };
    const int P1 = chunk_steps_max(gmax, x2max), Phi = chunk_steps_max(gmax, hi_max),
              Plo = chunk_steps_max(gmax, lo_max);
    if (one_ok && (!two_ok || 1.0 + (double)VN_WIDEN_COST / P1 <=
                                  2.0 + (double)VN_WIDEN_COST / Phi + (double)VN_WIDEN_COST / Plo)) {
        halves = 1;
        P[0] = P1;
    } else {
        halves = 2;
        P[0] = Phi;
        P[1] = Plo;
    }
    if (P[0] < 1 || (halves > 1 && P[1] < 1)) return -1;

    const int small = C <= VN_NB_SMALL;
    const int nb = small ? VN_NB_SMALL : VN_NB, tw = (small ? VN_MB_SMALL : VN_MB) * 16;
    const VTileFn tile = small ? vtile_small : vtile_main;
    const int nob = (C + nb - 1) / nb, cp = (C + 1) / 2, TP = VN_IGDN_CHUNK;
    const unsigned shift = 6 + (unsigned)l->gamma_shift / 2;
    const int64_t scale = halves > 1 ? (int64_t)1 << S : 1;
    int32_t *gp = malloc((size_t)nob * cp * nb * sizeof(int32_t));
    int32_t *xp0 = malloc((size_t)cp * TP * sizeof(int32_t));
    int32_t *xp1 = halves > 1 ? malloc((size_t)cp * TP * sizeof(int32_t)) : NULL;
    int32_t *xc = malloc((size_t)C * TP * sizeof(int32_t));
    int64_t *res0 = malloc((size_t)nb * tw * sizeof(int64_t));
    int64_t *res1 = halves > 1 ? malloc((size_t)nb * tw * sizeof(int64_t)) : NULL;
    ptrdiff_t *off = malloc((size_t)cp * sizeof(ptrdiff_t));
    int r = -1;
    if (!gp || !xp0 || !xc || !res0 || !off || (halves > 1 && (!xp1 || !res1))) goto end;
    for (int ob = 0; ob < nob; ob++)
        for (int j = 0; j < cp; j++)
            for (int n = 0; n < nb; n++) {
                const int i = ob * nb + n;
                int g0 = 0, g1 = 0;
                if (i < C) {
                    g0 = l->gamma[(size_t)i * C + 2 * j];
                    if (2 * j + 1 < C) g1 = l->gamma[(size_t)i * C + 2 * j + 1];
                }
                gp[((size_t)ob * cp + j) * nb + n] = (int32_t)pair16(g0, g1);
            }
    for (int j = 0; j < cp; j++) off[j] = (ptrdiff_t)j * TP;

    const size_t p0 = (size_t)y0 * w, p1 = (size_t)y1 * w;
    for (size_t pa = p0; pa < p1; pa += TP) {
        const int np = (int)(p1 - pa < (size_t)TP ? p1 - pa : (size_t)TP);
        for (int j = 0; j < C; j++) {
            const int32_t *src = x + j * plane + pa;
            int32_t *cpy = xc + (size_t)j * TP;
            for (int t = 0; t < np; t++) cpy[t] = src[t];
        }
        for (int j = 0; j < cp; j++) {
            const int32_t *a = xc + (size_t)(2 * j) * TP;
            const int32_t *b = 2 * j + 1 < C ? xc + (size_t)(2 * j + 1) * TP : NULL;
            int32_t *d0 = xp0 + (size_t)j * TP, *d1 = halves > 1 ? xp1 + (size_t)j * TP : NULL;
            int t = 0;
            for (; t < np; t++) {
                /* x2 <= x2max: fits int32 (one half: <= 32767; two: < 2^30) */
                const int32_t qa = (int32_t)(((int64_t)a[t] * a[t] + (1 << 11)) >> 12);
                const int32_t qb = b ? (int32_t)(((int64_t)b[t] * b[t] + (1 << 11)) >> 12) : 0;
                int a0, a1, b0, b1;
                split_x(qa, halves, S, &a0, &a1);
                split_x(qb, halves, S, &b0, &b1);
                d0[t] = (int32_t)pair16(a0, b0);
                if (d1) d1[t] = (int32_t)pair16(a1, b1);
            }
            for (; t < TP; t++) {
                d0[t] = 0;
                if (d1) d1[t] = 0;
            }
        }
        for (int ob = 0; ob < nob; ob++) {
            const int nn = imin(nb, C - ob * nb);
            const int32_t *wp = gp + (size_t)ob * cp * nb;
            for (int t0 = 0; t0 < np; t0 += tw) {
                tile(wp, off, cp, P[0], xp0 + t0, res0);
                if (halves > 1) tile(wp, off, cp, P[1], xp1 + t0, res1);
                const int nt = imin(tw, np - t0);
                for (int n = 0; n < nn; n++) {
                    const int i = ob * nb + n;
                    int32_t *xi = x + i * plane + pa + t0;
                    const int32_t *ci = xc + (size_t)i * TP + t0; /* the same values as xi */
                    const int64_t *r0 = res0 + (size_t)n * tw;
                    const int64_t beta = l->beta[i];
                    if (halves > 1) {
                        const int64_t *r1 = res1 + (size_t)n * tw;
                        for (int t = 0; t < nt; t++) {
                            const int64_t rt = isqrt_small(r0[t] * scale + r1[t] + beta);
                            xi[t] = wai_clamp_act(wai_rshr(ci[t] * rt, shift));
                        }
                    } else {
                        for (int t = 0; t < nt; t++) {
                            const int64_t rt = isqrt_small(r0[t] + beta);
                            xi[t] = wai_clamp_act(wai_rshr(ci[t] * rt, shift));
                        }
                    }
                }
            }
        }
    }
    r = 0;
end:
    free(gp);
    free(xp0);
    free(xp1);
    free(xc);
    free(res0);
    free(res1);
    free(off);
    return r;
}

static void vnni_igdn_k(const WaiLayer *l, int32_t *x, int h, int w, int y0, int y1)
{
    if (vnni_igdn(l, x, h, w, y0, y1) < 0) igdn_k(l, x, h, w, y0, y1);
}

/* dsp_avx512amx.c includes this file, for its fallbacks, under another name for this one */
#ifndef VNNI_SET_INIT
#define VNNI_SET_INIT wai_dsp_init_avx512vnni
#endif
void VNNI_SET_INIT(WaiDsp *dsp)
{
    vnni_double_init(dsp); /* the fallbacks: the AVX-512 double path */
    dsp->conv = vnni_conv_k;
    dsp->convt = vnni_convt_k;
    dsp->igdn = vnni_igdn_k;
    dsp->prep_layer = vnni_prep_layer;
    dsp->prep_free = vnni_prep_free;
}
