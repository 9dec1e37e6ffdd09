/* rANS coder (spec 7.1, 7.2): a hand-checked vector, randomised round trips against an
 * independent reference encoder written from the spec, and every decoder error path. Streams
 * are decoded from exact-size malloc'ed copies so that ASan catches any overread. */
#include "rans.h"

#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct Tab {
    WaiTable t;
    uint16_t freq[2001];
    uint32_t cdf[2002];
} Tab;

static void tab_make(Tab *tb, int32_t offset, uint32_t length, const uint16_t *freq)
{
    tb->t.offset = offset;
    tb->t.length = length;
    tb->t.freq = tb->freq;
    tb->t.cdf = tb->cdf;
    tb->cdf[0] = 0;
    for (uint32_t s = 0; s <= length; s++) {
        tb->freq[s] = freq[s];
        tb->cdf[s + 1] = tb->cdf[s] + freq[s];
    }
}

/* ---- reference encoder: spec 7.1 "Encoding" and 7.2, straight from the text ---- */

typedef struct Sym { uint32_t start, freq; } Sym;

typedef struct SymList {
    Sym *s;
    size_t n, cap;
} SymList;

static void sl_push(SymList *l, uint32_t start, uint32_t freq)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->s = realloc(l->s, l->cap * sizeof(*l->s));
        if (!l->s) abort();
    }
    l->s[l->n].start = start;
    l->s[l->n].freq = freq;
    l->n++;
}

static void sl_nibble(SymList *l, uint32_t k) { sl_push(l, 4096 * k, 4096); }

static void sl_value(SymList *l, const WaiTable *t, int64_t v)
{
    int64_t d = v - t->offset;
    if (d >= 0 && d < (int64_t)t->length) {
        sl_push(l, t->cdf[d], t->freq[d]);
        return;
    }
    sl_push(l, t->cdf[t->length], t->freq[t->length]);
    uint64_t u = d < 0 ? (uint64_t)(-2 * d - 1) : (uint64_t)(2 * (d - t->length));
    uint32_t nb = 0;
    while (u >> (4 * nb)) nb++;
    uint32_t k = nb;
    while (k >= 15) { sl_nibble(l, 15); k -= 15; }
    sl_nibble(l, k);
    for (uint32_t i = 0; i < nb; i++) sl_nibble(l, (uint32_t)(u >> (4 * i)) & 15);
}

/* Returns a malloc'ed stream of exactly *size bytes. */
static uint8_t *ref_encode(const SymList *l, size_t *size)
{
    uint8_t *tmp = malloc(4 + 4 * l->n), *p;
    if (!tmp) abort();
    p = tmp + 4 + 4 * l->n;
    uint64_t x = 1u << 23;
    for (size_t i = l->n; i-- > 0;) {
        uint64_t f = l->s[i].freq;
        while (x >= f << 15) { *--p = (uint8_t)(x % 256); x >>= 8; }
        x = (x / f) * 65536 + (x % f) + l->s[i].start;
        CHECK(x >= (1u << 23) && x < (1ull << 31));
    }
    p -= 4;
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(x >> (8 * i));
    *size = (size_t)(tmp + 4 + 4 * l->n - p);
    uint8_t *out = malloc(*size ? *size : 1);
    if (!out) abort();
    memcpy(out, p, *size);
    free(tmp);
    return out;
}

static uint8_t *dup_exact(const uint8_t *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    if (!q) abort();
    if (n) memcpy(q, p, n);
    return q;
}

/* Decode n values with table tabs[i] and the finish check from an exact-size copy of the
 * first `len` bytes. Returns the first error (0 if everything succeeded); *ndone counts the
 * values decoded correctly. */
static int decode_all(const uint8_t *buf, size_t len, const WaiTable *const *tabs,
                      const int32_t *vals, size_t n, size_t *ndone)
{
    uint8_t *b = dup_exact(buf, len);
    WaiRansDec d;
    int r = wai_rans_dec_init(&d, b, len);
    size_t ok = 0;
    for (size_t i = 0; !r && i < n; i++) {
        int32_t v = 0x7fffffff;
        r = wai_rans_dec_value(&d, tabs[i], &v);
        if (!r && v != vals[i]) r = 1;        /* a wrong value, not an error code */
        if (!r) ok++;
    }
    if (!r) r = wai_rans_dec_finish(&d);
    if (ndone) *ndone = ok;
    free(b);
    return r;
}

