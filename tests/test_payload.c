/* WIH1 payloads (spec 3, 7.3-7.5) with the generated tiny model: encode random latents, decode,
 * and compare with a second path computed here (z_hat, y_hat by the spec's formulas, then
 * wai_hyper / wai_synthesis); every kind of damage gives a defined error, never a crash. */
#include "payload.h"

#include <stdlib.h>
#include <string.h>

#include "rans.h"
#include "testutil.h"

#include <stdio.h>

#define MODEL_FILE "wai-tiny-n64m96.whm"
#define GUARD 0xA5

static uint64_t rs = 0x9a71;

static WaiModel *load_model(void)
{
    const char *dir = getenv("WAI_MODEL_PATH");
    if (!dir) {
        fprintf(stderr, "WAI_MODEL_PATH is not set\n");
        return NULL;
    }
    size_t plen = strlen(dir) + sizeof(MODEL_FILE) + 2;
    char *path = malloc(plen);
    if (!path) return NULL;
    snprintf(path, plen, "%s/%s", dir, MODEL_FILE);
    uint8_t *buf = NULL;
    size_t size = 0;
    WaiModel *m = NULL;
    char msg[256] = "";
    int r = wai_read_file(path, (size_t)1 << 30, &buf, &size);
    if (!r) r = wai_model_parse(&m, buf, size, msg, sizeof(msg));
    if (r) fprintf(stderr, "%s: error %d %s\n", path, r, msg);
    free(buf);
    free(path);
    return r ? NULL : m;
}

/* Mostly small values like a real latent, some escapes of every bypass length, the extremes. */
static int32_t rand_latent(void)
{
    switch (tu_range(&rs, 0, 19)) {
    case 0: return (int32_t)tu_range(&rs, -65535, 65535);
    case 1: return tu_range(&rs, 0, 1) ? 65535 : -65535;
    case 2: return (int32_t)tu_range(&rs, -300, 300);
    default: return (int32_t)tu_range(&rs, -3, 3);
    }
}

typedef struct Case {
    WaiGeometry g;
    size_t nz, ny;
    int32_t *z_sym, *y_sym, *z_hat, *y_mean, *y_hat;
    uint8_t *y_index;
    uint8_t *payload;
    size_t size;
} Case;

