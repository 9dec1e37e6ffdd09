/* The public decoder: buffers stream bytes, finds units, keeps the sequence header and its
 * model, decodes frame units into RGB8 pictures (spec sections 2, 8, 9). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "payload.h"
#include "stream.h"
#include "vulkan/vk.h"

#ifndef WAI_MODEL_DIR
#define WAI_MODEL_DIR "/usr/share/wai/models"
#endif

/* Buffered stream bytes are bounded by max_memory / 4, at most 1 GiB and at least 4 MiB (so
 * that a tiny budget still gets the header parsed and a precise limit error); a single unit may
 * use half of that, so a maximal unit plus the next chunk always fits. */
#define BUF_LIMIT_MIN ((size_t)4 << 20)
#define BUF_LIMIT_MAX ((size_t)1 << 30)

typedef struct RegModel {
    uint8_t sha[32];
    WaiModel *m;
} RegModel;

struct WaiDecoder {
    WaiSettings s;
    char *model_path;             /* copy of s.model_path */
    WaiDsp dsp;
    WaiVk *vk;                    /* WAI_DEVICE_VULKAN: the device running h_s and g_s */
    RegModel *reg;                /* models from wai_decoder_add_model */
    size_t n_reg;

    uint8_t *buf;                 /* buffered stream bytes: [head, size) not consumed */
    size_t head, size, cap;
    size_t buf_limit, max_unit;
    uint64_t offset;              /* stream offset of buf[head], for messages */
    int resync;                   /* skip bytes up to the next valid unit, silently */
    int eos, eos_reported;

    int have_hdr;                 /* a usable sequence header and model */
    WaiSequenceInfo info;
    uint8_t *hdr_bytes;           /* the header unit, to ignore identical repeats */
    size_t hdr_size;
    WaiModel *model;
    int model_owned;              /* 0: the model belongs to reg */
    WaiGeometry geo;
    int hdr_err;                  /* why the last header was unusable, 0 if none */
    char hdr_msg[512];

    char msg[512];                /* last error, with detail */
};

static int fail(WaiDecoder *d, int err, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(WaiDecoder *d, int err, const char *fmt, ...)
{
    int n = snprintf(d->msg, sizeof(d->msg), "%s: ", wai_strerror(err));
    if (n < 0 || (size_t)n >= sizeof(d->msg)) return err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg + n, sizeof(d->msg) - (size_t)n, fmt, ap);
    va_end(ap);
    if (d->s.log_callback) d->s.log_callback(d->s.log_opaque, WAI_LOG_ERROR, d->msg);
    return err;
}

/* wai_decoder_open's failures: no decoder is left to hold the message, so only the callback
 * sees it. */
static int open_fail(const WaiSettings *s, int err, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int open_fail(const WaiSettings *s, int err, const char *fmt, ...)
{
    if (!s->log_callback) return err;
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "%s: ", wai_strerror(err));
    if (n < 0 || (size_t)n >= sizeof(msg)) return err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    s->log_callback(s->log_opaque, WAI_LOG_ERROR, msg);
    return err;
}

static void consume(WaiDecoder *d, size_t n)
{
    d->head += n;
    d->offset += n;
}

static void free_model(WaiDecoder *d)
{
    if (d->model_owned) wai_model_free(d->model);
    d->model = NULL;
    d->model_owned = 0;
}

static void drop_header(WaiDecoder *d)
{
    free_model(d);
    free(d->hdr_bytes);
    d->hdr_bytes = NULL;
    d->hdr_size = 0;
    d->have_hdr = 0;
    memset(&d->info, 0, sizeof(d->info));
}

/* ---- model lookup ---- */

static int parse_model(WaiDecoder *d, const uint8_t *buf, size_t size, const char *what,
                       WaiModel **out)
{
    char detail[256] = "";
    int r = wai_model_parse(out, buf, size, detail, sizeof(detail));
    if (r) {
        *out = NULL;
        return fail(d, r, "%s: %s", what, detail[0] ? detail : wai_strerror(r));
    }
    return 0;
}

