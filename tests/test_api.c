/* Public API behaviour: error strings, settings, kernel names, decoder lifetime, the streaming
 * state machine (garbage, limits, model lookup, EOS), and, when the tiny model is available,
 * full decodes through the decoder compared with direct payload decodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "payload.h"
#include "stream.h"
#include "testutil.h"

/* ---- without a model ---- */

static const int all_codes[] = {
    WAI_OK, WAI_ERR_AGAIN, WAI_ERR_INVALID_ARG, WAI_ERR_NOMEM, WAI_ERR_BITSTREAM, WAI_ERR_TRUNCATED,
    WAI_ERR_CRC, WAI_ERR_UNSUPPORTED, WAI_ERR_MODEL_NOT_FOUND, WAI_ERR_MODEL_INVALID,
    WAI_ERR_LIMIT, WAI_ERR_IO, WAI_ERR_NO_DEVICE, WAI_ERR_INTERNAL,
};
#define N_CODES (int)(sizeof(all_codes) / sizeof(all_codes[0]))

static void test_strings(void)
{
    const char *unknown = wai_strerror(-9999);
    CHECK(unknown && !strcmp(unknown, "unknown error"));
    CHECK(!strcmp(wai_strerror(1), "unknown error"));
    for (int i = 0; i < N_CODES; i++) {
        const char *s = wai_strerror(all_codes[i]);
        CHECK(s && s[0]);
        CHECK(strcmp(s, unknown));
        for (int j = 0; j < i; j++) CHECK(strcmp(s, wai_strerror(all_codes[j])));
    }
    CHECK_EQ(wai_version(), (WAI_VERSION_MAJOR << 16) | (WAI_VERSION_MINOR << 8) | WAI_VERSION_PATCH);
    CHECK(!strcmp(wai_version_string(), WAI_VERSION_STRING));
}

static void test_defaults(void)
{
    WaiSettings s;
    memset(&s, 0x5A, sizeof(s));
    wai_default_settings(&s);
    CHECK_EQ(s.max_width, 16384);
    CHECK_EQ(s.max_height, 16384);
    CHECK(s.max_memory == ((uint64_t)SIZE_MAX / 2 < (UINT64_C(4) << 30) ? (uint64_t)SIZE_MAX / 2
                                                                  : UINT64_C(4) << 30));
    CHECK(s.model_path == NULL);
    CHECK_EQ(s.allow_embedded_model, 1);
    CHECK_EQ(s.kernels, WAI_KERNELS_AUTO);
    CHECK_EQ(s.threads, 0);
    CHECK_EQ(s.device, WAI_DEVICE_CPU);
    CHECK_EQ(s.device_index, 0);
    CHECK(s.log_callback == NULL);
    CHECK(s.log_opaque == NULL);
    int zero = 1;
    for (size_t i = 0; i < sizeof(s.reserved); i++) zero &= s.reserved[i] == 0;
    CHECK(zero);
}

static void test_kernel_names(void)
{
    static const char *names[] = { "auto", "reference", "c", "avx2", "avx512", "neon",
                                   "avx512vnni", "simd128", "avx512amx" };
    for (int k = 0; k < 9; k++) {
        WaiKernels out = (WaiKernels)99;
        CHECK_EQ(wai_kernels_from_name(names[k], &out), 0);
        CHECK_EQ(out, k);
        CHECK(!strcmp(wai_kernels_name((WaiKernels)k), names[k]));
    }
    WaiKernels out = WAI_KERNELS_C;
    CHECK_EQ(wai_kernels_from_name("AVX2", &out), 0);
    CHECK_EQ(out, WAI_KERNELS_AVX2);
    CHECK_EQ(wai_kernels_from_name("avx", &out), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_kernels_from_name("", &out), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_kernels_from_name("neon2", &out), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_kernels_from_name(NULL, &out), WAI_ERR_INVALID_ARG);
    CHECK_EQ(out, WAI_KERNELS_AVX2);
    CHECK(!strcmp(wai_kernels_name((WaiKernels)99), "unknown"));
}