/* ---- (a) hand-checked vector ---- */

/* Table: offset -1, length 3, freq {16384, 32768, 16383, 1 (escape)}, so
 * cdf {0, 16384, 49152, 65535, 65536}; values -1, 0, 1 are symbols 0, 1, 2.
 * Values 0 -1 1 5 1 -3 0 65535 -65535. The escapes:
 *   5:      d = 6, u = 2*(6-3) = 6,            nb 1: esc, nibble 1, nibble 6
 *   -3:     d = -2, u = 3,                     nb 1: esc, nibble 1, nibble 3
 *   65535:  d = 65536, u = 131066 = 0x1fffa,   nb 5: esc, 5, a f f f 1
 *   -65535: d = -65534, u = 131067 = 0x1fffb,  nb 5: esc, 5, b f f f 1
 * 25 symbols. Coded in reverse from x = 2^23 (spec 7.1): the last symbol, nibble 1
 * (start 4096, freq 4096): 2^23 < 4096 * 2^15, no byte; x = (2^23 / 4096) * 65536 + 0 + 4096
 * = 0x08001000, and so on. The bytes and the decoder's states before each value were computed
 * with a separate Python model of spec 7.1 (encoder and decoder, states cross-checked), and
 * the first decoding step checked by hand: the stream begins with the state 0x00815310;
 * c = 0x5310 lies in [16384, 49152), symbol 1, value 0; x = 32768 * 0x81 + 0x5310 - 0x4000
 * = 0x409310 < 2^23, so one byte (0x23) is read: 0x40931023, the second state below. */
static void test_hand(void)
{
    static const uint16_t freq[4] = { 16384, 32768, 16383, 1 };
    static const int32_t vals[9] = { 0, -1, 1, 5, 1, -3, 0, 65535, -65535 };
    static const uint8_t expect[21] = {
        0x10, 0x53, 0x81, 0x00, 0x23, 0x1c, 0x64, 0x07, 0x1b, 0x3f, 0xff, 0x5f, 0xaf, 0xff,
        0x1f, 0xff, 0x5f, 0xbf, 0xf0, 0x10, 0x00,
    };
    static const uint32_t states[10] = {
        0x00815310, 0x40931023, 0x1024d023, 0x0408ffff, 0x0408c407, 0x0101ffff, 0x0101bfff,
        0x0080ffff, 0x0080ffff, 0x00800000,
    };
    Tab tb;
    tab_make(&tb, -1, 3, freq);

    WaiRansEnc e;
    wai_rans_enc_init(&e);
    for (int i = 0; i < 9; i++) CHECK_EQ(wai_rans_enc_value(&e, &tb.t, vals[i]), 0);
    CHECK_EQ(e.n, 25);
    uint8_t *out;
    size_t size;
    CHECK_EQ(wai_rans_enc_finish(&e, &out, &size), 0);
    CHECK_EQ(e.sym == NULL, 1);
    CHECK_EQ(size, sizeof(expect));
    if (size == sizeof(expect)) CHECK(!memcmp(out, expect, size));
    free(out);

    uint8_t *b = dup_exact(expect, sizeof(expect));
    WaiRansDec d;
    CHECK_EQ(wai_rans_dec_init(&d, b, sizeof(expect)), 0);
    CHECK_EQ(d.x, states[0]);
    for (int i = 0; i < 9; i++) {
        int32_t v = 12345678;
        CHECK_EQ(wai_rans_dec_value(&d, &tb.t, &v), 0);
        CHECK_EQ(v, vals[i]);
        CHECK_EQ(d.x, states[i + 1]);
    }
    CHECK_EQ(d.p == d.end, 1);
    CHECK_EQ(wai_rans_dec_finish(&d), 0);
    free(b);

    /* every prefix is truncated: the states match the full stream's until byte `len` is
     * needed, so the first error is exactly TRUNCATED (never a read past the copy) */
    const WaiTable *tabs[9];
    for (int i = 0; i < 9; i++) tabs[i] = &tb.t;
    for (size_t len = 0; len < sizeof(expect); len++)
        CHECK_EQ(decode_all(expect, len, tabs, vals, 9, NULL), WAI_ERR_TRUNCATED);
    CHECK_EQ(decode_all(expect, sizeof(expect), tabs, vals, 9, NULL), 0);
}