static int find_model(WaiDecoder *d, const WaiSequenceInfo *in, const uint8_t *emb,
                      WaiModel *old, WaiModel **out, int *owned)
{
    char hex[65];
    wai_sha256_hex(in->model_sha256, hex);
    *out = NULL;
    *owned = 0;
    for (size_t i = 0; i < d->n_reg; i++) {
        if (!memcmp(d->reg[i].sha, in->model_sha256, 32)) {
            *out = d->reg[i].m;
            return 0;
        }
    }
    *owned = 1;
    if (old && !memcmp(old->sha256, in->model_sha256, 32)) {
        *out = old;
        return 0;
    }
    if (emb && d->s.allow_embedded_model) {
        uint8_t sha[32];
        wai_sha256(emb, in->model_size, sha);
        if (memcmp(sha, in->model_sha256, 32))
            return fail(d, WAI_ERR_MODEL_INVALID, "embedded model's SHA-256 differs from %s", hex);
        int r = parse_model(d, emb, in->model_size, "embedded model", out);
        if (!r) memcpy((*out)->sha256, sha, 32);
        return r;
    }
    uint8_t *file = NULL;
    size_t size = 0;
    /* a model takes at least its file's size in memory: larger files are not even read */
    const size_t max_file = d->s.max_memory < SIZE_MAX ? (size_t)d->s.max_memory : SIZE_MAX;
    int r = wai_model_find(d->model_path, in->model_sha256, max_file, &file, &size);
    if (r) {
        const char *env = getenv("WAI_MODEL_PATH");
        return fail(d, r, "model %s %s in %s%s%s%s%s", hex,
                    r == WAI_ERR_MODEL_NOT_FOUND ? "not found"
                    : r == WAI_ERR_MODEL_INVALID ? "invalid (hash differs)"
                    : r == WAI_ERR_LIMIT ? "not found within max_memory (a larger file was skipped)"
                    : "not loaded (out of memory)",
                    d->model_path ? d->model_path : "", d->model_path ? ":" : "",
                    env && *env ? env : "", env && *env ? ":" : "", WAI_MODEL_DIR);
    }
    r = parse_model(d, file, size, hex, out);
    free(file);
    if (!r) memcpy((*out)->sha256, in->model_sha256, 32);
    return r;
}

/* ---- sequence header ---- */

static int header_unusable(WaiDecoder *d, int err)
{
    drop_header(d);
    d->hdr_err = err;
    snprintf(d->hdr_msg, sizeof(d->hdr_msg), "%s", d->msg);
    return err;
}

/* A complete sequence header unit (n bytes at p). A header that does not parse is dropped and
 * the previous state stays; a valid header that cannot be used (limits, model) replaces it. */
static int install_header(WaiDecoder *d, const uint8_t *p, size_t n)
{
    if (d->have_hdr && n == d->hdr_size && !memcmp(p, d->hdr_bytes, n)) return 0;
    WaiSequenceInfo in;
    const uint8_t *emb = NULL;
    int r = wai_seqhdr_parse(p, n, &in, &emb);
    if (r) return fail(d, r, "sequence header at offset %llu", (unsigned long long)d->offset);

    /* keep an owned model of the same hash across a header change */
    WaiModel *old = d->model_owned ? d->model : NULL;
    d->model_owned = 0;
    d->model = NULL;
    drop_header(d);
    if (in.width > d->s.max_width || in.height > d->s.max_height) {
        wai_model_free(old);
        fail(d, WAI_ERR_LIMIT, "picture %ux%u exceeds the maximum %ux%u", in.width, in.height,
             d->s.max_width, d->s.max_height);
        return header_unusable(d, WAI_ERR_LIMIT);
    }
    WaiModel *m;
    int owned;
    r = find_model(d, &in, emb, old, &m, &owned);
    if (old && old != m) wai_model_free(old);
    if (r) return header_unusable(d, r);
    d->model = m;
    d->model_owned = owned;

    r = wai_geometry(m, in.width, in.height, &d->geo);
    if (r) {
        fail(d, r, "model %s cannot decode %ux%u pictures", m->name, in.width, in.height);
        return header_unusable(d, r);
    }
    /* spec 9.2: the estimate (tensors, latents, RGB output) plus the model */
    size_t work;
    r = wai_decode_work(m, &d->dsp, &d->geo, in.disp_y, in.disp_h, &work);
    if (r < 0 && r != WAI_ERR_LIMIT) { /* no memory for the stripe plan, a broken window: own class */
        fail(d, r, "memory estimate for %ux%u", in.width, in.height);
        return header_unusable(d, r);
    }
    if (r < 0 || work > d->s.max_memory || m->mem_size > d->s.max_memory - work) {
        if (r < 0)
            fail(d, WAI_ERR_LIMIT, "decoding %ux%u needs more bytes than size_t holds", in.width,
                 in.height);
        else
            fail(d, WAI_ERR_LIMIT, "decoding %ux%u needs %llu bytes, the budget is %llu", in.width,
                 in.height, (unsigned long long)work + m->mem_size,
                 (unsigned long long)d->s.max_memory);
        return header_unusable(d, WAI_ERR_LIMIT);
    }
    d->hdr_bytes = malloc(n);
    if (!d->hdr_bytes) {
        fail(d, WAI_ERR_NOMEM, "sequence header copy");
        return header_unusable(d, WAI_ERR_NOMEM);
    }
    memcpy(d->hdr_bytes, p, n);
    d->hdr_size = n;
    d->info = in;
    d->have_hdr = 1;
    d->hdr_err = 0;
    return 0;
}

