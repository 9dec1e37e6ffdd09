/* WHM1 model files: layout, round trips, every bound of spec 4, corruption, the generated tiny
 * model, and the model search path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "testutil.h"

/* ---- a small hand-built model: n_z 2, n_y 3, n_scales 3 ----
 * h_s: convT(2->4, k3 s2 p1 op1), lrelu, conv(4->6, k1)   g_s: convT(3->4, k3 s2 p1 op1),
 * IGDN(4), conv(4->3, k1). Byte offsets of the records (spec 4.1, 4.2), computed by hand: */
enum {
    OFF_HS0 = 116,                       /* 20 + 72*2 + 4 + 4*8 = 200 */
    OFF_HS1 = 316,                       /* 8 */
    OFF_HS2 = 324,                       /* 20 + 24*2 + 6 + 6*8 = 122 */
    OFF_GS0 = 446,                       /* 20 + 108*2 + 4 + 32 = 272 */
    OFF_GS1 = 718,                       /* 12 + 4*8 + 16*4 = 108 */
    OFF_GS2 = 826,                       /* 20 + 12*2 + 3 + 24 = 71 */
    OFF_Z0 = 897,                        /* median + table: 4 + 8 + 6*2 = 24 each */
    OFF_Z1 = 921,
    OFF_THR = 945,                       /* 2 * 4 */
    OFF_Y0 = 953,                        /* lengths 1, 3, 5: 12, 16, 20 bytes */
    OFF_Y1 = 965,
    OFF_Y2 = 981,
    HAND_SIZE = 1005,                    /* CRC at 1001 */
};

static int16_t w_hs0[72], w_hs2[24], w_gs0[108], w_gs2[12];
static uint8_t sh_hs0[4] = { 0, 7, 32, 12 }, sh_hs2[6] = { 1, 2, 3, 4, 5, 6 };
static uint8_t sh_gs0[4] = { 10, 11, 12, 13 }, sh_gs2[3] = { 8, 9, 10 };
static int64_t b_hs0[4], b_hs2[6], b_gs0[4], b_gs2[3];
static int64_t beta[4];
static int32_t gamma_[16];
static uint16_t fz0[6] = { 100, 2000, 60000, 3000, 400, 36 }, fz1[6] = { 1, 1, 65531, 1, 1, 1 };
static uint16_t fy0[2] = { 65535, 1 }, fy1[4] = { 5000, 50000, 10000, 536 };
static uint16_t fy2[6] = { 1000, 10000, 40000, 10000, 4000, 536 };

static void set_conv(WaiLayer *l, int type, int cin, int cout, int k, int s, int p, int op,
                     int16_t *w, uint8_t *sh, int64_t *b)
{
    memset(l, 0, sizeof(*l));
    l->type = type; l->cin = cin; l->cout = cout; l->kh = l->kw = k;
    l->stride = s; l->pad = p; l->out_pad = op;
    l->weight = w; l->shift = sh; l->bias = b;
}

/* The struct points into the static arrays above: never wai_model_free it. */
static void hand_model(WaiModel *m, WaiLayer hs[3], WaiLayer gs[3], WaiTable zt[2], WaiTable yt[3],
                       int32_t med[2], int32_t thr[2])
{
    uint64_t s = 42;
    int16_t *ws[4] = { w_hs0, w_hs2, w_gs0, w_gs2 };
    size_t wn[4] = { 72, 24, 108, 12 };
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < wn[k]; i++) ws[k][i] = (int16_t)tu_range(&s, -2048, 2047);
    w_hs0[0] = -2048; w_hs0[1] = 2047;
    int64_t *bs[4] = { b_hs0, b_hs2, b_gs0, b_gs2 };
    int bn[4] = { 4, 6, 4, 3 };
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < bn[k]; i++) bs[k][i] = tu_range(&s, -(INT64_C(1) << 40), INT64_C(1) << 40);
    b_hs0[0] = INT64_C(1) << 52; b_hs0[1] = -(INT64_C(1) << 52);
    for (int i = 0; i < 4; i++) beta[i] = tu_range(&s, 0, INT64_C(1) << 30);
    beta[3] = INT64_C(1) << 60;
    for (int i = 0; i < 16; i++) gamma_[i] = (int32_t)tu_range(&s, 0, (1 << 17) - 1);
    gamma_[5] = 0;

    memset(m, 0, sizeof(*m));
    strcpy(m->name, "hand model");
    m->n_z = 2; m->n_y = 3; m->pad_multiple = 16; m->y_down = 4; m->z_down = 8;
    m->n_hs = 3; m->n_gs = 3; m->n_scales = 3;
    set_conv(&hs[0], WAI_LAYER_CONVT, 2, 4, 3, 2, 1, 1, w_hs0, sh_hs0, b_hs0);
    memset(&hs[1], 0, sizeof(hs[1]));
    hs[1].type = WAI_LAYER_LRELU; hs[1].slope_q16 = 655;
    set_conv(&hs[2], WAI_LAYER_CONV, 4, 6, 1, 1, 0, 0, w_hs2, sh_hs2, b_hs2);
    set_conv(&gs[0], WAI_LAYER_CONVT, 3, 4, 3, 2, 1, 1, w_gs0, sh_gs0, b_gs0);
    memset(&gs[1], 0, sizeof(gs[1]));
    gs[1].type = WAI_LAYER_IGDN; gs[1].cin = gs[1].cout = 4; gs[1].gamma_shift = 16;
    gs[1].beta = beta; gs[1].gamma = gamma_;
    set_conv(&gs[2], WAI_LAYER_CONV, 4, 3, 1, 1, 0, 0, w_gs2, sh_gs2, b_gs2);
    m->hs = hs; m->gs = gs;
    med[0] = -1000; med[1] = 2047;
    zt[0] = (WaiTable){ -2, 5, fz0, NULL };
    zt[1] = (WaiTable){ 65536, 5, fz1, NULL };
    m->z_median_q12 = med; m->z_tables = zt;
    thr[0] = 451; thr[1] = 510;
    m->thresholds_q12 = thr;
    yt[0] = (WaiTable){ 0, 1, fy0, NULL };
    yt[1] = (WaiTable){ -1, 3, fy1, NULL };
    yt[2] = (WaiTable){ -65536, 5, fy2, NULL };
    m->y_tables = yt;
}

