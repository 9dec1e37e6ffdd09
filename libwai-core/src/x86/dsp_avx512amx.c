/* AVX-512 with AMX-INT8 set: conv (stride 1) and convT on AMX tiles (16 x 16 int32 sums of
 * int8 products); IGDN and every call this path declines run the AVX-512 VNNI set (included
 * below), which declines in turn to the AVX-512 double path and the reference.
 * Built with the VNNI set's flags and -mamx-tile -mamx-int8; chosen only where cpu.c finds
 * the tiles usable (the CPU has them, the OS saves their state, and Linux grants this process
 * the tile data, arch_prctl ARCH_REQ_XCOMP_PERM).
 *
 * Why the integers are the reference's (spec 5.1). The polyphase form, the tap offsets and the
 * epilogue (bias, rshr, clamp on the int64 sum) are the VNNI set's; only the sums differ:
 *  - Activations in int16 halves, from the call's max |x| over the input rows it reads: x
 *    itself where that is <= 32767; else, within the activations' range (max |x| <=
 *    WAI_ACT_MAX = 2^23 - 1), hi = x >> 8 in [-2^15, 2^15) and lo = x & 255 (lobyte: one
 *    byte, so its high-byte products are zero and skipped); else x = hi * 2^S + lo
 *    (split_x), both within int16. Either way sum w x = 2^S sum w hi + sum w lo. The VNNI
 *    set takes the calls whose hi would not fit int16.
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
 *    the halves: 2^15 terms of at most 2^15 * 2^15, times 2^S <= 2^15, stay below 2^60.
 *  - Zero padding (rows and columns outside the input, channels past cin, output channels past
 *    cout) is explicit zeros: terms 0 * w or x * 0. Any order of exact integer additions gives
 *    the same integer.
 * Layout: the input rows a band of output rows reads are packed, a chunk of phase
 * columns at a time, into two byte planes per half (xh, xl), each row [16-column block]
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

typedef struct AmxCall {
    const AmxPrep *a;
    const WaiLayer *l;
    int cols, rows;     /* a chunk's phase columns (a multiple of 16) and output rows */
    int wpk, prmax, nq; /* columns a chunk reads, packed rows, channel quads (a multiple of 16) */
    int ncp;            /* column offsets of the taps (px.dmax - px.dmin + 1) */
    size_t rs, cs;      /* bytes per packed row (cols / 16 blocks of nq 64-byte lines), copy
                         * (prmax * rs) */
    int halves, S;      /* x itself (1), or x = hi * 2^S + lo (2) */
    int lobyte;         /* two halves with S = 8, hi = x >> 8 and lo = x & 255 (one byte) */
    int8_t *xh[2], *xl[2]; /* per half, the copies' byte planes (64-byte aligned; no xh
                            * for lobyte's lo half) */
    int8_t *sh, *sl;    /* one packed row of wpk columns, before its copies */
} AmxCall;

/* Packs input rows [rlo, rlo + nr) (nr <= prmax: the rows a band reads) and columns
 * [cbase, cbase + wpk) of each half into its byte planes, zeros outside the tensor and for the
 * channels past cin. Sixteen columns of a quad at a time: each int32 lane gathers one column's
 * bytes of the quad's four channels. The halves are x >> 8 and x & 255 (lobyte), or split_x's:
 * hi = (x + 2^(S-1)) >> S, lo = x - hi * 2^S (|x| < 2^30 here). A row is packed once (sh,
 * sl) and copied once per column offset j of the taps: copy j holds columns
 * [cbase + j, cbase + j + cols), so that every tap's B tile rows start on a 64-byte line (a
 * row that straddles two lines costs the tile load about half its speed). */