/* Handle a complete sequence header unit at the head and consume it (or resync past it). */
static int take_header(WaiDecoder *d, size_t n)
{
    int r = install_header(d, d->buf + d->head, n);
    if (r == WAI_ERR_CRC) {
        consume(d, 1);
        d->resync = 1;
    } else {
        consume(d, n);
    }
    return r;
}

/* ---- units ---- */

/* -1: no start code; 0: a prefix of one (fewer than 4 bytes); else the unit type. */
static int start_code(const uint8_t *p, size_t n)
{
    static const char codes[2][4] = { { 'W', 'A', 'I', 'S' }, { 'W', 'A', 'I', 'F' } };
    size_t k = n < 4 ? n : 4;
    for (int t = 0; t < 2; t++)
        if (!memcmp(p, codes[t], k)) return n < 4 ? 0 : t ? WAI_UNIT_FRAME : WAI_UNIT_SEQUENCE_HEADER;
    return -1;
}

/* The head holds an incomplete unit. Before EOS: wait. At EOS: report TRUNCATED once, then
 * drop one byte and resynchronise (a valid unit may follow a damaged start code). */
static int incomplete(WaiDecoder *d)
{
    if (!d->eos) return WAI_ERR_AGAIN;
    uint64_t at = d->offset;
    size_t left = d->size - d->head;
    consume(d, 1);
    d->resync = 1;
#ifndef WAI_PLANTED_FAULT_API_EOS
    if (!d->eos_reported) {
        d->eos_reported = 1;
        return fail(d, WAI_ERR_TRUNCATED, "stream ends inside a unit at offset %llu (%zu bytes left)",
                    (unsigned long long)at, left);
    }
#else
    (void)at; (void)left;
#endif
    return 1;
}

/* Find the next complete unit at the head (not consumed). Returns 0 with *type and *n, AGAIN,
 * or an error for damaged data (the damage is skipped by resynchronisation afterwards). */
static int next_unit(WaiDecoder *d, int *type, size_t *n)
{
    for (;;) {
        size_t avail = d->size - d->head;
        if (!avail) return WAI_ERR_AGAIN;   /* before forming p: buf may still be NULL */
        const uint8_t *p = d->buf + d->head;
        if (d->resync) {
            WaiUnitInfo u;
            int r = wai_find_unit(p, avail, d->max_unit, &u);
            consume(d, u.offset);
            if (r == 0) {
                d->resync = 0;
                continue;
            }
            if (d->head == d->size) return WAI_ERR_AGAIN;
            r = incomplete(d);
            if (r <= 0) return r;
            continue;
        }
        int t = start_code(p, avail);
        if (t < 0) {
            d->resync = 1;
            if (d->offset == 0 && !d->have_hdr && !d->hdr_size && !d->hdr_err) {
                /* the very first bytes: most likely some other kind of file */
                char hex[16] = "";
                size_t len = 0;
                for (size_t k = 0; k < avail && k < 4; k++)
                    len += (size_t)snprintf(hex + len, sizeof(hex) - len, "%s%02x", k ? " " : "",
                                            p[k]);
                return fail(d, WAI_ERR_BITSTREAM, "not a WAI stream: it does not start with a "
                            "sequence header (no unit starts at offset 0; its first bytes are %s)",
                            hex);
            }
            return fail(d, WAI_ERR_BITSTREAM, "no unit starts at offset %llu; resynchronising",
                        (unsigned long long)d->offset);
        }
        int seq = t == WAI_UNIT_SEQUENCE_HEADER;
        if (t == 0 || avail < (seq ? 12u : 8u)) {
            int r = incomplete(d);
            if (r <= 0) return r;
            continue;
        }
        uint64_t usize = seq ? wai_rd32(p + 8) : WAI_FRAME_OVERHEAD + (uint64_t)wai_rd32(p + 4);
        if (seq && usize < WAI_SEQHDR_FIXED) {
            d->resync = 1;
            consume(d, 1);
            return fail(d, WAI_ERR_BITSTREAM, "sequence header at offset %llu: unit_size %llu < 96",
                        (unsigned long long)(d->offset - 1), (unsigned long long)usize);
        }
        if (usize > d->max_unit) {
            d->resync = 1;
            consume(d, 1);
            return fail(d, WAI_ERR_LIMIT, "unit at offset %llu: %llu bytes exceed the limit of %zu",
                        (unsigned long long)(d->offset - 1), (unsigned long long)usize, d->max_unit);
        }
        if (avail < usize) {
            int r = incomplete(d);
            if (r <= 0) return r;
            continue;
        }
        *type = t;
        *n = (size_t)usize;
        return 0;
    }
}