static uint8_t *hand_bytes(size_t *size)
{
    WaiModel m;
    WaiLayer hs[3], gs[3];
    WaiTable zt[2], yt[3];
    int32_t med[2], thr[2];
    hand_model(&m, hs, gs, zt, yt, med, thr);
    uint8_t *buf = NULL;
    int ret = wai_model_serialize(&m, &buf, size);
    CHECK_EQ(ret, 0);
    return buf;
}

static void fix_crc(uint8_t *b, size_t n)
{
    wai_wr32(b + 8, (uint32_t)n);
    wai_wr32(b + n - 4, wai_crc32(b, n - 4));
}

static int parse_code(const uint8_t *b, size_t n, char *msg, size_t msz)
{
    WaiModel *m = NULL;
    int ret = wai_model_parse(&m, b, n, msg, msz);
    if (ret == 0) CHECK(m != NULL);
    else CHECK(m == NULL);
    wai_model_free(m);
    return ret;
}

/* The serialiser's bytes against the offsets of spec 4 computed by hand. */
static void test_layout(const uint8_t *b, size_t n)
{
    CHECK_EQ(n, HAND_SIZE);
    CHECK(!memcmp(b, "WHM1", 4));
    CHECK_EQ(wai_rd32(b + 4), 1);
    CHECK_EQ(wai_rd32(b + 8), HAND_SIZE);
    CHECK_EQ(wai_rd32(b + 12), 0);
    CHECK(!memcmp(b + 16, "hand model\0\0", 12));
    CHECK_EQ(b[79], 0);
    CHECK_EQ(wai_rd32(b + 80), 2);
    CHECK_EQ(wai_rd32(b + 84), 3);
    CHECK_EQ(wai_rd32(b + 88), 16);
    CHECK_EQ(wai_rd32(b + 92), 4);
    CHECK_EQ(wai_rd32(b + 96), 8);
    CHECK_EQ(wai_rd32(b + 100), 3);
    CHECK_EQ(wai_rd32(b + 104), 3);
    CHECK_EQ(wai_rd32(b + 108), 3);
    CHECK_EQ(wai_rd32(b + 112), 0);
    /* h_s[0]: type 2, zeros, cin 2, cout 4, 3 3 2 1 1, zeros, weights */
    CHECK_EQ(wai_rd32(b + OFF_HS0), 2);
    CHECK_EQ(wai_rd32(b + OFF_HS0 + 4), 2);
    CHECK_EQ(wai_rd32(b + OFF_HS0 + 8), 4);
    static const uint8_t k[8] = { 3, 3, 2, 1, 1, 0, 0, 0 };
    CHECK(!memcmp(b + OFF_HS0 + 12, k, 8));
    CHECK_EQ((int16_t)wai_rd16(b + OFF_HS0 + 20), -2048);
    CHECK_EQ((int16_t)wai_rd16(b + OFF_HS0 + 22), 2047);
    CHECK_EQ((int16_t)wai_rd16(b + OFF_HS0 + 20 + 2 * 71), w_hs0[71]);
    CHECK(!memcmp(b + OFF_HS0 + 164, sh_hs0, 4));
    CHECK_EQ((int64_t)wai_rd64(b + OFF_HS0 + 168), INT64_C(1) << 52);
    CHECK_EQ((int64_t)wai_rd64(b + OFF_HS0 + 176), -(INT64_C(1) << 52));
    CHECK_EQ((int64_t)wai_rd64(b + OFF_HS0 + 192), b_hs0[3]);
    CHECK_EQ(wai_rd32(b + OFF_HS1), 3);
    CHECK_EQ(wai_rd32(b + OFF_HS1 + 4), 655);
    CHECK_EQ(wai_rd32(b + OFF_HS2), 1);
    CHECK_EQ(wai_rd32(b + OFF_GS0), 2);
    CHECK_EQ(wai_rd32(b + OFF_GS1), 4);
    CHECK_EQ(wai_rd32(b + OFF_GS1 + 4), 4);
    CHECK_EQ(wai_rd32(b + OFF_GS1 + 8), 16);
    CHECK_EQ((int64_t)wai_rd64(b + OFF_GS1 + 12 + 24), INT64_C(1) << 60);
    CHECK_EQ(wai_rd32(b + OFF_GS1 + 44 + 4 * 15), gamma_[15]);
    CHECK_EQ(wai_rd32(b + OFF_GS2), 1);
    CHECK_EQ(wai_rd32(b + OFF_GS2 + 8), 3);
    CHECK_EQ((int32_t)wai_rd32(b + OFF_Z0), -1000);
    CHECK_EQ((int32_t)wai_rd32(b + OFF_Z0 + 4), -2);
    CHECK_EQ(wai_rd32(b + OFF_Z0 + 8), 5);
    CHECK_EQ(wai_rd16(b + OFF_Z0 + 12), 100);
    CHECK_EQ(wai_rd16(b + OFF_Z0 + 22), 36);
    CHECK_EQ((int32_t)wai_rd32(b + OFF_Z1), 2047);
    CHECK_EQ((int32_t)wai_rd32(b + OFF_Z1 + 4), 65536);
    CHECK_EQ(wai_rd32(b + OFF_THR), 451);
    CHECK_EQ(wai_rd32(b + OFF_THR + 4), 510);
    CHECK_EQ(wai_rd32(b + OFF_Y0 + 4), 1);
    CHECK_EQ(wai_rd16(b + OFF_Y0 + 8), 65535);
    CHECK_EQ(wai_rd32(b + OFF_Y1), (uint32_t)-1);
    CHECK_EQ((int32_t)wai_rd32(b + OFF_Y2), -65536);
    CHECK_EQ(wai_rd32(b + OFF_Y2 + 4), 5);
    CHECK_EQ(wai_rd16(b + OFF_Y2 + 18), 536);
    CHECK_EQ(wai_rd32(b + HAND_SIZE - 4), wai_crc32(b, HAND_SIZE - 4));
}