static void amx_pack_input(const AmxCall *c, const int32_t *in, int ih, int iw, int rlo, int nr,
                           int cbase)
{
    const int cin = c->l->cin;
    const int x0 = imax(0, cbase), x1 = imin(iw, cbase + c->wpk);
    const size_t ss = (size_t)c->wpk * 4; /* the packed row's quad stride */
    const __m512i m8 = _mm512_set1_epi32(255), rnd = _mm512_set1_epi32(1 << (c->S - 1));
    const __m128i vS = _mm_cvtsi32_si128(c->S);
    for (int h = 0; h < c->halves; h++) {
        /* lobyte's lo half has no high byte: it has no such plane (amx_conv) */
        const int hbytes = !(c->lobyte && h);
        for (int r = 0; r < nr; r++) {
            const int iy = rlo + r;
            if (iy < 0 || iy >= ih || x0 >= x1) {
                for (int j = 0; j < c->ncp; j++) {
                    if (hbytes) memset(c->xh[h] + j * c->cs + (size_t)r * c->rs, 0, c->rs);
                    memset(c->xl[h] + j * c->cs + (size_t)r * c->rs, 0, c->rs);
                }
                continue;
            }
            for (int q = 0; q < c->nq; q++) {
                int8_t *dh = c->sh + (size_t)q * ss, *dl = c->sl + (size_t)q * ss;
                if (4 * q >= cin) {
                    if (hbytes) memset(dh, 0, ss);
                    memset(dl, 0, ss);
                    continue;
                }
                /* a row's channels are short streams, more than the hardware prefetcher
                 * follows: ask for quad q + 2's lines now (speed only) */
                if (!h)
                    for (int k = 8; k < 12 && 4 * q + k < cin; k++)
                        for (int x = x0; x < x1; x += 16)
                            _mm_prefetch((const char *)(in + ((size_t)(4 * q + k) * ih + iy) * iw + x),
                                         _MM_HINT_T0);
                if (hbytes) memset(dh, 0, (size_t)(x0 - cbase) * 4);
                memset(dl, 0, (size_t)(x0 - cbase) * 4);
                for (int x = x0; x < x1; x += 16) {
                    const __mmask16 mk = (__mmask16)(x1 - x >= 16 ? 0xffffu : (1u << (x1 - x)) - 1);
                    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
                    for (int k = 0; k < 4 && 4 * q + k < cin; k++) {
                        const int32_t *src = in + ((size_t)(4 * q + k) * ih + iy) * iw;
                        __m512i v = _mm512_maskz_loadu_epi32(mk, src + x);
                        if (c->lobyte) {
#ifdef WAI_PLANTED_FAULT_FAST_AMX_LOBYTE
                            v = h ? _mm512_and_si512(v, _mm512_set1_epi32(127)) : _mm512_srai_epi32(v, 8); /* planted */
#else
                            v = h ? _mm512_and_si512(v, m8) : _mm512_srai_epi32(v, 8);
#endif
                        } else if (c->halves > 1) {
                            const __m512i vh = _mm512_sra_epi32(_mm512_add_epi32(v, rnd), vS);
                            v = h ? _mm512_sub_epi32(v, _mm512_sll_epi32(vh, vS)) : vh;
                        }
#ifdef WAI_PLANTED_FAULT_FAST_AMX_BYTES
                        const __m512i vl = _mm512_and_si512(v, _mm512_set1_epi32(127)); /* planted: 7 bits */
#else
                        const __m512i vl = _mm512_and_si512(v, m8);
#endif
                        const __m512i sh = _mm512_set1_epi32(8 * k);
                        lo = _mm512_or_si512(lo, _mm512_sllv_epi32(vl, sh));
                        hi = _mm512_or_si512(hi, _mm512_sllv_epi32(
                                                     _mm512_and_si512(_mm512_srai_epi32(v, 8), m8), sh));
                    }
                    _mm512_mask_storeu_epi32(dl + (size_t)(x - cbase) * 4, mk, lo);
                    if (hbytes) _mm512_mask_storeu_epi32(dh + (size_t)(x - cbase) * 4, mk, hi);
                }
                if (hbytes) memset(dh + (size_t)(x1 - cbase) * 4, 0, (size_t)(cbase + c->wpk - x1) * 4);
                memset(dl + (size_t)(x1 - cbase) * 4, 0, (size_t)(cbase + c->wpk - x1) * 4);
            }
            /* copy j, row r: [16-column block][quad][16 columns x 4 channels], so that a B
             * tile (16 quads of one block) is 1 KiB of consecutive lines */
            for (int j = 0; j < c->ncp; j++)
                for (int b = 0; b < c->cols / 16; b++) {
                    const size_t to = j * c->cs + (size_t)r * c->rs + (size_t)b * c->nq * 64;
                    const size_t from = (size_t)(b * 16 + j) * 4;
                    for (int q = 0; q < c->nq; q++) {
                        if (hbytes)
                            _mm512_store_si512(c->xh[h] + to + (size_t)q * 64,
                                               _mm512_loadu_si512(c->sh + (size_t)q * ss + from));
                        _mm512_store_si512(c->xl[h] + to + (size_t)q * 64,
                                           _mm512_loadu_si512(c->sl + (size_t)q * ss + from));
                    }
                }
        }
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
    /* the halves, from the rows the call reads, before any packing (vn_halves): one where
     * max |x| <= 32767, else two where hi fits int16 (also where only a few elements pass
     * 32767: the VNNI set's outlier form was slower than two halves on tiles, session 27) */
    const int s = transposed ? l->stride : 1;
    Phases py;
    phases_init(&py, transposed, s, l->kh, l->pad);
    const int r0 = oy0 / s + py.dmin, r1 = (oy1 - 1) / s + py.dmax + 1;
    VnForm form;
    vn_halves(&form, max_abs_rows(in, l->cin, ih, iw, r0, r1));
    AmxCall c = { .l = l, .halves = 1, .S = 1 };
    if (!form.one_ok) {
        if (form.xmax <= WAI_ACT_MAX) { /* the activations' range: hi = x >> 8 fits int16 */
            c.halves = 2;
            c.S = 8;
            c.lobyte = 1;
        } else {
            if (!form.two_ok) return -1;
            c.halves = 2;
            c.S = form.S;
        }
    }
    if (!prepared) {
        if (!(own = amx_prep_make(l, transposed, 0))) return -1;
        a = own;
    }
    c.a = a;
    c.ncp = a->px.dmax - a->px.dmin + 1;
    c.nq = a->ncb * 16;
    /* the chunk: AMX_COLS x AMX_ROWS, narrowed (then shortened) while its planes would pass
     * AMX_SCRATCH_MAX; a call whose smallest chunk (16 columns, one row) would still pass it
     * runs the VNNI set. The shipped layers' whole chunks take at most about 3 MiB, and a
     * 1x8 conv at the term bound (4,096 channels) fits in 16 columns by one row. */
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
    int r = -1;
    /* sizes: multiples of 64 (a row is), as aligned_alloc wants */
    if (!(c.sh = malloc((size_t)c.nq * c.wpk * 4)) || !(c.sl = malloc((size_t)c.nq * c.wpk * 4)))
        goto end;
    for (int h = 0; h < c.halves; h++)
        if ((!(c.lobyte && h) && !(c.xh[h] = aligned_alloc(64, c.ncp * c.cs))) ||
            !(c.xl[h] = aligned_alloc(64, c.ncp * c.cs)))
            goto end;
    _tile_loadconfig(&amx_cfg);
    const int mtot = (ow + s - 1) / s;
    for (int ya = oy0; ya < oy1; ya += c.rows) {
        const int yb = imin(oy1, ya + c.rows);
        const int rlo = ya / s + a->py.dmin;
        for (int mc0 = 0; mc0 < mtot; mc0 += c.cols) {
            amx_pack_input(&c, in, ih, iw, rlo, (yb - 1) / s - ya / s + 1 + a->py.dmax - a->py.dmin,
                           mc0 + a->px.dmin);
            for (int oy = ya; oy < yb; oy++)
                for (int px = 0; px < s; px++) {
                    const int mpx = px < ow ? (ow - px + s - 1) / s : 0;
                    const int m1 = imin(mpx, mc0 + c.cols);
                    if (mc0 < m1) amx_row(&c, out, oh, ow, oy, px, rlo, mc0, m1);
                }
        }
    }
    _tile_release();
    r = 0;
end:
    for (int h = 0; h < 2; h++) {
        free(c.xh[h]);
        free(c.xl[h]);
    }
    free(c.sh);
    free(c.sl);
    amx_prep_destroy(own);
    return r;
}

/* A call of this set: on tiles, else (declined) the VNNI set, with its own preparation where
 * this set made one (and then its own fallbacks). */
static void amx_call(const WaiLayer *l, const int32_t *in, int ih, int iw, int32_t *out, int oh,
                     int ow, int oy0, int oy1, int transposed)
{
    if (amx_conv(l, in, ih, iw, out, oh, ow, oy0, oy1, transposed) == 0) return;
    WaiLayer lv = *l;
    const AmxPrep *a = l->prep;
    if (amx_prep_matches(a, l, transposed)) lv.prep = a->vn;
    if (transposed) vnni_convt_k(&lv, in, ih, iw, out, oh, ow, oy0, oy1);
    else vnni_conv_k(&lv, in, ih, iw, out, oh, ow, oy0, oy1);
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
