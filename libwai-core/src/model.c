/* WHM1 model files (spec section 4): parse, validate, serialise.
 *
 * The parser checks the whole-file fields first (magic, version, file_size, CRC), then walks the
 * records with a bounded reader over [116, file_size - 4). Every count is checked against the
 * bytes left before anything proportional to it is allocated, so a model never costs more than
 * a small constant times its file size in memory. */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define HEADER_SIZE 116
#define MAX_CHANNELS 1024
#define MAX_LAYERS 64
#define MAX_SCALES 256
#define MAX_IGDN_CHANNELS 512

typedef struct Parser {
    WaiReader r;
    char *msg;
    size_t msg_size;
} Parser;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail(Parser *p, const char *fmt, ...)
{
    if (p->msg && p->msg_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg, p->msg_size, fmt, ap);
        va_end(ap);
    }
    return WAI_ERR_MODEL_INVALID;
}

static int nomem(Parser *p)
{
    if (p->msg && p->msg_size) snprintf(p->msg, p->msg_size, "out of memory");
    return WAI_ERR_NOMEM;
}

/* The reader stays failed after a short read, so one check after a block of fields suffices. */
static int truncated(Parser *p, const char *what)
{
    return fail(p, "model: %s runs past the end of the records (file_size - 4)", what);
}

static int64_t rd_i64(WaiReader *r) { return (int64_t)wai_read64(r); }
static int32_t rd_i32(WaiReader *r) { return (int32_t)wai_read32(r); }

/* Bytes-left check before an allocation proportional to a field: need is exact uint64. */
static int have(const Parser *p, uint64_t need)
{
    return need <= (uint64_t)wai_reader_left(&p->r);
}

static int parse_conv(Parser *p, WaiLayer *l, const char *where, unsigned idx, int *chan)
{
    WaiReader *r = &p->r;
    uint32_t cin = wai_read32(r), cout = wai_read32(r);
    unsigned kh = wai_read8(r), kw = wai_read8(r), stride = wai_read8(r);
    unsigned pad = wai_read8(r), out_pad = wai_read8(r);
    unsigned z0 = wai_read8(r), z1 = wai_read8(r), z2 = wai_read8(r);
    if (r->err) return truncated(p, "conv layer header");
    if (z0 | z1 | z2) return fail(p, "model: %s layer %u: nonzero reserved bytes", where, idx);
    if (cin < 1 || cin > MAX_CHANNELS || cout < 1 || cout > MAX_CHANNELS)
        return fail(p, "model: %s layer %u: cin %u / cout %u outside 1..1024", where, idx, cin, cout);
    if (kh < 1 || kh > 15 || kw < 1 || kw > 15)
        return fail(p, "model: %s layer %u: kernel %ux%u outside 1..15", where, idx, kh, kw);
    if (stride < 1 || stride > 8)
        return fail(p, "model: %s layer %u: stride %u outside 1..8", where, idx, stride);
    if (pad > 14 || pad >= kh || pad >= kw)
        return fail(p, "model: %s layer %u: pad %u not below the kernel %ux%u", where, idx, pad, kh, kw);
    if (l->type == WAI_LAYER_CONV ? out_pad != 0 : out_pad >= stride)
        return fail(p, "model: %s layer %u: out_pad %u not allowed with stride %u", where, idx,
                    out_pad, stride);
    uint64_t taps = (uint64_t)cin * kh * kw;
    if (taps > (UINT64_C(1) << 16))
        return fail(p, "model: %s layer %u: cin*kh*kw = %llu exceeds 2^16", where, idx,
                    (unsigned long long)taps);
    if ((int)cin != *chan)
        return fail(p, "model: %s layer %u: cin %u but the layer receives %d channels", where, idx,
                    cin, *chan);
    uint64_t nw = taps * cout;
    if (!have(p, nw * 2 + (uint64_t)cout * 9)) return truncated(p, "conv weights");

    l->cin = (int)cin; l->cout = (int)cout; l->kh = (int)kh; l->kw = (int)kw;
    l->stride = (int)stride; l->pad = (int)pad; l->out_pad = (int)out_pad;
    l->weight = malloc((size_t)nw * sizeof(*l->weight));
    l->shift = malloc(cout);
    l->bias = malloc(cout * sizeof(*l->bias));
    if (!l->weight || !l->shift || !l->bias) return nomem(p);
    for (uint64_t i = 0; i < nw; i++) {
        int16_t w = (int16_t)wai_read16(r);
#ifdef WAI_PLANTED_FAULT_MODEL_WEIGHT_BOUND
        if (w < -2048 || w > 2048)   /* planted: accepts 2048 */
#else
        if (w < -2048 || w > 2047)
#endif
            return fail(p, "model: %s layer %u: weight %d outside -2048..2047", where, idx, w);
        l->weight[i] = w;
    }
    for (uint32_t o = 0; o < cout; o++) {
        l->shift[o] = wai_read8(r);
        if (l->shift[o] > 32)
            return fail(p, "model: %s layer %u: shift %u outside 0..32", where, idx, l->shift[o]);
    }
    for (uint32_t o = 0; o < cout; o++) {
        int64_t b = rd_i64(r);
        if (b < -(INT64_C(1) << 52) || b > (INT64_C(1) << 52))
            return fail(p, "model: %s layer %u: bias %lld beyond 2^52", where, idx, (long long)b);
        l->bias[o] = b;
    }
    *chan = (int)cout;
    return r->err ? truncated(p, "conv layer") : 0;
}

