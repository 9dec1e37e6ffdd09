/*
 * wai-mkvectors: make the conformance vectors from seeded integer latents.
 *
 *   wai-mkvectors --model MODEL.whm --out-dir DIR [--manifest FILE]
 *
 * No trained model is needed: z and y values are drawn from the integer PRNG (prng.h), the
 * library's integer h_s decides the tables, the entropy encoder writes the payloads, and the
 * reference decoder gives the pinned hash of the decoded RGB8. Output is byte-identical on
 * every rerun (integers only).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsp.h"
#include "graph.h"
#include "model.h"
#include "payload.h"
#include "prng.h"
#include "stream.h"

typedef struct VectorSpec {
    const char *name;
    const char *what;
    uint32_t width, height;
    uint32_t dx, dy, dw, dh;    /* display window; dw == 0: whole picture */
    uint32_t frames;
    uint32_t fps_num, fps_den;
    int embed_model;
    int escapes;                /* per mille of y values forced far out of range */
    int zeros;                  /* zero-heavy latents */
    uint64_t seed;
} VectorSpec;

static const VectorSpec vectors[] = {
    { "v01-64x64", "one 64x64 picture", 64, 64, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 1 },
    { "v02-1x1", "1x1 picture (padded to 64x64)", 1, 1, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 2 },
    { "v03-100x75", "sides not multiples of 64", 100, 75, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 3 },
    { "v04-wide-1000x8", "very wide picture", 1000, 8, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 4 },
    { "v05-tall-17x300", "tall picture, odd width", 17, 300, 0, 0, 0, 0, 1, 25, 1, 0, 0, 0, 5 },
    { "v06-window-96x80", "display window 80x70 at (5,3)", 96, 80, 5, 3, 80, 70, 1, 25, 1, 0, 0, 0, 6 },
    { "v07-escapes-64x64", "many escaped (bypass) values", 64, 64, 0, 0, 0, 0, 1, 25, 1, 0, 50, 0, 7 },
    { "v08-zeros-128x64", "zero-heavy latents", 128, 64, 0, 0, 0, 0, 1, 25, 1, 0, 0, 1, 8 },
    { "v09-video-3x64x48", "3-frame intra video at 30000/1001 fps", 64, 48, 0, 0, 0, 0, 3, 30000, 1001, 0, 0, 0, 9 },
    { "v10-embedded-32x32", "model embedded in the stream", 32, 32, 0, 0, 0, 0, 1, 25, 1, 1, 0, 0, 10 },
};

static int fail(const char *what, int err)
{
    fprintf(stderr, "wai-mkvectors: %s: %s\n", what, wai_strerror(err));
    return 1;
}

/* A value near a zero-mean discrete distribution of about `scale` (Q12): the sum of two
 * uniforms, a triangle of half-width ~1.5 scale; integers only. */
static int32_t draw(WaiPrng *r, int64_t scale_q12)
{
    int64_t h = (scale_q12 * 3 / 2 + 2048) >> 12;
    if (h < 0) h = 0;
    return (int32_t)(wai_prng_range(r, -h, h) + wai_prng_range(r, -h, h)) / 2;
}

/* One picture's payload from seeded latents. */
static int make_payload(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g,
                        const VectorSpec *v, WaiPrng *r, uint8_t **out, size_t *size)
{
    size_t nz = (size_t)g->z.c * g->z.h * g->z.w, ny = (size_t)g->y.c * g->y.h * g->y.w;
    int32_t *z = malloc(nz * sizeof(*z)), *zh = malloc(nz * sizeof(*zh));
    int32_t *y = malloc(ny * sizeof(*y)), *mean = malloc(ny * sizeof(*mean));
    uint8_t *idx = malloc(ny);
    int err = WAI_ERR_NOMEM;
    if (!z || !zh || !y || !mean || !idx) goto end;

    for (size_t i = 0; i < nz; i++) {
        const WaiTable *t = &m->z_tables[i / ((size_t)g->z.h * g->z.w)];
        int32_t span = (int32_t)t->length;
        z[i] = v->zeros ? (wai_prng_range(r, 0, 3) == 0 ? 1 : 0)
                        : t->offset + span / 4 + (int32_t)wai_prng_range(r, 0, span / 2);
    }
    wai_z_hat(m, g, z, zh);
    if ((err = wai_hyper(m, dsp, g, zh, idx, mean)) < 0) goto end;
    for (size_t i = 0; i < ny; i++) {
        uint32_t k = idx[i];
        int64_t scale = k < m->n_scales - 1 ? m->thresholds_q12[k] : m->thresholds_q12[m->n_scales - 2] * 2;
        y[i] = v->zeros && wai_prng_range(r, 0, 7) ? 0 : draw(r, scale);
        if (v->escapes && wai_prng_range(r, 0, 999) < v->escapes) {
            /* far outside every table, both signs, up to the format's bound */
            int32_t mag = (int32_t)wai_prng_range(r, 300, WAI_VALUE_MAX);
            y[i] = wai_prng_range(r, 0, 1) ? mag : -mag;
        }
    }
    err = wai_payload_encode(m, g, z, y, idx, out, size);
end:
    free(z); free(zh); free(y); free(mean); free(idx);
    return err;
}

