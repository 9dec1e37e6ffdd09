/* PSNR of a decoded picture against its source, for the encoder tests.
 *
 *     psnr REF.png TEST.rgb     prints "PSNR_dB WIDTH HEIGHT MEAN_ERR" (PSNR over the R, G
 *                               and B samples, peak 255, "inf" when equal; MEAN_ERR the
 *                               largest of the three channels' |mean(TEST) - mean(REF)|, in
 *                               levels: a colour cast)
 *
 * REF is read as RGB8 by `wai encode`'s own reader (tools/pngread.c: any PNG colour type,
 * alpha dropped, 16 bits stripped); TEST is raw RGB24 of the same size (`wai decode -o X.rgb`).
 * Exit 0, or 1 with a message (unreadable file, size mismatch). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pngread.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: psnr REF.png TEST.rgb\n");
        return 1;
    }
    uint32_t w, h;
    uint8_t *ref;
    const char *why;
    if (png_read_rgb8(argv[1], &ref, &w, &h, &why) != PNGREAD_OK) {
        fprintf(stderr, "psnr: %s: %s\n", argv[1], why);
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
    int64_t sum[3] = { 0, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        int d = (int)ref[i] - (int)test[i];
        sse += (uint64_t)(d * d);
        sum[i % 3] -= d;
    }
    double cast = 0;
    for (int k = 0; k < 3; k++)
        if (fabs((double)sum[k] / ((double)w * h)) > cast) cast = fabs((double)sum[k] / ((double)w * h));
    if (!sse) printf("inf %u %u %.3f\n", w, h, cast);
    else printf("%.3f %u %u %.3f\n", 10.0 * log10(255.0 * 255.0 * (double)n / (double)sse), w, h, cast);
    free(ref);
    free(test);
    return 0;
}