static void test_open_close(void)
{
    WaiDecoder *d = (WaiDecoder *)1;
    WaiSettings s;
    CHECK_EQ(wai_decoder_open(NULL, NULL), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_decoder_open(&d, NULL), 0);
    CHECK(d != NULL);
    CHECK(wai_decoder_last_error(d) != NULL);
    WaiSequenceInfo si;
    CHECK_EQ(wai_decoder_get_sequence_info(d, &si), WAI_ERR_AGAIN);
    WaiPicture pic;
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK_EQ(wai_send_eos(d), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK_EQ(wai_send_data(d, NULL, 0), 0);
    CHECK_EQ(wai_send_data(d, NULL, 5), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_get_picture(d, NULL), WAI_ERR_INVALID_ARG);
    uint8_t junk[8] = { 0 };
    CHECK_EQ(wai_decoder_add_model(d, junk, sizeof(junk)), WAI_ERR_MODEL_INVALID);
    CHECK(strlen(wai_decoder_last_error(d)) > 0);
    wai_decoder_close(&d);
    CHECK(d == NULL);
    wai_decoder_close(&d);
    wai_decoder_close(NULL);
    wai_picture_unref(NULL);
    CHECK(wai_decoder_last_error(NULL) != NULL);
    CHECK_EQ(wai_get_picture(NULL, &pic), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_send_data(NULL, junk, 1), WAI_ERR_INVALID_ARG);

    /* Vulkan: a device, or NO_DEVICE (built without Vulkan, no driver) */
    wai_default_settings(&s);
    s.device = WAI_DEVICE_VULKAN;
    int r = wai_decoder_open(&d, &s);
    CHECK(r == 0 || r == WAI_ERR_NO_DEVICE);
    CHECK(r == 0 ? d != NULL : d == NULL);
    wai_decoder_close(&d);
    s.device_index = 1000;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_NO_DEVICE);
    s.device_index = -1;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    wai_default_settings(&s);
    s.device = (WaiDevice)7;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    wai_default_settings(&s);
    s.max_width = 0;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    wai_default_settings(&s);
    s.threads = -1;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    wai_default_settings(&s);
    CHECK_EQ(s.stripe_rows, 0);
    s.stripe_rows = -1;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    s.stripe_rows = 1;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    wai_decoder_close(&d);

    /* WAI_KERNELS overrides AUTO only; a bad name is refused */
    wai_default_settings(&s);
    setenv("WAI_KERNELS", "bogus", 1);
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    s.kernels = WAI_KERNELS_REFERENCE;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    wai_decoder_close(&d);
    setenv("WAI_KERNELS", "reference", 1);
    s.kernels = WAI_KERNELS_AUTO;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    wai_decoder_close(&d);
    unsetenv("WAI_KERNELS");

    /* the model path string is copied */
    char path[32] = "/nonexistent-a";
    wai_default_settings(&s);
    s.model_path = path;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    memset(path, 'x', sizeof(path) - 1);
    wai_decoder_close(&d);
}

static WaiSequenceInfo info_64(void)
{
    WaiSequenceInfo in;
    memset(&in, 0, sizeof(in));
    in.version_major = 1;
    in.width = in.disp_w = 64;
    in.height = in.disp_h = 64;
    in.fps_num = 25;
    in.fps_den = 1;
    in.colour_primaries = 1;
    in.transfer = 13;
    in.full_range = 1;
    return in;
}

/* Drain a decoder: count results until AGAIN, bounded so a livelock fails the test. */
static int drain_count(WaiDecoder *d, int *pictures, int *errors, int bound)
{
    WaiPicture pic;
    int r, n = 0;
    while ((r = wai_get_picture(d, &pic)) != WAI_ERR_AGAIN) {
        if (++n > bound) return -1;
        if (r == 0) {
            (*pictures)++;
            wai_picture_unref(&pic);
        } else {
            (*errors)++;
        }
    }
    return 0;
}

static void test_garbage(void)
{
    uint64_t seed = 1234;
    WaiDecoder *d;
    CHECK_EQ(wai_decoder_open(&d, NULL), 0);
    int pics = 0, errs = 0;
    for (int round = 0; round < 50; round++) {
        uint8_t buf[997];
        size_t n = (size_t)tu_range(&seed, 1, sizeof(buf));
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)tu_rand(&seed);
        /* sprinkle start codes with random sizes */
        if (n > 12 && round % 3 == 0) memcpy(buf + n / 2 - 6, round % 2 ? "WAIF" : "WAIS", 4);
        CHECK(wai_send_data(d, buf, n) <= 0);
        CHECK_EQ(drain_count(d, &pics, &errs, 10000), 0);
    }
    wai_send_eos(d);
    CHECK_EQ(drain_count(d, &pics, &errs, 10000), 0);
    CHECK_EQ(pics, 0);
    CHECK(errs >= 1);
    WaiPicture pic;
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    wai_decoder_close(&d);
}