/* ---- (b) randomised round trips ---- */

static uint32_t rand_length(uint64_t *rs)
{
    switch (tu_range(rs, 0, 3)) {
    case 0: return (uint32_t)tu_range(rs, 1, 4);
    case 1: return (uint32_t)tu_range(rs, 1, 40);
    default: return (uint32_t)tu_range(rs, 1, 2000);
    }
}

/* length + 1 frequencies, each >= 1, summing to 65536; sometimes very skewed. */
static void rand_freqs(uint64_t *rs, uint32_t length, uint16_t *freq)
{
    uint32_t n = length + 1, rest = 65536 - n;
    int mode = (int)tu_range(rs, 0, 3);
    if (mode == 0) {                           /* one symbol takes almost everything */
        for (uint32_t s = 0; s < n; s++) freq[s] = 1;
        freq[tu_range(rs, 0, n - 1)] += (uint16_t)rest;
        return;
    }
    static uint32_t w[2001];
    uint64_t sum = 0;
    for (uint32_t s = 0; s < n; s++) {
        w[s] = mode == 1 ? (uint32_t)tu_range(rs, 1, 100)
                         : (uint32_t)(1u << tu_range(rs, 0, 16)) + (uint32_t)tu_range(rs, 0, 7);
        sum += w[s];
    }
    uint32_t given = 0, big = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t extra = (uint32_t)((uint64_t)w[s] * rest / sum);
        freq[s] = (uint16_t)(1 + extra);
        given += extra;
        if (freq[s] > freq[big]) big = s;
    }
    freq[big] = (uint16_t)(freq[big] + (rest - given));
}

static int32_t rand_value(uint64_t *rs, const WaiTable *t)
{
    for (;;) {
        int64_t v;
        switch (tu_range(rs, 0, 9)) {
        case 0: v = t->offset + (int64_t)t->length; break;             /* u = 0, nb = 0 */
        case 1: v = t->offset - 1; break;                                /* u = 1, nb = 1 */
        case 2: {                                                        /* nb 0..5 */
            int nb = (int)tu_range(rs, 0, 5);
            uint64_t u = nb ? (uint64_t)tu_range(rs, (int64_t)1 << (4 * nb - 4),
                                                 ((int64_t)1 << (4 * nb)) - 1) : 0;
            int64_t d = (u & 1) ? -(int64_t)((u + 1) / 2) : (int64_t)(u / 2) + t->length;
            v = d + t->offset;
            break;
        }
        case 3: v = tu_range(rs, -65535, 65535); break;
        case 4: v = tu_range(rs, 0, 1) ? 65535 : -65535; break;
        default: {                                                       /* in range */
            /* favour likely symbols the way real data does: take c uniformly */
            uint32_t c = (uint32_t)tu_range(rs, 0, 65535), s = 0;
            while (t->cdf[s + 1] <= c) s++;
            if (s == t->length) continue;
            v = t->offset + (int64_t)s;
            break;
        }
        }
        if (v >= -65535 && v <= 65535) return (int32_t)v;
    }
}

