/*
 * wai-mkflat: a one-frame stream of any size for a model, without an encoder: every z value at
 * the middle of its table's range, every y residual 0 (y_hat = the means h_s gives). It decodes
 * to a smooth picture and exists to try sizes no encoder run here can reach, such as the
 * largest the library allows (16384x16384): docs/research/camera-size.md.
 *
 *   wai-mkflat MODEL.whm WIDTH HEIGHT OUT.wai
 *
 * Integers only: the output is byte-identical on every run, with any kernel set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsp.h"
#include "graph.h"
#include "model.h"
#include "payload.h"
#include "stream.h"

static int fail(const char *what, int err)
{
    fprintf(stderr, "wai-mkflat: %s: %s\n", what, wai_strerror(err));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: wai-mkflat MODEL.whm WIDTH HEIGHT OUT.wai\n");
        return 2;
    }
    const long w = strtol(argv[2], NULL, 10), h = strtol(argv[3], NULL, 10);
    if (w < 1 || h < 1 || w > 65535 || h > 65535) {
        fprintf(stderr, "wai-mkflat: WIDTH and HEIGHT must be in 1..65535\n");
        return 2;
    }
    uint8_t *bytes = NULL;
    size_t size = 0;
    int err = wai_read_file(argv[1], (size_t)512 << 20, &bytes, &size);
    if (err < 0) return fail(argv[1], err);
    WaiModel *m = NULL;
    err = wai_model_parse(&m, bytes, size, NULL, 0);
    free(bytes);
    if (err < 0) return fail(argv[1], err);

    WaiDsp dsp;
    WaiGeometry g;
    WaiBuf b;
    wai_buf_init(&b);
    int32_t *z = NULL, *zh = NULL, *y = NULL, *mean = NULL;
    uint8_t *idx = NULL, *payload = NULL;
    size_t psize = 0;
    int rc = 1;
    if ((err = wai_dsp_init(&dsp, WAI_KERNELS_AUTO)) < 0 || (err = wai_dsp_set_threads(&dsp, 0)) < 0) {
        fail("kernels", err);
        goto end;
    }
    if ((err = wai_geometry(m, (uint32_t)w, (uint32_t)h, &g)) < 0) {
        fail("picture size", err);
        goto end;
    }
    const size_t zplane = (size_t)g.z.h * g.z.w, nz = (size_t)g.z.c * zplane;
    const size_t ny = (size_t)g.y.c * g.y.h * g.y.w;
    z = malloc(nz * sizeof(*z));
    zh = malloc(nz * sizeof(*zh));
    y = calloc(ny, sizeof(*y));
    mean = malloc(ny * sizeof(*mean));
    idx = malloc(ny);
    if (!z || !zh || !y || !mean || !idx) {
        fail("latents", WAI_ERR_NOMEM);
        goto end;
    }
    for (size_t i = 0; i < nz; i++) {
        const WaiTable *t = &m->z_tables[i / zplane];
        z[i] = t->offset + (int32_t)(t->length / 2);
    }
    wai_z_hat(m, &g, z, zh);
    if ((err = wai_hyper(m, &dsp, &g, zh, idx, mean)) < 0 ||
        (err = wai_payload_encode(m, &g, -1, z, y, idx, &payload, &psize)) < 0) {
        fail("payload", err);
        goto end;
    }
    WaiSequenceInfo info;
    memset(&info, 0, sizeof(info));
    info.width = info.disp_w = (uint32_t)w;
    info.height = info.disp_h = (uint32_t)h;
    info.fps_num = 1;
    info.fps_den = 1;
    info.frame_count = 1;
    info.colour_primaries = 1;
    info.transfer = 13;
    info.full_range = 1;
    info.version_major = 1;
    memcpy(info.model_sha256, m->sha256, 32);
    if ((err = wai_seqhdr_write(&b, &info, NULL, 0)) < 0 || (err = wai_frame_write(&b, 0, payload, psize)) < 0 ||
        (err = b.err) < 0) {
        fail("stream", err);
        goto end;
    }
    FILE *f = fopen(argv[4], "wb");
    if (!f || fwrite(b.data, 1, b.size, f) != b.size || fclose(f)) {
        fprintf(stderr, "wai-mkflat: cannot write %s\n", argv[4]);
        goto end;
    }
    rc = 0;
end:
    free(z); free(zh); free(y); free(mean); free(idx); free(payload);
    wai_buf_free(&b);
    wai_model_free(m);
    return rc;
}
