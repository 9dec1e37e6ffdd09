/* AVX-512 with AMX-INT8 set: conv (stride 1) and convT on AMX tiles (16 x 16 int32 sums of
 * int8 products); IGDN and every call this path declines run the AVX-512 VNNI set (included
 * below), which declines in turn to the AVX-512 double path and the reference.
 * Built with the VNNI set's flags and -mamx-tile -mamx-int8; chosen only where cpu.c finds
 * the tiles usable (the CPU has them, the OS saves their state, and Linux grants this process
 * the tile data, arch_prctl ARCH_REQ_XCOMP_PERM).
 *
 * Why the integers are the reference's (spec 5.1). The polyphase form, the tap offsets and the
 * epilogue (bias, rshr, clamp on the int64 sum) are the VNNI set's; only the sums differ:
 *  - The activations' form is decided per packed chunk, from the chunk's elements (its rows
 *    are those its outputs read), in the packing pass itself (amx_pack_input), which writes
 *    the byte planes P1 = (x >> 8) & 255 and P0 = x & 255:
 *     - every x within int16: one half, x itself, as P1 (signed) * 2^8 + P0;
 *     - a few outside it (at most 1 in AMX_OUTLIER_DIV of the chunk's elements): the same
 *       half is then (int16)x, the wrap of x, and x = k * 2^16 + (int16)x for an integer k
 *       (nonzero for those few): each k * 2^16 * w is added to the int64 sums of the outputs
 *       it has a term in, for the same weight and tap (amx_outliers): the same terms, so the
 *       same integer sum;
 *     - else, within the activations' range (max |x| <= WAI_ACT_MAX = 2^23 - 1), two halves,
 *       hi = x >> 8 = P2 (signed, the plane of (x >> 16) & 255, packed only then) * 2^8 + P1
 *       and lo = x & 255 = P0 (lobyte: one byte, so its high-byte products are zero and
 *       skipped), sum w x = 2^8 sum w hi + sum w lo;
 *     - else (beyond the activations' range, which no layer of the graph produces) the row
 *       chunk's outputs are computed again, all of them, by the VNNI set.
 *  - Every weight and half is cut into two bytes: w = wh * 2^8 + wl with wh = w >> 8 in
 *    [-128, 127] and wl = w & 255 in [0, 255] (any int16 w), and likewise the half x:
 *      sum w x = 2^16 sum wh xh + 2^8 (sum wh xl + sum wl xh) + sum wl xl,
 *    an identity of integers: four tile products (tdpbssd, tdpbsud, tdpbusd, tdpbuud) summed
 *    in three int32 tiles.
 *  - No tile sum wraps: a term of the last is at most 255 * 255 = 65,025, of the middle one
 *    at most 128 * 255 * 2 = 65,280 and of the first 128 * 128 in magnitude, and an output has
 *    at most AMX_KMAX = 32,768 terms (the input channels padded to a multiple of 64 with zero
 *    weights, times the phase's taps; a layer with more runs the VNNI set):
 *    32,768 * 65,280 = 2,139,095,040 < 2^31. The three sums are combined in int64, then
 *    the halves: 2^15 terms of at most 2^15 * 2^15, times 2^8, stay below 2^53; the
 *    outliers' terms are below 2^15 * 2^15 * 2^16 each.
 *  - Zero padding (rows and columns outside the input, channels past cin, output channels past
 *    cout) is explicit zeros: terms 0 * w or x * 0. Any order of exact integer additions gives
 *    the same integer.
 * Layout: the input rows a band of output rows reads are packed, a chunk of phase
 * columns at a time, into the byte planes, each row [16-column block]
 * [channel quad][16 columns x 4 channels], one copy per column offset of the taps: a B tile
 * (16 quads = 64 channels x 16 columns) of any tap is then one tileloadd of 1 KiB of
 * consecutive 64-byte lines (a 512-byte quad stride, the first layout, left the tiles about
 * 5 % slower on the largest layers: more scattered lines per load, session 28).
 * The weights are packed once per layer run (prep_layer) into A tiles (16 output channels x
 * 64 input channels) per phase, tap and 64-channel block. */
#include <immintrin.h>
#include <stdint.h>

#include "dsp.h"
#include "dsp_fast.h"

#define VNNI_SET_INIT vnni_set_init
static void vnni_set_init(WaiDsp *dsp);
#include "dsp_avx512vnni.c"

#define AMX_COLS 128   /* phase columns per packed chunk (a multiple of 16) */
#define AMX_ROWS 8     /* output rows per packed row chunk */
#define AMX_KMAX 32768 /* terms per output (the bound above) */
/* The outlier form is taken when at most 1 in AMX_OUTLIER_DIV of a packed chunk's elements
 * lie outside int16 (speed only, never a result): each costs its outputs times the taps in
 * vector steps, two halves cost two more tile products per term. 256 lost to two halves at
 * 12 MP q7 (chunks with about 1 in 700 outside); 2048 and 8192 were alike (session 29). */
