/*
 * gst-wai-testtool: helpers for the plugin's shell tests (public libwai API only).
 *
 *   gst-wai-testtool decode IN.wai OUT.rgb   reference decode: every frame's RGB24, rows of
 *                                            width*3 bytes, no padding; prints "<frames> <W>x<H>"
 *   gst-wai-testtool strip W H IN OUT        drop GStreamer's RGB row padding (rows of W*3
 *                                            bytes padded to a multiple of 4)
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

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "decode")) return decode(argv[2], argv[3]);
    if (argc == 6 && !strcmp(argv[1], "strip"))
        return strip((unsigned)strtoul(argv[2], NULL, 10), (unsigned)strtoul(argv[3], NULL, 10),
                     argv[4], argv[5]);
    fprintf(stderr, "usage: gst-wai-testtool decode IN.wai OUT.rgb | strip W H IN OUT\n");
    return 2;
}
