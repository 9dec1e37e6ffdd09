/* Internal helpers shared by every part of libwai-core. Not installed. */
#ifndef WAI_COMMON_H
#define WAI_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wai/wai.h"

#define WAI_Q 12                     /* activations are fixed point with 12 fractional bits */
#define WAI_ACT_MIN (-(INT32_C(1) << 23))
#define WAI_ACT_MAX ((INT32_C(1) << 23) - 1)
#define WAI_VALUE_MAX 65535          /* |decoded latent value| bound (spec 7.2) */

/* Arithmetic right shift is floor division (spec conventions); gcc and clang guarantee it. */
_Static_assert((-3 >> 1) == -2, "arithmetic right shift required");

static inline int64_t wai_rshr(int64_t v, unsigned s)
{
    return s ? (v + ((int64_t)1 << (s - 1))) >> s : v;
}

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a (C division truncates). */
static inline int wai_floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static inline int wai_ceil_div(int a, int b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }

static inline int32_t wai_clamp_act(int64_t v)
{
    return v < WAI_ACT_MIN ? WAI_ACT_MIN : v > WAI_ACT_MAX ? WAI_ACT_MAX : (int32_t)v;
}

static inline uint16_t wai_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t wai_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t wai_rd64(const uint8_t *p)
{
    return (uint64_t)wai_rd32(p) | (uint64_t)wai_rd32(p + 4) << 32;
}
static inline void wai_wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void wai_wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void wai_wr64(uint8_t *p, uint64_t v)
{
    wai_wr32(p, (uint32_t)v);
    wai_wr32(p + 4, (uint32_t)(v >> 32));
}

/* A bounded little-endian reader: every read checks the remaining size; after the first
 * failure it stays failed and returns zeros, so parsers check once at the end of a block. */
typedef struct WaiReader {
    const uint8_t *p, *end;
    int err;                          /* 0 or WAI_ERR_TRUNCATED */
} WaiReader;

static inline void wai_reader_init(WaiReader *r, const uint8_t *p, size_t n)
{
    r->p = p; r->end = p + n; r->err = 0;
}
static inline size_t wai_reader_left(const WaiReader *r) { return (size_t)(r->end - r->p); }
static inline const uint8_t *wai_reader_take(WaiReader *r, size_t n)
{
    if (r->err || wai_reader_left(r) < n) { r->err = WAI_ERR_TRUNCATED; return NULL; }
    const uint8_t *q = r->p;
    r->p += n;
    return q;
}
static inline uint8_t wai_read8(WaiReader *r) { const uint8_t *q = wai_reader_take(r, 1); return q ? q[0] : 0; }
static inline uint16_t wai_read16(WaiReader *r) { const uint8_t *q = wai_reader_take(r, 2); return q ? wai_rd16(q) : 0; }
static inline uint32_t wai_read32(WaiReader *r) { const uint8_t *q = wai_reader_take(r, 4); return q ? wai_rd32(q) : 0; }
static inline uint64_t wai_read64(WaiReader *r) { const uint8_t *q = wai_reader_take(r, 8); return q ? wai_rd64(q) : 0; }

/* A growable byte buffer for writers (encoders, model serialisation). */
typedef struct WaiBuf {
    uint8_t *data;
    size_t size, cap;
    int err;                          /* 0 or WAI_ERR_NOMEM */
} WaiBuf;

void wai_buf_init(WaiBuf *b);
void wai_buf_free(WaiBuf *b);
int wai_buf_reserve(WaiBuf *b, size_t extra);
void wai_buf_put(WaiBuf *b, const void *p, size_t n);
void wai_buf_put8(WaiBuf *b, uint8_t v);
void wai_buf_put16(WaiBuf *b, uint16_t v);
void wai_buf_put32(WaiBuf *b, uint32_t v);
void wai_buf_put64(WaiBuf *b, uint64_t v);

/* IEEE 754 binary16 to binary32, exact (every half is a float, subnormals included);
 * infinities and NaNs come out as such. */
float wai_half_to_float(uint16_t h);

/* zlib CRC-32 and nettle SHA-256 behind one small interface. */
uint32_t wai_crc32(const uint8_t *p, size_t n);
void wai_sha256(const uint8_t *p, size_t n, uint8_t out[32]);
void wai_sha256_hex(const uint8_t sha[32], char out[65]);
int wai_sha256_from_hex(const char *hex, uint8_t out[32]);

/* Overflow-checked size arithmetic: returns 0 and sets *out, or WAI_ERR_LIMIT on overflow. */
static inline int wai_mul_size(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a) return WAI_ERR_LIMIT;
    *out = a * b;
    return 0;
}

static inline int wai_add_size(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a) return WAI_ERR_LIMIT;
    *out = a + b;
    return 0;
}

/* The default memory budget of the decoder and the encoder: 4 GiB, but within half the
 * address space on 32-bit builds, so that the budget refuses first (WAI_ERR_LIMIT), not malloc. */
#define WAI_DEFAULT_MAX_MEMORY \
    ((uint64_t)SIZE_MAX / 2 < (UINT64_C(4) << 30) ? (uint64_t)SIZE_MAX / 2 : UINT64_C(4) << 30)

/* The next entry of a ':'-separated directory list: 1 with *dir and *len (> 0) set and *list
 * advanced past it, 0 at the end. Empty entries are skipped. */
static inline int wai_path_next(const char **list, const char **dir, size_t *len)
{
    while (*list && **list) {
        const char *end = strchr(*list, ':');
        *dir = *list;
        *len = end ? (size_t)(end - *list) : strlen(*list);
        *list = end ? end + 1 : NULL;
        if (*len) return 1;
    }
    return 0;
}

#endif
