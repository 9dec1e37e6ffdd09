/* The browser's entry points into libwai (issue 26): a thin, flat layer over the public API
 * (wai/wai.h) that JavaScript can call through emscripten's ccall/cwrap without knowing C
 * struct layouts. It decodes nothing itself: pictures come from wai_get_picture(), unchanged,
 * and are only converted from RGB8 to the RGBA that ImageData wants. web/wai-worker.js drives
 * it; web/wai.mjs is the API pages use.
 *
 * Built by web/meson.build into wai-core.js + wai-core.wasm (tools/build-web.sh). */
#include <emscripten/emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "wai-web.h"
#include "wai/wai.h"

/* A decoder, its last picture as RGBA, and the running SHA-256 of every picture's RGB8 rows
 * top to bottom, frames concatenated (spec section 8: what `wai decode --sha256` prints). */
struct WaiWeb {
    WaiDecoder *dec;
    WaiPicture pic;
    int have_pic;
    uint8_t *rgba;
    size_t rgba_cap;
    struct sha256_ctx hash;
    char hex[65];
};

static char open_error[512];

static void log_open_error(void *opaque, int level, const char *msg)
{
    (void)opaque;
    (void)level;
    snprintf(open_error, sizeof(open_error), "%s", msg);
}

/* kernels: a WaiKernels value (0 = auto). One thread: this build has no threads. */
EMSCRIPTEN_KEEPALIVE WaiWeb *waiweb_open(int kernels)
{
    WaiWeb *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(open_error, sizeof(open_error), "%s", wai_strerror(WAI_ERR_NOMEM));
        return NULL;
    }
    WaiSettings s;
    wai_default_settings(&s);
    s.kernels = (WaiKernels)kernels;
    s.threads = 1;
    s.log_callback = log_open_error;
    open_error[0] = 0;
    int r = wai_decoder_open(&w->dec, &s);
    if (r < 0) {
        if (!open_error[0]) snprintf(open_error, sizeof(open_error), "%s", wai_strerror(r));
        free(w);
        return NULL;
    }
    sha256_init(&w->hash);
    return w;
}

/* Why the last waiweb_open() failed. */
EMSCRIPTEN_KEEPALIVE const char *waiweb_open_error(void) { return open_error; }

EMSCRIPTEN_KEEPALIVE void waiweb_close(WaiWeb *w)
{
    if (!w) return;
    if (w->have_pic) wai_picture_unref(&w->pic);
    wai_decoder_close(&w->dec);
    free(w->rgba);
    free(w);
}

EMSCRIPTEN_KEEPALIVE int waiweb_add_model(WaiWeb *w, const uint8_t *buf, size_t size)
{
    return wai_decoder_add_model(w->dec, buf, size);
}

/* At most 1 MiB per call, each followed by waiweb_next() until it returns 1: then the
 * decoder's buffer never refuses data (wai.h). Returns 0, 1 if the buffer is full (send again
 * after waiweb_next()), or an error of a sequence header (the data was taken). */
EMSCRIPTEN_KEEPALIVE int waiweb_send(WaiWeb *w, const uint8_t *buf, size_t size)
{
    const int r = wai_send_data(w->dec, buf, size);
    return r == WAI_ERR_AGAIN ? 1 : r;
}

EMSCRIPTEN_KEEPALIVE int waiweb_send_eos(WaiWeb *w) { return wai_send_eos(w->dec); }

/* The next picture (0), 1 when no whole unit is buffered (JavaScript need not know errno
 * values: emscripten's EAGAIN is not Linux's), or the error of one unit (call again for the
 * next). A picture is hashed here, in decode order, so the hash covers every picture returned. */
EMSCRIPTEN_KEEPALIVE int waiweb_next(WaiWeb *w)
{
    if (w->have_pic) {
        wai_picture_unref(&w->pic);
        w->have_pic = 0;
    }
    const int r = wai_get_picture(w->dec, &w->pic);
    if (r == WAI_ERR_AGAIN) return 1;
    if (r < 0) return r;
    w->have_pic = 1;
    for (uint32_t y = 0; y < w->pic.height; y++)
        sha256_update(&w->hash, (size_t)w->pic.width * 3, w->pic.data + (ptrdiff_t)y * w->pic.stride);
    return 0;
}

EMSCRIPTEN_KEEPALIVE const char *waiweb_error(WaiWeb *w) { return wai_decoder_last_error(w->dec); }
EMSCRIPTEN_KEEPALIVE const char *waiweb_strerror(int err) { return wai_strerror(err); }