/* ---- pictures ---- */

static void set_pts(WaiPicture *pic, uint32_t index, uint32_t fps_num, uint32_t fps_den)
{
    /* frame_index * fps_den overflows int64 only past 2^63 time units; then saturate */
    uint64_t num = (uint64_t)index * fps_den;
    pic->pts_num = num > INT64_MAX ? INT64_MAX : (int64_t)num;
    pic->pts_den = fps_num;
}

static int decode_frame(WaiDecoder *d, size_t n, WaiPicture *pic)
{
    const uint8_t *p = d->buf + d->head;
    uint64_t at = d->offset;
    uint32_t index = 0;
    const uint8_t *payload;
    size_t psize;
    int r = wai_frame_parse(p, n, &index, &payload, &psize);
    if (r == WAI_ERR_CRC) {
        consume(d, 1);
        d->resync = 1;
        return fail(d, r, "frame unit at offset %llu", (unsigned long long)at);
    }
    if (r) {
        consume(d, n);
        return fail(d, r, "frame unit at offset %llu", (unsigned long long)at);
    }
    if (!d->have_hdr) {
        consume(d, n);
        if (d->hdr_err) return fail(d, d->hdr_err, "frame %u not decoded (%s)", index, d->hdr_msg);
        return fail(d, WAI_ERR_BITSTREAM, "frame unit at offset %llu before any sequence header",
                    (unsigned long long)at);
    }
    const WaiSequenceInfo *in = &d->info;
    size_t stride = (size_t)in->disp_w * 3, bytes;
    if (wai_mul_size(stride, in->disp_h, &bytes)) {
        consume(d, n);
        return fail(d, WAI_ERR_LIMIT, "frame %u: picture too large", index);
    }
    uint8_t *rgb = malloc(bytes);
    if (!rgb) {
        consume(d, n);
        return fail(d, WAI_ERR_NOMEM, "frame %u: %zu bytes for the picture", index, bytes);
    }
    r = wai_payload_decode(d->model, &d->dsp, payload, psize, in->width, in->height,
                           in->disp_x, in->disp_y, in->disp_w, in->disp_h, rgb, (ptrdiff_t)stride);
    consume(d, n);
    if (r) {
        free(rgb);
        return fail(d, r, "frame %u at offset %llu", index, (unsigned long long)at);
    }
    pic->data = rgb;
    pic->priv = rgb;
    pic->stride = (ptrdiff_t)stride;
    pic->width = in->disp_w;
    pic->height = in->disp_h;
    pic->frame_index = index;
    set_pts(pic, index, in->fps_num, in->fps_den);
    return 0;
}

/* ---- public API ---- */

void wai_picture_unref(WaiPicture *p)
{
    if (!p) return;
    free(p->priv);
    memset(p, 0, sizeof(*p));
}

static int pick_kernels(const WaiSettings *s, WaiKernels *k)
{
    *k = s->kernels;
    if (*k != WAI_KERNELS_AUTO) return 0;
    const char *env = getenv("WAI_KERNELS");
    if (!env || !*env) return 0;
    return wai_kernels_from_name(env, k);
}