static int parse_igdn(Parser *p, WaiLayer *l, const char *where, unsigned idx, int *chan)
{
    WaiReader *r = &p->r;
    uint32_t c = wai_read32(r), g = wai_read32(r);
    if (r->err) return truncated(p, "IGDN header");
    if (c < 1 || c > MAX_IGDN_CHANNELS)
        return fail(p, "model: %s layer %u: IGDN channels %u outside 1..512", where, idx, c);
    if (g < 8 || g > 24 || (g & 1))
        return fail(p, "model: %s layer %u: gamma_shift %u not even in 8..24", where, idx, g);
    if ((int)c != *chan)
        return fail(p, "model: %s layer %u: IGDN channels %u but the layer receives %d", where,
                    idx, c, *chan);
    if (!have(p, (uint64_t)c * 8 + (uint64_t)c * c * 4)) return truncated(p, "IGDN parameters");
    l->cin = l->cout = (int)c;
    l->gamma_shift = (int)g;
    l->beta = malloc(c * sizeof(*l->beta));
    l->gamma = malloc((size_t)c * c * sizeof(*l->gamma));
    if (!l->beta || !l->gamma) return nomem(p);
    for (uint32_t i = 0; i < c; i++) {
        int64_t b = rd_i64(r);
        if (b < 0 || b > (INT64_C(1) << 60))
            return fail(p, "model: %s layer %u: beta %lld outside 0..2^60", where, idx, (long long)b);
        l->beta[i] = b;
    }
    for (uint32_t i = 0; i < c * c; i++) {
        int32_t v = rd_i32(r);
        if (v < 0 || v > (1 << 17) - 1)
            return fail(p, "model: %s layer %u: gamma %d outside 0..2^17-1", where, idx, v);
        l->gamma[i] = v;
    }
    return r->err ? truncated(p, "IGDN layer") : 0;
}

/* One layer record (4.1). *chan is the channel count entering the layer, updated to the count
 * leaving it (the size-independent part of the graph checks, spec 4.3). */