#define AMX_OUTLIER_DIV 4096
/* The most bytes a call's packed planes may take (per call, so per worker thread): a larger
 * chunk is narrowed (amx_conv). Speed only: the chunks repartition the outputs. */
#define AMX_SCRATCH_MAX ((size_t)8 << 20)
/* Layers with fewer output channels (the last, 3) fill a 16-row tile poorly: they run the
 * VNNI set's small tile (speed only, never a result). Their phases merged into one tile's
 * rows over the union of the taps ran no faster (session 27): the input's packing, not the
 * products, is their cost. */
#define AMX_MIN_COUT 8

static const char amx_owner; /* tags this set's preparations */
typedef struct AmxPrep {
    const void *owner; /* first, as in every preparation (dsp_tmpl.c) */
    /* the layer this was made from (a stale or foreign preparation is ignored) */
    const int16_t *weight;
    int cin, cout, kh, kw, stride, pad, transposed;
    Phases py, px;
    int nob, ncb;                /* 16-channel output blocks, 64-channel input blocks */
    size_t wphase[MAXS][MAXS];   /* first A tile of each phase */
    int8_t *wh, *wl;             /* A tiles, per phase [ob][ty][tx][cb], 16 x 64 bytes each */
    int16_t *wt;                 /* the same weights per A tile as [64 channels][16 outputs]:
                                  * the outlier form's (amx_outliers) */
    VnniPrep *vn;                /* the VNNI set's preparation, for the calls declined here */
} AmxPrep;

/* The tile configuration: palette 1, tiles 0-2 the sums (16 x 16 int32), 3-4 the weights'
 * bytes (A: 16 x 64), 5-6 the input's bytes (B: 16 quads x 16 columns). */
typedef struct AmxTileCfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} AmxTileCfg;

static const AmxTileCfg amx_cfg = {
    .palette = 1,
    .colsb = { 64, 64, 64, 64, 64, 64, 64 },
    .rows = { 16, 16, 16, 16, 16, 16, 16 },
};

/* Whether this path takes the layer (the same gates as the VNNI set's, and the bound). */
static int amx_takes(const WaiLayer *l, int transposed)
{
    const int s = transposed ? l->stride : 1;
    if ((!transposed && l->stride != 1) || s < 1 || s > MAXS || l->kh > MAXK || l->kw > MAXK ||
        l->kh < 1 || l->kw < 1 || l->pad < 0 || l->pad > 14 || l->cin < 1 || l->cin > 4096 ||
        l->cout < AMX_MIN_COUT)
        return 0;
    Phases py, px;
    phases_init(&py, transposed, s, l->kh, l->pad);
    phases_init(&px, transposed, s, l->kw, l->pad);
    const int64_t cpad = ((int64_t)l->cin + 63) / 64 * 64;
    for (int a = 0; a < s; a++)
        for (int b = 0; b < s; b++)
#ifdef WAI_PLANTED_FAULT_FAST_AMX_KMAX
            if (cpad * py.n[a] * px.n[b] > 2 * AMX_KMAX) return 0; /* planted: twice the bound */
#else
            if (cpad * py.n[a] * px.n[b] > AMX_KMAX) return 0;
#endif
    return 1;
}

static void amx_prep_destroy(AmxPrep *a)
{
    if (!a) return;
    vnni_prep_free(a->vn);
    free(a->wh);
    free(a->wl);
    free(a->wt);
    free(a);
}

static void amx_prep_free(void *p)
{
    if (!p) return;
    const void *tag;
    memcpy(&tag, p, sizeof(tag));
    if (tag == &amx_owner) amx_prep_destroy(p);
    else vnni_prep_free(p); /* the VNNI set's own (a layer this path does not take) */
}