/* A header naming an unknown model, then two frames (payloads are junk: never decoded). */
static void unknown_model_stream(WaiBuf *b, uint32_t width)
{
    WaiSequenceInfo in = info_64();
    in.width = in.disp_w = width;
    for (int i = 0; i < 32; i++) in.model_sha256[i] = (uint8_t)(0x3F + 11 * i);
    uint8_t payload[40];
    memset(payload, 0x11, sizeof(payload));
    wai_buf_init(b);
    wai_seqhdr_write(b, &in, NULL, 0);
    wai_frame_write(b, 0, payload, sizeof(payload));
    wai_frame_write(b, 1, payload, sizeof(payload));
}

static void test_header_errors(void)
{
    WaiSettings s;
    wai_default_settings(&s);
    s.model_path = "/nonexistent-wai-models-a:/nonexistent-wai-models-b";
    WaiDecoder *d;
    WaiBuf b;
    WaiPicture pic;
    WaiSequenceInfo si;

    /* model not found: reported by send_data, with the hash in the message */
    unknown_model_stream(&b, 64);
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_MODEL_NOT_FOUND);
    CHECK(strstr(wai_decoder_last_error(d), "3f4a55") != NULL);
    CHECK(strstr(wai_decoder_last_error(d), "/nonexistent-wai-models-b") != NULL);
    CHECK_EQ(wai_decoder_get_sequence_info(d, &si), WAI_ERR_AGAIN);
    /* each frame then fails with the header's error, and is dropped */
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_MODEL_NOT_FOUND);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_MODEL_NOT_FOUND);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK(pic.data == NULL);
    wai_decoder_close(&d);

    /* the same in 1-byte pieces: the error comes with the header's last byte */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    int bad = 0;
    for (size_t i = 0; i < b.size; i++) {
        int r = wai_send_data(d, b.data + i, 1);
        if (i == 95) CHECK_EQ(r, WAI_ERR_MODEL_NOT_FOUND);
        else if (r) bad++;
    }
    CHECK_EQ(bad, 0);
    wai_decoder_close(&d);
    wai_buf_free(&b);

    /* width beyond max_width: limit, before any model lookup */
    unknown_model_stream(&b, 65);
    s.max_width = 64;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_LIMIT);
    CHECK(strstr(wai_decoder_last_error(d), "65x64") != NULL);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_LIMIT);
    wai_decoder_close(&d);
    wai_buf_free(&b);
    s.max_width = 16384;

    /* height beyond max_height */
    unknown_model_stream(&b, 64);
    s.max_height = 63;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_LIMIT);
    wai_decoder_close(&d);
    s.max_height = 16384;

    /* a header with a broken CRC */
    b.data[30] ^= 1;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_CRC);
    /* the frames then have no header */
    int pics = 0, errs = 0;
    CHECK_EQ(drain_count(d, &pics, &errs, 100), 0);
    CHECK_EQ(pics, 0);
    CHECK_EQ(errs, 2);
    wai_decoder_close(&d);
    b.data[30] ^= 1;

    /* an unsupported header (version 2) */
    b.data[4] = 2;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_UNSUPPORTED);
    wai_decoder_close(&d);
    b.data[4] = 1;

    /* frames before any header */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data + 96, b.size - 96), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM);
    CHECK(strstr(wai_decoder_last_error(d), "before any sequence header") != NULL);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    wai_decoder_close(&d);
    wai_buf_free(&b);
}