static int parse_layer(Parser *p, WaiLayer *l, const char *where, unsigned idx, int *chan)
{
    WaiReader *r = &p->r;
    unsigned type = wai_read8(r);
    unsigned z0 = wai_read8(r), z1 = wai_read8(r), z2 = wai_read8(r);
    if (r->err) return truncated(p, "layer record");
    if (z0 | z1 | z2) return fail(p, "model: %s layer %u: nonzero reserved bytes", where, idx);
    l->type = (int)type;
    switch (type) {
    case WAI_LAYER_CONV:
    case WAI_LAYER_CONVT:
        return parse_conv(p, l, where, idx, chan);
    case WAI_LAYER_LRELU: {
        int32_t s = rd_i32(r);
        if (r->err) return truncated(p, "leaky ReLU layer");
        if (s < 0 || s > 65536)
            return fail(p, "model: %s layer %u: slope_q16 %d outside 0..65536", where, idx, s);
        l->slope_q16 = s;
        l->cin = l->cout = *chan;
        return 0;
    }
    case WAI_LAYER_IGDN:
        return parse_igdn(p, l, where, idx, chan);
    default:
        return fail(p, "model: %s layer %u: unknown layer type %u", where, idx, type);
    }
}

/* Table record (4.2); fills the cumulative table too. */
static int parse_table(Parser *p, WaiTable *t, const char *where, unsigned idx)
{
    WaiReader *r = &p->r;
    int32_t offset = rd_i32(r);
    uint32_t len = wai_read32(r);
    if (r->err) return truncated(p, "table header");
    if (offset < -65536 || offset > 65536)
        return fail(p, "model: %s table %u: offset %d beyond 2^16", where, idx, offset);
    if (len < 1 || len > 65535)
        return fail(p, "model: %s table %u: length %u outside 1..65535", where, idx, len);
    if (!have(p, ((uint64_t)len + 1) * 2)) return truncated(p, "table frequencies");
    t->offset = offset;
    t->length = len;
    t->freq = malloc((len + 1) * sizeof(*t->freq));
    t->cdf = malloc((len + 2) * sizeof(*t->cdf));
    if (!t->freq || !t->cdf) return nomem(p);
    uint64_t sum = 0;
    t->cdf[0] = 0;
    for (uint32_t s = 0; s <= len; s++) {
        uint16_t f = wai_read16(r);
        if (f == 0) return fail(p, "model: %s table %u: symbol %u has frequency 0", where, idx, s);
        t->freq[s] = f;
        sum += f;
        /* cdf entries only matter once the sum is known to be exact; clamp so they stay sane */
        t->cdf[s + 1] = (uint32_t)(sum > 65536 ? 65536 : sum);
    }
    if (sum != 65536)
        return fail(p, "model: %s table %u: frequencies sum to %llu, not 65536", where, idx,
                    (unsigned long long)sum);
    return r->err ? truncated(p, "table") : 0;
}

static size_t table_mem(const WaiTable *t)
{
    return t->freq ? (t->length + 1) * sizeof(*t->freq) + (t->length + 2) * sizeof(*t->cdf) : 0;
}

static size_t layer_mem(const WaiLayer *l)
{
    size_t n = sizeof(*l);
    if (l->type == WAI_LAYER_CONV || l->type == WAI_LAYER_CONVT)
        n += (size_t)l->cout * l->cin * l->kh * l->kw * sizeof(*l->weight) +
             (size_t)l->cout * (1 + sizeof(*l->bias));
    else if (l->type == WAI_LAYER_IGDN)
        n += (size_t)l->cin * sizeof(*l->beta) + (size_t)l->cin * l->cin * sizeof(*l->gamma);
    return n;
}

static size_t model_mem(const WaiModel *m)
{
    size_t n = sizeof(*m);
    for (uint32_t i = 0; m->hs && i < m->n_hs; i++) n += layer_mem(&m->hs[i]);
    for (uint32_t i = 0; m->gs && i < m->n_gs; i++) n += layer_mem(&m->gs[i]);
    n += (size_t)m->n_z * (sizeof(*m->z_median_q12) + sizeof(*m->z_tables));
    for (uint32_t i = 0; m->z_tables && i < m->n_z; i++) n += table_mem(&m->z_tables[i]);
    n += (size_t)m->n_scales * (sizeof(*m->thresholds_q12) + sizeof(*m->y_tables));
    for (uint32_t i = 0; m->y_tables && i < m->n_scales; i++) n += table_mem(&m->y_tables[i]);
    if (m->qstep_q12) n += (size_t)m->n_rates * m->n_y * sizeof(*m->qstep_q12);
    if (m->rstep_q12) n += (size_t)m->n_rates * m->n_y * sizeof(*m->rstep_q12);
    return n;
}