/* NULL where this path does not take the layer. with_vnni: also the VNNI set's preparation. */
static AmxPrep *amx_prep_make(const WaiLayer *l, int transposed, int with_vnni)
{
    if (!amx_takes(l, transposed)) return NULL;
    const int s = transposed ? l->stride : 1;
    AmxPrep *a = calloc(1, sizeof(*a));
    if (!a) return NULL;
    a->owner = &amx_owner;
    a->weight = l->weight;
    a->cin = l->cin; a->cout = l->cout; a->kh = l->kh; a->kw = l->kw;
    a->stride = l->stride; a->pad = l->pad; a->transposed = transposed;
    phases_init(&a->py, transposed, s, l->kh, l->pad);
    phases_init(&a->px, transposed, s, l->kw, l->pad);
    a->nob = (l->cout + 15) / 16;
    a->ncb = (l->cin + 63) / 64;
    size_t tiles = 0;
    for (int p = 0; p < s; p++)
        for (int q = 0; q < s; q++) {
            a->wphase[p][q] = tiles;
            tiles += (size_t)a->nob * a->py.n[p] * a->px.n[q] * a->ncb;
        }
    if (tiles > MAX_WPACK / 2048 || !(a->wh = malloc((tiles ? tiles : 1) * 1024)) ||
        !(a->wl = malloc((tiles ? tiles : 1) * 1024)) ||
        !(a->wt = malloc((tiles ? tiles : 1) * 1024 * sizeof(int16_t))) ||
        (with_vnni && !(a->vn = vnni_prep_make(l, transposed)))) {
        amx_prep_destroy(a);
        return NULL;
    }
    const int cin = l->cin, kh = l->kh, kw = l->kw;
    for (int p = 0; p < s; p++)
        for (int q = 0; q < s; q++) {
            const int ny = a->py.n[p], nx = a->px.n[q];
            for (int ob = 0; ob < a->nob; ob++)
                for (int ty = 0; ty < ny; ty++)
                    for (int tx = 0; tx < nx; tx++)
                        for (int cb = 0; cb < a->ncb; cb++) {
                            const size_t t = a->wphase[p][q] +
                                             (((size_t)ob * ny + ty) * nx + tx) * a->ncb + cb;
                            int8_t *dh = a->wh + t * 1024, *dl = a->wl + t * 1024;
                            for (int m = 0; m < 16; m++)
                                for (int k = 0; k < 64; k++) {
                                    const int o = ob * 16 + m, c = cb * 64 + k;
                                    int w = 0;
                                    if (o < l->cout && c < cin)
                                        w = l->weight[((size_t)o * cin + c) * kh * kw +
                                                      (size_t)a->py.k[p][ty] * kw + a->px.k[q][tx]];
                                    dh[m * 64 + k] = (int8_t)(w >> 8); /* arithmetic: [-128, 127] */
                                    dl[m * 64 + k] = (int8_t)(uint8_t)(w & 255);
                                    a->wt[t * 1024 + k * 16 + m] = (int16_t)w;
                                }
                        }
        }
    return a;
}

static int amx_prep_matches(const AmxPrep *a, const WaiLayer *l, int transposed)
{
    const void *tag = NULL;
    if (a) memcpy(&tag, a, sizeof(tag)); /* another set's preparation may be here */
    return a && tag == &amx_owner && a->weight == l->weight && a->cin == l->cin &&
           a->cout == l->cout && a->kh == l->kh && a->kw == l->kw && a->stride == l->stride &&
           a->pad == l->pad && a->transposed == transposed;
}

static void *amx_prep_layer(const WaiLayer *l)
{
    if (l->type != WAI_LAYER_CONV && l->type != WAI_LAYER_CONVT) return NULL;
    AmxPrep *a = amx_prep_make(l, l->type == WAI_LAYER_CONVT, 1);
    if (a) return a;
    return vnni_prep_layer(l); /* a layer this path does not take runs the VNNI set */
}

/* An activation outside int16 in the outlier form: its channel, its place in the packed
 * chunk (row and column), and k = (x - (int16)x) / 2^16, x less its int16 wrap (amx_outliers). */
typedef struct AmxOutlier {
    int32_t ch, row, col, k;
} AmxOutlier;

typedef struct AmxCall {
    const AmxPrep *a;
    const WaiLayer *l;
    int cols, rows;     /* a chunk's phase columns (a multiple of 16) and output rows */
    int wpk, prmax, nq; /* columns a chunk reads, packed rows, channel quads (a multiple of 16) */
    int ncp;            /* column offsets of the taps (px.dmax - px.dmin + 1) */
    size_t rs, cs;      /* bytes per packed row (cols / 16 blocks of nq 64-byte lines), copy
                         * (prmax * rs) */
    /* the chunk's form (the top of the file): one half (the int16 wrap of x, its outliers
     * apart), or two (lobyte) */
    int halves, S, lobyte;
    size_t ocap, nol;   /* the outlier form's most outliers per chunk; the chunk's count (past
                         * ocap, not kept) */
    int use_ol;         /* the chunk is in the outlier form: its sums take amx_outliers */
    AmxOutlier *ol, *osort; /* the chunk's outliers, as found and by bucket */
    int *obk, nbk;      /* bucket starts: bucket = packed row * nbk + packed column / 16 */
    int8_t *pl[3];      /* the chunk's byte planes, copies included (64-byte aligned): x >> 16,
                         * (x >> 8) & 255 and x & 255, the first made only for two halves */
    int8_t *xh[2], *xl[2]; /* the planes of each half's two bytes (amx_sums): one half
                            * pl[1], pl[2]; two pl[0], pl[1] and (lobyte: no high byte) pl[2] */
    int8_t *sh, *sl;    /* one packed row of wpk columns, before its copies */
} AmxCall;

/* Packs input rows [rlo, rlo + nr) (nr <= prmax: the rows a band reads) and columns
 * [cbase, cbase + wpk) into byte planes, zeros outside the tensor and for the channels past
 * cin: top = 0, pl[1] = (x >> 8) & 255 and pl[2] = x & 255, and returns max |x| with the
 * chunk's outliers (x outside int16) in ol and nol; top = 1, pl[0] = (x >> 16) & 255 (for
 * two halves). Sixteen columns of a quad at a time: each int32 lane gathers one column's bytes
 * of the quad's four channels. A row is packed once (sh, sl) and copied once per column offset
 * j of the taps: copy j holds columns [cbase + j, cbase + j + cols), so that every tap's B
 * tile rows start on a 64-byte line (a row that straddles two lines costs the tile load about
 * half its speed). */