static void test_eos_and_limits(void)
{
    WaiSettings s;
    wai_default_settings(&s);
    s.model_path = "/nonexistent-wai-models";
    WaiDecoder *d;
    WaiBuf b;
    WaiPicture pic;
    unknown_model_stream(&b, 64);

    /* a partial frame at EOS: TRUNCATED once, then AGAIN */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, 96), WAI_ERR_MODEL_NOT_FOUND);
    CHECK_EQ(wai_send_data(d, b.data + 96, 30), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK_EQ(wai_send_eos(d), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_TRUNCATED);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    /* a partial start code at EOS too */
    CHECK_EQ(wai_send_data(d, (const uint8_t *)"WA", 2), 0);
    CHECK_EQ(wai_send_eos(d), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_TRUNCATED);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    wai_decoder_close(&d);

    /* flush drops a partial unit; the next complete frame is processed */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data + 96, 30), 0);
    wai_decoder_flush(d);
    CHECK_EQ(wai_send_data(d, b.data + 96, 60), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM);   /* a frame, no header */
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    wai_send_eos(d);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);       /* nothing left */
    wai_decoder_close(&d);

    /* garbage then a unit: one BITSTREAM error, then the unit */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, (const uint8_t *)"xxxxxxxxxxxxxxxxxxxxxxxxxWAI", 28), 0);
    CHECK_EQ(wai_send_data(d, b.data + 96, 60), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM);
    CHECK(strstr(wai_decoder_last_error(d), "offset 0") != NULL);
    CHECK(strstr(wai_decoder_last_error(d), "not a WAI stream") != NULL);   /* (the first bytes) */
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM);   /* the frame: no header */
    CHECK(strstr(wai_decoder_last_error(d), "offset 28") != NULL);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    wai_decoder_close(&d);

    /* a frame unit beyond the unit limit: LIMIT, then resync */
    s.max_memory = 1 << 20;   /* buffer limit 4 MiB, unit limit 2 MiB */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    uint8_t big[16] = { 'W', 'A', 'I', 'F' };
    wai_wr32(big + 4, 3u << 20);
    CHECK_EQ(wai_send_data(d, big, sizeof(big)), 0);
    CHECK_EQ(wai_send_data(d, b.data + 96, 60), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_LIMIT);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM);   /* the real frame, no header */
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    /* the buffer is bounded (4 MiB here) and one call may send half of it: 3 MiB at once is
     * refused for good (LIMIT), 2 MiB twice fills it, a third 2 MiB is AGAIN with nothing
     * taken, and fits once the pictures are fetched */
    size_t n3 = 3u << 20, n2 = 2u << 20;
    uint8_t *zeros = calloc(n3, 1);
    CHECK_EQ(wai_send_data(d, zeros, n3), WAI_ERR_LIMIT);
    CHECK(strstr(wai_decoder_last_error(d), "at most 2097152 bytes") != NULL);
    CHECK_EQ(wai_send_data(d, zeros, n2), 0);
    CHECK_EQ(wai_send_data(d, zeros, n2), 0);
    CHECK_EQ(wai_send_data(d, zeros, 1), WAI_ERR_AGAIN);    /* full: fetch first */
    CHECK_EQ(wai_send_data(d, zeros, n2), WAI_ERR_AGAIN);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM); /* 4 MiB of zeros: one resync */
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK_EQ(wai_send_data(d, zeros, n2), 0);
    CHECK_EQ(wai_send_data(d, zeros, n2), 0);
    free(zeros);
    wai_decoder_close(&d);
    wai_buf_free(&b);
}

/* ---- the log callback ---- */

typedef struct LogSink {
    int n;
    int level;
    char last[512];
} LogSink;

static void log_sink(void *opaque, int level, const char *msg)
{
    LogSink *ls = opaque;
    ls->n++;
    ls->level = level;
    snprintf(ls->last, sizeof(ls->last), "%s", msg);
}

static void test_log_callback(void)
{
    WaiSettings s;
    LogSink ls = { 0 };
    WaiDecoder *d = NULL;
    wai_default_settings(&s);
    s.log_callback = log_sink;
    s.log_opaque = &ls;

    /* a failed open has no decoder to ask: the callback gets the reason */
    s.threads = -1;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    CHECK(d == NULL);
    CHECK_EQ(ls.n, 1);
    CHECK_EQ(ls.level, WAI_LOG_ERROR);
    CHECK(strstr(ls.last, "threads -1") != NULL);
    s.threads = 0;
    setenv("WAI_KERNELS", "bogus", 1);
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    unsetenv("WAI_KERNELS");
    CHECK_EQ(ls.n, 2);
    CHECK(strstr(ls.last, "\"bogus\"") != NULL);

    /* each error of a decoder: the same text wai_decoder_last_error returns; AGAIN is silent */
    s.model_path = "/nonexistent-wai-models";
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(ls.n, 2);
    WaiPicture pic;
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_AGAIN);
    CHECK_EQ(ls.n, 2);
    CHECK_EQ(wai_send_data(d, (const uint8_t *)"xxxxxxxxxxxxxxxxxxxxxxxxxWAIF", 29), 0);
    CHECK_EQ(wai_get_picture(d, &pic), WAI_ERR_BITSTREAM);
    CHECK_EQ(ls.n, 3);
    CHECK(!strcmp(ls.last, wai_decoder_last_error(d)));
    wai_decoder_close(&d);

    /* without a callback nothing is called (and nothing crashes) */
    s.log_callback = NULL;
    s.threads = -1;
    CHECK_EQ(wai_decoder_open(&d, &s), WAI_ERR_INVALID_ARG);
    CHECK_EQ(ls.n, 3);
}