static int parse_header(Parser *p, WaiModel *m, const uint8_t *buf)
{
    m->flags = wai_rd32(buf + 12);
    if (m->flags & ~WAI_MODEL_RATES)
        return fail(p, "model: flags 0x%x: bits other than 0 (RATES) must be 0", m->flags);
    memcpy(m->name, buf + 16, 64);
    m->name[64] = 0;
    m->n_z = wai_rd32(buf + 80);
    m->n_y = wai_rd32(buf + 84);
    m->pad_multiple = wai_rd32(buf + 88);
    m->y_down = wai_rd32(buf + 92);
    m->z_down = wai_rd32(buf + 96);
    m->n_hs = wai_rd32(buf + 100);
    m->n_gs = wai_rd32(buf + 104);
    m->n_scales = wai_rd32(buf + 108);
    if (m->n_z < 1 || m->n_z > MAX_CHANNELS) return fail(p, "model: n_z %u outside 1..1024", m->n_z);
    if (m->n_y < 1 || m->n_y > MAX_CHANNELS) return fail(p, "model: n_y %u outside 1..1024", m->n_y);
    if (m->pad_multiple < 1 || m->pad_multiple > 1024 || m->y_down < 1 || m->y_down > 1024 ||
        m->z_down < 1 || m->z_down > 1024)
        return fail(p, "model: pad_multiple %u / y_down %u / z_down %u outside 1..1024",
                    m->pad_multiple, m->y_down, m->z_down);
    if (m->pad_multiple % m->y_down || m->pad_multiple % m->z_down)
        return fail(p, "model: y_down %u and z_down %u must divide pad_multiple %u", m->y_down,
                    m->z_down, m->pad_multiple);
    if (m->n_hs < 1 || m->n_hs > MAX_LAYERS || m->n_gs < 1 || m->n_gs > MAX_LAYERS)
        return fail(p, "model: n_hs %u / n_gs %u outside 1..64", m->n_hs, m->n_gs);
    if (m->n_scales < 1 || m->n_scales > MAX_SCALES)
        return fail(p, "model: n_scales %u outside 1..256", m->n_scales);
    if (wai_rd32(buf + 112) != 0) return fail(p, "model: reserved field must be 0");
    return 0;
}

static int parse_layers(Parser *p, WaiLayer **out, uint32_t n, const char *where, int chan_in,
                        int chan_out)
{
    /* n <= 64 was checked: a fixed small allocation */
    WaiLayer *l = calloc(n, sizeof(*l));
    if (!l) return nomem(p);
    *out = l;
    int chan = chan_in;
    for (uint32_t i = 0; i < n; i++) {
        int ret = parse_layer(p, &l[i], where, i, &chan);
        if (ret < 0) return ret;
    }
    if (chan != chan_out)
        return fail(p, "model: %s ends with %d channels, expected %d", where, chan, chan_out);
    return 0;
}