static int make_vector(const WaiModel *m, const uint8_t *model_bytes, size_t model_size,
                       const WaiDsp *dsp, const VectorSpec *v, const char *dir, FILE *manifest)
{
    WaiGeometry g;
    int err = wai_geometry(m, v->width, v->height, &g);
    if (err < 0) return fail(v->name, err);

    WaiSequenceInfo info;
    memset(&info, 0, sizeof(info));
    info.width = v->width;
    info.height = v->height;
    info.disp_x = v->dx;
    info.disp_y = v->dy;
    info.disp_w = v->dw ? v->dw : v->width;
    info.disp_h = v->dw ? v->dh : v->height;
    info.fps_num = v->fps_num;
    info.fps_den = v->fps_den;
    info.frame_count = v->frames;
    info.colour_primaries = 1;
    info.transfer = 13;
    info.matrix = 0;
    info.full_range = 1;
    info.version_major = 1;
    memcpy(info.model_sha256, m->sha256, 32);

    WaiBuf stream;
    wai_buf_init(&stream);
    err = wai_seqhdr_write(&stream, &info, v->embed_model ? model_bytes : NULL,
                           v->embed_model ? model_size : 0);

    size_t rgb_size = (size_t)info.disp_w * info.disp_h * 3;
    uint8_t *rgb = malloc(rgb_size * v->frames);
    if (!rgb) err = WAI_ERR_NOMEM;

    WaiPrng r;
    wai_prng_seed(&r, v->seed);
    for (uint32_t f = 0; err >= 0 && f < v->frames; f++) {
        uint8_t *payload = NULL;
        size_t psize = 0;
        if ((err = make_payload(m, dsp, &g, v, &r, &payload, &psize)) < 0) break;
        err = wai_frame_write(&stream, f, payload, psize);
        /* the pinned hash comes from the reference decode of the bytes just written */
        if (err >= 0)
            err = wai_payload_decode(m, dsp, payload, psize, v->width, v->height, info.disp_x,
                                     info.disp_y, info.disp_w, info.disp_h, rgb + f * rgb_size,
                                     (ptrdiff_t)info.disp_w * 3);
        free(payload);
    }
    if (err >= 0 && stream.err) err = stream.err;
    if (err < 0) {
        free(rgb);
        wai_buf_free(&stream);
        return fail(v->name, err);
    }

    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.wai", dir, v->name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(stream.data, 1, stream.size, f) != stream.size || fclose(f)) {
        fprintf(stderr, "wai-mkvectors: cannot write %s\n", path);
        free(rgb);
        wai_buf_free(&stream);
        return 1;
    }
    uint8_t sha[32];
    char hex[65];
    wai_sha256(rgb, rgb_size * v->frames, sha);
    wai_sha256_hex(sha, hex);
    fprintf(manifest, "%s.wai %s %" PRIu32 " %" PRIu32 "x%" PRIu32 "\n", v->name, hex, v->frames,
            info.disp_w, info.disp_h);
    fprintf(stderr, "%-22s %8zu bytes  %s\n", v->name, stream.size, v->what);
    free(rgb);
    wai_buf_free(&stream);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: wai-mkvectors --model MODEL.whm --out-dir DIR [--manifest FILE]\n"
               "Writes the conformance vectors DIR/<name>.wai and their manifest lines\n"
               "(<file> <sha256 of decoded RGB8> <frames> <W>x<H>) to FILE or stdout.\n");
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *dir = NULL, *manifest_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { usage(stderr); return 2; }
        if (!strcmp(argv[i], "--model")) model_path = argv[++i];
        else if (!strcmp(argv[i], "--out-dir")) dir = argv[++i];
        else if (!strcmp(argv[i], "--manifest")) manifest_path = argv[++i];
        else { usage(stderr); return 2; }
    }
    if (!model_path || !dir) { usage(stderr); return 2; }

    uint8_t *bytes = NULL;
    size_t size = 0;
    int err = wai_read_file(model_path, (size_t)512 << 20, &bytes, &size);
    if (err < 0) return fail(model_path, err);
    WaiModel *m = NULL;
    char msg[256] = "";
    if ((err = wai_model_parse(&m, bytes, size, msg, sizeof(msg))) < 0) {
        fprintf(stderr, "wai-mkvectors: %s: %s\n", model_path, msg);
        free(bytes);
        return 1;
    }
    WaiDsp dsp;
    wai_dsp_init_ref(&dsp);

    FILE *manifest = manifest_path ? fopen(manifest_path, "w") : stdout;
    if (!manifest) { fprintf(stderr, "wai-mkvectors: cannot write %s\n", manifest_path); return 1; }
    char hex[65];
    wai_sha256_hex(m->sha256, hex);
    fprintf(manifest, "# WAI conformance vectors: <file> <sha256 of decoded RGB8> <frames> <W>x<H>\n"
                      "# model %s (%s)\n", hex, m->name);
    int rc = 0;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]) && !rc; i++)
        rc = make_vector(m, bytes, size, &dsp, &vectors[i], dir, manifest);
    if (manifest != stdout && fclose(manifest)) rc = 1;
    wai_model_free(m);
    free(bytes);
    return rc;
}
