/* rANS entropy coder (spec 7.1) with escape and bypass values (spec 7.2).
 *
 * Byte-wise rANS in the style of ryg_rans: 32-bit state in [L, 2^31), L = 2^23, 16-bit
 * probabilities. The decoder trusts the table (the model parser checked cdf[0] = 0, strictly
 * increasing cdf, cdf[length + 1] = 65536) and bounds every read of the stream. */
#include "rans.h"

#include <stdlib.h>

#define RANS_M (UINT32_C(1) << WAI_RANS_PREC)
#define RANS_X_MAX (UINT32_C(1) << 31)      /* exclusive upper bound of the state */
#define NIBBLE_FREQ 4096u
#define NB_MAX 8                            /* spec 7.2 decoder bound on bypass nibbles */

int wai_rans_dec_init(WaiRansDec *d, const uint8_t *buf, size_t size)
{
    d->x = 0;
    d->p = d->end = buf;
    if (!buf || size < 4) return WAI_ERR_TRUNCATED;
    uint32_t x = wai_rd32(buf);
    if (x < WAI_RANS_L || x >= RANS_X_MAX) return WAI_ERR_BITSTREAM;
    d->x = x;
    d->p = buf + 4;
    d->end = buf + size;
    return 0;
}

/* x = freq * (x >> 16) + c - start, then byte renormalisation. The state stays below 2^31:
 * freq * (x >> 16) + freq <= 65535 * 2^15. */