static int parse_tables(Parser *p, WaiModel *m)
{
    WaiReader *r = &p->r;
    /* a z entry is at least 4 (median) + 8 (table header) + 4 (two frequencies) bytes */
    if (!have(p, (uint64_t)m->n_z * 16)) return truncated(p, "z tables");
    m->z_median_q12 = calloc(m->n_z, sizeof(*m->z_median_q12));
    m->z_tables = calloc(m->n_z, sizeof(*m->z_tables));
    if (!m->z_median_q12 || !m->z_tables) return nomem(p);
    for (uint32_t c = 0; c < m->n_z; c++) {
        m->z_median_q12[c] = rd_i32(r);
        int ret = parse_table(p, &m->z_tables[c], "z", c);
        if (ret < 0) return ret;
    }
    uint32_t nt = m->n_scales - 1;
    if (!have(p, (uint64_t)nt * 4 + (uint64_t)m->n_scales * 12)) return truncated(p, "thresholds");
    m->thresholds_q12 = calloc(nt ? nt : 1, sizeof(*m->thresholds_q12));
    m->y_tables = calloc(m->n_scales, sizeof(*m->y_tables));
    if (!m->thresholds_q12 || !m->y_tables) return nomem(p);
    for (uint32_t k = 0; k < nt; k++) {
        m->thresholds_q12[k] = rd_i32(r);
        if (k && m->thresholds_q12[k] <= m->thresholds_q12[k - 1])
            return fail(p, "model: threshold %u (%d) not above threshold %u (%d)", k,
                        m->thresholds_q12[k], k - 1, m->thresholds_q12[k - 1]);
    }
    for (uint32_t k = 0; k < m->n_scales; k++) {
        int ret = parse_table(p, &m->y_tables[k], "y", k);
        if (ret < 0) return ret;
    }
    return r->err ? truncated(p, "tables") : 0;
}

/* The rate table (spec 4, version 1.1), after the y tables when flags has RATES. */
static int parse_rates(Parser *p, WaiModel *m)
{
    WaiReader *r = &p->r;
    uint32_t n = wai_read32(r);
    if (r->err) return truncated(p, "n_rates");
    if (n < 1 || n > WAI_MAX_RATES) return fail(p, "model: n_rates %u outside 1..256", n);
    if (!have(p, (uint64_t)n * m->n_y * 8)) return truncated(p, "rate table");
    m->n_rates = n;
    m->qstep_q12 = malloc((size_t)n * m->n_y * sizeof(*m->qstep_q12));
    m->rstep_q12 = malloc((size_t)n * m->n_y * sizeof(*m->rstep_q12));
    if (!m->qstep_q12 || !m->rstep_q12) return nomem(p);
    for (uint32_t k = 0; k < n; k++)
        for (int pass = 0; pass < 2; pass++) {
            uint32_t *dst = (pass ? m->rstep_q12 : m->qstep_q12) + (size_t)k * m->n_y;
            for (uint32_t c = 0; c < m->n_y; c++) {
                uint32_t v = wai_read32(r);
                if (v < 1 || v > WAI_STEP_MAX)
                    return fail(p, "model: rate %u channel %u: %s %u outside 1..2^24", k, c,
                                pass ? "rstep" : "qstep", v);
                dst[c] = v;
            }
        }
    return r->err ? truncated(p, "rate table") : 0;
}

static int parse(Parser *p, WaiModel *m, const uint8_t *buf, size_t size)
{
    static const uint8_t magic[4] = { 'W', 'H', 'M', '1' };
    if (size < HEADER_SIZE + 4)
        return fail(p, "model: %zu bytes, shorter than the %d-byte minimum", size, HEADER_SIZE + 4);
    if (memcmp(buf, magic, 4)) return fail(p, "model: bad magic (not a WHM1 file)");
    if (wai_rd32(buf + 4) != 1) return fail(p, "model: version %u, expected 1", wai_rd32(buf + 4));
    if (wai_rd32(buf + 8) != size)
        return fail(p, "model: file_size %u but the model has %zu bytes", wai_rd32(buf + 8), size);
    uint32_t crc = wai_crc32(buf, size - 4);
    if (crc != wai_rd32(buf + size - 4))
        return fail(p, "model: CRC error (computed %08x, stored %08x)", crc, wai_rd32(buf + size - 4));
    int ret = parse_header(p, m, buf);
    if (ret < 0) return ret;

#ifdef WAI_PLANTED_FAULT_MODEL_TRAILING
    wai_reader_init(&p->r, buf + HEADER_SIZE, size - HEADER_SIZE);  /* planted: no exact end */
#else
    wai_reader_init(&p->r, buf + HEADER_SIZE, size - HEADER_SIZE - 4);
#endif
    if ((ret = parse_layers(p, &m->hs, m->n_hs, "h_s", (int)m->n_z, 2 * (int)m->n_y)) < 0 ||
        (ret = parse_layers(p, &m->gs, m->n_gs, "g_s", (int)m->n_y, 3)) < 0 ||
        (ret = parse_tables(p, m)) < 0 ||
        ((m->flags & WAI_MODEL_RATES) && (ret = parse_rates(p, m)) < 0))
        return ret;
#ifndef WAI_PLANTED_FAULT_MODEL_TRAILING
    if (wai_reader_left(&p->r))
        return fail(p, "model: %zu bytes between the %s and the CRC", wai_reader_left(&p->r),
                    (m->flags & WAI_MODEL_RATES) ? "rate table" : "last y table");
#endif
    wai_sha256(buf, size, m->sha256);
    m->mem_size = model_mem(m);
    return 0;
}

