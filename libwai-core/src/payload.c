/* WIH1 and WIH2 payloads (spec 3, 7.3-7.5): two rANS streams, z then y, around the integer
 * h_s/g_s. WIH2 (version 1.1) names a rate of a RATES model: its per-channel quantisation step
 * picks the tables (7.4), its reconstruction step scales y (7.5); WIH1 has unit steps (4096). */
#include "payload.h"

#include <stdlib.h>

#include "rans.h"

static const uint8_t wih1_magic[4] = { 'W', 'I', 'H', '1' };
static const uint8_t wih2_magic[4] = { 'W', 'I', 'H', '2' };

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
    uint32_t hsize;       /* 20 (WIH1) or 24 (WIH2) */
    int rate;             /* -1: WIH1 (unit steps) */
} Header;

/* Spec 3: magic, picture size, rate (WIH2: below the model's n_rates) and stream sizes that add
 * up to the payload exactly; every rule a bitstream error. */
static int parse_header(const WaiModel *m, const uint8_t *buf, size_t size, uint32_t width,
                        uint32_t height, Header *h)
{
    if (!buf || size < WAI_PAYLOAD_HEADER) return WAI_ERR_TRUNCATED;
    const uint8_t *q = buf + 4;
    if (!memcmp(buf, wih1_magic, 4)) {
        h->hsize = WAI_PAYLOAD_HEADER;
        h->rate = -1;
    } else if (!memcmp(buf, wih2_magic, 4)) {
        if (size < WAI_PAYLOAD_HEADER2) return WAI_ERR_BITSTREAM;
        h->hsize = WAI_PAYLOAD_HEADER2;
        const uint32_t rate = wai_rd32(buf + 12);
#ifdef WAI_PLANTED_FAULT_RATES_BOUND
        if (!(m->flags & WAI_MODEL_RATES) || rate > m->n_rates)   /* planted: rate == n_rates */
#else
        if (!(m->flags & WAI_MODEL_RATES) || rate >= m->n_rates)
#endif
            return WAI_ERR_BITSTREAM;
        h->rate = (int)rate;
    } else {
        return WAI_ERR_BITSTREAM;
    }
    h->width = wai_rd32(q);
    h->height = wai_rd32(q + 4);
    h->z_size = wai_rd32(buf + h->hsize - 8);
    h->y_size = wai_rd32(buf + h->hsize - 4);
    if (h->width != width || h->height != height) return WAI_ERR_BITSTREAM;
    if (h->z_size < 4 || h->y_size < 4) return WAI_ERR_BITSTREAM;
    /* both u32: the sum fits in u64 */
#ifdef WAI_PLANTED_FAULT_PAYLOAD_TRAILING
    if ((uint64_t)h->hsize + h->z_size + h->y_size > (uint64_t)size)
#else
    if ((uint64_t)h->hsize + h->z_size + h->y_size != (uint64_t)size)
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

/* Spec 7.5: y with the table of each element's scale index; y_hat = clamp(v * rs + mean)
 * (rs: the channel's reconstruction step, 4096 for WIH1; |v| <= 65535, rs <= 2^24: int64)
 * replaces the mean in place. */
static int decode_y(const WaiModel *m, const WaiGeometry *g, const uint8_t *p, size_t n,
                    const uint8_t *y_index, const uint32_t *rstep, int32_t *mean_to_y_hat)
{
    WaiRansDec d;
    int r = wai_rans_dec_init(&d, p, n);
    if (r) return r;
    const size_t plane = (size_t)g->y.h * (size_t)g->y.w;
    for (uint32_t c = 0; c < (uint32_t)g->y.c; c++) {
        const int64_t rs = rstep ? (int64_t)rstep[c] : 4096;
        for (size_t i = c * plane; i < (c + 1) * plane; i++) {
            if (y_index[i] >= m->n_scales) return WAI_ERR_INTERNAL;
            int32_t v;
            if ((r = wai_rans_dec_value(&d, &m->y_tables[y_index[i]], &v))) return r;
#ifdef WAI_PLANTED_FAULT_VEC_YHAT_NOCLAMP
            mean_to_y_hat[i] = (int32_t)((int64_t)v * rs + mean_to_y_hat[i]);   /* planted: no clamp */
#else
            mean_to_y_hat[i] = wai_clamp_act((int64_t)v * rs + mean_to_y_hat[i]);
#endif
        }
    }
    return wai_rans_dec_finish(&d);
}

int32_t wai_y_hat(const WaiModel *m, int rate, uint32_t c, int32_t v, int32_t mean)
{
    const uint32_t *rs = wai_rate_rsteps(m, rate);
    return wai_clamp_act((int64_t)v * (rs ? (int64_t)rs[c] : 4096) + mean);
}

int wai_payload_decode(const WaiModel *m, const WaiDsp *dsp, const uint8_t *buf, size_t size,
                       uint32_t width, uint32_t height,
                       uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh,
                       uint8_t *rgb, ptrdiff_t stride)
{
    Header h;
    WaiGeometry g;
    int r = parse_header(m, buf, size, width, height, &h);
    if (r) return r;
    int rate = h.rate;
#ifdef WAI_PLANTED_FAULT_RATES_WIH1_STEPS
    if (rate < 0 && m->n_rates) rate = 0;     /* planted: WIH1 takes rate 0's steps */
#endif
    if ((r = wai_geometry(m, width, height, &g))) return r;

    /* the caller checked wai_decode_work() against its budget, which covers these */
    size_t nz, ny;
    if (wai_mul_size((size_t)g.z.c, (size_t)g.z.h * (size_t)g.z.w, &nz) ||
        wai_mul_size((size_t)g.y.c, (size_t)g.y.h * (size_t)g.y.w, &ny) ||
        nz > SIZE_MAX / sizeof(int32_t) || ny > SIZE_MAX / sizeof(int32_t))
        return WAI_ERR_LIMIT;

    const uint8_t *zs = buf + h.hsize, *ys = zs + h.z_size;
    int32_t *z_hat = malloc(nz * sizeof(*z_hat));
    uint8_t *y_index = malloc(ny);
    int32_t *y_hat = malloc(ny * sizeof(*y_hat));     /* the mean, then y_hat in place */
    if (!z_hat || !y_index || !y_hat) { r = WAI_ERR_NOMEM; goto end; }

    if ((r = decode_z(m, &g, zs, h.z_size, z_hat))) goto end;
    if ((r = wai_hyper_rate(m, dsp, &g, z_hat, rate, y_index, y_hat))) goto end;
    free(z_hat);
    z_hat = NULL;
    if ((r = decode_y(m, &g, ys, h.y_size, y_index, wai_rate_rsteps(m, rate), y_hat))) goto end;
    free(y_index);
    y_index = NULL;
    r = wai_synthesis(m, dsp, &g, y_hat, dx, dy, dw, dh, rgb, stride);
end:
    free(z_hat);
    free(y_index);
    free(y_hat);
    return r;
}

int wai_payload_encode(const WaiModel *m, const WaiGeometry *g, int rate, const int32_t *z_sym,
                       const int32_t *y_sym, const uint8_t *y_index, uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    if (rate >= 0 && (uint32_t)rate >= m->n_rates) return WAI_ERR_INVALID_ARG;
    const size_t hsize = rate < 0 ? WAI_PAYLOAD_HEADER : WAI_PAYLOAD_HEADER2;
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
        (uint64_t)hsize + zn + yn > UINT32_MAX) {
        r = WAI_ERR_LIMIT;
        goto end;
    }
    const size_t n = hsize + zn + yn;
    uint8_t *p = malloc(n);
    if (!p) { r = WAI_ERR_NOMEM; goto end; }
    memcpy(p, rate < 0 ? wih1_magic : wih2_magic, 4);
    wai_wr32(p + 4, g->width);
    wai_wr32(p + 8, g->height);
    if (rate >= 0) wai_wr32(p + 12, (uint32_t)rate);
    wai_wr32(p + hsize - 8, (uint32_t)zn);
    wai_wr32(p + hsize - 4, (uint32_t)yn);
    memcpy(p + hsize, zb, zn);
    memcpy(p + hsize + zn, yb, yn);
    *out = p;
    *size = n;
end:
    wai_rans_enc_free(&ez);
    wai_rans_enc_free(&ey);
    free(zb);
    free(yb);
    return r;
}