static int64_t amx_pack_input(AmxCall *c, const int32_t *in, int ih, int iw, int rlo, int nr,
                              int cbase, int top)
{
    const int cin = c->l->cin;
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk);
    const size_t ss = (size_t)c->wpk * 4; /* the packed row's quad stride */
    const __m512i m8 = _mm512_set1_epi32(255);
    __m512i vmin = _mm512_setzero_si512(), vmax = _mm512_setzero_si512();
    int8_t *const ph = top ? NULL : c->pl[1], *const pb = top ? c->pl[0] : c->pl[2];
    if (!top) c->nol = 0;
    for (int r = 0; r < nr; r++) {
        const int iy = rlo + r;
        if (iy < 0 || iy >= ih || x0 >= x1) {
            for (int j = 0; j < c->ncp; j++) {
                if (ph) memset(ph + j * c->cs + (size_t)r * c->rs, 0, c->rs);
                memset(pb + j * c->cs + (size_t)r * c->rs, 0, c->rs);
            }
            continue;
        }
        for (int q = 0; q < c->nq; q++) {
            int8_t *dh = c->sh + (size_t)q * ss, *dl = c->sl + (size_t)q * ss;
            if (4 * q >= cin) {
                if (ph) memset(dh, 0, ss);
                memset(dl, 0, ss);
                continue;
            }
            /* a row's channels are short streams, more than the hardware prefetcher
             * follows: ask for quad q + 2's lines now (speed only) */
            if (!top)
                for (int k = 8; k < 12 && 4 * q + k < cin; k++)
                    for (int x = x0; x < x1; x += 16)
                        _mm_prefetch((const char *)(in + ((size_t)(4 * q + k) * ih + iy) * iw + x),
                                     _MM_HINT_T0);
            if (ph) memset(dh, 0, (size_t)(x0 - cbase) * 4);
            memset(dl, 0, (size_t)(x0 - cbase) * 4);
            for (int x = x0; x < x1; x += 16) {
                const __mmask16 mk = (__mmask16)(x1 - x >= 16 ? 0xffffu : (1u << (x1 - x)) - 1);
                __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
                for (int k = 0; k < 4 && 4 * q + k < cin; k++) {
                    const int32_t *src = in + ((size_t)(4 * q + k) * ih + iy) * iw;
                    const __m512i v = _mm512_maskz_loadu_epi32(mk, src + x);
                    const __m512i sh = _mm512_set1_epi32(8 * k);
                    if (top) {
#ifdef WAI_PLANTED_FAULT_FAST_AMX_LOBYTE
                        const __m512i vt = _mm512_and_si512(_mm512_srai_epi32(v, 16), _mm512_set1_epi32(127)); /* planted: 7 bits */
#else
                        const __m512i vt = _mm512_and_si512(_mm512_srai_epi32(v, 16), m8);
#endif
                        lo = _mm512_or_si512(lo, _mm512_sllv_epi32(vt, sh));
                        continue;
                    }
                    /* masked-off lanes are zeros: no effect on the bound or the outliers */
                    vmin = _mm512_min_epi32(vmin, v);
                    vmax = _mm512_max_epi32(vmax, v);
                    __mmask16 om = _mm512_cmpneq_epi32_mask(v, _mm512_srai_epi32(_mm512_slli_epi32(v, 16), 16));
                    if (om) { /* rare: x outside int16 */
                        int32_t xs[16];
                        _mm512_storeu_si512(xs, v);
                        for (; om; om &= om - 1) {
                            const int t = __builtin_ctz(om);
                            /* x = k 2^16 + (int16)x: k = (x >> 16) + bit 15 of x */
                            if (c->nol < c->ocap)
                                c->ol[c->nol] = (AmxOutlier){ 4 * q + k, r, x - cbase + t,
                                                              (xs[t] >> 16) + ((xs[t] >> 15) & 1) };
                            c->nol++;
                        }
                    }
#ifdef WAI_PLANTED_FAULT_FAST_AMX_BYTES
                    const __m512i vl = _mm512_and_si512(v, _mm512_set1_epi32(127)); /* planted: 7 bits */
#else
                    const __m512i vl = _mm512_and_si512(v, m8);
#endif
                    lo = _mm512_or_si512(lo, _mm512_sllv_epi32(vl, sh));
                    hi = _mm512_or_si512(hi, _mm512_sllv_epi32(
                                                 _mm512_and_si512(_mm512_srai_epi32(v, 8), m8), sh));
                }
                _mm512_mask_storeu_epi32(dl + (size_t)(x - cbase) * 4, mk, lo);
                if (ph) _mm512_mask_storeu_epi32(dh + (size_t)(x - cbase) * 4, mk, hi);
            }
            if (ph) memset(dh + (size_t)(x1 - cbase) * 4, 0, (size_t)(cbase + c->wpk - x1) * 4);
            memset(dl + (size_t)(x1 - cbase) * 4, 0, (size_t)(cbase + c->wpk - x1) * 4);
        }
        /* copy j, row r: [16-column block][quad][16 columns x 4 channels], so that a B
         * tile (16 quads of one block) is 1 KiB of consecutive lines */
        for (int j = 0; j < c->ncp; j++)
            for (int b = 0; b < c->cols / 16; b++) {
                const size_t to = j * c->cs + (size_t)r * c->rs + (size_t)b * c->nq * 64;
                const size_t from = (size_t)(b * 16 + j) * 4;
                for (int q = 0; q < c->nq; q++) {
                    if (ph)
                        _mm512_store_si512(ph + to + (size_t)q * 64,
                                           _mm512_loadu_si512(c->sh + (size_t)q * ss + from));
                    _mm512_store_si512(pb + to + (size_t)q * 64,
                                       _mm512_loadu_si512(c->sl + (size_t)q * ss + from));
                }
            }
    }
    const int64_t lo = _mm512_reduce_min_epi32(vmin), hi = _mm512_reduce_max_epi32(vmax);
    return -lo > hi ? -lo : hi;
}