int wai_model_parse(WaiModel **out, const uint8_t *buf, size_t size, char *msg, size_t msg_size)
{
    Parser p = { .msg = msg, .msg_size = msg_size };
    *out = NULL;
    if (msg && msg_size) msg[0] = 0;
    if (!buf && size) return fail(&p, "model: no data");
    WaiModel *m = calloc(1, sizeof(*m));
    if (!m) return nomem(&p);
    int ret = parse(&p, m, buf, size);
    if (ret < 0) {
        wai_model_free(m);
        return ret;
    }
    *out = m;
    return 0;
}

static void free_layers(WaiLayer *l, uint32_t n)
{
    for (uint32_t i = 0; l && i < n; i++) {
        free(l[i].weight);
        free(l[i].shift);
        free(l[i].bias);
        free(l[i].beta);
        free(l[i].gamma);
    }
    free(l);
}

static void free_tables(WaiTable *t, uint32_t n)
{
    for (uint32_t i = 0; t && i < n; i++) {
        free(t[i].freq);
        free(t[i].cdf);
    }
    free(t);
}

void wai_model_free(WaiModel *m)
{
    if (!m) return;
    free_layers(m->hs, m->n_hs);
    free_layers(m->gs, m->n_gs);
    free(m->z_median_q12);
    free_tables(m->z_tables, m->n_z);
    free(m->thresholds_q12);
    free_tables(m->y_tables, m->n_scales);
    free(m->qstep_q12);
    free(m->rstep_q12);
    free(m);
}

/* ---- serialisation ---- */

static void put_layer(WaiBuf *b, const WaiLayer *l)
{
    wai_buf_put32(b, (uint32_t)(uint8_t)l->type);   /* type, then three zero bytes */
    switch (l->type) {
    case WAI_LAYER_CONV:
    case WAI_LAYER_CONVT: {
        wai_buf_put32(b, (uint32_t)l->cin);
        wai_buf_put32(b, (uint32_t)l->cout);
        wai_buf_put8(b, (uint8_t)l->kh);
        wai_buf_put8(b, (uint8_t)l->kw);
        wai_buf_put8(b, (uint8_t)l->stride);
        wai_buf_put8(b, (uint8_t)l->pad);
        wai_buf_put8(b, (uint8_t)l->out_pad);
        wai_buf_put8(b, 0); wai_buf_put8(b, 0); wai_buf_put8(b, 0);
        size_t nw = (size_t)l->cout * l->cin * l->kh * l->kw;
        if (wai_buf_reserve(b, nw * 2)) return;
        for (size_t i = 0; i < nw; i++) wai_buf_put16(b, (uint16_t)l->weight[i]);
        wai_buf_put(b, l->shift, (size_t)l->cout);
        for (int o = 0; o < l->cout; o++) wai_buf_put64(b, (uint64_t)l->bias[o]);
        break;
    }
    case WAI_LAYER_LRELU:
        wai_buf_put32(b, (uint32_t)l->slope_q16);
        break;
    case WAI_LAYER_IGDN: {
        size_t c = (size_t)l->cin;
        wai_buf_put32(b, (uint32_t)c);
        wai_buf_put32(b, (uint32_t)l->gamma_shift);
        for (size_t i = 0; i < c; i++) wai_buf_put64(b, (uint64_t)l->beta[i]);
        for (size_t i = 0; i < c * c; i++) wai_buf_put32(b, (uint32_t)l->gamma[i]);
        break;
    }
    default:
        break;                        /* the final validation refuses it */
    }
}

