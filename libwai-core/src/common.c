#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <nettle/sha2.h>
#include <zlib.h>

void wai_buf_init(WaiBuf *b) { memset(b, 0, sizeof(*b)); }

void wai_buf_free(WaiBuf *b)
{
    free(b->data);
    wai_buf_init(b);
}

int wai_buf_reserve(WaiBuf *b, size_t extra)
{
    if (b->err) return b->err;
    if (extra > SIZE_MAX - b->size) return b->err = WAI_ERR_NOMEM;
    size_t need = b->size + extra;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) return b->err = WAI_ERR_NOMEM;
    b->data = d;
    b->cap = cap;
    return 0;
}

void wai_buf_put(WaiBuf *b, const void *p, size_t n)
{
    if (!n || wai_buf_reserve(b, n)) return;
    memcpy(b->data + b->size, p, n);
    b->size += n;
}

void wai_buf_put8(WaiBuf *b, uint8_t v) { wai_buf_put(b, &v, 1); }
void wai_buf_put16(WaiBuf *b, uint16_t v) { uint8_t t[2]; wai_wr16(t, v); wai_buf_put(b, t, 2); }
void wai_buf_put32(WaiBuf *b, uint32_t v) { uint8_t t[4]; wai_wr32(t, v); wai_buf_put(b, t, 4); }
void wai_buf_put64(WaiBuf *b, uint64_t v) { uint8_t t[8]; wai_wr64(t, v); wai_buf_put(b, t, 8); }

float wai_half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 1023u;
    uint32_t u;
    if (e == 31) {
        u = sign | 0x7f800000u | (m << 13);
    } else if (e) {
        u = sign | ((e + 112u) << 23) | (m << 13);
    } else {   /* zero or subnormal: m * 2^-24, a normal float (or zero) */
#ifdef WAI_PLANTED_FAULT_HALF_SUBNORMAL   /* planted: the subnormals' scale off by one */
        const float f = ldexpf((float)m, -25);
#else
        const float f = ldexpf((float)m, -24);
#endif
        memcpy(&u, &f, 4);
        u |= sign;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint32_t wai_crc32(const uint8_t *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    /* zlib takes uInt lengths: feed large buffers in pieces */
    while (n) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

void wai_sha256(const uint8_t *p, size_t n, uint8_t out[32])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, n, p);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

void wai_sha256_hex(const uint8_t sha[32], char out[65])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[sha[i] >> 4];
        out[2 * i + 1] = hex[sha[i] & 15];
    }
    out[64] = 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int wai_sha256_from_hex(const char *hex, uint8_t out[32])
{
    for (int i = 0; i < 32; i++) {
        int hi = hexval(hex[2 * i]), lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return WAI_ERR_INVALID_ARG;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[64] ? WAI_ERR_INVALID_ARG : 0;
}
