/* PSNR of a decoded picture against its source, for the encoder tests.
 *
 *     psnr REF.png TEST.rgb     prints "PSNR_dB WIDTH HEIGHT" (PSNR over the R, G and B
 *                               samples, peak 255; "inf" when equal)
 *
 * REF is read as RGB8 (any PNG colour type; alpha dropped, 16 bits stripped, as `wai encode`
 * reads it); TEST is raw RGB24 of the same size (`wai decode -o X.rgb`). Exit 0, or 1 with a
 * message (unreadable file, size mismatch). */
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint8_t *read_png(const char *path, uint32_t *w, uint32_t *h)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t *volatile data = NULL;
    png_bytep *volatile rows = NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        free(data);
        free(rows);
        return NULL;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    int ct = png_get_color_type(png, info);
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    *w = png_get_image_width(png, info);
    *h = png_get_image_height(png, info);
    if (png_get_rowbytes(png, info) != (size_t)*w * 3) png_error(png, "row format");
    data = malloc((size_t)*w * *h * 3);
    rows = malloc(*h * sizeof(*rows));
    if (!data || !rows) png_error(png, "out of memory");
    for (uint32_t y = 0; y < *h; y++) rows[y] = data + (size_t)y * *w * 3;
    png_read_image(png, rows);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    free(rows);
    return data;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: psnr REF.png TEST.rgb\n");
        return 1;
    }
    uint32_t w, h;
    uint8_t *ref = read_png(argv[1], &w, &h);
    if (!ref) {
        fprintf(stderr, "psnr: %s: cannot read the PNG\n", argv[1]);
        return 1;
    }
    const size_t n = (size_t)w * h * 3;
    uint8_t *test = malloc(n + 1);
    FILE *f = fopen(argv[2], "rb");
    size_t got = f && test ? fread(test, 1, n + 1, f) : 0;
    if (f) fclose(f);
    if (got != n) {
        fprintf(stderr, "psnr: %s: not %ux%u RGB24 (%zu bytes)\n", argv[2], w, h, got);
        free(ref);
        free(test);
        return 1;
    }
    uint64_t sse = 0;
    for (size_t i = 0; i < n; i++) {
        int d = (int)ref[i] - (int)test[i];
        sse += (uint64_t)(d * d);
    }
    if (!sse) printf("inf %u %u\n", w, h);
    else printf("%.3f %u %u\n", 10.0 * log10(255.0 * 255.0 * (double)n / (double)sse), w, h);
    free(ref);
    free(test);
    return 0;
}