/* ---- with the tiny model ---- */

static uint8_t *load_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *size = p ? (size_t)n : 0;
    return p;
}

typedef struct Fixture {
    uint8_t *model_bytes;
    size_t model_size;
    uint8_t sha[32];
    WaiModel *m;
    WaiGeometry g;
    WaiDsp dsp;
    uint8_t *payload[3];
    size_t psize[3];
} Fixture;

static int make_payload(Fixture *fx, uint64_t seed, uint8_t **out, size_t *size)
{
    const WaiGeometry *g = &fx->g;
    size_t nz = (size_t)g->z.c * g->z.h * g->z.w, ny = (size_t)g->y.c * g->y.h * g->y.w;
    int32_t *z = malloc(nz * sizeof(*z)), *zh = malloc(nz * sizeof(*zh));
    int32_t *y = malloc(ny * sizeof(*y)), *mean = malloc(ny * sizeof(*mean));
    uint8_t *idx = malloc(ny);
    int r = WAI_ERR_NOMEM;
    if (z && zh && y && mean && idx) {
        for (size_t i = 0; i < nz; i++) z[i] = (int32_t)tu_range(&seed, -2, 2);
        for (size_t i = 0; i < ny; i++) y[i] = (int32_t)tu_range(&seed, -3, 3);
        wai_z_hat(fx->m, g, z, zh);
        r = wai_hyper(fx->m, &fx->dsp, g, zh, idx, mean);
        if (!r) r = wai_payload_encode(fx->m, g, -1, z, y, idx, out, size);
    }
    free(z);
    free(zh);
    free(y);
    free(mean);
    free(idx);
    return r;
}

static int fixture_init(Fixture *fx)
{
    memset(fx, 0, sizeof(*fx));
    const char *dir = getenv("WAI_MODEL_PATH");
    if (!dir) return 0;
    char path[4096];
    snprintf(path, sizeof(path), "%s/wai-tiny-n64m96.whm", dir);
    fx->model_bytes = load_file(path, &fx->model_size);
    if (!fx->model_bytes) return 0;
    wai_sha256(fx->model_bytes, fx->model_size, fx->sha);
    char msg[256] = "";
    int r = wai_model_parse(&fx->m, fx->model_bytes, fx->model_size, msg, sizeof(msg));
    CHECK_EQ(r, 0);
    if (r) {
        fprintf(stderr, "tiny model: %s\n", msg);
        return 0;
    }
    CHECK_EQ(wai_geometry(fx->m, 64, 64, &fx->g), 0);
    CHECK_EQ(wai_dsp_init(&fx->dsp, WAI_KERNELS_REFERENCE), 0);
    for (int i = 0; i < 3; i++) {
        r = make_payload(fx, 1000 + (uint64_t)i, &fx->payload[i], &fx->psize[i]);
        CHECK_EQ(r, 0);
        if (r) return 0;
    }
    return 1;
}

static void fixture_free(Fixture *fx)
{
    for (int i = 0; i < 3; i++) free(fx->payload[i]);
    if (fx->m) wai_model_free(fx->m);
    free(fx->model_bytes);
}

/* Window used by the decode tests: not the whole picture, to check cropping and stride. */
#define DX 3
#define DY 2
#define DW 58
#define DH 61