static void test_parse_fields(const uint8_t *b, size_t n)
{
    WaiModel *m;
    char msg[256];
    int ret = wai_model_parse(&m, b, n, msg, sizeof(msg));
    CHECK_EQ(ret, 0);
    if (ret) {
        fprintf(stderr, "hand model: %s\n", msg);
        return;
    }
    uint8_t sha[32];
    wai_sha256(b, n, sha);
    CHECK(!memcmp(m->sha256, sha, 32));
    CHECK(!strcmp(m->name, "hand model"));
    CHECK_EQ(m->n_z, 2); CHECK_EQ(m->n_y, 3); CHECK_EQ(m->n_scales, 3);
    CHECK_EQ(m->pad_multiple, 16); CHECK_EQ(m->y_down, 4); CHECK_EQ(m->z_down, 8);
    CHECK_EQ(m->hs[0].type, WAI_LAYER_CONVT);
    CHECK_EQ(m->hs[0].cin, 2); CHECK_EQ(m->hs[0].cout, 4); CHECK_EQ(m->hs[0].kh, 3);
    CHECK_EQ(m->hs[0].kw, 3); CHECK_EQ(m->hs[0].stride, 2); CHECK_EQ(m->hs[0].pad, 1);
    CHECK_EQ(m->hs[0].out_pad, 1);
    CHECK(!memcmp(m->hs[0].weight, w_hs0, sizeof(w_hs0)));
    CHECK(!memcmp(m->hs[0].shift, sh_hs0, sizeof(sh_hs0)));
    CHECK(!memcmp(m->hs[0].bias, b_hs0, sizeof(b_hs0)));
    CHECK_EQ(m->hs[1].type, WAI_LAYER_LRELU);
    CHECK_EQ(m->hs[1].slope_q16, 655);
    CHECK_EQ(m->hs[2].type, WAI_LAYER_CONV);
    CHECK(!memcmp(m->hs[2].bias, b_hs2, sizeof(b_hs2)));
    CHECK_EQ(m->gs[1].type, WAI_LAYER_IGDN);
    CHECK_EQ(m->gs[1].cin, 4); CHECK_EQ(m->gs[1].cout, 4); CHECK_EQ(m->gs[1].gamma_shift, 16);
    CHECK(!memcmp(m->gs[1].beta, beta, sizeof(beta)));
    CHECK(!memcmp(m->gs[1].gamma, gamma_, sizeof(gamma_)));
    CHECK(!memcmp(m->gs[2].weight, w_gs2, sizeof(w_gs2)));
    CHECK_EQ(m->z_median_q12[0], -1000); CHECK_EQ(m->z_median_q12[1], 2047);
    CHECK_EQ(m->z_tables[1].offset, 65536); CHECK_EQ(m->z_tables[1].length, 5);
    const uint32_t cdf0[7] = { 0, 100, 2100, 62100, 65100, 65500, 65536 };
    CHECK(!memcmp(m->z_tables[0].cdf, cdf0, sizeof(cdf0)));
    CHECK_EQ(m->thresholds_q12[0], 451); CHECK_EQ(m->thresholds_q12[1], 510);
    CHECK_EQ(m->y_tables[0].length, 1);
    CHECK_EQ(m->y_tables[0].cdf[1], 65535); CHECK_EQ(m->y_tables[0].cdf[2], 65536);
    CHECK_EQ(m->y_tables[2].offset, -65536);
    CHECK_EQ(m->y_tables[2].cdf[5], 65000);
    CHECK(m->mem_size >= n);

    /* serialise again: the same bytes */
    uint8_t *b2 = NULL;
    size_t n2 = 0;
    CHECK_EQ(wai_model_serialize(m, &b2, &n2), 0);
    CHECK_EQ(n2, n);
    CHECK(b2 && n2 == n && !memcmp(b, b2, n));
    free(b2);
    wai_model_free(m);
}

