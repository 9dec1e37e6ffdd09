/*
 * gst-wai-testtool: helpers for the plugin's shell tests (public libwai API only).
 *
 *   gst-wai-testtool decode IN.wai OUT.rgb   reference decode: every frame's RGB24, rows of
 *                                            width*3 bytes, no padding; prints "<frames> <W>x<H>"
 *   gst-wai-testtool strip W H IN OUT        drop GStreamer's RGB row padding (rows of W*3
 *                                            bytes padded to a multiple of 4)
 *   gst-wai-testtool damage IN OUT SEED      a copy of IN with 1 to 3 bytes changed at places
 *                                            drawn from SEED (one in four copies has one of
 *                                            them in the first 100 bytes: the header); prints
 *                                            the offsets changed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wai/wai.h>

static int decode(const char *in, const char *out)
{
    FILE *f = fopen(in, "rb"), *o = fopen(out, "wb");
    if (!f || !o) {
        fprintf(stderr, "gst-wai-testtool: cannot open %s or %s\n", in, out);
        return 1;
    }
    WaiDecoder *d = NULL;
    WaiSettings s;
    wai_default_settings(&s);
    int r = wai_decoder_open(&d, &s);
    if (r < 0) {
        fprintf(stderr, "gst-wai-testtool: open: %s\n", wai_strerror(r));
        return 1;
    }
    unsigned frames = 0, w = 0, h = 0;
    int errors = 0, eof = 0;
    uint8_t buf[4096];
    while (!eof) {
        size_t n = fread(buf, 1, sizeof(buf), f);
        if (n == 0) {
            eof = 1;
            wai_send_eos(d);
        } else if ((r = wai_send_data(d, buf, n)) < 0) {
            fprintf(stderr, "gst-wai-testtool: %s\n", wai_decoder_last_error(d));
            errors++;
            break;
        }
        WaiPicture p;
        while ((r = wai_get_picture(d, &p)) != WAI_ERR_AGAIN) {
            if (r < 0) {
                fprintf(stderr, "gst-wai-testtool: %s\n", wai_decoder_last_error(d));
                errors++;
                continue;
            }
            for (uint32_t y = 0; y < p.height; y++)
                fwrite(p.data + (ptrdiff_t)y * p.stride, 1, (size_t)p.width * 3, o);
            w = p.width;
            h = p.height;
            frames++;
            wai_picture_unref(&p);
        }
    }
    wai_decoder_close(&d);
    fclose(f);
    if (fclose(o)) return 1;
    printf("%u %ux%u\n", frames, w, h);
    return errors ? 1 : 0;
}

static int strip(unsigned w, unsigned h, const char *in, const char *out)
{
    FILE *f = fopen(in, "rb"), *o = fopen(out, "wb");
    if (!f || !o || !w || !h || w > 65536) {
        fprintf(stderr, "gst-wai-testtool: bad arguments\n");
        return 1;
    }
    size_t row = (size_t)w * 3, stride = (row + 3) & ~(size_t)3;
    uint8_t *buf = malloc(stride);
    if (!buf) return 1;
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, stride, f)) == stride) fwrite(buf, 1, row, o);
    if (n != 0) {
        fprintf(stderr, "gst-wai-testtool: %zu trailing bytes: not whole %zu-byte rows\n", n, stride);
        rc = 1;
    }
    free(buf);
    fclose(f);
    if (fclose(o)) rc = 1;
    return rc;
}

/* xorshift64*: the same damage for the same seed on every machine */
static uint64_t next_rand(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 2685821657736338717ull;
}

static int damage(const char *in, const char *out, unsigned long long seed)
{
    FILE *f = fopen(in, "rb");
    if (!f) {
        fprintf(stderr, "gst-wai-testtool: cannot open %s\n", in);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t size = 0, cap = 0, n;
    do {
        if (size == cap) {
            cap = cap ? 2 * cap : 65536;
            uint8_t *b = realloc(buf, cap);
            if (!b) return 1;
            buf = b;
        }
        n = fread(buf + size, 1, cap - size, f);
        size += n;
    } while (n > 0);
    fclose(f);
    if (!size) return 1;
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    unsigned edits = 1 + (unsigned)(next_rand(&st) % 3);
    int head = next_rand(&st) % 4 == 0;
    for (unsigned k = 0; k < edits; k++) {
        size_t at = (size_t)(next_rand(&st) % (k == 0 && head && size > 100 ? 100 : size));
        buf[at] ^= (uint8_t)(1 + next_rand(&st) % 255);   /* never 0: the byte changes */
        printf("%s%zu", k ? " " : "", at);
    }
    printf("\n");
    FILE *o = fopen(out, "wb");
    int rc = !o || fwrite(buf, 1, size, o) != size;
    if (o && fclose(o)) rc = 1;
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "damage"))
        return damage(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "decode")) return decode(argv[2], argv[3]);
    if (argc == 6 && !strcmp(argv[1], "strip"))
        return strip((unsigned)strtoul(argv[2], NULL, 10), (unsigned)strtoul(argv[3], NULL, 10),
                     argv[4], argv[5]);
    fprintf(stderr, "usage: gst-wai-testtool decode IN.wai OUT.rgb | strip W H IN OUT | "
            "damage IN OUT SEED\n");
    return 2;
}