static WaiSequenceInfo fx_info(const Fixture *fx)
{
    WaiSequenceInfo in = info_64();
    in.disp_x = DX;
    in.disp_y = DY;
    in.disp_w = DW;
    in.disp_h = DH;
    in.frame_count = 3;
    in.fps_num = 30000;
    in.fps_den = 1001;
    memcpy(in.model_sha256, fx->sha, 32);
    return in;
}

static void fx_stream(const Fixture *fx, WaiBuf *b, int embed)
{
    WaiSequenceInfo in = fx_info(fx);
    wai_buf_init(b);
    wai_seqhdr_write(b, &in, embed ? fx->model_bytes : NULL, embed ? fx->model_size : 0);
    for (uint32_t i = 0; i < 3; i++) wai_frame_write(b, i, fx->payload[i], fx->psize[i]);
}

/* The expected picture of payload i: a direct payload decode. */
static uint8_t *fx_expected(const Fixture *fx, int i)
{
    uint8_t *rgb = malloc((size_t)DW * 3 * DH);
    int r = wai_payload_decode(fx->m, &fx->dsp, fx->payload[i], fx->psize[i], 64, 64, DX, DY, DW, DH,
                               rgb, DW * 3);
    CHECK_EQ(r, 0);
    return rgb;
}

static int same_picture(const WaiPicture *p, const uint8_t *rgb)
{
    if (p->width != DW || p->height != DH || p->stride < DW * 3) return 0;
    for (int y = 0; y < DH; y++)
        if (memcmp(p->data + y * p->stride, rgb + y * DW * 3, DW * 3)) return 0;
    return 1;
}

/* Decode a whole stream in `chunk`-byte pieces; pictures[i] receives frame i. */
static int decode_all(WaiDecoder *d, const WaiBuf *b, size_t chunk, WaiPicture *pics, int max)
{
    int n = 0, errors = 0;
    for (size_t off = 0; off < b->size; off += chunk) {
        size_t k = b->size - off < chunk ? b->size - off : chunk;
        if (wai_send_data(d, b->data + off, k)) errors++;
        WaiPicture p;
        int r;
        while ((r = wai_get_picture(d, &p)) != WAI_ERR_AGAIN) {
            if (r) errors++;
            else if (n < max) pics[n++] = p;
            else wai_picture_unref(&p);
        }
    }
    wai_send_eos(d);
    WaiPicture p;
    int r;
    while ((r = wai_get_picture(d, &p)) != WAI_ERR_AGAIN) {
        if (r) errors++;
        else if (n < max) pics[n++] = p;
        else wai_picture_unref(&p);
    }
    return errors ? -errors : n;
}

