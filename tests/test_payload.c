/* WIH1 payloads (spec 3, 7.3-7.5) with the generated tiny model: encode random latents, decode,
 * and compare with a second path computed here (z_hat, y_hat by the spec's formulas, then
 * wai_hyper / wai_synthesis); every kind of damage gives a defined error, never a crash. */
#include "payload.h"

#include <stdlib.h>
#include <string.h>

#include "rans.h"
#include "testutil.h"

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
    r = wai_payload_encode(m, &c->g, c->z_sym, c->y_sym, c->y_index, &c->payload, &c->size);
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
        CHECK_EQ(wai_payload_encode(m, &c.g, c.z_sym, c.y_sym, c.y_index, &p2, &n2), 0);
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
    CHECK_EQ(wai_payload_encode(m, &c.g, c.z_sym, c.y_sym, c.y_index, &out, &osz), WAI_ERR_INVALID_ARG);
    CHECK(out == NULL && osz == 0);
    c.z_sym[c.nz - 1] = 0;
    c.y_sym[0] = 65536;
    CHECK_EQ(wai_payload_encode(m, &c.g, c.z_sym, c.y_sym, c.y_index, &out, &osz), WAI_ERR_INVALID_ARG);
    c.y_sym[0] = 0;
    c.y_index[c.ny - 1] = (uint8_t)m->n_scales;
    if (m->n_scales < 256)
        CHECK_EQ(wai_payload_encode(m, &c.g, c.z_sym, c.y_sym, c.y_index, &out, &osz), WAI_ERR_INVALID_ARG);
    CHECK(out == NULL);

    free(rgb);
    case_free(&c);
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

    wai_model_free(m);
    return tu_finish("test_payload");
}