static void test_random(void)
{
    uint64_t rs = 0x5eed0001;
    static Tab tabs[8];
    for (int iter = 0; iter < 400; iter++) {
        int ntab = (int)tu_range(&rs, 1, 8);
        for (int k = 0; k < ntab; k++) {
            uint16_t freq[2001];
            uint32_t length = rand_length(&rs);
            rand_freqs(&rs, length, freq);
            int32_t offset = (int32_t)(tu_range(&rs, 0, 3) ? tu_range(&rs, -300, 300)
                                                           : tu_range(&rs, -65536, 65536));
            tab_make(&tabs[k], offset, length, freq);
            CHECK_EQ(tabs[k].cdf[length + 1], 65536);
        }
        size_t n = (size_t)(iter % 50 == 0 ? tu_range(&rs, 1000, 6000) : tu_range(&rs, 0, 300));
        int32_t *vals = malloc((n + 1) * sizeof(*vals));
        const WaiTable **tp = malloc((n + 1) * sizeof(*tp));
        if (!vals || !tp) abort();
        WaiRansEnc e;
        wai_rans_enc_init(&e);
        SymList sl = { 0 };
        for (size_t i = 0; i < n; i++) {
            tp[i] = &tabs[tu_range(&rs, 0, ntab - 1)].t;
            vals[i] = rand_value(&rs, tp[i]);
            CHECK_EQ(wai_rans_enc_value(&e, tp[i], vals[i]), 0);
            sl_value(&sl, tp[i], vals[i]);
        }
        CHECK_EQ(e.n, sl.n);
        uint8_t *out;
        size_t size, rsize;
        CHECK_EQ(wai_rans_enc_finish(&e, &out, &size), 0);
        uint8_t *ref = ref_encode(&sl, &rsize);
        CHECK_EQ(size, rsize);
        if (size == rsize) CHECK(!memcmp(out, ref, size));

        size_t ndone;
        CHECK_EQ(decode_all(out, size, tp, vals, n, &ndone), 0);
        CHECK_EQ(ndone, n);
        /* prefixes of small streams: exactly TRUNCATED (see test_hand) */
        if (size <= 400)
            for (size_t len = 0; len < size; len++)
                CHECK_EQ(decode_all(out, len, tp, vals, n, NULL), WAI_ERR_TRUNCATED);
        free(out);
        free(ref);
        free(sl.s);
        free(vals);
        free(tp);
    }
}

/* ---- (c) error cases ---- */

static void put_state(uint8_t *b, uint32_t x)
{
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(x >> (8 * i));
}

