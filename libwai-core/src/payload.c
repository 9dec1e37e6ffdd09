/* WIH1 payloads (spec 3, 7.3-7.5): two rANS streams, z then y, around the integer h_s/g_s. */
#include "payload.h"

#include <stdlib.h>

#include "rans.h"

static const uint8_t wih1_magic[4] = { 'W', 'I', 'H', '1' };

static int32_t z_hat_of(const WaiModel *m, uint32_t c, int32_t v)
{
#ifdef WAI_PLANTED_FAULT_PAYLOAD_ZHAT_MEDIAN
    c = 0;                                    /* planted: every channel uses median 0 */
#endif
#ifdef WAI_PLANTED_FAULT_VEC_ZHAT_INT32
    /* planted: v * 4096 + median in 32 bits (wraps around before the clamp) */
    return wai_clamp_act((int32_t)((uint32_t)v * 4096u + (uint32_t)m->z_median_q12[c]));
#endif
    return wai_clamp_act((int64_t)v * 4096 + m->z_median_q12[c]);
}

void wai_z_hat(const WaiModel *m, const WaiGeometry *g, const int32_t *z_sym, int32_t *z_hat)
{
    const size_t plane = (size_t)g->z.h * (size_t)g->z.w;
    for (uint32_t c = 0; c < (uint32_t)g->z.c; c++)
        for (size_t i = 0; i < plane; i++)
            z_hat[c * plane + i] = z_hat_of(m, c, z_sym[c * plane + i]);
}

typedef struct Header {
    uint32_t width, height, z_size, y_size;
} Header;

/* Spec 3: magic, picture size, and stream sizes that add up to the payload exactly. */
static int parse_header(const uint8_t *buf, size_t size, uint32_t width, uint32_t height,
                        Header *h)
{
    if (!buf || size < WAI_PAYLOAD_HEADER) return WAI_ERR_TRUNCATED;
    if (memcmp(buf, wih1_magic, 4)) return WAI_ERR_BITSTREAM;
    h->width = wai_rd32(buf + 4);
    h->height = wai_rd32(buf + 8);
    h->z_size = wai_rd32(buf + 12);
    h->y_size = wai_rd32(buf + 16);
    if (h->width != width || h->height != height) return WAI_ERR_BITSTREAM;
    if (h->z_size < 4 || h->y_size < 4) return WAI_ERR_BITSTREAM;
    /* both u32: the sum fits in u64 */
#ifdef WAI_PLANTED_FAULT_PAYLOAD_TRAILING
    if ((uint64_t)WAI_PAYLOAD_HEADER + h->z_size + h->y_size > (uint64_t)size)
#else
    if ((uint64_t)WAI_PAYLOAD_HEADER + h->z_size + h->y_size != (uint64_t)size)
#endif
        return WAI_ERR_BITSTREAM;
    return 0;
}

/* Spec 7.3: z in order c, y, x with z table c; z_hat directly. */
static int decode_z(const WaiModel *m, const WaiGeometry *g, const uint8_t *p, size_t n,
                    int32_t *z_hat)
{
    WaiRansDec d;
    int r = wai_rans_dec_init(&d, p, n);
    if (r) return r;
    const size_t plane = (size_t)g->z.h * (size_t)g->z.w;
    for (uint32_t c = 0; c < (uint32_t)g->z.c; c++) {
        const WaiTable *t = &m->z_tables[c];
        for (size_t i = 0; i < plane; i++) {
            int32_t v;
            if ((r = wai_rans_dec_value(&d, t, &v))) return r;
            z_hat[c * plane + i] = z_hat_of(m, c, v);
        }
    }
    return wai_rans_dec_finish(&d);
}

/* Spec 7.5: y with the table of each element's scale index; y_hat replaces the mean in place. */
static int decode_y(const WaiModel *m, const WaiGeometry *g, const uint8_t *p, size_t n,
                    const uint8_t *y_index, int32_t *mean_to_y_hat)
{
    WaiRansDec d;
    int r = wai_rans_dec_init(&d, p, n);
    if (r) return r;
    const size_t ny = (size_t)g->y.c * (size_t)g->y.h * (size_t)g->y.w;
    for (size_t i = 0; i < ny; i++) {
        if (y_index[i] >= m->n_scales) return WAI_ERR_INTERNAL;
        int32_t v;
        if ((r = wai_rans_dec_value(&d, &m->y_tables[y_index[i]], &v))) return r;
#ifdef WAI_PLANTED_FAULT_VEC_YHAT_NOCLAMP
        mean_to_y_hat[i] = (int32_t)((int64_t)v * 4096 + mean_to_y_hat[i]);   /* planted: no clamp */
#else
        mean_to_y_hat[i] = wai_clamp_act((int64_t)v * 4096 + mean_to_y_hat[i]);
#endif
    }
    return wai_rans_dec_finish(&d);
}