static void decoder_free(WaiDecoder *d)
{
    drop_header(d);
    for (size_t i = 0; i < d->n_reg; i++) wai_model_free(d->reg[i].m);
    free(d->reg);
    free(d->buf);
    free(d->model_path);
    wai_vk_close(d->vk);
    free(d);
}

/* Kernels, threads and (for WAI_DEVICE_VULKAN) the GPU backend. */
static int setup_dsp(WaiDecoder *d, const WaiSettings *s, WaiKernels k)
{
    int r = wai_dsp_init(&d->dsp, k);
    if (r < 0)
        return open_fail(s, r, "kernel set \"%s\" is not available on this CPU or build",
                         wai_kernels_name(k));
    r = wai_dsp_set_threads(&d->dsp, s->threads);
    if (r < 0) return open_fail(s, r, "cannot start %d threads", s->threads);
    d->dsp.stripe_rows = s->stripe_rows;
    if (!s->stripe_rows) { /* automatic: $WAI_STRIPE_ROWS if a positive integer */
        const char *env = getenv("WAI_STRIPE_ROWS");
        char *end;
        errno = 0;
        long v = env && *env ? strtol(env, &end, 10) : 0;
        if (env && *env && !errno && !*end && v > 0) d->dsp.stripe_rows = v > INT_MAX ? INT_MAX : (int)v;
    }
    if (s->device == WAI_DEVICE_VULKAN) {
        char msg[256] = "";
        r = wai_vk_open(&d->vk, s->device_index, msg, sizeof(msg));
        if (r < 0)
            return open_fail(s, r == WAI_ERR_NOMEM ? r : WAI_ERR_NO_DEVICE, "Vulkan device %d: %s",
                             s->device_index, msg[0] ? msg : "cannot be opened");
        wai_vk_attach(d->vk, &d->dsp);
    }
    return 0;
}

int wai_decoder_open(WaiDecoder **out, const WaiSettings *s)
{
    if (!out) return WAI_ERR_INVALID_ARG;
    *out = NULL;
    WaiSettings def;
    if (!s) {
        wai_default_settings(&def);
        s = &def;
    }
    if (!s->max_width || !s->max_height)
        return open_fail(s, WAI_ERR_INVALID_ARG, "max_width and max_height must not be 0");
    if (s->threads < 0 || s->device_index < 0 || s->stripe_rows < 0)
        return open_fail(s, WAI_ERR_INVALID_ARG,
                         "threads %d, device_index %d and stripe_rows %d must be >= 0", s->threads,
                         s->device_index, s->stripe_rows);
    if (s->device != WAI_DEVICE_CPU && s->device != WAI_DEVICE_VULKAN)
        return open_fail(s, WAI_ERR_INVALID_ARG, "unknown device kind %d", (int)s->device);
    WaiKernels k;
    if (pick_kernels(s, &k))
        return open_fail(s, WAI_ERR_INVALID_ARG, "WAI_KERNELS=\"%s\" is not a kernel set (auto, "
                         "reference, c, avx2, avx512, avx512vnni, avx512amx, neon, simd128)", getenv("WAI_KERNELS"));

    WaiDecoder *d = calloc(1, sizeof(*d));
    if (!d) return open_fail(s, WAI_ERR_NOMEM, "decoder context");
    d->s = *s;
    d->s.model_path = NULL;
    if (s->model_path) {
        size_t len = strlen(s->model_path);
        d->model_path = malloc(len + 1);
        if (!d->model_path) {
            decoder_free(d);
            return open_fail(s, WAI_ERR_NOMEM, "model path copy");
        }
        memcpy(d->model_path, s->model_path, len + 1);
        d->s.model_path = d->model_path;
    }
    int r = setup_dsp(d, s, k);
    if (r < 0) {
        decoder_free(d);
        return r;
    }
    uint64_t lim = s->max_memory / 4;
    d->buf_limit = lim > BUF_LIMIT_MAX ? BUF_LIMIT_MAX : lim < BUF_LIMIT_MIN ? BUF_LIMIT_MIN : (size_t)lim;
    d->max_unit = d->buf_limit / 2;
    snprintf(d->msg, sizeof(d->msg), "no error");
    *out = d;
    return 0;
}