static void test_init(void)
{
    WaiRansDec d;
    uint8_t *b = malloc(4);
    if (!b) abort();
    CHECK_EQ(wai_rans_dec_init(&d, NULL, 0), WAI_ERR_TRUNCATED);
    for (size_t n = 0; n < 4; n++) {
        uint8_t *q = dup_exact((const uint8_t *)"\0\0\x80", n);
        CHECK_EQ(wai_rans_dec_init(&d, q, n), WAI_ERR_TRUNCATED);
        free(q);
    }
    static const struct { uint32_t x; int r, fin; } cases[] = {
        { 0, WAI_ERR_BITSTREAM, 0 },
        { (1u << 23) - 1, WAI_ERR_BITSTREAM, 0 },
        { 1u << 23, 0, 0 },                       /* the empty stream */
        { (1u << 23) + 1, 0, WAI_ERR_BITSTREAM },
        { (1u << 31) - 1, 0, WAI_ERR_BITSTREAM },
        { 1u << 31, WAI_ERR_BITSTREAM, 0 },
        { 0xffffffffu, WAI_ERR_BITSTREAM, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        put_state(b, cases[i].x);
        CHECK_EQ(wai_rans_dec_init(&d, b, 4), cases[i].r);
        if (!cases[i].r) CHECK_EQ(wai_rans_dec_finish(&d), cases[i].fin);
    }
    free(b);

    /* the encoder's empty stream is exactly the state 2^23 */
    WaiRansEnc e;
    uint8_t *out;
    size_t size;
    wai_rans_enc_init(&e);
    CHECK_EQ(wai_rans_enc_finish(&e, &out, &size), 0);
    CHECK_EQ(size, 4);
    if (size == 4) CHECK(!memcmp(out, "\0\0\x80\0", 4));
    free(out);
}

static void test_finish(void)
{
    static const uint16_t freq[4] = { 16384, 32768, 16383, 1 };
    static const int32_t vals[6] = { 0, 1, -1, 7, 0, 0 };
    Tab tb;
    tab_make(&tb, -1, 3, freq);
    const WaiTable *tabs[6] = { &tb.t, &tb.t, &tb.t, &tb.t, &tb.t, &tb.t };
    WaiRansEnc e;
    uint8_t *out;
    size_t size;
    wai_rans_enc_init(&e);
    for (int i = 0; i < 6; i++) wai_rans_enc_value(&e, &tb.t, vals[i]);
    CHECK_EQ(wai_rans_enc_finish(&e, &out, &size), 0);

    /* a trailing byte: every value decodes, the finish check fails */
    uint8_t *longer = malloc(size + 1);
    if (!longer) abort();
    memcpy(longer, out, size);
    longer[size] = 0;
    size_t ndone;
    CHECK_EQ(decode_all(longer, size + 1, tabs, vals, 6, &ndone), WAI_ERR_BITSTREAM);
    CHECK_EQ(ndone, 6);
    /* one value too few: the state is not back at L */
    CHECK_EQ(decode_all(out, size, tabs, vals, 5, &ndone), WAI_ERR_BITSTREAM);
    CHECK_EQ(ndone, 5);
    free(longer);
    free(out);
}

static void test_encoder_errors(void)
{
    static const uint16_t freq[4] = { 16384, 32768, 16383, 1 };
    static const int32_t bad[] = { 65536, -65536, INT32_MAX, INT32_MIN, 100000 };
    Tab tb;
    tab_make(&tb, -1, 3, freq);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        WaiRansEnc e;
        uint8_t *out = (uint8_t *)&e;
        size_t size = 99;
        wai_rans_enc_init(&e);
        CHECK_EQ(wai_rans_enc_value(&e, &tb.t, 3), 0);
        CHECK_EQ(wai_rans_enc_value(&e, &tb.t, bad[i]), WAI_ERR_INVALID_ARG);
        /* the encoder stays failed: no stream that silently lacks a value */
        CHECK_EQ(wai_rans_enc_value(&e, &tb.t, 0), WAI_ERR_INVALID_ARG);
        CHECK_EQ(wai_rans_enc_finish(&e, &out, &size), WAI_ERR_INVALID_ARG);
        CHECK(out == NULL);
        CHECK_EQ(size, 0);
        CHECK(e.sym == NULL);
    }
    /* wai_rans_enc_free on a partly filled queue (ASan: no leak) */
    WaiRansEnc e;
    wai_rans_enc_init(&e);
    for (int i = 0; i < 1000; i++) CHECK_EQ(wai_rans_enc_value(&e, &tb.t, i % 50 - 25), 0);
    wai_rans_enc_free(&e);
    CHECK(e.sym == NULL && e.n == 0);
}

/* Hand-made symbol sequences for the decoder's bypass and value bounds. */
static int decode_one(const SymList *l, const WaiTable *t, int32_t *v)
{
    size_t size;
    uint8_t *s = ref_encode(l, &size);
    WaiRansDec d;
    int r = wai_rans_dec_init(&d, s, size);
    if (!r) r = wai_rans_dec_value(&d, t, v);
    if (!r) r = wai_rans_dec_finish(&d);
    free(s);
    return r;
}

static int bypass_case(const WaiTable *t, const uint32_t *nibbles, int n, int32_t *v)
{
    SymList l = { 0 };
    sl_push(&l, t->cdf[t->length], t->freq[t->length]);
    for (int i = 0; i < n; i++) sl_nibble(&l, nibbles[i]);
    int r = decode_one(&l, t, v);
    free(l.s);
    return r;
}