static void put_table(WaiBuf *b, const WaiTable *t)
{
    wai_buf_put32(b, (uint32_t)t->offset);
    wai_buf_put32(b, t->length);
    for (uint32_t s = 0; s <= t->length; s++) wai_buf_put16(b, t->freq[s]);
}

int wai_model_serialize(const WaiModel *m, uint8_t **out, size_t *size)
{
    WaiBuf b;
    wai_buf_init(&b);
    *out = NULL;
    *size = 0;
    uint8_t hdr[HEADER_SIZE] = { 'W', 'H', 'M', '1' };
    wai_wr32(hdr + 4, 1);
    wai_wr32(hdr + 12, m->flags);
    size_t nl = strnlen(m->name, 64);
    memcpy(hdr + 16, m->name, nl < 64 ? nl : 64);
    const uint32_t f[] = { m->n_z, m->n_y, m->pad_multiple, m->y_down, m->z_down,
                           m->n_hs, m->n_gs, m->n_scales, 0 };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) wai_wr32(hdr + 80 + 4 * i, f[i]);
    wai_buf_put(&b, hdr, sizeof(hdr));
    for (uint32_t i = 0; i < m->n_hs; i++) put_layer(&b, &m->hs[i]);
    for (uint32_t i = 0; i < m->n_gs; i++) put_layer(&b, &m->gs[i]);
    for (uint32_t c = 0; c < m->n_z; c++) {
        wai_buf_put32(&b, (uint32_t)m->z_median_q12[c]);
        put_table(&b, &m->z_tables[c]);
    }
    for (uint32_t k = 0; k + 1 < m->n_scales; k++) wai_buf_put32(&b, (uint32_t)m->thresholds_q12[k]);
    for (uint32_t k = 0; k < m->n_scales; k++) put_table(&b, &m->y_tables[k]);
    if (m->flags & WAI_MODEL_RATES) {
        wai_buf_put32(&b, m->n_rates);
        for (uint32_t k = 0; k < m->n_rates; k++) {
            for (uint32_t c = 0; c < m->n_y; c++) wai_buf_put32(&b, m->qstep_q12[(size_t)k * m->n_y + c]);
            for (uint32_t c = 0; c < m->n_y; c++) wai_buf_put32(&b, m->rstep_q12[(size_t)k * m->n_y + c]);
        }
    }
    wai_buf_put32(&b, 0);             /* CRC, patched below */
    if (b.err) {
        wai_buf_free(&b);
        return WAI_ERR_NOMEM;
    }
    if (b.size > UINT32_MAX) {
        wai_buf_free(&b);
        return WAI_ERR_LIMIT;
    }
    wai_wr32(b.data + 8, (uint32_t)b.size);
    wai_wr32(b.data + b.size - 4, wai_crc32(b.data, b.size - 4));

    /* The writer trusts the struct; parsing the result proves it obeys every rule. */
    WaiModel *chk;
    int ret = wai_model_parse(&chk, b.data, b.size, NULL, 0);
    if (ret < 0) {
        wai_buf_free(&b);
        return ret == WAI_ERR_NOMEM ? ret : WAI_ERR_INVALID_ARG;
    }
    wai_model_free(chk);
    *out = b.data;
    *size = b.size;
    return 0;
}