void wai_decoder_close(WaiDecoder **pd)
{
    if (!pd || !*pd) return;
    decoder_free(*pd);
    *pd = NULL;
}

int wai_decoder_add_model(WaiDecoder *d, const uint8_t *buf, size_t size)
{
    if (!d || !buf || !size) return d ? fail(d, WAI_ERR_INVALID_ARG, "no model data") : WAI_ERR_INVALID_ARG;
    WaiModel *m;
    int r = parse_model(d, buf, size, "registered model", &m);
    if (r) return r;
    RegModel *reg = realloc(d->reg, (d->n_reg + 1) * sizeof(*reg));
    if (!reg) {
        wai_model_free(m);
        return fail(d, WAI_ERR_NOMEM, "registering a model");
    }
    d->reg = reg;
    wai_sha256(buf, size, reg[d->n_reg].sha);
    memcpy(m->sha256, reg[d->n_reg].sha, 32);
    reg[d->n_reg++].m = m;
    return 0;
}

static int buffer_append(WaiDecoder *d, const uint8_t *data, size_t size)
{
    size_t left = d->size - d->head;
    if (size > d->buf_limit - d->max_unit)
        return fail(d, WAI_ERR_LIMIT, "one call may send at most %zu bytes, not %zu; send smaller "
                    "pieces", d->buf_limit - d->max_unit, size);
    if (size > d->buf_limit - left)   /* full: nothing taken; not an error, no message */
        return WAI_ERR_AGAIN;
    if (d->head) {
        memmove(d->buf, d->buf + d->head, left);
        d->head = 0;
        d->size = left;
    }
    if (left + size > d->cap) {
        size_t cap = d->cap ? d->cap : 65536;
        while (cap < left + size) cap = cap >= d->buf_limit / 2 ? d->buf_limit : cap * 2;
        uint8_t *b = realloc(d->buf, cap);
        if (!b) return fail(d, WAI_ERR_NOMEM, "stream buffer of %zu bytes", cap);
        d->buf = b;
        d->cap = cap;
    }
    memcpy(d->buf + d->size, data, size);
    d->size += size;
    return 0;
}

int wai_send_data(WaiDecoder *d, const uint8_t *data, size_t size)
{
    if (!d || (!data && size)) return d ? fail(d, WAI_ERR_INVALID_ARG, "no data") : WAI_ERR_INVALID_ARG;
    d->eos = d->eos_reported = 0;
    if (size) {
        int r = buffer_append(d, data, size);
        if (r) return r;
    }
    /* parse a first sequence header at once, so its errors come back here */
    if (d->have_hdr || d->resync || d->size == d->head) return 0;
    const uint8_t *p = d->buf + d->head;
    size_t avail = d->size - d->head;
    if (avail < 12 || start_code(p, avail) != WAI_UNIT_SEQUENCE_HEADER) return 0;
    uint32_t usize = wai_rd32(p + 8);
    if (usize < WAI_SEQHDR_FIXED || usize > d->max_unit || usize > avail) return 0;
    return take_header(d, usize);
}

int wai_get_picture(WaiDecoder *d, WaiPicture *pic)
{
    if (!d || !pic) return d ? fail(d, WAI_ERR_INVALID_ARG, "no picture") : WAI_ERR_INVALID_ARG;
    memset(pic, 0, sizeof(*pic));
    for (;;) {
        int type = 0;
        size_t n = 0;
        int r = next_unit(d, &type, &n);
        if (r) return r;
        if (type == WAI_UNIT_FRAME) return decode_frame(d, n, pic);
        r = take_header(d, n);
        if (r) return r;
    }
}

int wai_send_eos(WaiDecoder *d)
{
    if (!d) return WAI_ERR_INVALID_ARG;
    d->eos = 1;
    return 0;
}

void wai_decoder_flush(WaiDecoder *d)
{
    if (!d) return;
    d->offset += d->size - d->head;
    d->head = d->size = 0;
    d->resync = 0;
    d->eos = d->eos_reported = 0;
}

int wai_decoder_get_sequence_info(WaiDecoder *d, WaiSequenceInfo *info)
{
    if (!d || !info) return WAI_ERR_INVALID_ARG;
    if (!d->have_hdr) return WAI_ERR_AGAIN;
    *info = d->info;
    return 0;
}

const char *wai_decoder_last_error(WaiDecoder *d)
{
    return d ? d->msg : "no decoder";
}