/* The chunk's outliers (at most ocap) by bucket: packed row, then 16-column block of the
 * packed columns (a counting sort). */
static void amx_sort_outliers(AmxCall *c)
{
    const int nbuck = c->prmax * c->nbk;
    for (int b = 0; b <= nbuck; b++) c->obk[b] = 0;
    for (size_t e = 0; e < c->nol; e++) c->obk[c->ol[e].row * c->nbk + c->ol[e].col / 16 + 1]++;
    for (int b = 0; b < nbuck; b++) c->obk[b + 1] += c->obk[b];
    for (size_t e = 0; e < c->nol; e++) {
        const AmxOutlier *o = &c->ol[e];
        c->osort[c->obk[o->row * c->nbk + o->col / 16]++] = *o;
    }
    for (int b = nbuck; b > 0; b--) c->obk[b] = c->obk[b - 1]; /* back to the starts */
    c->obk[0] = 0;
}

/* The outlier form: adds k 2^16 w to res[n * 16 + t] for every outlier (x = k 2^16 + (int16)x,
 * the tiles took (int16)x) of the packed chunk with a term in output column t < nt of the
 * block at moff (output row qy's phase py, column phase px), w the weight of output channel
 * ob * 16 + n that the tiles used for the tap reading it (the block's A tiles from tile wt0,
 * as the prep's transposed copy wt). The terms are summed per column for the 16 channels at
 * once, k w exact in int64 (|k| <= 2^15, |w| <= 2^15: _mm512_mul_epi32 of the low 32 bits)
 * times 2^16 (< 2^47), then added to res: exact integer additions, in any order. */
static void amx_outliers(const AmxCall *c, size_t wt0, int py, int px, int qy, int rlo, int moff,
                         int nt, int nn, int64_t *res)
{
    const AmxPrep *a = c->a;
    const int ny = a->py.n[py], nx = a->px.n[px], ncb = a->ncb;
    /* the block reads packed columns [moff, moff + nt + span) */
    const int span = a->px.dmax - a->px.dmin;
#ifdef WAI_PLANTED_FAULT_FAST_AMX_OUTLIER_SPAN
    const int b0 = moff / 16, b1 = imin(c->nbk - 1, (moff + nt - 1) / 16); /* planted: no span */
#else
    const int b0 = moff / 16, b1 = imin(c->nbk - 1, (moff + nt - 1 + span) / 16);
#endif
    int64_t corr[16][16]; /* [column][channel], the columns in `used` only */
    unsigned used = 0;
    for (int ty = 0; ty < ny; ty++) {
        const int row = qy + a->py.d[py][ty] - rlo;
        if (row < 0 || row >= c->prmax) continue;
        for (int e = c->obk[row * c->nbk + b0]; e < c->obk[row * c->nbk + b1 + 1]; e++) {
            const AmxOutlier *o = &c->osort[e];
            const __m512i kv = _mm512_set1_epi64(o->k);
            for (int tx = 0; tx < nx; tx++) {
#ifdef WAI_PLANTED_FAULT_FAST_AMX_OUTLIER
                const int t = o->col - (a->px.d[px][tx] - a->px.dmin) - moff + (tx == nx - 1); /* planted */
#else
                const int t = o->col - (a->px.d[px][tx] - a->px.dmin) - moff;
#endif
                if (t < 0 || t >= nt) continue;
                const int16_t *w = a->wt + (wt0 + (size_t)(ty * nx + tx) * ncb + o->ch / 64) * 1024 +
                                   (o->ch % 64) * 16;
                const __m512i w0 = _mm512_cvtepi16_epi64(_mm_loadu_si128((const __m128i *)w));
                const __m512i w1 = _mm512_cvtepi16_epi64(_mm_loadu_si128((const __m128i *)(w + 8)));
                __m512i s0 = _mm512_slli_epi64(_mm512_mul_epi32(w0, kv), 16);
                __m512i s1 = _mm512_slli_epi64(_mm512_mul_epi32(w1, kv), 16);
                if (used >> t & 1) {
                    s0 = _mm512_add_epi64(s0, _mm512_loadu_si512(corr[t]));
                    s1 = _mm512_add_epi64(s1, _mm512_loadu_si512(corr[t] + 8));
                }
                _mm512_storeu_si512(corr[t], s0);
                _mm512_storeu_si512(corr[t] + 8, s1);
                used |= 1u << t;
            }
        }
    }
    for (; used; used &= used - 1) {
        const int t = __builtin_ctz(used);
        for (int n = 0; n < nn; n++) res[n * 16 + t] += corr[t][n];
    }
}