static void case_free(Case *c)
{
    free(c->z_sym);
    free(c->y_sym);
    free(c->z_hat);
    free(c->y_mean);
    free(c->y_hat);
    free(c->y_index);
    free(c->payload);
    memset(c, 0, sizeof(*c));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* Random latents, the direct path's z_hat / y_hat (spec 7.3, 7.5 formulas computed here), and
 * the encoded payload. */
static int case_make(Case *c, const WaiModel *m, const WaiDsp *dsp, uint32_t w, uint32_t h)
{
    memset(c, 0, sizeof(*c));
    int r = wai_geometry(m, w, h, &c->g);
    CHECK_EQ(r, 0);
    if (r) return r;
    c->nz = (size_t)c->g.z.c * c->g.z.h * c->g.z.w;
    c->ny = (size_t)c->g.y.c * c->g.y.h * c->g.y.w;
    c->z_sym = xmalloc(c->nz * 4);
    c->z_hat = xmalloc(c->nz * 4);
    c->y_sym = xmalloc(c->ny * 4);
    c->y_mean = xmalloc(c->ny * 4);
    c->y_hat = xmalloc(c->ny * 4);
    c->y_index = xmalloc(c->ny);

    const size_t zplane = (size_t)c->g.z.h * c->g.z.w;
    for (size_t i = 0; i < c->nz; i++) {
        c->z_sym[i] = rand_latent();
        int64_t v = (int64_t)c->z_sym[i] * 4096 + m->z_median_q12[i / zplane];
        c->z_hat[i] = (int32_t)(v < -(1 << 23) ? -(1 << 23) : v > (1 << 23) - 1 ? (1 << 23) - 1 : v);
    }
    int32_t *zh = xmalloc(c->nz * 4);
    wai_z_hat(m, &c->g, c->z_sym, zh);
    CHECK(!memcmp(zh, c->z_hat, c->nz * 4));
    free(zh);

    memset(c->y_index, 0xff, c->ny);
    r = wai_hyper(m, dsp, &c->g, c->z_hat, c->y_index, c->y_mean);
    CHECK_EQ(r, 0);
    if (r) return r;
    for (size_t i = 0; i < c->ny; i++) {
        CHECK(c->y_index[i] < m->n_scales);
        c->y_sym[i] = rand_latent();
        int64_t v = (int64_t)c->y_sym[i] * 4096 + c->y_mean[i];
        c->y_hat[i] = (int32_t)(v < -(1 << 23) ? -(1 << 23) : v > (1 << 23) - 1 ? (1 << 23) - 1 : v);
    }
    r = wai_payload_encode(m, &c->g, -1, c->z_sym, c->y_sym, c->y_index, &c->payload, &c->size);
    CHECK_EQ(r, 0);
    return r;
}

static uint32_t hdr(const Case *c, int field) { return wai_rd32(c->payload + 4 * field); }

/* Decode from an exact-size copy (ASan sees any overread). */
static int decode_copy(const WaiModel *m, const WaiDsp *dsp, const uint8_t *p, size_t n,
                       uint32_t w, uint32_t h, uint8_t *rgb)
{
    uint8_t *b = xmalloc(n);
    if (n) memcpy(b, p, n);
    int r = wai_payload_decode(m, dsp, b, n, w, h, 0, 0, w, h, rgb, (ptrdiff_t)w * 3);
    free(b);
    return r;
}

/* Rebuild a payload from (possibly altered) streams with a consistent header. */
static uint8_t *build(const Case *c, const uint8_t *z, uint32_t zn, const uint8_t *y,
                      uint32_t yn, size_t *n)
{
    *n = 20 + (size_t)zn + yn;
    uint8_t *p = xmalloc(*n);
    memcpy(p, c->payload, 12);
    wai_wr32(p + 12, zn);
    wai_wr32(p + 16, yn);
    memcpy(p + 20, z, zn);
    memcpy(p + 20 + zn, y, yn);
    return p;
}

static void test_roundtrip(const WaiModel *m, const WaiDsp *dsp, uint32_t w, uint32_t h)
{
    Case c;
    if (case_make(&c, m, dsp, w, h)) { case_free(&c); return; }

    /* header (spec 3) */
    CHECK(!memcmp(c.payload, "WIH1", 4));
    CHECK_EQ(hdr(&c, 1), w);
    CHECK_EQ(hdr(&c, 2), h);
    CHECK(hdr(&c, 3) >= 4 && hdr(&c, 4) >= 4);
    CHECK_EQ(20 + (uint64_t)hdr(&c, 3) + hdr(&c, 4), c.size);

    /* the z stream holds exactly z_sym in order c, y, x with table c (spec 7.3) */
    {
        WaiRansDec d;
        CHECK_EQ(wai_rans_dec_init(&d, c.payload + 20, hdr(&c, 3)), 0);
        const size_t zplane = (size_t)c.g.z.h * c.g.z.w;
        int bad = 0;
        for (size_t i = 0; i < c.nz && !bad; i++) {
            int32_t v;
            bad = wai_rans_dec_value(&d, &m->z_tables[i / zplane], &v) || v != c.z_sym[i];
        }
        CHECK_EQ(bad, 0);
        CHECK_EQ(wai_rans_dec_finish(&d), 0);
    }

    /* decode == the direct path */
    const size_t rgb_n = (size_t)w * h * 3;
    uint8_t *a = xmalloc(rgb_n), *b = xmalloc(rgb_n);
    memset(a, 0, rgb_n);
    memset(b, 1, rgb_n);
    CHECK_EQ(decode_copy(m, dsp, c.payload, c.size, w, h, a), 0);
    CHECK_EQ(wai_synthesis(m, dsp, &c.g, c.y_hat, 0, 0, w, h, b, (ptrdiff_t)w * 3), 0);
    CHECK(!memcmp(a, b, rgb_n));

    /* a display window with a wider stride: the same pixels, guard bytes untouched */
    if (w > 3 && h > 2) {
        const uint32_t dx = 1, dy = 2, dw = w - 3, dh = h - 2;
        const ptrdiff_t stride = (ptrdiff_t)dw * 3 + 5;
        const size_t n = (size_t)stride * dh;
        uint8_t *win = xmalloc(n);
        memset(win, GUARD, n);
        CHECK_EQ(wai_payload_decode(m, dsp, c.payload, c.size, w, h, dx, dy, dw, dh, win, stride), 0);
        int diff = 0, guard = 0;
        for (uint32_t row = 0; row < dh; row++) {
            diff |= memcmp(win + row * stride, a + ((size_t)(dy + row) * w + dx) * 3, (size_t)dw * 3) != 0;
            for (ptrdiff_t k = (ptrdiff_t)dw * 3; k < stride; k++) guard |= win[row * stride + k] != GUARD;
        }
        CHECK_EQ(diff, 0);
        CHECK_EQ(guard, 0);
        free(win);
    }

    /* the picture depends on y: change one y value, re-encode, some pixel changes */
    {
        size_t k = c.ny / 2;
        while (k < c.ny - 1 && (c.y_sym[k] < -3 || c.y_sym[k] > 3)) k++;
        const int32_t keep = c.y_sym[k];
        c.y_sym[k] = keep > 0 ? -40 : 40;
        uint8_t *p2;
        size_t n2;
        CHECK_EQ(wai_payload_encode(m, &c.g, -1, c.z_sym, c.y_sym, c.y_index, &p2, &n2), 0);
        CHECK_EQ(decode_copy(m, dsp, p2, n2, w, h, b), 0);
        CHECK(memcmp(a, b, rgb_n) != 0);
        free(p2);
        c.y_sym[k] = keep;
    }
    free(a);
    free(b);
    case_free(&c);
}

static void test_errors(const WaiModel *m, const WaiDsp *dsp, uint32_t w, uint32_t h)
{
    Case c;
    if (case_make(&c, m, dsp, w, h)) { case_free(&c); return; }
    uint8_t *rgb = xmalloc((size_t)w * h * 3);
    const uint32_t zn = hdr(&c, 3), yn = hdr(&c, 4);
    const uint8_t *z = c.payload + 20, *y = z + zn;
    uint8_t *p;
    size_t n;

    /* every truncation of the whole payload: the header's sizes no longer add up */
    for (size_t len = 0; len < c.size; len++)
        CHECK_EQ(decode_copy(m, dsp, c.payload, len, w, h, rgb), len < 20 ? WAI_ERR_TRUNCATED : WAI_ERR_BITSTREAM);
    /* a trailing byte */
    p = xmalloc(c.size + 1);
    memcpy(p, c.payload, c.size);
    p[c.size] = 0;
    CHECK_EQ(decode_copy(m, dsp, p, c.size + 1, w, h, rgb), WAI_ERR_BITSTREAM);
    free(p);

    /* truncated rANS streams with a consistent header: prefixes of >= 4 bytes are TRUNCATED
     * (the states match until the missing byte is needed), shorter ones break z/y_size >= 4 */
    for (uint32_t k = 0; k < zn; k++) {
        p = build(&c, z, k, y, yn, &n);
        CHECK_EQ(decode_copy(m, dsp, p, n, w, h, rgb), k < 4 ? WAI_ERR_BITSTREAM : WAI_ERR_TRUNCATED);
        free(p);
    }
    for (uint32_t k = 0; k < yn; k += (k < 64 || yn < 400) ? 1 : (uint32_t)tu_range(&rs, 1, yn / 50)) {
        p = build(&c, z, zn, y, k, &n);
        CHECK_EQ(decode_copy(m, dsp, p, n, w, h, rgb), k < 4 ? WAI_ERR_BITSTREAM : WAI_ERR_TRUNCATED);
        free(p);
    }
    /* a byte too many inside each stream: its finish check fails */
    {
        uint8_t *z2 = xmalloc(zn + 1), *y2 = xmalloc(yn + 1);
        memcpy(z2, z, zn);
        z2[zn] = 0x5a;
        memcpy(y2, y, yn);
        y2[yn] = 0x5a;
        p = build(&c, z2, zn + 1, y, yn, &n);
        CHECK_EQ(decode_copy(m, dsp, p, n, w, h, rgb), WAI_ERR_BITSTREAM);
        free(p);
        p = build(&c, z, zn, y2, yn + 1, &n);
        CHECK_EQ(decode_copy(m, dsp, p, n, w, h, rgb), WAI_ERR_BITSTREAM);
        free(p);
        /* the streams swapped: sizes add up, but neither decodes with the other's tables
         * (or the finish check fails) */
        p = build(&c, y, yn, z, zn, &n);
        int r = decode_copy(m, dsp, p, n, w, h, rgb);
        CHECK(r == WAI_ERR_BITSTREAM || r == WAI_ERR_TRUNCATED);
        free(p);
        free(z2);
        free(y2);
    }

    /* header fields */
    CHECK_EQ(decode_copy(m, dsp, c.payload, c.size, w + 1, h, rgb), WAI_ERR_BITSTREAM);
    CHECK_EQ(decode_copy(m, dsp, c.payload, c.size, w, h + 1, rgb), WAI_ERR_BITSTREAM);
    if (w > 1) CHECK_EQ(decode_copy(m, dsp, c.payload, c.size, w - 1, h, rgb), WAI_ERR_BITSTREAM);
    p = xmalloc(c.size);
    static const struct { int off; uint32_t v; } fields[] = {
        { 12, 0xffffffffu }, { 16, 0xffffffffu }, { 12, 0 }, { 16, 3 }, { 12, 3 },
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        memcpy(p, c.payload, c.size);
        wai_wr32(p + fields[i].off, fields[i].v);
        CHECK_EQ(decode_copy(m, dsp, p, c.size, w, h, rgb), WAI_ERR_BITSTREAM);
    }
    /* z_size 3 with y_size grown to keep the sum: still z_size < 4 */
    memcpy(p, c.payload, c.size);
    wai_wr32(p + 12, 3);
    wai_wr32(p + 16, yn + zn - 3);
    CHECK_EQ(decode_copy(m, dsp, p, c.size, w, h, rgb), WAI_ERR_BITSTREAM);
    /* every single bit flip in the header is a bitstream error */
    for (int bit = 0; bit < 160; bit++) {
        memcpy(p, c.payload, c.size);
        p[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK_EQ(decode_copy(m, dsp, p, c.size, w, h, rgb), WAI_ERR_BITSTREAM);
    }
    /* bit flips in the streams: an error or a picture, never a crash or another code */
    int nerr = 0;
    for (int t = 0; t < 60; t++) {
        memcpy(p, c.payload, c.size);
        size_t pos = (size_t)tu_range(&rs, 20, (int64_t)c.size - 1);
        p[pos] ^= (uint8_t)(1u << tu_range(&rs, 0, 7));
        int r = decode_copy(m, dsp, p, c.size, w, h, rgb);
        CHECK(r == 0 || r == WAI_ERR_BITSTREAM || r == WAI_ERR_TRUNCATED);
        nerr += r != 0;
    }
    CHECK(nerr > 0);
    free(p);

    /* encoder: values beyond +-65535 and table indices beyond n_scales are refused */
    uint8_t *out = (uint8_t *)&c;
    size_t osz = 7;
    c.z_sym[c.nz - 1] = -65536;
    CHECK_EQ(wai_payload_encode(m, &c.g, -1, c.z_sym, c.y_sym, c.y_index, &out, &osz), WAI_ERR_INVALID_ARG);
    CHECK(out == NULL && osz == 0);
    c.z_sym[c.nz - 1] = 0;
    c.y_sym[0] = 65536;
    CHECK_EQ(wai_payload_encode(m, &c.g, -1, c.z_sym, c.y_sym, c.y_index, &out, &osz), WAI_ERR_INVALID_ARG);
    c.y_sym[0] = 0;
    c.y_index[c.ny - 1] = (uint8_t)m->n_scales;
    if (m->n_scales < 256)
        CHECK_EQ(wai_payload_encode(m, &c.g, -1, c.z_sym, c.y_sym, c.y_index, &out, &osz), WAI_ERR_INVALID_ARG);
    CHECK(out == NULL);

    free(rgb);
    case_free(&c);
}

/* ---- spec 1.1: RATES models and WIH2 payloads ----
 * The tiny model with a rate table of 3 rates appended (flags bit 0): per channel random steps
 * in 1..2^24 (rate 0 includes 1, 2^24 and 4096 on some channels). */
#define N_RATES 3

static WaiModel *rates_model(const WaiModel *plain)
{
    const char *dir = getenv("WAI_MODEL_PATH");
    if (!dir) return NULL;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, MODEL_FILE);
    uint8_t *buf = NULL;
    size_t size = 0;
    if (wai_read_file(path, (size_t)1 << 30, &buf, &size)) return NULL;
    const size_t tn = 4 + (size_t)N_RATES * plain->n_y * 8, n = size + tn;
    uint8_t *o = xmalloc(n);
    memcpy(o, buf, size - 4);
    free(buf);
    wai_wr32(o + 12, WAI_MODEL_RATES);
    uint8_t *t = o + size - 4;
    wai_wr32(t, N_RATES);
    t += 4;
    uint64_t r = 77;
    for (int k = 0; k < N_RATES; k++)
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t c = 0; c < plain->n_y; c++) {
                uint32_t v;
                switch (tu_range(&r, 0, 5)) {
                case 0: v = 1; break;
                case 1: v = 1u << 24; break;
                case 2: v = 4096; break;
                case 3: v = (uint32_t)tu_range(&r, 1, 1 << 24); break;
                default: v = (uint32_t)tu_range(&r, 1024, 16384); break;
                }
                wai_wr32(t, v);
                t += 4;
            }
    wai_wr32(o + 8, (uint32_t)n);
    wai_wr32(o + n - 4, wai_crc32(o, n - 4));
    WaiModel *m = NULL;
    char msg[256];
    if (wai_model_parse(&m, o, n, msg, sizeof(msg))) fprintf(stderr, "rates model: %s\n", msg);
    free(o);
    return m;
}