static void test_bypass_bounds(void)
{
    static const uint16_t freq[4] = { 16384, 32768, 16383, 1 };
    Tab tb;
    tab_make(&tb, -1, 3, freq);
    int32_t v;

    /* nb = 9: refused as soon as the length nibble is read, whatever follows */
    static const uint32_t nb9[10] = { 9, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    CHECK_EQ(bypass_case(&tb.t, nb9, 10, &v), WAI_ERR_BITSTREAM);
    CHECK_EQ(bypass_case(&tb.t, nb9, 1, &v), WAI_ERR_BITSTREAM);
    /* nb = 15 + 0 (the continuation form) is also above 8 */
    static const uint32_t nb15[2] = { 15, 0 };
    CHECK_EQ(bypass_case(&tb.t, nb15, 2, &v), WAI_ERR_BITSTREAM);
    /* nb = 8 is allowed, but u = 0xffffffff gives |v| far above 65535 */
    static const uint32_t big[9] = { 8, 15, 15, 15, 15, 15, 15, 15, 15 };
    CHECK_EQ(bypass_case(&tb.t, big, 9, &v), WAI_ERR_BITSTREAM);
    /* nb = 8 with leading zero nibbles (not minimal) is accepted: u = 2, d = 1 + 3, v = 3 */
    static const uint32_t padded[9] = { 8, 2, 0, 0, 0, 0, 0, 0, 0 };
    v = 0;
    CHECK_EQ(bypass_case(&tb.t, padded, 9, &v), 0);
    CHECK_EQ(v, 3);
    /* nb = 0: u = 0, d = L_t = 3, v = 2 */
    static const uint32_t zero[1] = { 0 };
    v = 0;
    CHECK_EQ(bypass_case(&tb.t, zero, 1, &v), 0);
    CHECK_EQ(v, 2);
    /* missing bypass nibbles (the stream ends as the state returns to L) */
    static const uint32_t short2[2] = { 2, 1 };
    CHECK_EQ(bypass_case(&tb.t, short2, 2, &v), WAI_ERR_TRUNCATED);

    /* |v| = 65535 decodes, 65536 does not: positive u = 2 (v + 1 - 3), negative u = -2d - 1 */
    static const struct { uint32_t u; int r; int32_t v; } lim[] = {
        { 131066, 0, 65535 }, { 131068, WAI_ERR_BITSTREAM, 0 },
        { 131067, 0, -65535 }, { 131069, WAI_ERR_BITSTREAM, 0 },
    };
    for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
        uint32_t nib[6] = { 5 };
        for (int k = 0; k < 5; k++) nib[1 + k] = (lim[i].u >> (4 * k)) & 15;
        v = 0;
        CHECK_EQ(bypass_case(&tb.t, nib, 6, &v), lim[i].r);
        if (!lim[i].r) CHECK_EQ(v, lim[i].v);
    }

    /* the bound applies to in-range symbols too: offset 65000, length 1000 */
    uint16_t f2[1001];
    for (int s = 0; s < 1000; s++) f2[s] = 65;
    f2[1000] = (uint16_t)(65536 - 65 * 1000);
    static Tab t2;
    tab_make(&t2, 65000, 1000, f2);
    static const struct { uint32_t s; int r; } in[] = { { 535, 0 }, { 536, WAI_ERR_BITSTREAM }, { 999, WAI_ERR_BITSTREAM } };
    for (size_t i = 0; i < 3; i++) {
        SymList l = { 0 };
        sl_push(&l, t2.cdf[in[i].s], t2.freq[in[i].s]);
        v = 0;
        CHECK_EQ(decode_one(&l, &t2.t, &v), in[i].r);
        if (!in[i].r) CHECK_EQ(v, 65535);
        free(l.s);
    }
    tab_make(&t2, -65536, 1000, f2);
    SymList l = { 0 };
    sl_push(&l, t2.cdf[0], t2.freq[0]);
    CHECK_EQ(decode_one(&l, &t2.t, &v), WAI_ERR_BITSTREAM);
    l.n = 0;
    sl_push(&l, t2.cdf[1], t2.freq[1]);
    CHECK_EQ(decode_one(&l, &t2.t, &v), 0);
    CHECK_EQ(v, -65535);
    free(l.s);
}

int main(void)
{
    test_hand();
    test_random();
    test_init();
    test_finish();
    test_encoder_errors();
    test_bypass_bounds();
    return tu_finish("test_rans");
}