int wai_payload_decode(const WaiModel *m, const WaiDsp *dsp, const uint8_t *buf, size_t size,
                       uint32_t width, uint32_t height,
                       uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh,
                       uint8_t *rgb, ptrdiff_t stride)
{
    Header h;
    WaiGeometry g;
    int r = parse_header(buf, size, width, height, &h);
    if (r) return r;
    if ((r = wai_geometry(m, width, height, &g))) return r;

    /* the caller checked wai_decode_work() against its budget, which covers these */
    size_t nz, ny;
    if (wai_mul_size((size_t)g.z.c, (size_t)g.z.h * (size_t)g.z.w, &nz) ||
        wai_mul_size((size_t)g.y.c, (size_t)g.y.h * (size_t)g.y.w, &ny) ||
        nz > SIZE_MAX / sizeof(int32_t) || ny > SIZE_MAX / sizeof(int32_t))
        return WAI_ERR_LIMIT;

    const uint8_t *zs = buf + WAI_PAYLOAD_HEADER, *ys = zs + h.z_size;
    int32_t *z_hat = malloc(nz * sizeof(*z_hat));
    uint8_t *y_index = malloc(ny);
    int32_t *y_hat = malloc(ny * sizeof(*y_hat));     /* the mean, then y_hat in place */
    if (!z_hat || !y_index || !y_hat) { r = WAI_ERR_NOMEM; goto end; }

    if ((r = decode_z(m, &g, zs, h.z_size, z_hat))) goto end;
    if ((r = wai_hyper(m, dsp, &g, z_hat, y_index, y_hat))) goto end;
    free(z_hat);
    z_hat = NULL;
    if ((r = decode_y(m, &g, ys, h.y_size, y_index, y_hat))) goto end;
    free(y_index);
    y_index = NULL;
    r = wai_synthesis(m, dsp, &g, y_hat, dx, dy, dw, dh, rgb, stride);
end:
    free(z_hat);
    free(y_index);
    free(y_hat);
    return r;
}

int wai_payload_encode(const WaiModel *m, const WaiGeometry *g, const int32_t *z_sym,
                       const int32_t *y_sym, const uint8_t *y_index, uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    WaiRansEnc ez, ey;
    wai_rans_enc_init(&ez);
    wai_rans_enc_init(&ey);
    uint8_t *zb = NULL, *yb = NULL;
    size_t zn = 0, yn = 0;
    int r = 0;

    const size_t plane = (size_t)g->z.h * (size_t)g->z.w;
    for (uint32_t c = 0; !r && c < (uint32_t)g->z.c; c++)
        for (size_t i = 0; !r && i < plane; i++)
            r = wai_rans_enc_value(&ez, &m->z_tables[c], z_sym[c * plane + i]);
    const size_t ny = (size_t)g->y.c * (size_t)g->y.h * (size_t)g->y.w;
    for (size_t i = 0; !r && i < ny; i++)
        r = y_index[i] >= m->n_scales ? WAI_ERR_INVALID_ARG
                                      : wai_rans_enc_value(&ey, &m->y_tables[y_index[i]], y_sym[i]);
    if (r) goto end;
    if ((r = wai_rans_enc_finish(&ez, &zb, &zn)) || (r = wai_rans_enc_finish(&ey, &yb, &yn)))
        goto end;
    /* the header's u32 sizes, and a payload a frame unit (u32 payload_size) can carry */
    if (zn > UINT32_MAX || yn > UINT32_MAX ||
        (uint64_t)WAI_PAYLOAD_HEADER + zn + yn > UINT32_MAX) {
        r = WAI_ERR_LIMIT;
        goto end;
    }
    const size_t n = WAI_PAYLOAD_HEADER + zn + yn;
    uint8_t *p = malloc(n);
    if (!p) { r = WAI_ERR_NOMEM; goto end; }
    memcpy(p, wih1_magic, 4);
    wai_wr32(p + 4, g->width);
    wai_wr32(p + 8, g->height);
    wai_wr32(p + 12, (uint32_t)zn);
    wai_wr32(p + 16, (uint32_t)yn);
    memcpy(p + WAI_PAYLOAD_HEADER, zb, zn);
    memcpy(p + WAI_PAYLOAD_HEADER + zn, yb, yn);
    *out = p;
    *size = n;
end:
    wai_rans_enc_free(&ez);
    wai_rans_enc_free(&ey);
    free(zb);
    free(yb);
    return r;
}