/* For each rate (-1: WIH1): random values, h_s's output computed here with wai_run_layers and
 * the index of 7.4 by a linear search, y_hat by 7.5's formula, then encode and decode: the
 * decoded picture is g_s of that y_hat. WIH1 with the RATES model gives the plain model's bytes
 * and picture. */
static void test_rates_roundtrip(const WaiModel *plain, const WaiModel *m, const WaiDsp *dsp,
                                 uint32_t w, uint32_t h)
{
    WaiGeometry g;
    CHECK_EQ(wai_geometry(m, w, h, &g), 0);
    const size_t nz = (size_t)g.z.c * g.z.h * g.z.w, ny = (size_t)g.y.c * g.y.h * g.y.w;
    const size_t plane = (size_t)g.y.h * g.y.w, rgb_n = (size_t)w * h * 3;
    int32_t *z = xmalloc(nz * 4), *zh = xmalloc(nz * 4), *y = xmalloc(ny * 4);
    int32_t *mean = xmalloc(ny * 4), *yh = xmalloc(ny * 4);
    uint8_t *idx = xmalloc(ny), *a = xmalloc(rgb_n), *b = xmalloc(rgb_n), *first = NULL;
    for (int rate = -1; rate < N_RATES; rate++) {
        for (size_t i = 0; i < nz; i++) z[i] = (int32_t)tu_range(&rs, -4, 4);
        wai_z_hat(m, &g, z, zh);
        CHECK_EQ(wai_hyper_rate(m, dsp, &g, zh, rate, idx, mean), 0);
        int32_t *p = NULL;
        WaiShape ps;
        CHECK_EQ(wai_run_layers(dsp, m->hs, m->n_hs, zh, g.z, &p, &ps), 0);
        int bad_idx = 0, bad_mean = 0;
        for (size_t i = 0; p && i < ny; i++) {
            const uint32_t c = (uint32_t)(i / plane);
            const int64_t qs = rate < 0 ? 4096 : m->qstep_q12[(size_t)rate * m->n_y + c];
            const int64_t sc = p[i];
            uint32_t k = 0;
            while (k < m->n_scales - 1 && sc * 4096 > (int64_t)m->thresholds_q12[k] * qs) k++;
            bad_idx += idx[i] != k;
            bad_mean += mean[i] != p[ny + i];
        }
        CHECK_EQ(bad_idx, 0);
        CHECK_EQ(bad_mean, 0);
        free(p);
        for (size_t i = 0; i < ny; i++) {
            const uint32_t c = (uint32_t)(i / plane);
            y[i] = rand_latent();
            const int64_t st = rate < 0 ? 4096 : m->rstep_q12[(size_t)rate * m->n_y + c];
            int64_t v = (int64_t)y[i] * st + mean[i];
            yh[i] = (int32_t)(v < -(1 << 23) ? -(1 << 23) : v > (1 << 23) - 1 ? (1 << 23) - 1 : v);
            CHECK_EQ(wai_y_hat(m, rate, c, y[i], mean[i]), yh[i]);
        }
        uint8_t *pl = NULL;
        size_t n = 0;
        CHECK_EQ(wai_payload_encode(m, &g, rate, z, y, idx, &pl, &n), 0);
        if (!pl) continue;
        const size_t hs = rate < 0 ? 20 : 24;
        CHECK(!memcmp(pl, rate < 0 ? "WIH1" : "WIH2", 4));
        CHECK_EQ(wai_rd32(pl + 4), w);
        CHECK_EQ(wai_rd32(pl + 8), h);
        if (rate >= 0) CHECK_EQ(wai_rd32(pl + 12), (uint32_t)rate);
        CHECK_EQ(hs + (uint64_t)wai_rd32(pl + hs - 8) + wai_rd32(pl + hs - 4), n);
        memset(a, 0, rgb_n);
        memset(b, 1, rgb_n);
        CHECK_EQ(decode_copy(m, dsp, pl, n, w, h, a), 0);
        CHECK_EQ(wai_synthesis(m, dsp, &g, yh, 0, 0, w, h, b, (ptrdiff_t)w * 3), 0);
        CHECK(!memcmp(a, b, rgb_n));
        if (rate < 0) {
            /* WIH1: unit steps whatever the model; the plain model's index, bytes and picture */
            uint8_t *idx2 = xmalloc(ny), *pl2 = NULL;
            int32_t *mean2 = xmalloc(ny * 4);
            size_t n2 = 0;
            CHECK_EQ(wai_hyper(plain, dsp, &g, zh, idx2, mean2), 0);
            CHECK(!memcmp(idx, idx2, ny) && !memcmp(mean, mean2, ny * 4));
            CHECK_EQ(wai_payload_encode(plain, &g, -1, z, y, idx2, &pl2, &n2), 0);
            CHECK(pl2 && n2 == n && !memcmp(pl, pl2, n));
            CHECK_EQ(decode_copy(plain, dsp, pl, n, w, h, b), 0);
            CHECK(!memcmp(a, b, rgb_n));
            free(idx2); free(mean2); free(pl2);
        } else {
            /* the error rules of a WIH2 header (spec 3), all before any stream is decoded */
            uint8_t *e = xmalloc(n);
            memcpy(e, pl, n);
            CHECK_EQ(decode_copy(plain, dsp, e, n, w, h, a), WAI_ERR_BITSTREAM); /* no RATES */
            wai_wr32(e + 12, N_RATES);
            CHECK_EQ(decode_copy(m, dsp, e, n, w, h, a), WAI_ERR_BITSTREAM);   /* rate = n_rates */
            wai_wr32(e + 12, UINT32_MAX);
            CHECK_EQ(decode_copy(m, dsp, e, n, w, h, a), WAI_ERR_BITSTREAM);
            wai_wr32(e + 12, (uint32_t)rate);
            CHECK_EQ(decode_copy(m, dsp, e, n, w, h, a), 0);   /* (rate N_RATES - 1 in the loop) */
            /* a bad rate with broken streams too: still the header's error */
            wai_wr32(e + 12, N_RATES);
            memset(e + 24, 0xff, n - 24);
            CHECK_EQ(decode_copy(m, dsp, e, n, w, h, a), WAI_ERR_BITSTREAM);
            memcpy(e, pl, n);
            for (size_t k = 20; k < 24; k++)                                  /* shorter than 24 */
                CHECK_EQ(decode_copy(m, dsp, e, k, w, h, a), WAI_ERR_BITSTREAM);
            CHECK_EQ(decode_copy(m, dsp, e, n - 1, w, h, a), WAI_ERR_BITSTREAM);
            wai_wr32(e + 16, 3);                                              /* z_size < 4 */
            CHECK_EQ(decode_copy(m, dsp, e, n, w, h, a), WAI_ERR_BITSTREAM);
            memcpy(e, pl, n);
            wai_wr32(e + 4, w + 1);
            CHECK_EQ(decode_copy(m, dsp, e, n, w, h, a), WAI_ERR_BITSTREAM);
            memcpy(e, pl, n);
            e[3] = '3';                                                       /* WIH3 */
            CHECK_EQ(decode_copy(m, dsp, e, n, w, h, a), WAI_ERR_BITSTREAM);
            free(e);
            /* the rate's steps matter: the same values at another rate decode differently
             * (or not at all), and encoding a rate the model lacks is refused */
            uint8_t *x = NULL;
            size_t xn = 0;
            CHECK_EQ(wai_payload_encode(m, &g, N_RATES, z, y, idx, &x, &xn), WAI_ERR_INVALID_ARG);
            CHECK_EQ(wai_payload_encode(plain, &g, 0, z, y, idx, &x, &xn), WAI_ERR_INVALID_ARG);
            CHECK_EQ(wai_hyper_rate(plain, dsp, &g, zh, 0, idx, mean), WAI_ERR_INVALID_ARG);
            if (!first) {
                first = xmalloc(rgb_n);
                memcpy(first, a, rgb_n);
            } else {
                CHECK(memcmp(first, a, rgb_n) != 0);
            }
        }
        free(pl);
    }
    free(z); free(zh); free(y); free(mean); free(yh); free(idx); free(a); free(b); free(first);
}

int main(void)
{
    WaiModel *m = load_model();
    CHECK(m != NULL);
    if (!m) return tu_finish("test_payload");
    WaiDsp dsp;
    wai_dsp_init_ref(&dsp);
    const uint32_t pm = m->pad_multiple;
    printf("model %s: n_z %u n_y %u pad %u y_down %u z_down %u\n", m->name, m->n_z, m->n_y, pm,
           m->y_down, m->z_down);

    test_roundtrip(m, &dsp, pm, pm);
    test_roundtrip(m, &dsp, pm + 5, pm > 3 ? pm - 3 : 1);   /* padding on both axes */
    test_roundtrip(m, &dsp, 1, 1);
    test_errors(m, &dsp, pm > 4 ? pm - 4 : pm, pm);
    WaiModel *mr = rates_model(m);
    CHECK(mr != NULL);
    if (mr) {
        test_rates_roundtrip(m, mr, &dsp, pm, pm);
        test_rates_roundtrip(m, mr, &dsp, pm + 5, pm > 3 ? pm - 3 : 1);
        test_rates_roundtrip(m, mr, &dsp, 1, 1);
    }
    wai_model_free(mr);

    wai_model_free(m);
    return tu_finish("test_payload");
}