/* Truncation at every length, plain and with file_size and CRC fixed up (structural). */
static void test_truncation(const uint8_t *b, size_t n)
{
    uint8_t *t = malloc(n + 8);
    int bad = 0, bad_fixed = 0;
    for (size_t len = 0; len < n; len++) {
        memcpy(t, b, len);
        if (parse_code(t, len, NULL, 0) != WAI_ERR_MODEL_INVALID) bad++;
        if (len >= 120) {
            fix_crc(t, len);
            if (parse_code(t, len, NULL, 0) != WAI_ERR_MODEL_INVALID) bad_fixed++;
        }
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(bad_fixed, 0);
    /* extra bytes between the last table and the CRC */
    memcpy(t, b, n - 4);
    memset(t + n - 4, 0, 4);
    fix_crc(t, n + 4);
    char msg[256];
    CHECK_EQ(parse_code(t, n + 4, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    CHECK(strstr(msg, "between"));
    /* NULL with size 0 */
    CHECK_EQ(parse_code(NULL, 0, NULL, 0), WAI_ERR_MODEL_INVALID);
    free(t);
}

static void test_bitflips(const uint8_t *b, size_t n)
{
    uint8_t *t = malloc(n);
    int bad = 0, crc_msgs = 0;
    char msg[256];
    for (size_t i = 0; i < n * 8; i++) {
        memcpy(t, b, n);
        t[i / 8] ^= (uint8_t)(1u << (i % 8));
        if (parse_code(t, n, msg, sizeof(msg)) != WAI_ERR_MODEL_INVALID) bad++;
        crc_msgs += strstr(msg, "CRC") != NULL;
    }
    CHECK_EQ(bad, 0);
    /* all but magic (32 bits), version (32) and file_size (32) reach the CRC check */
    CHECK_EQ(crc_msgs, (int)(n * 8 - 96));
    free(t);
}

typedef struct Patch {
    const char *what;
    size_t off;
    int width;                /* 1, 2, 4, 8 bytes */
    int64_t value;
    const char *expect;       /* NULL: must parse; else a substring of the message */
} Patch;

static const Patch patches[] = {
    { "magic", 0, 1, 'X', "magic" },
    { "version 0", 4, 4, 0, "version" },
    { "version 2", 4, 4, 2, "version" },
    { "flags", 12, 4, 2, "flags" },   /* bit 1 (bit 0, RATES: test_rates) */
    { "name is informative", 20, 1, 0xff, NULL },
    { "n_z 0", 80, 4, 0, "n_z" },
    { "n_z 1025", 80, 4, 1025, "n_z" },
    { "n_y 0", 84, 4, 0, "n_y" },
    { "pad_multiple 0", 88, 4, 0, "outside" },
    { "pad_multiple 1025", 88, 4, 1025, "outside" },
    { "y_down 0", 92, 4, 0, "outside" },
    { "z_down 3", 96, 4, 3, "divide" },
    { "y_down 32", 92, 4, 32, "divide" },
    { "n_hs 0", 100, 4, 0, "n_hs" },
    { "n_gs 65", 104, 4, 65, "n_gs" },
    { "n_scales 0", 108, 4, 0, "n_scales" },
    { "n_scales 257", 108, 4, 257, "n_scales" },
    { "reserved", 112, 4, 1, "reserved" },
    { "layer type 0", OFF_HS0, 1, 0, "unknown layer type" },
    { "layer type 5", OFF_HS0, 1, 5, "unknown layer type" },
    { "layer zero byte", OFF_HS0 + 2, 1, 1, "reserved" },
    { "conv zero byte", OFF_HS0 + 19, 1, 1, "reserved" },
    { "cin 0", OFF_HS0 + 4, 4, 0, "cin" },
    { "cout 1025", OFF_HS0 + 8, 4, 1025, "cout" },
    { "cin 3 (channels)", OFF_HS0 + 4, 4, 3, "receives" },
    { "kh 0", OFF_HS0 + 12, 1, 0, "kernel" },
    { "kw 16", OFF_HS0 + 13, 1, 16, "kernel" },
    { "stride 0", OFF_HS0 + 14, 1, 0, "stride" },
    { "stride 9", OFF_HS0 + 14, 1, 9, "stride" },
    { "pad 3 = k", OFF_HS0 + 15, 1, 3, "not below the kernel" },
    { "pad 2 < k", OFF_HS0 + 15, 1, 2, NULL },
    { "out_pad 2 = stride", OFF_HS0 + 16, 1, 2, "out_pad" },
    { "out_pad 0", OFF_HS0 + 16, 1, 0, NULL },
    { "conv out_pad 1", OFF_HS2 + 16, 1, 1, "out_pad" },
    { "weight 2048", OFF_HS0 + 20, 2, 2048, "weight" },
    { "weight -2049", OFF_HS0 + 22, 2, -2049, "weight" },
    { "weight -32768", OFF_HS0 + 24, 2, -32768, "weight" },
    { "weight 2047", OFF_HS0 + 24, 2, 2047, NULL },
    { "last weight 2048", OFF_HS0 + 20 + 2 * 71, 2, 2048, "weight" },
    { "shift 33", OFF_HS0 + 165, 1, 33, "shift" },
    { "shift 255", OFF_HS0 + 167, 1, 255, "shift" },
    { "bias 2^52 + 1", OFF_HS0 + 168, 8, (INT64_C(1) << 52) + 1, "bias" },
    { "bias -2^52 - 1", OFF_HS0 + 176, 8, -(INT64_C(1) << 52) - 1, "bias" },
    { "last bias", OFF_HS0 + 192, 8, INT64_MIN, "bias" },
    { "slope 65537", OFF_HS1 + 4, 4, 65537, "slope" },
    { "slope -1", OFF_HS1 + 4, 4, -1, "slope" },
    { "slope 65536", OFF_HS1 + 4, 4, 65536, NULL },
    { "slope 0", OFF_HS1 + 4, 4, 0, NULL },
    /* fewer layers: the lists end on the wrong channel count (no other field moves first) */
    { "h_s output channels", 100, 4, 2, "h_s ends with 4 channels, expected 6" },
    { "g_s output channels", 104, 4, 2, "g_s ends with 4 channels, expected 3" },
    { "g_s input channels", OFF_GS0 + 4, 4, 2, "receives" },
    { "igdn channels", OFF_GS1 + 4, 4, 3, "receives" },
    { "igdn channels 513", OFF_GS1 + 4, 4, 513, "IGDN channels" },
    { "gamma_shift 15", OFF_GS1 + 8, 4, 15, "gamma_shift" },
    { "gamma_shift 6", OFF_GS1 + 8, 4, 6, "gamma_shift" },
    { "gamma_shift 26", OFF_GS1 + 8, 4, 26, "gamma_shift" },
    { "gamma_shift 24", OFF_GS1 + 8, 4, 24, NULL },
    { "beta -1", OFF_GS1 + 12, 8, -1, "beta" },
    { "beta 2^60 + 1", OFF_GS1 + 20, 8, (INT64_C(1) << 60) + 1, "beta" },
    { "gamma 2^17", OFF_GS1 + 44, 4, 1 << 17, "gamma" },
    { "gamma -1", OFF_GS1 + 44 + 60, 4, -1, "gamma" },
    { "z offset 65537", OFF_Z0 + 4, 4, 65537, "offset" },
    { "z offset -65537", OFF_Z0 + 4, 4, -65537, "offset" },
    { "z length 0", OFF_Z0 + 8, 4, 0, "length" },
    { "z length 65536", OFF_Z0 + 8, 4, 65536, "length" },
    { "z freq sum + 1", OFF_Z0 + 12, 2, 101, "sum" },
    { "z freq sum - 1", OFF_Z0 + 22, 2, 35, "sum" },
    { "y freq 0", OFF_Y0 + 10, 2, 0, "frequency 0" },
    { "y freq sum", OFF_Y2 + 8, 2, 1001, "sum" },
    { "median is free", OFF_Z1, 4, INT32_MIN, NULL },
    { "thresholds equal", OFF_THR + 4, 4, 451, "threshold" },
    { "thresholds decreasing", OFF_THR + 4, 4, -5, "threshold" },
    { "y offset 2^16", OFF_Y1, 4, -65536, NULL },
};

static void put_width(uint8_t *p, int width, int64_t v)
{
    switch (width) {
    case 1: p[0] = (uint8_t)v; break;
    case 2: wai_wr16(p, (uint16_t)v); break;
    case 4: wai_wr32(p, (uint32_t)v); break;
    default: wai_wr64(p, (uint64_t)v); break;
    }
}

static void test_bounds(const uint8_t *b, size_t n)
{
    uint8_t *t = malloc(n);
    char msg[256];
    for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++) {
        const Patch *p = &patches[i];
        memcpy(t, b, n);
        put_width(t + p->off, p->width, p->value);
        fix_crc(t, n);
        int ret = parse_code(t, n, msg, sizeof(msg));
        if (p->expect) {
            CHECK_EQ(ret, WAI_ERR_MODEL_INVALID);
            if (!strstr(msg, p->expect)) {
                tu_failures++;
                fprintf(stderr, "patch '%s': message '%s' lacks '%s'\n", p->what, msg, p->expect);
            }
        } else if (ret) {
            tu_failures++;
            fprintf(stderr, "patch '%s' must parse: %s\n", p->what, msg);
        }
    }
    /* cin*kh*kw: 1024*8*8 = 2^16 passes that bound (then fails the channel check), 1024*8*9
     * does not; the weight count check comes after both, before any allocation */
    memcpy(t, b, n);
    wai_wr32(t + OFF_HS0 + 4, 1024);
    t[OFF_HS0 + 12] = 8; t[OFF_HS0 + 13] = 8;
    fix_crc(t, n);
    CHECK_EQ(parse_code(t, n, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    CHECK(strstr(msg, "receives") != NULL);
    t[OFF_HS0 + 13] = 9;
    fix_crc(t, n);
    CHECK_EQ(parse_code(t, n, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    CHECK(strstr(msg, "2^16") != NULL);
    /* huge cout: 1024 outputs of 2*3*3 weights cannot fit in the file */
    memcpy(t, b, n);
    wai_wr32(t + OFF_HS0 + 8, 1024);
    fix_crc(t, n);
    CHECK_EQ(parse_code(t, n, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    CHECK(strstr(msg, "runs past") != NULL);
    /* huge table length */
    memcpy(t, b, n);
    wai_wr32(t + OFF_Z0 + 8, 65535);
    fix_crc(t, n);
    CHECK_EQ(parse_code(t, n, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    CHECK(strstr(msg, "runs past") != NULL);
    /* n_scales 4: thresholds and tables no longer fit */
    memcpy(t, b, n);
    wai_wr32(t + 108, 4);
    fix_crc(t, n);
    CHECK_EQ(parse_code(t, n, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    /* n_scales 1: no thresholds; 8 bytes are then left over */
    memcpy(t, b, n);
    wai_wr32(t + 108, 1);
    fix_crc(t, n);
    CHECK_EQ(parse_code(t, n, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    /* file_size differs from the data */
    memcpy(t, b, n);
    wai_wr32(t + 8, (uint32_t)n - 1);
    wai_wr32(t + n - 4, wai_crc32(t, n - 4));
    CHECK_EQ(parse_code(t, n, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    CHECK(strstr(msg, "file_size") != NULL);
    free(t);

    /* the serialiser refuses a model the parser would refuse */
    WaiModel m;
    WaiLayer hs[3], gs[3];
    WaiTable zt[2], yt[3];
    int32_t med[2], thr[2];
    uint8_t *out = (uint8_t *)&m;
    size_t sz = 1;
    hand_model(&m, hs, gs, zt, yt, med, thr);
    hs[0].stride = 0;
    CHECK_EQ(wai_model_serialize(&m, &out, &sz), WAI_ERR_INVALID_ARG);
    CHECK(out == NULL);
    CHECK_EQ(sz, 0);
    hand_model(&m, hs, gs, zt, yt, med, thr);
    w_gs2[11] = 2048;
    CHECK_EQ(wai_model_serialize(&m, &out, &sz), WAI_ERR_INVALID_ARG);
    w_gs2[11] = 0;
}

/* A model with n_scales 1 and minimal records parses (no thresholds at all). */
static void test_minimal(void)
{
    int16_t w3[3] = { 1, 2, 3 };
    uint8_t sh[3] = { 0, 0, 0 };
    int64_t bb[3] = { 0, 0, 0 };
    uint16_t f[2] = { 65535, 1 };
    WaiLayer hs[1], gs[1];
    WaiTable zt[1] = { { 0, 1, f, NULL } }, yt[1] = { { 0, 1, f, NULL } };
    int32_t med[1] = { 0 };
    WaiModel m;
    memset(&m, 0, sizeof(m));
    /* h_s: 1 -> 2 channels (2 * n_y with n_y = 1); g_s: 1 -> 3 */
    set_conv(&hs[0], WAI_LAYER_CONV, 1, 2, 1, 1, 0, 0, w3, sh, bb);
    set_conv(&gs[0], WAI_LAYER_CONV, 1, 3, 1, 1, 0, 0, w3, sh, bb);
    m.n_z = m.n_y = 1; m.pad_multiple = m.y_down = m.z_down = 1;
    m.n_hs = m.n_gs = 1; m.n_scales = 1;
    m.hs = hs; m.gs = gs; m.z_median_q12 = med; m.z_tables = zt; m.y_tables = yt;
    uint8_t *b;
    size_t n;
    CHECK_EQ(wai_model_serialize(&m, &b, &n), 0);
    /* 116 + 2 * (20 + 3 weights + 2|3 shifts + 8*cout) + 16 + 12 + 4 */
    CHECK_EQ(n, 116 + (20 + 4 + 2 + 16) + (20 + 6 + 3 + 24) + 16 + 12 + 4);
    WaiModel *p;
    CHECK_EQ(wai_model_parse(&p, b, n, NULL, 0), 0);
    if (p) CHECK_EQ(p->n_scales, 1);
    wai_model_free(p);
    free(b);
}

/* ---- spec 1.1: the RATES flag and the rate table ----
 * The hand model (n_y 3) with flags bit 0 and a rate table of n_rates rates inserted before the
 * CRC: qstep[r][c] = q, rstep[r][c] = rs, except the one value at index `at` (u32 position in
 * the table after n_rates; -1: none) set to `odd`; `extra` zero bytes between the table and the
 * CRC; `keep` u32 words of the table kept (-1: all). */
static uint8_t *rates_bytes(const uint8_t *b, size_t n, uint32_t flags, uint32_t n_rates,
                            uint32_t q, uint32_t rs, long at, uint32_t odd, size_t extra,
                            long keep, size_t *out_n)
{
    const size_t words = (size_t)n_rates * 3 * 2;
    const size_t tw = keep < 0 ? words : (size_t)keep;
    const size_t tn = (n_rates || keep != 0 ? 4 : 0) + 4 * tw;
    const size_t m = n + tn + extra;
    uint8_t *o = calloc(1, m);
    if (!o) return NULL;
    memcpy(o, b, n - 4);
    wai_wr32(o + 12, flags);
    uint8_t *t = o + n - 4;
    if (tn) wai_wr32(t, n_rates);
    for (size_t i = 0; i < tw; i++) {
        uint32_t v = (i % 6) < 3 ? q : rs;
        if ((long)i == at) v = odd;
        wai_wr32(t + 4 + 4 * i, v);
    }
    fix_crc(o, m);
    *out_n = m;
    return o;
}

static void test_rates(const uint8_t *b, size_t n)
{
    char msg[256];
    size_t m;
    uint8_t *o;
    WaiModel *plain = NULL, *p = NULL;
    CHECK_EQ(wai_model_parse(&plain, b, n, NULL, 0), 0);
    if (plain) { CHECK_EQ(plain->flags, 0); CHECK_EQ(plain->n_rates, 0); CHECK(!plain->qstep_q12); }

    /* bit 0 without a table: the table (n_rates) runs past the end */
    o = rates_bytes(b, n, 1, 0, 0, 0, -1, 0, 0, 0, &m);
    CHECK_EQ(m, n);
    CHECK_EQ(parse_code(o, m, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    CHECK(strstr(msg, "n_rates") != NULL);
    free(o);
    /* a table without bit 0: bytes before the CRC */
    o = rates_bytes(b, n, 0, 1, 4096, 4096, -1, 0, 0, -1, &m);
    CHECK_EQ(parse_code(o, m, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
    free(o);
    /* flags bit 1 (and bits 1 + 0) still refused, with a valid table */
    for (uint32_t f = 2; f <= 3; f++) {
        o = rates_bytes(b, n, f, 1, 4096, 4096, -1, 0, 0, -1, &m);
        CHECK_EQ(parse_code(o, m, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
        CHECK(strstr(msg, "flags") != NULL);
        free(o);
    }
    o = rates_bytes(b, n, 0x80000001u, 1, 4096, 4096, -1, 0, 0, -1, &m);
    CHECK_EQ(parse_code(o, m, NULL, 0), WAI_ERR_MODEL_INVALID);
    free(o);

    /* n_rates 1 and 256 accepted, 0 and 257 refused (with a full table after them) */
    const uint32_t nr[4] = { 1, 256, 0, 257 };
    for (int k = 0; k < 4; k++) {
        o = rates_bytes(b, n, 1, nr[k], 2048 + (uint32_t)k, 8192, -1, 0, 0, nr[k] ? -1 : 6, &m);
        int ret = wai_model_parse(&p, o, m, msg, sizeof(msg));
        if (k < 2) {
            CHECK_EQ(ret, 0);
            if (p) {
                CHECK_EQ(p->flags, WAI_MODEL_RATES);
                CHECK_EQ(p->n_rates, nr[k]);
                CHECK_EQ(p->qstep_q12[(nr[k] - 1) * 3 + 2], 2048 + (uint32_t)k);
                CHECK_EQ(p->rstep_q12[(nr[k] - 1) * 3 + 2], 8192);
                /* the table is in the memory accounting */
                CHECK(plain && p->mem_size >= plain->mem_size + (size_t)nr[k] * 3 * 8);
                /* the serialiser writes the same bytes */
                uint8_t *b2 = NULL;
                size_t n2 = 0;
                CHECK_EQ(wai_model_serialize(p, &b2, &n2), 0);
                CHECK(b2 && n2 == m && !memcmp(b2, o, m));
                free(b2);
            }
        } else {
            CHECK_EQ(ret, WAI_ERR_MODEL_INVALID);
            CHECK(strstr(msg, "n_rates") != NULL);
        }
        wai_model_free(p);
        p = NULL;
        free(o);
    }

    /* steps: 1 and 2^24 accepted, 0 and 2^24 + 1 refused, as a qstep (word 1) and an rstep
     * (word 4) of rate 0 and the last rstep of rate 1 (word 11) */
    const uint32_t sv[4] = { 1, 1u << 24, 0, (1u << 24) + 1 };
    const long pos[3] = { 1, 4, 11 };
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 3; j++) {
            o = rates_bytes(b, n, 1, 2, 4096, 4096, pos[j], sv[k], 0, -1, &m);
            int ret = wai_model_parse(&p, o, m, msg, sizeof(msg));
            if (k < 2) {
                CHECK_EQ(ret, 0);
                if (p) CHECK_EQ(pos[j] < 3 ? p->qstep_q12[1] : j == 1 ? p->rstep_q12[1] : p->rstep_q12[5], sv[k]);
            } else {
                CHECK_EQ(ret, WAI_ERR_MODEL_INVALID);
                CHECK(strstr(msg, j == 0 ? "qstep" : "rstep") != NULL);
            }
            wai_model_free(p);
            p = NULL;
            free(o);
        }

    /* a truncated table (n_rates 2, one rate's words, and every shorter cut) */
    for (long keep = 0; keep < 12; keep++) {
        o = rates_bytes(b, n, 1, 2, 4096, 4096, -1, 0, 0, keep, &m);
        CHECK_EQ(parse_code(o, m, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
        CHECK(strstr(msg, "past the end") != NULL);
        free(o);
    }
    /* bytes left between the table and the CRC */
    for (size_t extra = 1; extra <= 8; extra += 7) {
        o = rates_bytes(b, n, 1, 1, 4096, 4096, -1, 0, extra, -1, &m);
        CHECK_EQ(parse_code(o, m, msg, sizeof(msg)), WAI_ERR_MODEL_INVALID);
        CHECK(strstr(msg, "between the rate table and the CRC") != NULL);
        free(o);
    }
    wai_model_free(plain);
}

/* ---- the generated tiny model ---- */

static uint8_t *read_tiny(size_t *n)
{
    const char *dir = getenv("WAI_MODEL_PATH");
    if (!dir) {
        fprintf(stderr, "WAI_MODEL_PATH is not set (run through meson test)\n");
        tu_failures++;
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/wai-tiny-n64m96.whm", dir);
    uint8_t *b = NULL;
    int ret = wai_read_file(path, (size_t)512 << 20, &b, n);
    CHECK_EQ(ret, 0);
    return ret ? NULL : b;
}

static void test_tiny(const uint8_t *b, size_t n)
{
    WaiModel *m;
    char msg[256];
    int ret = wai_model_parse(&m, b, n, msg, sizeof(msg));
    CHECK_EQ(ret, 0);
    if (ret) {
        fprintf(stderr, "tiny model: %s\n", msg);
        return;
    }
    CHECK(!strcmp(m->name, "wai-tiny-n64m96 seed 1"));
    CHECK_EQ(m->n_z, 64); CHECK_EQ(m->n_y, 96);
    CHECK_EQ(m->pad_multiple, 64); CHECK_EQ(m->y_down, 16); CHECK_EQ(m->z_down, 64);
    CHECK_EQ(m->n_hs, 5); CHECK_EQ(m->n_gs, 7); CHECK_EQ(m->n_scales, 64);
    static const int hs_type[5] = { 2, 3, 2, 3, 1 }, hs_cout[5] = { 96, 96, 144, 144, 192 };
    static const int gs_type[7] = { 2, 4, 2, 4, 2, 4, 2 }, gs_cout[7] = { 64, 64, 64, 64, 64, 64, 3 };
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(m->hs[i].type, hs_type[i]);
        CHECK_EQ(m->hs[i].cout, hs_cout[i]);
    }
    for (int i = 0; i < 7; i++) {
        CHECK_EQ(m->gs[i].type, gs_type[i]);
        CHECK_EQ(m->gs[i].cout, gs_cout[i]);
    }
    const WaiLayer *l = &m->hs[0];
    CHECK_EQ(l->cin, 64); CHECK_EQ(l->kh, 5); CHECK_EQ(l->stride, 2); CHECK_EQ(l->pad, 2);
    CHECK_EQ(l->out_pad, 1);
    l = &m->hs[4];
    CHECK_EQ(l->kh, 3); CHECK_EQ(l->stride, 1); CHECK_EQ(l->pad, 1); CHECK_EQ(l->out_pad, 0);
    CHECK_EQ(m->hs[1].slope_q16, 655);
    CHECK_EQ(m->gs[1].gamma_shift, 16);
    /* scale channels get a positive bias (~2.0), the means ~0 */
    int pos = 0;
    for (int o = 0; o < 96; o++) pos += l->bias[o] >> (12 + l->shift[o]) >= 1;
    CHECK_EQ(pos, 96);
    /* weights never reach -2048 (the generator draws from [-2047, 2047]) */
    int64_t wmin = 0, wmax = 0;
    for (size_t i = 0; i < (size_t)64 * 64 * 25; i++) {
        int16_t w = m->gs[2].weight[i];
        if (w < wmin) wmin = w;
        if (w > wmax) wmax = w;
    }
    CHECK(wmin >= -2047 && wmin < -1900);
    CHECK(wmax <= 2047 && wmax > 1900);
    /* CompressAI's scale table: thresholds round(4096 * exp(linspace(log .11, log 256, 64))) */
    CHECK_EQ(m->thresholds_q12[0], 451);
    CHECK_EQ(m->thresholds_q12[1], 510);
    CHECK_EQ(m->thresholds_q12[62], 927167);
    /* y table 0 (std 0.11): R = 1, freqs {1, 65533, 1} and escape 1 (hand-computed) */
    const WaiTable *t = &m->y_tables[0];
    CHECK_EQ(t->offset, -1); CHECK_EQ(t->length, 3);
    CHECK_EQ(t->freq[0], 1); CHECK_EQ(t->freq[1], 65533); CHECK_EQ(t->freq[2], 1);
    CHECK_EQ(t->freq[3], 1);
    t = &m->y_tables[63];
    CHECK_EQ(t->offset, -1562); CHECK_EQ(t->length, 3125);
    CHECK_EQ(t->freq[3125], 1);
    for (uint32_t k = 0; k < 64; k++) {
        t = &m->y_tables[k];
        CHECK_EQ(t->cdf[t->length + 1], 65536);
        CHECK_EQ(t->offset, -(int32_t)(t->length / 2));
        /* unimodal around 0 */
        int mono = 1;
        for (uint32_t s = 1; s <= t->length / 2; s++) mono &= t->freq[s] >= t->freq[s - 1];
        CHECK(mono);
    }
    for (uint32_t c = 0; c < 64; c++) {
        t = &m->z_tables[c];
        CHECK(t->length >= 17 && t->length <= 81 && (t->length & 1));
        CHECK_EQ(t->offset, -(int32_t)(t->length / 2));
        CHECK(m->z_median_q12[c] > -2048 && m->z_median_q12[c] < 2048);
    }
    uint8_t sha[32];
    wai_sha256(b, n, sha);
    CHECK(!memcmp(sha, m->sha256, 32));
    CHECK(m->mem_size > n && m->mem_size < 4 * n);
    uint8_t *b2;
    size_t n2;
    CHECK_EQ(wai_model_serialize(m, &b2, &n2), 0);
    CHECK(n2 == n && !memcmp(b, b2, n));
    free(b2);
    wai_model_free(m);
}

/* ---- files and the search path ---- */

static void write_file(const char *dir, const char *name, const uint8_t *b, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void remove_file(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

static void test_read_file(const char *dir)
{
    uint8_t data[100], *b = (uint8_t *)dir;
    size_t n = 7;
    for (int i = 0; i < 100; i++) data[i] = (uint8_t)(i * 7);
    write_file(dir, "f.bin", data, 100);
    write_file(dir, "empty.bin", data, 0);
    char path[4096];
    snprintf(path, sizeof(path), "%s/f.bin", dir);
    CHECK_EQ(wai_read_file(path, 100, &b, &n), 0);
    CHECK(n == 100 && b && !memcmp(b, data, 100));
    free(b);
    CHECK_EQ(wai_read_file(path, 99, &b, &n), WAI_ERR_LIMIT);
    CHECK(b == NULL && n == 0);
    snprintf(path, sizeof(path), "%s/empty.bin", dir);
    CHECK_EQ(wai_read_file(path, 0, &b, &n), 0);
    CHECK_EQ(n, 0);
    free(b);
    snprintf(path, sizeof(path), "%s/missing.bin", dir);
    CHECK_EQ(wai_read_file(path, 100, &b, &n), WAI_ERR_IO);
    CHECK_EQ(wai_read_file(dir, 1 << 20, &b, &n), WAI_ERR_IO);
    remove_file(dir, "f.bin");
    remove_file(dir, "empty.bin");
}

static void test_find(const char *dir, const uint8_t *tiny, size_t tiny_n, const uint8_t *hand,
                      size_t hand_n)
{
    uint8_t sha[32], hsha[32], *b;
    size_t n;
    char hex[65], name[80], list[4200];
    int ret;
    if (tiny) {
        /* the build's descriptive file name, found through $WAI_MODEL_PATH by its hash */
        wai_sha256(tiny, tiny_n, sha);
        ret = wai_model_find(NULL, sha, SIZE_MAX, &b, &n);
        CHECK_EQ(ret, 0);
        if (!ret) {
            CHECK(n == tiny_n && !memcmp(b, tiny, n));
            free(b);
        }
        sha[31] ^= 1;
        CHECK_EQ(wai_model_find(NULL, sha, SIZE_MAX, &b, &n), WAI_ERR_MODEL_NOT_FOUND);
        CHECK(b == NULL && n == 0);
        CHECK_EQ(wai_model_find(dir, sha, SIZE_MAX, &b, &n), WAI_ERR_MODEL_NOT_FOUND);
    }
    wai_sha256(hand, hand_n, hsha);
    wai_sha256_hex(hsha, hex);
    snprintf(name, sizeof(name), "%s.whm", hex);
    CHECK_EQ(wai_model_find(dir, hsha, SIZE_MAX, &b, &n), WAI_ERR_MODEL_NOT_FOUND);

    /* exact name, through a list with empty and missing entries */
    write_file(dir, name, hand, hand_n);
    snprintf(list, sizeof(list), "::/nonexistent/wai-models:%s:", dir);
    ret = wai_model_find(list, hsha, SIZE_MAX, &b, &n);
    CHECK_EQ(ret, 0);
    if (!ret) {
        CHECK(n == hand_n && !memcmp(b, hand, n));
        free(b);
    }
    /* the exact name with other bytes: invalid model, unless another file matches */
    write_file(dir, name, hand, hand_n - 1);
    CHECK_EQ(wai_model_find(dir, hsha, SIZE_MAX, &b, &n), WAI_ERR_MODEL_INVALID);
    CHECK(b == NULL);
    write_file(dir, "hand.bin", hand, hand_n);      /* not *.whm: not scanned */
    CHECK_EQ(wai_model_find(dir, hsha, SIZE_MAX, &b, &n), WAI_ERR_MODEL_INVALID);
    write_file(dir, "hand.whm", hand, hand_n);
    ret = wai_model_find(dir, hsha, SIZE_MAX, &b, &n);
    CHECK_EQ(ret, 0);
    if (!ret) {
        CHECK(n == hand_n && !memcmp(b, hand, n));
        free(b);
    }
    remove_file(dir, name);
    ret = wai_model_find(dir, hsha, SIZE_MAX, &b, &n);
    CHECK_EQ(ret, 0);
    if (!ret) free(b);
    /* the caller's limit (the decoder's max_memory): a larger file is skipped unread, and the
     * search says so (WAI_ERR_LIMIT) rather than "not found"; one byte more is enough */
    CHECK_EQ(wai_model_find(dir, hsha, hand_n - 1, &b, &n), WAI_ERR_LIMIT);
    CHECK(b == NULL);
    ret = wai_model_find(dir, hsha, hand_n, &b, &n);
    CHECK_EQ(ret, 0);
    if (!ret) free(b);
    remove_file(dir, "hand.whm");
    remove_file(dir, "hand.bin");
    CHECK_EQ(wai_model_find(dir, hsha, SIZE_MAX, &b, &n), WAI_ERR_MODEL_NOT_FOUND);
}

int main(void)
{
    size_t n;
    uint8_t *hand = hand_bytes(&n);
    if (!hand) return tu_finish("model");
    test_layout(hand, n);
    test_parse_fields(hand, n);
    test_truncation(hand, n);
    test_bitflips(hand, n);
    test_bounds(hand, n);
    test_minimal();
    test_rates(hand, n);

    size_t tiny_n = 0;
    uint8_t *tiny = read_tiny(&tiny_n);
    if (tiny) test_tiny(tiny, tiny_n);

    char dir[] = "/tmp/wai-test-model-XXXXXX";
    if (mkdtemp(dir)) {
        test_read_file(dir);
        test_find(dir, tiny, tiny_n, hand, n);
        rmdir(dir);
    } else {
        tu_failures++;
        fprintf(stderr, "mkdtemp failed\n");
    }
    free(tiny);
    free(hand);
    return tu_finish("model");
}
