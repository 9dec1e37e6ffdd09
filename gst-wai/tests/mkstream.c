/*
 * gst-wai-mkstream: test streams for the GStreamer plugin's tests, from seeded integer latents.
 *
 *   gst-wai-mkstream MODEL.whm OUTDIR
 *
 * Writes into OUTDIR:
 *   gst-multi.wai      5 frames, 40x24 coded, display 35x21 at (2,1) (odd width: RGB rows
 *                      need padding in GStreamer), 25/1 fps, frame_count 5
 *   gst-nomodel.wai    the same stream naming a model nobody has (header CRC valid)
 *   gst-corrupt.wai    gst-multi.wai with one payload byte of frame 2 flipped (CRC error)
 *   gst-truncated.wai  gst-multi.wai cut inside its last frame unit
 *   gst-garbage.bin    4 KiB of PRNG bytes (no unit in them)
 * Output is byte-identical on every run (integers only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsp.h"
#include "graph.h"
#include "model.h"
#include "payload.h"
#include "prng.h"
#include "stream.h"

#define FRAMES 5
#define CORRUPT_FRAME 2

static int fail(const char *what, int err)
{
    fprintf(stderr, "gst-wai-mkstream: %s: %s\n", what, wai_strerror(err));
    return 1;
}

static int write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "gst-wai-mkstream: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* One payload: z values inside each z table's range, small y values around the means. */
static int make_payload(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, WaiPrng *r,
                        uint8_t **out, size_t *size)
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
        z[i] = t->offset + span / 4 + (int32_t)wai_prng_range(r, 0, span / 2);
    }
    wai_z_hat(m, g, z, zh);
    if ((err = wai_hyper(m, dsp, g, zh, idx, mean)) < 0) goto end;
    for (size_t i = 0; i < ny; i++) y[i] = (int32_t)wai_prng_range(r, -3, 3);
    err = wai_payload_encode(m, g, -1, z, y, idx, out, size);
end:
    free(z); free(zh); free(y); free(mean); free(idx);
    return err;
}

/* The stream for a given model hash; *frame_at receives each frame unit's offset. */
static int make_stream(const WaiModel *m, const WaiDsp *dsp, const uint8_t sha[32], WaiBuf *b,
                       size_t frame_at[FRAMES])
{
    WaiGeometry g;
    int err = wai_geometry(m, 40, 24, &g);
    if (err < 0) return err;
    WaiSequenceInfo info;
    memset(&info, 0, sizeof(info));
    info.width = 40;
    info.height = 24;
    info.disp_x = 2;
    info.disp_y = 1;
    info.disp_w = 35;
    info.disp_h = 21;
    info.fps_num = 25;
    info.fps_den = 1;
    info.frame_count = FRAMES;
    info.colour_primaries = 1;
    info.transfer = 13;
    info.full_range = 1;
    info.version_major = 1;
    memcpy(info.model_sha256, sha, 32);
    if ((err = wai_seqhdr_write(b, &info, NULL, 0)) < 0) return err;
    WaiPrng r;
    wai_prng_seed(&r, 0x6753747265616dull);
    for (uint32_t f = 0; f < FRAMES; f++) {
        uint8_t *payload = NULL;
        size_t psize = 0;
        if ((err = make_payload(m, dsp, &g, &r, &payload, &psize)) < 0) return err;
        frame_at[f] = b->size;
        err = wai_frame_write(b, f, payload, psize);
        free(payload);
        if (err < 0) return err;
    }
    return b->err;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gst-wai-mkstream MODEL.whm OUTDIR\n");
        return 2;
    }
    const char *dir = argv[2];
    uint8_t *bytes = NULL;
    size_t size = 0;
    int err = wai_read_file(argv[1], (size_t)512 << 20, &bytes, &size);
    if (err < 0) return fail(argv[1], err);
    WaiModel *m = NULL;
    err = wai_model_parse(&m, bytes, size, NULL, 0);
    free(bytes);
    if (err < 0) return fail(argv[1], err);
    WaiDsp dsp;
    wai_dsp_init_ref(&dsp);

    WaiBuf good, nomodel;
    size_t at[FRAMES], at2[FRAMES];
    uint8_t other[32];
    memcpy(other, m->sha256, 32);
    other[0] ^= 0xff;
    other[31] ^= 0x5a;
    wai_buf_init(&good);
    wai_buf_init(&nomodel);
    int rc = 0;
    if ((err = make_stream(m, &dsp, m->sha256, &good, at)) < 0 ||
        (err = make_stream(m, &dsp, other, &nomodel, at2)) < 0) {
        rc = fail("stream", err);
        goto end;
    }
    rc |= write_file(dir, "gst-multi.wai", good.data, good.size);
    rc |= write_file(dir, "gst-nomodel.wai", nomodel.data, nomodel.size);

    /* one payload byte of frame CORRUPT_FRAME: its CRC no longer matches */
    uint8_t *c = malloc(good.size);
    if (!c) { rc = 1; goto end; }
    memcpy(c, good.data, good.size);
    c[at[CORRUPT_FRAME] + 16 + 7] ^= 0x20;
    rc |= write_file(dir, "gst-corrupt.wai", c, good.size);
    /* cut inside the last frame unit */
    size_t cut = at[FRAMES - 1] + (good.size - at[FRAMES - 1]) / 2;
    rc |= write_file(dir, "gst-truncated.wai", good.data, cut);
    /* garbage */
    WaiPrng r;
    wai_prng_seed(&r, 77);
    for (size_t i = 0; i < 4096 && i < good.size; i++) c[i] = (uint8_t)wai_prng_next(&r);
    rc |= write_file(dir, "gst-garbage.bin", c, good.size < 4096 ? good.size : 4096);
    free(c);
end:
    wai_buf_free(&good);
    wai_buf_free(&nomodel);
    wai_model_free(m);
    return rc;
}