/* The exact sums of one 16 x 16 block (nn rows of A tiles from wt0, the 16 phase columns at
 * moff in the packed chunk) into res[n * 16 + t]: for input row qy, the taps at row offsets
 * dy[0..ny) and column offsets dx[0..nx), A tiles [ty][tx][cb] from wt0 (bytes). */
static void amx_sums(const AmxCall *c, size_t wt0, const int *dy, int ny, const int *dx, int nx,
                     int qy, int rlo, int moff, int nn, int64_t *res)
{
    const AmxPrep *a = c->a;
    const int ncb = a->ncb;
    int32_t hh[256], mid[256], ll[256];
    for (int h = 0; h < c->halves; h++) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        for (int ty = 0; ty < ny; ty++) {
            const size_t row = (size_t)(qy + dy[ty] - rlo) * c->rs;
            for (int tx = 0; tx < nx; tx++) {
                /* the copy of the tap's column offset, at the block's own column */
                const size_t col = (size_t)(dx[tx] - a->px.dmin) * c->cs + row + (size_t)(moff / 16) * c->nq * 64;
                const size_t wt = wt0 + (size_t)(ty * nx + tx) * ncb * 1024;
                if (c->lobyte && h) { /* lo in [0, 255]: its high byte is zero, two products */
                    for (int cb = 0; cb < ncb; cb++) {
                        const size_t xo = col + (size_t)cb * 1024;
                        _tile_loadd(3, a->wh + wt + (size_t)cb * 1024, 64);
                        _tile_loadd(4, a->wl + wt + (size_t)cb * 1024, 64);
                        _tile_loadd(6, c->xl[h] + xo, 64);
                        _tile_dpbsud(1, 3, 6);
                        _tile_dpbuud(2, 4, 6);
                    }
                    continue;
                }
                for (int cb = 0; cb < ncb; cb++) {
                    const size_t xo = col + (size_t)cb * 1024;
                    _tile_loadd(3, a->wh + wt + (size_t)cb * 1024, 64);
                    _tile_loadd(4, a->wl + wt + (size_t)cb * 1024, 64);
                    _tile_loadd(5, c->xh[h] + xo, 64);
                    _tile_loadd(6, c->xl[h] + xo, 64);
                    _tile_dpbssd(0, 3, 5);
                    _tile_dpbsud(1, 3, 6);
                    _tile_dpbusd(1, 4, 5);
#ifdef WAI_PLANTED_FAULT_FAST_AMX_SIGN
                    _tile_dpbusd(2, 4, 6); /* planted: the input's low byte as signed */
#else
                    _tile_dpbuud(2, 4, 6);
#endif
                }
            }
        }
        _tile_stored(0, hh, 64);
        _tile_stored(1, mid, 64);
        _tile_stored(2, ll, 64);
        /* the half's sum, 2^16 hh + 2^8 mid + ll; the hi half of two then times 2^S */
#ifdef WAI_PLANTED_FAULT_FAST_AMX_HALVES
        const __m128i vS = _mm_cvtsi32_si128(c->halves > 1 && !h ? c->S - 1 : 0); /* planted */
#else
        const __m128i vS = _mm_cvtsi32_si128(c->halves > 1 && !h ? c->S : 0);
#endif
        for (int n = 0; n < nn; n++)
            for (int g = 0; g < 2; g++) {
                const int e = n * 16 + g * 8;
                __m512i v = _mm512_slli_epi64(
                    _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(hh + e))), 16);
                v = _mm512_add_epi64(v, _mm512_slli_epi64(_mm512_cvtepi32_epi64(
                                             _mm256_loadu_si256((const __m256i *)(mid + e))), 8));
                v = _mm512_add_epi64(
                    v, _mm512_cvtepi32_epi64(_mm256_loadu_si256((const __m256i *)(ll + e))));
                v = _mm512_sll_epi64(v, vS);
                if (h) v = _mm512_add_epi64(v, _mm512_loadu_si512(res + e));
                _mm512_storeu_si512(res + e, v);
            }
    }
}

/* The epilogue of nt outputs of channel o at dst (stride s): bias, rshr, clamp (spec 5.1). */
static void amx_store(const WaiLayer *l, int o, const int64_t *r0, int32_t *dst, int nt, int s)
{
    if (s <= 2)
        vn_store(r0, NULL, 0, l->bias[o], l->shift[o], dst, nt, s);
    else
        for (int t = 0; t < nt; t++)
            dst[(size_t)t * s] = wai_clamp_act(wai_rshr(r0[t] + l->bias[o], l->shift[o]));
}