static void test_decode(Fixture *fx)
{
    uint8_t *exp[3];
    for (int i = 0; i < 3; i++) exp[i] = fx_expected(fx, i);
    CHECK(memcmp(exp[0], exp[1], (size_t)DW * 3 * DH));   /* different payloads differ */
    /* the registry scans every .whm in $WAI_MODEL_PATH: hide it, except where tested */
    char *saved = getenv("WAI_MODEL_PATH") ? strdup(getenv("WAI_MODEL_PATH")) : NULL;
    unsetenv("WAI_MODEL_PATH");
    WaiSettings s;
    wai_default_settings(&s);
    s.model_path = "/nonexistent-wai-models";
    s.allow_embedded_model = 0;
    WaiBuf b;
    fx_stream(fx, &b, 0);

    /* registered model, one piece and 1-byte pieces */
    WaiPicture one[3], bytes[3];
    WaiDecoder *d;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    CHECK_EQ(decode_all(d, &b, b.size, one, 3), 3);
    WaiSequenceInfo si;
    CHECK_EQ(wai_decoder_get_sequence_info(d, &si), 0);
    CHECK_EQ(si.disp_w, DW);
    CHECK_EQ(si.frame_count, 3);
    wai_decoder_close(&d);
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    CHECK_EQ(decode_all(d, &b, 1, bytes, 3), 3);
    wai_decoder_close(&d);
    for (int i = 0; i < 3; i++) {
        CHECK(same_picture(&one[i], exp[i]));    /* pictures outlive the decoder */
        CHECK(same_picture(&bytes[i], exp[i]));
        CHECK_EQ(one[i].frame_index, i);
        CHECK_EQ(one[i].pts_num, i * 1001);
        CHECK_EQ(one[i].pts_den, 30000);
        wai_picture_unref(&one[i]);
        wai_picture_unref(&bytes[i]);
        CHECK(one[i].data == NULL);
    }

    /* the same with 3 threads, with the reference kernels, and on Vulkan if there is a device */
    for (int variant = 0; variant < 3; variant++) {
        WaiSettings v = s;
        if (variant == 0) v.threads = 3;
        if (variant == 1) v.kernels = WAI_KERNELS_REFERENCE;
        if (variant == 2) v.device = WAI_DEVICE_VULKAN;
        int r = wai_decoder_open(&d, &v);
        if (variant == 2 && r == WAI_ERR_NO_DEVICE) {
            printf("test_api: no Vulkan device: Vulkan decode skipped\n");
            continue;
        }
        CHECK_EQ(r, 0);
        if (r) continue;
        CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
        CHECK_EQ(decode_all(d, &b, 3000, one, 3), 3);
        wai_decoder_close(&d);
        for (int i = 0; i < 3; i++) {
            CHECK(same_picture(&one[i], exp[i]));
            wai_picture_unref(&one[i]);
        }
    }

    /* without the model: not found */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_MODEL_NOT_FOUND);
    wai_decoder_close(&d);
    /* found through $WAI_MODEL_PATH */
    if (saved) {
        setenv("WAI_MODEL_PATH", saved, 1);
        CHECK_EQ(wai_decoder_open(&d, &s), 0);
        CHECK_EQ(decode_all(d, &b, 65536, one, 3), 3);
        wai_decoder_close(&d);
        for (int i = 0; i < 3; i++) {
            CHECK(same_picture(&one[i], exp[i]));
            wai_picture_unref(&one[i]);
        }
        unsetenv("WAI_MODEL_PATH");
    }

    /* a corrupted second frame: an error; the first picture stays valid; the third decodes */
    size_t f1 = 96 + 20 + fx->psize[0];
    b.data[f1 + 16 + fx->psize[1] / 2] ^= 0x20;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), 0);
    WaiPicture p0, p2, px;
    CHECK_EQ(wai_get_picture(d, &p0), 0);
    CHECK_EQ(wai_get_picture(d, &px), WAI_ERR_CRC);
    CHECK(px.data == NULL);
    CHECK_EQ(wai_get_picture(d, &p2), 0);
    CHECK_EQ(p2.frame_index, 2);
    CHECK_EQ(wai_get_picture(d, &px), WAI_ERR_AGAIN);
    wai_send_eos(d);
    CHECK_EQ(wai_get_picture(d, &px), WAI_ERR_AGAIN);
    CHECK(same_picture(&p0, exp[0]));
    CHECK(same_picture(&p2, exp[2]));
    wai_picture_unref(&p0);
    wai_picture_unref(&p2);
    wai_decoder_close(&d);
    b.data[f1 + 16 + fx->psize[1] / 2] ^= 0x20;

    /* a truncated stream: two pictures, then TRUNCATED at EOS */
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size - 3), 0);
    int pics = 0, errs = 0;
    CHECK_EQ(drain_count(d, &pics, &errs, 10), 0);
    CHECK_EQ(pics, 2);
    CHECK_EQ(errs, 0);
    wai_send_eos(d);
    CHECK_EQ(wai_get_picture(d, &px), WAI_ERR_TRUNCATED);
    CHECK_EQ(wai_get_picture(d, &px), WAI_ERR_AGAIN);
    wai_decoder_close(&d);

    /* the header repeated mid-stream (identical) is ignored; a changed one takes effect */
    WaiBuf r;
    wai_buf_init(&r);
    wai_buf_put(&r, b.data, b.size);
    wai_buf_put(&r, b.data, 96);
    WaiSequenceInfo in2 = fx_info(fx);
    in2.disp_x = 0;
    in2.disp_w = 64;
    wai_seqhdr_write(&r, &in2, NULL, 0);
    wai_frame_write(&r, 9, fx->payload[0], fx->psize[0]);
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    WaiPicture four[4];
    CHECK_EQ(decode_all(d, &r, 1000, four, 4), 4);
    CHECK_EQ(wai_decoder_get_sequence_info(d, &si), 0);
    CHECK_EQ(si.disp_w, 64);
    wai_decoder_close(&d);
    CHECK(same_picture(&four[2], exp[2]));
    CHECK_EQ(four[3].width, 64);
    CHECK_EQ(four[3].frame_index, 9);
    CHECK_EQ(four[3].pts_num, 9 * 1001);
    /* the same picture, uncropped horizontally */
    int rows_ok = 1;
    for (int y = 0; y < DH; y++)
        rows_ok &= !memcmp(four[3].data + y * four[3].stride + DX * 3, exp[0] + y * DW * 3, DW * 3);
    CHECK(rows_ok);
    for (int i = 0; i < 4; i++) wai_picture_unref(&four[i]);
    wai_buf_free(&r);

    /* memory budget: one byte short of the estimate (the CPU kernels in 5-row stripes over the
     * whole 64x64 display) is refused, the estimate is enough */
    WaiDsp est;
    size_t work = 0;
    wai_dsp_init_ref(&est);
    est.stripe_rows = s.stripe_rows = 5;
    CHECK_EQ(wai_decode_work(fx->m, &est, &fx->g, 0, 64, &work), 0);
    uint64_t need = work + fx->m->mem_size;
    s.max_memory = need - 1;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_LIMIT);
    CHECK_EQ(wai_get_picture(d, &px), WAI_ERR_LIMIT);
    wai_decoder_close(&d);
    s.max_memory = need;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    CHECK_EQ(decode_all(d, &b, 4096, one, 3), 3);
    for (int i = 0; i < 3; i++) wai_picture_unref(&one[i]);
    wai_decoder_close(&d);
    s.max_memory = 1000;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_decoder_add_model(d, fx->model_bytes, fx->model_size), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_LIMIT);
    wai_decoder_close(&d);
    wai_default_settings(&s);
    s.model_path = "/nonexistent-wai-models";
    wai_buf_free(&b);

    /* embedded model */
    fx_stream(fx, &b, 1);
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(decode_all(d, &b, 777, one, 3), 3);
    wai_decoder_close(&d);
    for (int i = 0; i < 3; i++) {
        CHECK(same_picture(&one[i], exp[i]));
        wai_picture_unref(&one[i]);
    }
    /* ... not used when embedded models are disallowed */
    s.allow_embedded_model = 0;
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_MODEL_NOT_FOUND);
    wai_decoder_close(&d);
    s.allow_embedded_model = 1;
    /* ... and an embedded model whose hash differs from the header's is invalid */
    b.data[52] ^= 1;
    wai_wr32(b.data + 92 + fx->model_size, wai_crc32(b.data, 92 + fx->model_size));
    CHECK_EQ(wai_decoder_open(&d, &s), 0);
    CHECK_EQ(wai_send_data(d, b.data, b.size), WAI_ERR_MODEL_INVALID);
    wai_decoder_close(&d);
    wai_buf_free(&b);

    /* a model directory holding <sha>.whm */
    char dir[] = "/tmp/wai-test-api-XXXXXX";
    if (mkdtemp(dir)) {
        char hex[65], path[256];
        wai_sha256_hex(fx->sha, hex);
        snprintf(path, sizeof(path), "%s/%s.whm", dir, hex);
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        if (f) {
            fwrite(fx->model_bytes, 1, fx->model_size, f);
            fclose(f);
        }
        fx_stream(fx, &b, 0);
        char paths[600];
        snprintf(paths, sizeof(paths), "/nonexistent-wai-models:%s", dir);
        s.model_path = paths;
        CHECK_EQ(wai_decoder_open(&d, &s), 0);
        CHECK_EQ(decode_all(d, &b, 5000, one, 3), 3);
        wai_decoder_close(&d);
        for (int i = 0; i < 3; i++) {
            CHECK(same_picture(&one[i], exp[i]));
            wai_picture_unref(&one[i]);
        }
        wai_buf_free(&b);
        remove(path);
        rmdir(dir);
    }
    if (saved) {
        setenv("WAI_MODEL_PATH", saved, 1);
        free(saved);
    }
    for (int i = 0; i < 3; i++) free(exp[i]);
}

int main(void)
{
    test_strings();
    test_defaults();
    test_kernel_names();
    test_open_close();
    test_garbage();
    test_header_errors();
    test_eos_and_limits();
    test_log_callback();
    Fixture fx;
    if (fixture_init(&fx)) test_decode(&fx);
    else printf("test_api: tiny model not available: full decode tests skipped\n");
    fixture_free(&fx);
    return tu_finish("test_api");
}