static int dec_advance(WaiRansDec *d, uint32_t start, uint32_t freq)
{
    uint32_t x = freq * (d->x >> WAI_RANS_PREC) + (d->x & (RANS_M - 1)) - start;
#ifdef WAI_PLANTED_FAULT_RANS_RENORM
    while (x <= WAI_RANS_L) {
#else
    while (x < WAI_RANS_L) {
#endif
        if (d->p == d->end) return WAI_ERR_TRUNCATED;
        x = x << 8 | *d->p++;
    }
    d->x = x;
    return 0;
}

/* The unique s in [0, length] with cdf[s] <= c < cdf[s + 1] (binary search). */
static uint32_t find_symbol(const WaiTable *t, uint32_t c)
{
    uint32_t lo = 0, hi = t->length + 1;      /* invariant: cdf[lo] <= c < cdf[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
#ifdef WAI_PLANTED_FAULT_RANS_SEARCH
        if (t->cdf[mid] < c)
#else
        if (t->cdf[mid] <= c)
#endif
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int dec_symbol(WaiRansDec *d, const WaiTable *t, uint32_t *sym)
{
    uint32_t s = find_symbol(t, d->x & (RANS_M - 1));
    *sym = s;
    return dec_advance(d, t->cdf[s], t->cdf[s + 1] - t->cdf[s]);
}

static int dec_nibble(WaiRansDec *d, uint32_t *k)
{
    *k = (d->x & (RANS_M - 1)) >> 12;
    return dec_advance(d, *k * NIBBLE_FREQ, NIBBLE_FREQ);
}

/* Bypass code (spec 7.2): nb as nibbles (15 = "add 15 and continue"), then nb nibbles of u,
 * least significant first. nb above 8 is refused as soon as the nibbles read exceed it. */
static int dec_bypass(WaiRansDec *d, uint64_t *u)
{
    uint32_t nb = 0, k;
    int r;
    do {
        if ((r = dec_nibble(d, &k))) return r;
        nb += k;
#ifdef WAI_PLANTED_FAULT_RANS_NB_BOUND
        if (nb > NB_MAX + 1) return WAI_ERR_BITSTREAM;
#else
        if (nb > NB_MAX) return WAI_ERR_BITSTREAM;
#endif
    } while (k == 15);
    uint64_t v = 0;
    for (uint32_t i = 0; i < nb; i++) {
        if ((r = dec_nibble(d, &k))) return r;
#ifdef WAI_PLANTED_FAULT_VEC_BYPASS_MSB
        v = v << 4 | k;                          /* planted: most significant nibble first */
#else
        v |= (uint64_t)k << (4 * i);
#endif
    }
#ifdef WAI_PLANTED_FAULT_VEC_BYPASS_MINIMAL
    if (nb && k == 0) return WAI_ERR_BITSTREAM;  /* planted: a leading zero nibble refused */
#endif
    *u = v;
    return 0;
}

int wai_rans_dec_value(WaiRansDec *d, const WaiTable *t, int32_t *value)
{
    uint32_t s;
    int r = dec_symbol(d, t, &s);
    if (r) return r;
    int64_t dv;
    if (s < t->length) {
        dv = s;
    } else {
        uint64_t u;
        if ((r = dec_bypass(d, &u))) return r;     /* u < 2^36: int64 is exact below */
#ifdef WAI_PLANTED_FAULT_VEC_BYPASS_SIGN
        /* planted: even u below the table, odd u above it */
        dv = !(u & 1) ? -(int64_t)(u / 2 + 1) : (int64_t)(u / 2) + t->length;
#else
        dv = (u & 1) ? -(int64_t)((u + 1) / 2) : (int64_t)(u / 2) + t->length;
#endif
    }
    int64_t v = dv + t->offset;
    /* The bound holds for every decoded value, in-range symbols included (spec 7.2). */
    if (v < -WAI_VALUE_MAX || v > WAI_VALUE_MAX) return WAI_ERR_BITSTREAM;
    *value = (int32_t)v;
    return 0;
}

int wai_rans_dec_finish(const WaiRansDec *d)
{
    return d->x == WAI_RANS_L && d->p == d->end ? 0 : WAI_ERR_BITSTREAM;
}

void wai_rans_enc_init(WaiRansEnc *e)
{
    e->sym = NULL;
    e->n = e->cap = 0;
    e->err = 0;
}

void wai_rans_enc_free(WaiRansEnc *e)
{
    free(e->sym);
    wai_rans_enc_init(e);
}

static void enc_push(WaiRansEnc *e, uint32_t start, uint32_t freq)
{
    if (e->err) return;
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap : 256;
        if (e->cap) {
            if (cap > SIZE_MAX / 2 / sizeof(*e->sym)) { e->err = WAI_ERR_NOMEM; return; }
            cap *= 2;
        }
        uint32_t *s = realloc(e->sym, cap * sizeof(*s));
        if (!s) { e->err = WAI_ERR_NOMEM; return; }
        e->sym = s;
        e->cap = cap;
    }
    e->sym[e->n++] = start << 16 | (freq - 1);
}

static void enc_nibble(WaiRansEnc *e, uint32_t k) { enc_push(e, k * NIBBLE_FREQ, NIBBLE_FREQ); }

/* Any failure (bad value, no memory) poisons the encoder: finish then fails too. */
int wai_rans_enc_value(WaiRansEnc *e, const WaiTable *t, int32_t v)
{
    if (e->err) return e->err;
    if (v < -WAI_VALUE_MAX || v > WAI_VALUE_MAX || !t || !t->cdf || t->length < 1)
        return e->err = WAI_ERR_INVALID_ARG;
    int64_t d = (int64_t)v - t->offset;
    if (d >= 0 && d < (int64_t)t->length) {
        enc_push(e, t->cdf[d], t->cdf[d + 1] - t->cdf[d]);
        return e->err;
    }
    uint64_t u = d < 0 ? (uint64_t)(-2 * d - 1) : (uint64_t)(2 * (d - (int64_t)t->length));
    uint32_t nb = 0;
    while (nb < 16 && (u >> (4 * nb))) nb++;
    if (nb > NB_MAX) return e->err = WAI_ERR_INVALID_ARG;  /* a table no decoder can use */
    enc_push(e, t->cdf[t->length], t->cdf[t->length + 1] - t->cdf[t->length]);
    enc_nibble(e, nb);                         /* nb <= 8: a single nibble, never 15 */
    for (uint32_t i = 0; i < nb; i++) enc_nibble(e, (uint32_t)(u >> (4 * i)) & 15);
    return e->err;
}

/* Codes the queue in reverse (spec 7.1). Each symbol emits at most 2 bytes: the state is
 * below 2^31 and stops emitting once below freq * 2^15 >= 2^15. */
int wai_rans_enc_finish(WaiRansEnc *e, uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    int err = e->err;
    size_t cap = 0;
    if (!err && (e->n > (SIZE_MAX - 4) / 2)) err = WAI_ERR_NOMEM;
    if (!err) cap = 4 + 2 * e->n;
    uint8_t *buf = err ? NULL : malloc(cap);
    if (!err && !buf) err = WAI_ERR_NOMEM;
    if (err) {
        wai_rans_enc_free(e);
        return err;
    }
    uint8_t *p = buf + cap;
    uint32_t x = WAI_RANS_L;
    for (size_t i = e->n; i-- > 0;) {
        uint32_t start = e->sym[i] >> 16, freq = (e->sym[i] & 0xFFFF) + 1;
        uint64_t x_max = (uint64_t)freq << 15;
        while (x >= x_max) {
            *--p = (uint8_t)x;
            x >>= 8;
        }
        x = (x / freq) * RANS_M + (x % freq) + start;
    }
    p -= 4;
    wai_wr32(p, x);
    size_t n = (size_t)(buf + cap - p);
    memmove(buf, p, n);
    uint8_t *shrunk = realloc(buf, n);
    *out = shrunk ? shrunk : buf;
    *size = n;
    wai_rans_enc_free(e);
    return 0;
}