/* Output row oy, column phase px, phase columns [mc0, m1) of the packed chunk at mc0. */
static void amx_row(const AmxCall *c, int32_t *out, int oh, int ow, int oy, int px, int rlo,
                    int mc0, int m1)
{
    const AmxPrep *a = c->a;
    const WaiLayer *l = c->l;
    const int s = a->py.s, py = oy % s, qy = oy / s;
    const int ny = a->py.n[py], nx = a->px.n[px];
    int64_t res[256];
    for (int ob = 0; ob < a->nob; ob++) {
        const size_t t0 = (a->wphase[py][px] + (size_t)ob * ny * nx * a->ncb) * 1024;
        const int nn = imin(16, l->cout - ob * 16);
        for (int m0 = mc0; m0 < m1; m0 += 16) {
            const int nt = imin(16, m1 - m0);
            amx_sums(c, t0, a->py.d[py], ny, a->px.d[px], nx, qy, rlo, m0 - mc0, nn, res);
            if (c->use_ol) amx_outliers(c, t0 / 1024, py, px, qy, rlo, m0 - mc0, nt, nn, res);
            for (int n = 0; n < nn; n++) {
                const int o = ob * 16 + n;
                amx_store(l, o, res + n * 16, out + ((size_t)o * oh + oy) * ow + (size_t)m0 * s + px,
                          nt, s);
            }
        }
    }
}

/* The bytes of a call's packed planes with chunks of cols phase columns and rows output rows
 * (the copies of each half's byte planes, lobyte's lo half one plane only, and the one packed
 * row before its copies). */
static size_t amx_scratch(const AmxCall *c, int cols, int rows)
{
    const int s = c->a->py.s;
    const size_t prmax = (size_t)((rows - 1) / s + 2 + c->a->py.dmax - c->a->py.dmin);
    const size_t planes = (size_t)c->halves * 2 - (size_t)c->lobyte;
    const size_t copies = planes * c->ncp * prmax * c->nq * cols * 4;
    return copies + (size_t)2 * c->nq * (cols + c->ncp - 1) * 4;
}

/* Rows [oy0, oy1) of the output by the VNNI set: a row chunk declined here (its own
 * preparation where this set made one, and then its own fallbacks). */
static void amx_vnni_rows(const WaiLayer *l, const AmxPrep *a, const int32_t *in, int ih, int iw,
                          int32_t *out, int oh, int ow, int oy0, int oy1, int transposed)
{
    WaiLayer lv = *l;
    lv.prep = a && a->vn ? a->vn : NULL;
    if (transposed) vnni_convt_k(&lv, in, ih, iw, out, oh, ow, oy0, oy1);
    else vnni_conv_k(&lv, in, ih, iw, out, oh, ow, oy0, oy1);
}