EMSCRIPTEN_KEEPALIVE uint32_t waiweb_pic_width(WaiWeb *w) { return w->have_pic ? w->pic.width : 0; }
EMSCRIPTEN_KEEPALIVE uint32_t waiweb_pic_height(WaiWeb *w) { return w->have_pic ? w->pic.height : 0; }
EMSCRIPTEN_KEEPALIVE uint32_t waiweb_pic_index(WaiWeb *w) { return w->have_pic ? w->pic.frame_index : 0; }
/* Presentation time in milliseconds (a double: JavaScript's number). */
EMSCRIPTEN_KEEPALIVE double waiweb_pic_ms(WaiWeb *w)
{
    if (!w->have_pic || w->pic.pts_den <= 0) return 0;
    return (double)w->pic.pts_num * 1000.0 / (double)w->pic.pts_den;
}

/* The picture as width x height RGBA, alpha 255, rows packed; NULL without a picture or memory. */
EMSCRIPTEN_KEEPALIVE uint8_t *waiweb_pic_rgba(WaiWeb *w)
{
    if (!w->have_pic) return NULL;
    const size_t n = (size_t)w->pic.width * w->pic.height * 4;
    if (n > w->rgba_cap) {
        uint8_t *p = realloc(w->rgba, n);
        if (!p) return NULL;
        w->rgba = p;
        w->rgba_cap = n;
    }
    uint8_t *o = w->rgba;
    for (uint32_t y = 0; y < w->pic.height; y++) {
        const uint8_t *s = w->pic.data + (ptrdiff_t)y * w->pic.stride;
        for (uint32_t x = 0; x < w->pic.width; x++, s += 3, o += 4) {
            o[0] = s[0];
            o[1] = s[1];
            o[2] = s[2];
            o[3] = 255;
        }
    }
    return w->rgba;
}

/* The SHA-256 (64 lower-case hex) of the pictures returned so far. */
EMSCRIPTEN_KEEPALIVE const char *waiweb_hash_hex(WaiWeb *w)
{
    struct sha256_ctx c = w->hash; /* digest() resets its context: keep the running one */
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&c, sizeof(d), d);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(w->hex + 2 * i, 3, "%02x", d[i]);
    return w->hex;
}

/* What the page needs before decoding, from the stream's sequence headers (each CRC-checked by
 * wai_find_unit): info[0..7] = width, height (the display window), fps_num, fps_den,
 * frame_count, number of sequence headers, number of frame units, and whether the first unit
 * is a sequence header; models gets the SHA-256 (64 hex and '\n') of each distinct model the
 * headers name without embedding it, at most max_models. Returns the number of such models.
 * Damage is skipped as the decoder skips it: the decoder, not this scan, reports errors. */
EMSCRIPTEN_KEEPALIVE int waiweb_scan(const uint8_t *buf, size_t size, uint32_t *info, char *models,
                                     int max_models)
{
    memset(info, 0, 8 * sizeof(*info));
    int n_models = 0;
    size_t pos = 0;
    models[0] = 0;
    while (pos < size) {
        WaiUnitInfo u;
        int r = wai_find_unit(buf + pos, size - pos, size, &u);
        if (r < 0) break; /* AGAIN with all data: nothing more starts a whole unit */
        const uint8_t *p = buf + pos + u.offset;
        if (!info[5] && !info[6]) info[7] = u.type == WAI_UNIT_SEQUENCE_HEADER;
        if (u.type == WAI_UNIT_SEQUENCE_HEADER) {
            WaiSequenceInfo s;
            if (wai_parse_sequence_header(p, u.size, &s) == 0) {
                if (!info[5]) {
                    info[0] = s.disp_w;
                    info[1] = s.disp_h;
                    info[2] = s.fps_num;
                    info[3] = s.fps_den;
                    info[4] = s.frame_count;
                }
                info[5]++;
                if (!s.model_size && n_models < max_models) {
                    char hex[65];
                    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", s.model_sha256[i]);
                    if (!strstr(models, hex)) {
                        memcpy(models + 65 * n_models, hex, 64);
                        models[65 * n_models + 64] = '\n';
                        models[65 * ++n_models] = 0;
                    }
                }
            }
        } else {
            info[6]++;
        }
        pos += u.offset + u.size;
    }
    return n_models;
}
