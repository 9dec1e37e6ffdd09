/* The encoder's .ana loader (float g_a and h_a weights; libwai-core/src/encoder.c) through
 * wai_encoder_open(), and, when the file loads, one small picture encoded with those weights.
 * The model pair is the micro model (wai-micro-n8m8.whm, found in $WAI_MODEL_PATH) and the
 * input as its .ana file (passed as /proc/self/fd/N of a memfd). For half the inputs the
 * header's file size, N and M, model SHA-256 and the CRC are fixed up so the layer records
 * are reached. Seeds: tests/fuzz/mkana.py (a small .ana for the micro model, binary32 and binary16
 * conv weights). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <wai/encoder.h>
#include <wai/wai.h>

#include "common.h"
#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char whm_path[4096];
static uint8_t whm_sha[32];
static uint32_t whm_n, whm_m;

static int init(void)
{
    static int state;   /* 0 not yet, 1 ok, -1 failed */
    if (state) return state;
    state = -1;
    const char *mp = getenv("WAI_MODEL_PATH");
    if (!mp) { fprintf(stderr, "fuzz_ana: set WAI_MODEL_PATH (wai-micro-n8m8.whm)\n"); abort(); }
    char dirs[4096];
    snprintf(dirs, sizeof(dirs), "%s", mp);
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(whm_path, sizeof(whm_path), "%s/wai-micro-n8m8.whm", d);
        uint8_t *buf; size_t n;
        if (wai_read_file(whm_path, 64u << 20, &buf, &n) < 0) continue;
        WaiModel *m = NULL;
        char msg[256];
        if (wai_model_parse(&m, buf, n, msg, sizeof(msg)) == 0) {
            memcpy(whm_sha, m->sha256, 32);
            whm_n = m->n_z;
            whm_m = m->n_y;
            wai_model_free(m);
            state = 1;
        }
        free(buf);
        if (state == 1) return 1;
    }
    fprintf(stderr, "fuzz_ana: no wai-micro-n8m8.whm in WAI_MODEL_PATH\n");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init();
    if (size > (8u << 20)) return 0;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (size >= 132 && (data[size / 2] & 1)) {
        wai_wr32(copy + 8, (uint32_t)size);
        wai_wr32(copy + 80, whm_n);
        wai_wr32(copy + 84, whm_m);
        memcpy(copy + 96, whm_sha, 32);
        wai_wr32(copy + size - 4, wai_crc32(copy, size - 4));
    }
    int fd = memfd_create("fuzz.ana", 0);
    if (fd < 0) { free(copy); return 0; }
    if (write(fd, copy, size) != (ssize_t)size) { close(fd); free(copy); return 0; }
    free(copy);
    char ana[64];
    snprintf(ana, sizeof(ana), "/proc/self/fd/%d", fd);
    WaiEncoderSettings s;
    wai_encoder_default_settings(&s);
    s.model_file = whm_path;
    s.analysis_file = ana;
    s.threads = 1;
    WaiEncoder *e = NULL;
    if (wai_encoder_open(&e, &s) == 0) {
        uint8_t rgb[24 * 16 * 3];
        for (size_t i = 0; i < sizeof(rgb); i++) rgb[i] = (uint8_t)(i * 7);
        uint8_t *unit = NULL;
        size_t n = 0;
        if (wai_encode_picture_unit(e, rgb, 24 * 3, 24, 16, &unit, &n) == 0) free(unit);
        wai_encoder_close(&e);
    }
    close(fd);
    return 0;
}