/* Returns 0 when done, -1 when the caller must take another path. */
static int amx_conv(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out, int oh,
                    int ow, int oy0, int oy1, int transposed)
{
    if (oy0 >= oy1) return 0;
    for (int o = 0; o < l->cout; o++)
        if (l->bias[o] > BIAS_MAX || l->bias[o] < -BIAS_MAX) return -1;
    AmxPrep *own = NULL;
    const AmxPrep *a = l->prep;
    const int prepared = amx_prep_matches(a, l, transposed);
    if (!prepared && !amx_takes(l, transposed)) return -1;
    if (!prepared) {
        if (!(own = amx_prep_make(l, transposed, 0))) return -1;
        a = own;
    }
    const int s = a->py.s;
    AmxCall c = { .l = l, .a = a };
    c.ncp = a->px.dmax - a->px.dmin + 1;
    c.nq = a->ncb * 16;
    /* the chunk: AMX_COLS x AMX_ROWS, narrowed (then shortened) while its three byte planes
     * would pass AMX_SCRATCH_MAX; a call whose smallest chunk (16 columns, one row) would
     * still pass it runs the VNNI set. The shipped layers' whole chunks take at most about
     * 5 MiB, and a 1x8 conv at the term bound (4,096 channels) fits in 16 columns by one row. */
    c.halves = 2;
    c.lobyte = 1;
    int cols = AMX_COLS, rows = AMX_ROWS;
#ifndef WAI_PLANTED_FAULT_AMX_SCRATCH /* planted: the whole chunk, whatever it takes */
    while (cols > 16 && amx_scratch(&c, cols, rows) > AMX_SCRATCH_MAX) cols /= 2;
    while (rows > 1 && amx_scratch(&c, cols, rows) > AMX_SCRATCH_MAX) rows /= 2;
    if (amx_scratch(&c, cols, rows) > AMX_SCRATCH_MAX) {
        amx_prep_destroy(own);
        return -1;
    }
#endif
    c.cols = cols;
    c.rows = rows;
    c.wpk = cols + c.ncp - 1;
    c.prmax = (rows - 1) / s + 2 + a->py.dmax - a->py.dmin;
    c.rs = (size_t)c.nq * cols * 4;
    c.cs = (size_t)c.prmax * c.rs;
    /* the outlier form's lists: at most 1 in AMX_OUTLIER_DIV of a chunk's elements */
    c.ocap = (size_t)l->cin * c.prmax * c.wpk / AMX_OUTLIER_DIV + 1;
    c.nbk = (c.wpk + 15) / 16;
    int r = -1;
    /* sizes: multiples of 64 (a row is), as aligned_alloc wants */
    if (!(c.sh = malloc((size_t)c.nq * c.wpk * 4)) || !(c.sl = malloc((size_t)c.nq * c.wpk * 4)) ||
        !(c.pl[1] = aligned_alloc(64, c.ncp * c.cs)) || !(c.pl[2] = aligned_alloc(64, c.ncp * c.cs)) ||
        !(c.ol = malloc(c.ocap * sizeof(*c.ol))) || !(c.osort = malloc(c.ocap * sizeof(*c.osort))) ||
        !(c.obk = malloc(((size_t)c.prmax * c.nbk + 1) * sizeof(*c.obk))))
        goto end;
    _tile_loadconfig(&amx_cfg);
    const int mtot = (ow + s - 1) / s;
    for (int ya = oy0; ya < oy1; ya += c.rows) {
        const int yb = imin(oy1, ya + c.rows);
        const int rlo = ya / s + a->py.dmin;
        const int nr = (yb - 1) / s - ya / s + 1 + a->py.dmax - a->py.dmin;
        int declined = 0;
        for (int mc0 = 0; mc0 < mtot; mc0 += c.cols) {
            /* the activations' form, per chunk (the top of the file) */
            const int64_t xmax = amx_pack_input(&c, in, ih, iw, rlo, nr, mc0 + a->px.dmin, 0);
            c.halves = 1;
            c.S = 1;
            c.lobyte = 0;
            c.use_ol = 0;
            c.xh[0] = c.pl[1];
            c.xl[0] = c.pl[2];
            if (c.nol) { /* else every x fits int16: x itself */
                if (c.nol <= c.ocap) {
                    c.use_ol = 1;
                    amx_sort_outliers(&c);
                } else if (xmax <= WAI_ACT_MAX) {
                    /* two halves, hi = x >> 8 (int16: the bytes pl[0], pl[1]), lo = x & 255 */
                    if (!c.pl[0] && !(c.pl[0] = aligned_alloc(64, c.ncp * c.cs))) goto end_tiles;
                    amx_pack_input(&c, in, ih, iw, rlo, nr, mc0 + a->px.dmin, 1);
                    c.halves = 2;
                    c.S = 8;
                    c.lobyte = 1;
                    c.xh[0] = c.pl[0];
                    c.xl[0] = c.pl[1];
                    c.xh[1] = NULL;
                    c.xl[1] = c.pl[2];
                } else { /* beyond the activations' range (not from the graph) */
                    declined = 1;
                    break;
                }
            }
            for (int oy = ya; oy < yb; oy++)
                for (int px = 0; px < s; px++) {
                    const int mpx = px < ow ? (ow - px + s - 1) / s : 0;
                    const int m1 = imin(mpx, mc0 + c.cols);
                    if (mc0 < m1) amx_row(&c, out, oh, ow, oy, px, rlo, mc0, m1);
                }
        }
        /* its outputs again, all of them, exactly (the same integers) */
        if (declined) amx_vnni_rows(l, prepared ? a : NULL, in, ih, iw, out, oh, ow, ya, yb, transposed);
    }
    r = 0;
end_tiles:
    _tile_release();
end:
    for (int p = 0; p < 3; p++) free(c.pl[p]);
    free(c.sh);
    free(c.sl);
    free(c.ol);
    free(c.osort);
    free(c.obk);
    amx_prep_destroy(own);
    return r;
}

/* A call of this set: on tiles, else (declined) the VNNI set, with its own preparation where
 * this set made one (and then its own fallbacks). */
static void amx_call(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out, int oh,
                     int ow, int oy0, int oy1, int transposed)
{
    if (amx_conv(l, in, ih, iw, out, oh, ow, oy0, oy1, transposed) == 0) return;
    const AmxPrep *a = l->prep;
    amx_vnni_rows(l, amx_prep_matches(a, l, transposed) ? a : NULL, in, ih, iw, out, oh, ow, oy0,
                  oy1, transposed);
}

static void amx_conv_k(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out, int oh,
                       int ow, int oy0, int oy1)
{
    amx_call(l, in, ih, iw, out, oh, ow, oy0, oy1, 0);
}

static void amx_convt_k(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out,
                        int oh, int ow, int oy0, int oy1)
{
    amx_call(l, in, ih, iw, out, oh, ow, oy0, oy1, 1);
}

void wai_dsp_init_avx512amx(WaiDsp *dsp)
{
    vnni_set_init(dsp); /* IGDN and the fallbacks */
    dsp->conv = amx_conv_k;
    dsp->convt = amx_convt_k;
    dsp->prep_layer = amx_prep_layer;
    dsp->prep_free = amx_prep_free;
}
