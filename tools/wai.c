/* wai: encode, decode, inspect and verify WAI streams. Uses only the public libwai API (plus
 * libpng for PNG input and output and nettle for the conformance hash of spec section 8).
 *
 * Exit codes: 0 success; 1 invalid or corrupt input, or a verify mismatch; 2 usage error;
 * 3 I/O error or internal failure. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <nettle/sha2.h>
#include <png.h>

#include "pngread.h"

#include <wai/encoder.h>
#include <wai/wai.h>

#define EXIT_INPUT 1
#define EXIT_USAGE 2
#define EXIT_SYSTEM 3
#define CHUNK 65536
#define WAI_STR_(x) #x
#define WAI_STR(x) WAI_STR_(x)   /* a macro's value in a string literal (the help text) */
#define INFO_MAX_UNIT ((size_t)1 << 30)

static void errmsg(const char *file, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void errmsg(const char *file, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "wai: ");
    if (file) fprintf(stderr, "%s: ", file);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Exit code for a library error code. */
static int exit_code(int err)
{
    switch (err) {
    case 0: return 0;
    case WAI_ERR_BITSTREAM: case WAI_ERR_TRUNCATED: case WAI_ERR_CRC: case WAI_ERR_UNSUPPORTED:
    case WAI_ERR_MODEL_NOT_FOUND: case WAI_ERR_MODEL_INVALID: case WAI_ERR_LIMIT:
        return EXIT_INPUT;
    case WAI_ERR_INVALID_ARG: return EXIT_USAGE;
    default: return EXIT_SYSTEM;
    }
}

static void hex32(const uint8_t sha[32], char out[65])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hx[sha[i] >> 4];
        out[2 * i + 1] = hx[sha[i] & 15];
    }
    out[64] = 0;
}

/* ---- options shared by decode, info and verify ---- */

static const char common_help[] =
    "  --kernels NAME      auto (default), reference, c, avx2, avx512, avx512vnni,\n"
    "                      avx512amx, neon or simd128 (any set gives the same pictures)\n"
    "  --threads N         worker threads, 0 = automatic (default)\n"
    "  --stripe-rows N     output rows the synthesis computes at a time, 0 = automatic\n"
    "                      (default; memory bounded); any N gives the same pictures\n"
    "  --model-path DIRS   ':'-separated model directories, searched first\n"
    "  --max-memory BYTES  memory budget (suffixes k, M, G: powers of 1024; default 4G)\n"
    "  --device DEV        cpu (default), vulkan (the first device) or vulkan:N\n";

/* Value of --name=VALUE or --name VALUE at argv[*i]; NULL if argv[*i] is not --name. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n)) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n]) return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

/* A finite number > 0 (locale-independent enough: digits and '.'). */
static int parse_pos_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || v != v || v == INFINITY) return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out, int suffixes)
{
    char *end;
    if (!*s || *s == '-') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    unsigned shift = 0;
    if (suffixes && *end) {
        switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return -1;
        }
        end++;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift))) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* 1: consumed a common option; 0: not one; -1: usage error (message printed). */
static int common_option(int argc, char **argv, int *i, WaiSettings *s)
{
    int missing = 0;
    const char *v;
    uint64_t u;
    if ((v = opt_value(argc, argv, i, "--kernels", &missing))) {
        if (wai_kernels_from_name(v, &s->kernels) < 0) {
            errmsg(NULL, "unknown kernel set '%s' (auto, reference, c, avx2, avx512, avx512vnni, avx512amx, neon, simd128)", v);
            return -1;
        }
        return 1;
    }
    if ((v = opt_value(argc, argv, i, "--threads", &missing))) {
        if (parse_u64(v, &u, 0) || u > 1024) {
            errmsg(NULL, "--threads needs a number 0..1024, not '%s'", v);
            return -1;
        }
        s->threads = (int)u;
        return 1;
    }
    if ((v = opt_value(argc, argv, i, "--stripe-rows", &missing))) {
        if (parse_u64(v, &u, 0) || u > (1u << 24)) {
            errmsg(NULL, "--stripe-rows needs a number 0..16777216, not '%s'", v);
            return -1;
        }
        s->stripe_rows = (int)u;
        return 1;
    }
    if ((v = opt_value(argc, argv, i, "--model-path", &missing))) {
        s->model_path = v;
        return 1;
    }
    if ((v = opt_value(argc, argv, i, "--max-memory", &missing))) {
        if (parse_u64(v, &u, 1) || !u) {
            errmsg(NULL, "--max-memory needs a positive byte count, not '%s'", v);
            return -1;
        }
        s->max_memory = u;
        return 1;
    }
    if ((v = opt_value(argc, argv, i, "--device", &missing))) {
        if (!strcmp(v, "cpu")) s->device = WAI_DEVICE_CPU;
        else if (!strcmp(v, "vulkan")) s->device = WAI_DEVICE_VULKAN;
        else if (!strncmp(v, "vulkan:", 7) && v[7] >= '0' && v[7] <= '9' && strlen(v) < 11 &&
                 strspn(v + 7, "0123456789") == strlen(v + 7)) {
            s->device = WAI_DEVICE_VULKAN;
            s->device_index = atoi(v + 7);
        } else {
            errmsg(NULL, "unknown device '%s' (cpu, vulkan, vulkan:N)", v);
            return -1;
        }
        return 1;
    }
    if (missing) {
        errmsg(NULL, "%s needs a value", argv[*i]);
        return -1;
    }
    return 0;
}

/* ---- decoding a file through the streaming API ---- */

typedef int (*PictureFn)(void *ctx, WaiDecoder *d, const WaiPicture *pic);

typedef struct DecodeResult {
    int err;             /* first error (library code), 0 if none */
    char msg[600];       /* its message */
    unsigned frames;
    int sink_failed;     /* the callback failed; it printed why */
    int open_failed;     /* wai_decoder_open refused the settings */
} DecodeResult;

/* Exit code for a decode: settings the decoder refuses are a usage error, except a missing
 * device (the environment). */
static int result_exit_code(const DecodeResult *res)
{
    if (res->open_failed)
        return res->err == WAI_ERR_INVALID_ARG || res->err == WAI_ERR_UNSUPPORTED ? EXIT_USAGE : EXIT_SYSTEM;
    return exit_code(res->err);
}

static void note_error(DecodeResult *res, const char *file, int quiet, int err, const char *msg)
{
    if (!quiet) errmsg(file, "%s", msg);
    if (!res->err) {
        res->err = err;
        snprintf(res->msg, sizeof(res->msg), "%s", msg);
    }
}

/* Fetch every picture ready; returns 0, or -1 when the callback failed. */
static int drain(WaiDecoder *d, const char *file, int quiet, PictureFn fn, void *ctx,
                 DecodeResult *res)
{
    WaiPicture pic;
    int r;
    while ((r = wai_get_picture(d, &pic)) != WAI_ERR_AGAIN) {
        if (r < 0) {
            note_error(res, file, quiet, r, wai_decoder_last_error(d));
            continue;
        }
        res->frames++;
        int cb = fn ? fn(ctx, d, &pic) : 0;
        wai_picture_unref(&pic);
        if (cb < 0) {
            res->sink_failed = 1;
            return -1;
        }
    }
    return 0;
}

/* WaiSettings.log_callback that keeps the last message (opaque: a char[512]). */
static void capture_log(void *opaque, int level, const char *msg)
{
    (void)level;
    snprintf((char *)opaque, 512, "%s", msg);
}

/* Decode `file` ("-" = stdin) in CHUNK pieces. Errors are noted and decoding goes on (spec 2.4),
 * except that a stream whose first unit is a header that cannot be used, an I/O error or a
 * callback failure stops it. Where it stops does not depend on how the reads split the stream:
 * wai_send_data() returns the error of a header when, at that call, no header is in force and
 * the header completes at the read position (which call that is depends on the read size); the
 * same header met in wai_get_picture() is only noted. So an error of wai_send_data() is noted
 * and decoding goes on, unless nothing came before it (no picture, no error): then the header is
 * the stream's first unit, the same for every read size. */
static void decode_file(const char *file, const WaiSettings *s, int quiet, PictureFn fn,
                        void *ctx, DecodeResult *res)
{
    memset(res, 0, sizeof(*res));
    int use_stdin = !strcmp(file, "-");
    FILE *f = use_stdin ? stdin : fopen(file, "rb");
    if (!f) {
        snprintf(res->msg, sizeof(res->msg), "%s", strerror(errno));
        res->err = WAI_ERR_IO;
        if (!quiet) errmsg(file, "%s", res->msg);
        return;
    }
    WaiDecoder *d = NULL;
    WaiSettings so = *s;   /* the library says why an open fails through the log callback */
    char open_msg[512] = "";
    so.log_callback = capture_log;
    so.log_opaque = open_msg;
    int r = wai_decoder_open(&d, &so);
    if (r < 0) {
        snprintf(res->msg, sizeof(res->msg), "cannot create a decoder: %s",
                 open_msg[0] ? open_msg : wai_strerror(r));
        res->err = r;
        res->open_failed = 1;
        if (!quiet) errmsg(file, "%s", res->msg);
        if (!use_stdin) fclose(f);
        return;
    }
    static uint8_t buf[CHUNK];
    size_t n;
    uint64_t total = 0;
    int stop = 0;
    while (!stop && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
        total += n;
        /* pictures are fetched after every chunk, so the buffer never fills up (it holds at
         * most one partial unit): an error here is a header that cannot be used (the data is
         * taken all the same), or memory */
        r = wai_send_data(d, buf, n);
        if (r < 0) {
            int first_unit = !res->err && !res->frames;
            note_error(res, file, quiet, r, wai_decoder_last_error(d));
            if (first_unit || r == WAI_ERR_NOMEM || r == WAI_ERR_INVALID_ARG) {
                stop = 1;
                break;
            }
        }
        if (drain(d, file, quiet, fn, ctx, res)) stop = 1;
    }
    if (!stop && ferror(f)) {
        char m[300];
        snprintf(m, sizeof(m), "read error: %s", strerror(errno));
        note_error(res, file, quiet, WAI_ERR_IO, m);
        stop = 1;
    }
    if (!stop && !res->sink_failed) {
        wai_send_eos(d);
        drain(d, file, quiet, fn, ctx, res);
    }
    WaiSequenceInfo info;
    if (!res->err && !res->sink_failed && wai_decoder_get_sequence_info(d, &info) == WAI_ERR_AGAIN)
        note_error(res, file, quiet, WAI_ERR_BITSTREAM, total ? "invalid bitstream: no sequence header"
                   : "invalid bitstream: the stream is empty (no sequence header)");
    wai_decoder_close(&d);
    if (!use_stdin) fclose(f);
}

/* ---- outputs ---- */

static int write_png(const char *path, const uint8_t *data, ptrdiff_t stride, uint32_t w, uint32_t h)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        errmsg(path, "%s", strerror(errno));
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop pinfo = png ? png_create_info_struct(png) : NULL;
    if (!pinfo) {
        png_destroy_write_struct(&png, NULL);
        fclose(f);
        errmsg(path, "cannot create a PNG writer");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &pinfo);
        fclose(f);
        errmsg(path, "writing the PNG failed");
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, pinfo, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, pinfo);
    for (uint32_t y = 0; y < h; y++) png_write_row(png, data + (ptrdiff_t)y * stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &pinfo);
    if (fclose(f)) {
        errmsg(path, "%s", strerror(errno));
        return -1;
    }
    return 0;
}

/* A per-frame file pattern: exactly one %d or %u, optionally with a 0 flag and a width of up to
 * two digits (%03d), and any number of %%. Returns 1 if a pattern, 0 if no '%' at all, -1 if malformed. */
static int check_pattern(const char *p)
{
    int convs = 0, any = 0;
    for (; *p; p++) {
        if (*p != '%') continue;
        any = 1;
        p++;
        if (*p == '%') continue;
        if (*p == '0') p++;
        for (int k = 0; k < 2 && *p >= '0' && *p <= '9'; k++) p++;
        if (*p != 'd' && *p != 'u') return -1;
        convs++;
    }
    return !any ? 0 : convs == 1 ? 1 : -1;
}

static void format_pattern(char *out, size_t size, const char *pattern, unsigned n)
{
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
    /* validated by check_pattern: a single integer conversion */
    snprintf(out, size, pattern, n);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    if (a < b) return 0;
    for (size_t i = 0; i < b; i++) {
        char c = s[a - b + i];
        if (c >= 'A' && c <= 'Z') c = (char)(c + 'a' - 'A');
        if (c != suffix[i]) return 0;
    }
    return 1;
}

enum { OUT_NONE, OUT_PNG, OUT_PNG_PATTERN, OUT_RAW, OUT_Y4M };

typedef struct DecodeCtx {
    int kind;
    const char *out;
    FILE *raw;
    int hash;
    struct sha256_ctx sha;
    unsigned n;
    int64_t last_index;      /* OUT_PNG_PATTERN: the frame_index of the last file written */
    uint8_t *first;          /* OUT_PNG: the single picture, written at the end */
    ptrdiff_t first_stride;
    uint32_t first_w, first_h;
    int usage_error;
} DecodeCtx;

/* One frame as Y4M 4:4:4 planes: YCbCr BT.601 full range (JFIF) with 8-bit integer weights,
 * since Y4M has no RGB layout; the header is written before the first frame. */
static int write_y4m_frame(DecodeCtx *c, WaiDecoder *d, const WaiPicture *pic)
{
    if (!c->n) {
        WaiSequenceInfo info;
        if (wai_decoder_get_sequence_info(d, &info) < 0) return -1;
        fprintf(c->raw, "YUV4MPEG2 W%u H%u F%u:%u Ip A1:1 C444 XCOLORRANGE=FULL\n", pic->width,
                pic->height, info.fps_num, info.fps_den);
    }
    size_t n = (size_t)pic->width * pic->height;
    uint8_t *planes = malloc(n ? 3 * n : 1);
    if (!planes) {
        errmsg(c->out, "out of memory");
        return -1;
    }
    for (uint32_t y = 0; y < pic->height; y++)
        for (uint32_t x = 0; x < pic->width; x++) {
            const uint8_t *p = pic->data + (ptrdiff_t)y * pic->stride + 3 * x;
            int r = p[0], g = p[1], b = p[2];
            int yy = (77 * r + 150 * g + 29 * b + 128) >> 8;
            int cb = ((-43 * r - 85 * g + 128 * b + 128) >> 8) + 128;
            int cr = ((128 * r - 107 * g - 21 * b + 128) >> 8) + 128;
            size_t i = (size_t)y * pic->width + x;
            planes[i] = (uint8_t)yy;
            planes[n + i] = (uint8_t)(cb < 0 ? 0 : cb > 255 ? 255 : cb);
            planes[2 * n + i] = (uint8_t)(cr < 0 ? 0 : cr > 255 ? 255 : cr);
        }
    int ok = fputs("FRAME\n", c->raw) >= 0 && fwrite(planes, 1, 3 * n, c->raw) == 3 * n;
    free(planes);
    if (!ok) {
        errmsg(c->out, "write error: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static int on_decoded(void *opaque, WaiDecoder *d, const WaiPicture *pic)
{
    DecodeCtx *c = opaque;
    size_t row = (size_t)pic->width * 3;
    if (c->hash)
        for (uint32_t y = 0; y < pic->height; y++)
            sha256_update(&c->sha, row, pic->data + (ptrdiff_t)y * pic->stride);
    if (c->kind == OUT_Y4M) {
        if (write_y4m_frame(c, d, pic)) return -1;
    } else if (c->kind == OUT_RAW) {
        for (uint32_t y = 0; y < pic->height; y++) {
            if (fwrite(pic->data + (ptrdiff_t)y * pic->stride, 1, row, c->raw) != row) {
                errmsg(c->out, "write error: %s", strerror(errno));
                return -1;
            }
        }
    } else if (c->kind == OUT_PNG_PATTERN) {
        /* named by the frame's index in the stream: a frame lost to damage leaves a gap
         * instead of shifting the names of the frames after it */
        char name[4096];
        format_pattern(name, sizeof(name), c->out, pic->frame_index);
        if ((int64_t)pic->frame_index <= c->last_index)
            errmsg(c->out, "frame index %u after %" PRId64 " (out of sequence): %s may replace "
                   "an earlier frame's file", pic->frame_index, c->last_index, name);
        c->last_index = pic->frame_index;
        if (write_png(name, pic->data, pic->stride, pic->width, pic->height)) return -1;
    } else if (c->kind == OUT_PNG) {
        if (c->first) {
            errmsg(c->out, "the stream has more than one frame; use a pattern such as "
                   "out-%%03d.png or a .rgb output");
            c->usage_error = 1;
            return -1;
        }
        size_t bytes = row * pic->height;
        c->first = malloc(bytes ? bytes : 1);
        if (!c->first) {
            errmsg(c->out, "out of memory");
            return -1;
        }
        for (uint32_t y = 0; y < pic->height; y++)
            memcpy(c->first + y * row, pic->data + (ptrdiff_t)y * pic->stride, row);
        c->first_stride = (ptrdiff_t)row;
        c->first_w = pic->width;
        c->first_h = pic->height;
    }
    c->n++;
    return 0;
}

static void decode_usage(FILE *f)
{
    fprintf(f,
        "usage: wai decode IN.wai [-o OUT] [--sha256] [options]\n"
        "Decode a WAI stream (IN '-' reads stdin).\n"
        "  -o OUT              OUT.png: one frame as PNG; a pattern like out-%%03d.png: one PNG\n"
        "                      per frame, named by the frame's index in the stream (from 0; a\n"
        "                      frame lost to damage leaves a gap); OUT.rgb or '-': raw RGB24 of\n"
        "                      all frames concatenated ('-' is stdout); OUT.y4m: all frames as\n"
        "                      Y4M 4:4:4 (YCbCr BT.601 full range, converted from the RGB);\n"
        "                      a device or FIFO (e.g. /dev/null, to time a decode): raw RGB24\n"
        "  --sha256            print the SHA-256 of all decoded RGB bytes (spec section 8)\n"
        "%s"
        "  -h, --help          this help\n", common_help);
}

static int cmd_decode(int argc, char **argv)
{
    WaiSettings s;
    wai_default_settings(&s);
    const char *in = NULL;
    DecodeCtx c;
    memset(&c, 0, sizeof(c));
    c.last_index = -1;
    for (int i = 0; i < argc; i++) {
        int missing = 0;
        const char *v;
        int k = common_option(argc, argv, &i, &s);
        if (k < 0) return EXIT_USAGE;
        if (k) continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            decode_usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--sha256")) { c.hash = 1; continue; }
        if ((v = opt_value(argc, argv, &i, "-o", &missing)) ||
            (v = opt_value(argc, argv, &i, "--output", &missing))) {
            c.out = v;
            continue;
        }
        if (missing) {
            errmsg(NULL, "%s needs a value", argv[i]);
            return EXIT_USAGE;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            errmsg(NULL, "decode: unknown option '%s' (see wai decode --help)", argv[i]);
            return EXIT_USAGE;
        }
        if (in) {
            errmsg(NULL, "decode: one input file only (see wai decode --help)");
            return EXIT_USAGE;
        }
        in = argv[i];
    }
    if (!in || (!c.out && !c.hash)) {
        decode_usage(stderr);
        return EXIT_USAGE;
    }
    if (c.out) {
        int pat = check_pattern(c.out);
        struct stat st;
        if (!strcmp(c.out, "-")) c.kind = OUT_RAW;
        else if (!stat(c.out, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
            c.kind = OUT_RAW;   /* /dev/null, a FIFO, a terminal: the raw frames go there */
        else if (pat < 0) {
            errmsg(c.out, "bad file pattern: use exactly one %%d (e.g. out-%%03d.png)");
            return EXIT_USAGE;
        } else if (has_suffix(c.out, ".png")) c.kind = pat ? OUT_PNG_PATTERN : OUT_PNG;
        else if (has_suffix(c.out, ".rgb") && !pat) c.kind = OUT_RAW;
        else if (has_suffix(c.out, ".y4m") && !pat) c.kind = OUT_Y4M;
        else {
            errmsg(c.out, "unknown output type: use .png, a .png pattern, .rgb, .y4m or '-'");
            return EXIT_USAGE;
        }
        if (!strcmp(c.out, "-") && c.hash) {
            errmsg(NULL, "--sha256 and '-o -' both write to stdout; choose one");
            return EXIT_USAGE;
        }
    }
    if (c.hash) sha256_init(&c.sha);
    if (c.kind == OUT_RAW || c.kind == OUT_Y4M) {
        c.raw = strcmp(c.out, "-") ? fopen(c.out, "wb") : stdout;
        if (!c.raw) {
            errmsg(c.out, "%s", strerror(errno));
            return EXIT_SYSTEM;
        }
    }
    DecodeResult res;
    decode_file(in, &s, 0, on_decoded, &c, &res);
    int rc = res.sink_failed ? (c.usage_error ? EXIT_USAGE : EXIT_SYSTEM) : result_exit_code(&res);
    if (c.raw && c.raw != stdout && fclose(c.raw) && !rc) {
        errmsg(c.out, "%s", strerror(errno));
        rc = EXIT_SYSTEM;
    }
    if (c.raw == stdout && fflush(stdout) && !rc) rc = EXIT_SYSTEM;
    if (!rc && c.kind == OUT_PNG) {
        if (!c.first) {
            errmsg(in, "no frame decoded");
            rc = EXIT_INPUT;
        } else if (write_png(c.out, c.first, c.first_stride, c.first_w, c.first_h)) {
            rc = EXIT_SYSTEM;
        }
    }
    free(c.first);
    if (!rc && c.hash) {
        uint8_t sha[32];
        char hex[65];
        sha256_digest(&c.sha, sizeof(sha), sha);
        hex32(sha, hex);
        printf("%s\n", hex);
    }
    return rc;
}

/* ---- info ---- */

typedef struct Reader {
    FILE *f;
    uint8_t *buf;
    size_t pos, len, cap;   /* [pos, len) not yet parsed */
    uint64_t base;          /* file offset of buf[0] */
    int eof, err;
} Reader;

/* Read until at least `want` unparsed bytes are buffered or EOF. */
static int reader_fill(Reader *r, size_t want)
{
    while (!r->eof && r->len - r->pos < want) {
        if (r->pos) {
            memmove(r->buf, r->buf + r->pos, r->len - r->pos);
            r->len -= r->pos;
            r->base += r->pos;
            r->pos = 0;
        }
        size_t need = r->len + CHUNK;
        if (need > r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 4 * CHUNK;
            while (cap < need) cap *= 2;
            uint8_t *b = realloc(r->buf, cap);
            if (!b) return r->err = WAI_ERR_NOMEM;
            r->buf = b;
            r->cap = cap;
        }
        size_t n = fread(r->buf + r->len, 1, CHUNK, r->f);
        r->len += n;
        if (n < CHUNK) {
            if (ferror(r->f)) return r->err = WAI_ERR_IO;
            r->eof = 1;
        }
    }
    return 0;
}

static void print_seqhdr(const uint8_t *p, size_t size, uint64_t off, const WaiSettings *s)
{
    WaiSequenceInfo si;
    if (wai_parse_sequence_header(p, size, &si) < 0) {
        printf("sequence header at %" PRIu64 ": %zu bytes, CRC ok, fields invalid\n", off, size);
        return;
    }
    char hex[65];
    hex32(si.model_sha256, hex);
    printf("sequence header at %" PRIu64 ": %u bytes, CRC ok\n", off, si.unit_size);
    printf("  version        %u.%u\n", si.version_major, si.version_minor);
    printf("  coded size     %ux%u\n", si.width, si.height);
    printf("  display        %ux%u at (%u, %u)\n", si.disp_w, si.disp_h, si.disp_x, si.disp_y);
    printf("  frame rate     %u/%u\n", si.fps_num, si.fps_den);
    printf("  frame count    %u%s\n", si.frame_count, si.frame_count ? "" : " (unknown)");
    printf("  colour         primaries %u, transfer %u, matrix %u, full range %u\n",
           si.colour_primaries, si.transfer, si.matrix, si.full_range);
    printf("  model          %s\n", hex);
    if (si.model_size) printf("  model storage  embedded, %u bytes\n", si.model_size);
    else printf("  model storage  external\n");
    /* whether this decoder setup could use it: model found, limits */
    WaiDecoder *d = NULL;
    int r = wai_decoder_open(&d, s);
    if (r == 0) r = wai_send_data(d, p, size);
    printf("  decodable      %s%s%s\n", r ? "no (" : "yes", r ? (d ? wai_decoder_last_error(d) : wai_strerror(r)) : "",
           r ? ")" : "");
    wai_decoder_close(&d);
}

static void print_frame(const uint8_t *p, size_t size, uint64_t off, int64_t *last)
{
    uint32_t index = (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 | (uint32_t)p[11] << 24;
    printf("frame %u at %" PRIu64 ": %zu bytes, payload %zu, CRC ok", index, off, size, size - 20);
    const uint8_t *w = p + 16;
    if (size >= 36 && !memcmp(w, "WIH1", 4)) {
        uint32_t v[4];
        for (int k = 0; k < 4; k++)
            v[k] = (uint32_t)w[4 + 4 * k] | (uint32_t)w[5 + 4 * k] << 8 |
                   (uint32_t)w[6 + 4 * k] << 16 | (uint32_t)w[7 + 4 * k] << 24;
        printf(", %ux%u, z %u bytes, y %u bytes", v[0], v[1], v[2], v[3]);
    } else if (size >= 40 && !memcmp(w, "WIH2", 4)) {
        uint32_t v[5];
        for (int k = 0; k < 5; k++)
            v[k] = (uint32_t)w[4 + 4 * k] | (uint32_t)w[5 + 4 * k] << 8 |
                   (uint32_t)w[6 + 4 * k] << 16 | (uint32_t)w[7 + 4 * k] << 24;
        printf(", %ux%u, rate %u, z %u bytes, y %u bytes", v[0], v[1], v[2], v[3], v[4]);
    } else {
        printf(", payload is not WIH1 or WIH2");
    }
    if (*last + 1 != (int64_t)index) printf(" (index out of sequence after %" PRId64 ")", *last);
    printf("\n");
    *last = index;
}

static void info_usage(FILE *f)
{
    fprintf(f,
        "usage: wai info IN.wai [options]\n"
        "Print the sequence header and every unit (offset, size, CRC) of a stream. Exits 1 if\n"
        "the stream is damaged (bytes that are not a valid unit, truncation, no header first).\n"
        "The options set the decoder used to check whether the stream is decodable:\n"
        "%s"
        "  -h, --help          this help\n", common_help);
}

static void flush_skip(uint64_t *skip_at, uint64_t *skip_len, unsigned *damaged)
{
    if (!*skip_len) return;
    printf("damaged: %" PRIu64 " bytes at %" PRIu64 " are not a valid unit (skipped)\n",
           *skip_len, *skip_at);
    (*damaged)++;
    *skip_len = 0;
}

static int cmd_info(int argc, char **argv)
{
    WaiSettings s;
    wai_default_settings(&s);
    const char *in = NULL;
    for (int i = 0; i < argc; i++) {
        int k = common_option(argc, argv, &i, &s);
        if (k < 0) return EXIT_USAGE;
        if (k) continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            info_usage(stdout);
            return 0;
        }
        if ((argv[i][0] == '-' && argv[i][1]) || in) {
            errmsg(NULL, "info: unexpected argument '%s' (see wai info --help)", argv[i]);
            return EXIT_USAGE;
        }
        in = argv[i];
    }
    if (!in) {
        info_usage(stderr);
        return EXIT_USAGE;
    }
    Reader r;
    memset(&r, 0, sizeof(r));
    int use_stdin = !strcmp(in, "-");
    r.f = use_stdin ? stdin : fopen(in, "rb");
    if (!r.f) {
        errmsg(in, "%s", strerror(errno));
        return EXIT_SYSTEM;
    }
    unsigned frames = 0, headers = 0, damaged = 0, units = 0;
    uint64_t skip_at = 0, skip_len = 0, first_type = 0;
    int rc = 0, in_trunc = 0;
    int64_t last_index = -1;
    /* the first bytes, to tell "not WAI at all" from a damaged header */
    uint8_t head[4];
    size_t nhead = 0;
    if (!reader_fill(&r, sizeof(head))) {
        nhead = r.len < sizeof(head) ? r.len : sizeof(head);
        if (nhead) memcpy(head, r.buf, nhead);
    }
    for (;;) {
        WaiUnitInfo u;
        /* nothing read yet: no pointer arithmetic on the NULL buffer */
        int k = wai_find_unit(r.buf ? r.buf + r.pos : NULL, r.len - r.pos, INFO_MAX_UNIT, &u);
        if (u.offset) {
            if (!skip_len) skip_at = r.base + r.pos;
            if (!in_trunc) skip_len += u.offset;
            r.pos += u.offset;
        }
        if (k == 0) {
            in_trunc = 0;
            flush_skip(&skip_at, &skip_len, &damaged);
            const uint8_t *p = r.buf + r.pos;
            uint64_t off = r.base + r.pos;
            if (!units++) first_type = u.type;
            if (u.type == WAI_UNIT_SEQUENCE_HEADER) {
                headers++;
                print_seqhdr(p, u.size, off, &s);
            } else {
                print_frame(p, u.size, off, &last_index);
                frames++;
            }
            r.pos += u.size;
            continue;
        }
        size_t have = r.len - r.pos;
        if (r.eof) {
            if (have) {
                /* an incomplete candidate at EOF: report it, then look past its start code */
                flush_skip(&skip_at, &skip_len, &damaged);
                if (u.size) printf("truncated: unit at %" PRIu64 " needs %zu bytes, %zu left\n",
                                   r.base + r.pos, u.size, have);
                else printf("truncated: %zu bytes at %" PRIu64 " end inside a unit header\n",
                            have, r.base + r.pos);
                damaged++;
                r.pos += 1;
                in_trunc = 1;   /* the bytes that follow belong to it, unless a unit is found */
                continue;
            }
            break;
        }
        size_t want = u.size > have ? u.size : have + 1;
        if (reader_fill(&r, want)) {
            errmsg(in, "%s", r.err == WAI_ERR_IO ? strerror(errno) : "out of memory");
            rc = EXIT_SYSTEM;
            break;
        }
    }
    flush_skip(&skip_at, &skip_len, &damaged);
    if (!rc) {
        printf("summary: %u sequence header%s, %u frame%s, %u damaged region%s\n", headers,
               headers == 1 ? "" : "s", frames, frames == 1 ? "" : "s", damaged, damaged == 1 ? "" : "s");
        if (!headers || first_type != WAI_UNIT_SEQUENCE_HEADER) {
            if (!nhead) {
                errmsg(in, "the stream is empty (no sequence header)");
            } else if (memcmp(head, "WAIS", nhead) && memcmp(head, "WAIF", nhead)) {
                char hex[16] = "";
                size_t len = 0;
                for (size_t k = 0; k < nhead; k++)
                    len += (size_t)snprintf(hex + len, sizeof(hex) - len, "%s%02x", k ? " " : "", head[k]);
                errmsg(in, "not a WAI stream: it does not start with a sequence header (\"WAIS\"; "
                       "its first bytes are %s)", hex);
            } else {
                errmsg(in, "the stream does not start with a valid sequence header");
            }
            rc = EXIT_INPUT;
        } else if (damaged) {
            rc = EXIT_INPUT;
        }
    }
    free(r.buf);
    if (!use_stdin) fclose(r.f);
    return rc;
}

/* ---- verify ---- */

typedef struct VerifyCtx {
    struct sha256_ctx sha;
    uint32_t w, h;
    int size_bad;
    uint32_t bad_w, bad_h;
} VerifyCtx;

static int on_verify(void *opaque, WaiDecoder *d, const WaiPicture *pic)
{
    VerifyCtx *c = opaque;
    if (pic->width != c->w || pic->height != c->h) {
        if (!c->size_bad) {
            c->bad_w = pic->width;
            c->bad_h = pic->height;
        }
        c->size_bad = 1;
    }
    for (uint32_t y = 0; y < pic->height; y++)
        sha256_update(&c->sha, (size_t)pic->width * 3, pic->data + (ptrdiff_t)y * pic->stride);
    return 0;
}

static void verify_usage(FILE *f)
{
    fprintf(f,
        "usage: wai verify MANIFEST [options]\n"
        "Decode every stream listed in MANIFEST and compare it. Each line is\n"
        "  <file> <sha256-hex> <frames> <W>x<H>\n"
        "(file relative to the manifest's directory; '#' comments and blank lines ignored).\n"
        "Prints PASS or FAIL per entry and 'verify: N passed, M failed'; exits 0 only if every\n"
        "entry passes (and there is at least one).\n"
        "%s"
        "  -h, --help          this help\n", common_help);
}

/* Split a manifest line into at most 5 whitespace-separated fields; returns the count. */
static int split_fields(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (!*p || *p == '#') return n;
        if (n == max) return max + 1;
        f[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
        if (*p) *p++ = 0;
    }
}

static int parse_u32(const char *s, char stop, uint32_t *out, const char **end)
{
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9') return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > UINT32_MAX) return -1;
    }
    if (*p != stop) return -1;
    *out = (uint32_t)v;
    if (end) *end = p;
    return 0;
}

/* One manifest entry: 1 pass, 0 fail (reason printed). */
static int verify_entry(char **fld, const char *dir, size_t dirlen, const WaiSettings *s)
{
    uint8_t want[32];
    uint32_t frames, w, h;
    const char *x;
    int ok = strlen(fld[1]) == 64;
    for (int i = 0; ok && i < 32; i++) {
        unsigned v;
        char two[3] = { fld[1][2 * i], fld[1][2 * i + 1], 0 };
        if (sscanf(two, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", two[0]) ||
            !strchr("0123456789abcdefABCDEF", two[1]))
            ok = 0;
        want[i] = (uint8_t)v;
    }
    if (!ok || parse_u32(fld[2], 0, &frames, NULL) || parse_u32(fld[3], 'x', &w, &x) ||
        parse_u32(x + 1, 0, &h, NULL)) {
        printf("FAIL %s: malformed entry (expected <file> <sha256-hex> <frames> <W>x<H>)\n", fld[0]);
        return 0;
    }
    char path[4096];
    if (fld[0][0] == '/' || !dirlen) snprintf(path, sizeof(path), "%s", fld[0]);
    else snprintf(path, sizeof(path), "%.*s%s", (int)dirlen, dir, fld[0]);
    VerifyCtx c;
    memset(&c, 0, sizeof(c));
    c.w = w;
    c.h = h;
    sha256_init(&c.sha);
    DecodeResult res;
    decode_file(path, s, 1, on_verify, &c, &res);
    uint8_t got[32];
    sha256_digest(&c.sha, sizeof(got), got);
    if (res.err) {
        printf("FAIL %s: %s\n", fld[0], res.msg);
        return 0;
    }
    if (res.frames != frames) {
        printf("FAIL %s: %u frames decoded, expected %u\n", fld[0], res.frames, frames);
        return 0;
    }
    if (c.size_bad) {
        printf("FAIL %s: picture size %ux%u, expected %ux%u\n", fld[0], c.bad_w, c.bad_h, w, h);
        return 0;
    }
    if (memcmp(got, want, 32)) {
        char hex[65];
        hex32(got, hex);
        printf("FAIL %s: SHA-256 %s, expected %s\n", fld[0], hex, fld[1]);
        return 0;
    }
    printf("PASS %s\n", fld[0]);
    return 1;
}

static int cmd_verify(int argc, char **argv)
{
    WaiSettings s;
    wai_default_settings(&s);
    const char *manifest = NULL;
    for (int i = 0; i < argc; i++) {
        int k = common_option(argc, argv, &i, &s);
        if (k < 0) return EXIT_USAGE;
        if (k) continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            verify_usage(stdout);
            return 0;
        }
        if ((argv[i][0] == '-' && argv[i][1]) || manifest) {
            errmsg(NULL, "verify: unexpected argument '%s' (see wai verify --help)", argv[i]);
            return EXIT_USAGE;
        }
        manifest = argv[i];
    }
    if (!manifest) {
        verify_usage(stderr);
        return EXIT_USAGE;
    }
    FILE *f = fopen(manifest, "r");
    if (!f) {
        errmsg(manifest, "%s", strerror(errno));
        return EXIT_SYSTEM;
    }
    /* entries are relative to the manifest's directory: keep its path up to the last '/' */
    const char *slash = strrchr(manifest, '/');
    size_t dirlen = slash ? (size_t)(slash - manifest) + 1 : 0;
    unsigned pass = 0, failed = 0, lineno = 0;
    char line[8192];
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            printf("FAIL line %u: too long\n", lineno);
            failed++;
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n') {}
            continue;
        }
        char *fld[5];
        int n = split_fields(line, fld, 4);
        if (!n) continue;
        if (n != 4) {
            printf("FAIL line %u: malformed (expected <file> <sha256-hex> <frames> <W>x<H>)\n", lineno);
            failed++;
            continue;
        }
        if (verify_entry(fld, manifest, dirlen, &s)) pass++;
        else failed++;
        fflush(stdout);
    }
    int io = ferror(f);
    fclose(f);
    if (io) {
        errmsg(manifest, "read error");
        return EXIT_SYSTEM;
    }
    printf("verify: %u passed, %u failed\n", pass, failed);
    if (!pass && !failed) {
        errmsg(manifest, "no entries");
        return EXIT_INPUT;
    }
    return failed ? EXIT_INPUT : 0;
}

/* ---- encode (issue 3; owner: enc) ---- */

/* Read a PNG of any colour type and depth as RGB8 (palette, grey, alpha and 16 bits are
 * converted; alpha is dropped). *rgb is malloc'ed, rows of w * 3 bytes. */
static int read_png(const char *path, uint8_t **rgb, uint32_t *w, uint32_t *h)
{
    const char *why = NULL;
    int r = png_read_rgb8(path, rgb, w, h, &why);
    if (r == PNGREAD_OK) return 0;
    errmsg(path, "%s", why);
    return r == PNGREAD_INVALID ? EXIT_INPUT : EXIT_SYSTEM;
}

/* ---- encode: inputs (PNG files, numbered PNG patterns, Y4M) ---- */

enum { IN_PNG, IN_Y4M };

typedef struct Y4mIn {
    FILE *f;
    int is_stdin;
    uint32_t w, h, cw, ch;       /* luma and chroma plane sizes */
    int planes;                  /* 1 (mono), 3, or 4 (444alpha: the alpha plane is skipped) */
    int full_range;
    uint32_t fps_num, fps_den;   /* 0/0: none in the header */
    size_t frame_bytes;
    uint8_t *buf;
    uint64_t frames_estimate;    /* 0: unknown (a pipe) */
} Y4mIn;

typedef struct EncInput {
    int kind;
    char *path;                  /* malloc'ed */
    Y4mIn y4m;
} EncInput;

typedef struct YuvMatrix { int32_t ys, yoff, crv, cbu, cgu, cgv; } YuvMatrix;

/* Q16 integer weights of the YCbCr -> RGB conversion for the matrix (kr, kb) and range. */
static YuvMatrix yuv_matrix(double kr, double kb, int full)
{
    const double kg = 1.0 - kr - kb, ys = full ? 1.0 : 255.0 / 219.0,
                 cs = full ? 1.0 : 255.0 / 224.0, q = 65536.0;
    YuvMatrix m;
    m.ys = (int32_t)(ys * q + 0.5);   /* all positive: truncation rounds */
    m.yoff = full ? 0 : 16;
    m.crv = (int32_t)(2.0 * (1.0 - kr) * cs * q + 0.5);
    m.cbu = (int32_t)(2.0 * (1.0 - kb) * cs * q + 0.5);
    m.cgu = (int32_t)(2.0 * kb * (1.0 - kb) / kg * cs * q + 0.5);
    m.cgv = (int32_t)(2.0 * kr * (1.0 - kr) / kg * cs * q + 0.5);
    return m;
}

static uint8_t clamp_q16(int32_t v)
{
    v = (v + 32768 + (256 << 16)) >> 16;   /* rounded; the bias keeps the shift non-negative */
    v -= 256;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One Y4M frame (planes in y->buf) to RGB8; chroma samples repeated over their 2x2 / 2x1
 * block (siting ignored). */
static void y4m_to_rgb(const Y4mIn *y, const YuvMatrix *m, uint8_t *rgb)
{
    const uint8_t *yp = y->buf, *up = yp + (size_t)y->w * y->h,
                  *vp = up + (size_t)y->cw * y->ch;
    const uint32_t sx = y->cw && y->cw < y->w ? 2 : 1, sy = y->ch && y->ch < y->h ? 2 : 1;
    for (uint32_t r = 0; r < y->h; r++)
        for (uint32_t c = 0; c < y->w; c++) {
            int32_t Y = (int32_t)yp[(size_t)r * y->w + c] - m->yoff, U = 0, V = 0;
            if (y->planes > 1) {
                size_t ci = (size_t)(r / sy) * y->cw + c / sx;
                U = (int32_t)up[ci] - 128;
                V = (int32_t)vp[ci] - 128;
            }
            int32_t L = m->ys * Y;
            uint8_t *px = rgb + ((size_t)r * y->w + c) * 3;
            px[0] = clamp_q16(L + m->crv * V);
            px[1] = clamp_q16(L - m->cgu * U - m->cgv * V);
            px[2] = clamp_q16(L + m->cbu * U);
        }
}

/* Reads a '\n'-terminated line of at most cap-1 bytes; 1 ok, 0 EOF before any byte, -1 too
 * long or EOF inside the line. */
static int read_line(FILE *f, char *line, size_t cap)
{
    size_t n = 0;
    int ch;
    while ((ch = getc(f)) != EOF) {
        if (ch == '\n') {
            line[n] = 0;
            return 1;
        }
        if (n + 1 >= cap) return -1;
        line[n++] = (char)ch;
    }
    return n ? -1 : 0;
}

static int parse_u32_field(const char *s, uint32_t *v)
{
    uint64_t u;
    if (parse_u64(s, &u, 0) || !u || u > UINT32_MAX) return -1;
    *v = (uint32_t)u;
    return 0;
}

/* Opens a Y4M input and parses its stream header. Returns 0 or an exit code (message printed). */
static int y4m_open(EncInput *in)
{
    Y4mIn *y = &in->y4m;
    const char *name = in->path;
    y->is_stdin = !strcmp(in->path, "-");
    if (y->is_stdin) name = "<stdin>";
    y->f = y->is_stdin ? stdin : fopen(in->path, "rb");
    if (!y->f) {
        errmsg(name, "%s", strerror(errno));
        return EXIT_SYSTEM;
    }
    char line[1024];
    int r = read_line(y->f, line, sizeof(line));
    if (r <= 0 || strncmp(line, "YUV4MPEG2 ", 10)) {
        errmsg(name, "not a Y4M stream (no 'YUV4MPEG2' header line)");
        return EXIT_INPUT;
    }
    const char *cs = "420jpeg";
    char csbuf[32];
    uint32_t w = 0, h = 0;
    y->full_range = 0;
    for (char *tok = strtok(line + 10, " "); tok; tok = strtok(NULL, " ")) {
        switch (tok[0]) {
        case 'W':
            if (parse_u32_field(tok + 1, &w)) goto bad;
            break;
        case 'H':
            if (parse_u32_field(tok + 1, &h)) goto bad;
            break;
        case 'F': {
            char *colon = strchr(tok + 1, ':');
            if (!colon) goto bad;
            *colon = 0;
            if (parse_u32_field(tok + 1, &y->fps_num) || parse_u32_field(colon + 1, &y->fps_den)) {
                y->fps_num = y->fps_den = 0;   /* F0:0 = unknown: not an error */
                if (strcmp(tok + 1, "0") || strcmp(colon + 1, "0")) goto bad;
            }
            break;
        }
        case 'I':
            if (strcmp(tok, "Ip") && strcmp(tok, "I?")) {
                errmsg(name, "interlaced Y4M (%s) is not supported: progressive (Ip) only", tok);
                return EXIT_INPUT;
            }
            break;
        case 'C':
            snprintf(csbuf, sizeof(csbuf), "%s", tok + 1);
            cs = csbuf;
            break;
        case 'X':
            if (!strcmp(tok, "XCOLORRANGE=FULL")) y->full_range = 1;
            else if (!strcmp(tok, "XCOLORRANGE=LIMITED")) y->full_range = 0;
            break;
        default:   /* A (aspect) and unknown tags: ignored */
            break;
        }
    }
    if (!w || !h || w > 65536 || h > 65536) {
        errmsg(name, "Y4M header without a valid size (W, H: 1..65536)");
        return EXIT_INPUT;
    }
    y->w = w;
    y->h = h;
    y->planes = 3;
    if (!strcmp(cs, "444") || !strcmp(cs, "444alpha")) {
        y->cw = w;
        y->ch = h;
        if (cs[3]) y->planes = 4;
    } else if (!strcmp(cs, "422")) {
        y->cw = (w + 1) / 2;
        y->ch = h;
    } else if (!strcmp(cs, "420") || !strcmp(cs, "420jpeg") || !strcmp(cs, "420mpeg2") ||
               !strcmp(cs, "420paldv")) {
        y->cw = (w + 1) / 2;
        y->ch = (h + 1) / 2;
    } else if (!strcmp(cs, "mono")) {
        y->cw = y->ch = 0;
        y->planes = 1;
    } else {
        errmsg(name, "Y4M colour space 'C%s' is not supported: 8-bit C444, C422, C420 "
               "(jpeg, mpeg2, paldv), C444alpha or Cmono", cs);
        return EXIT_INPUT;
    }
    const uint64_t luma = (uint64_t)w * h, chroma = (uint64_t)y->cw * y->ch;
    if (luma > ((uint64_t)1 << 28)) {
        errmsg(name, "Y4M picture of %ux%u is too large for wai encode", w, h);
        return EXIT_INPUT;
    }
    y->frame_bytes = (size_t)(luma * (y->planes == 4 ? 2 : 1) + 2 * chroma);
    y->buf = malloc(y->frame_bytes);
    if (!y->buf) {
        errmsg(name, "out of memory");
        return EXIT_SYSTEM;
    }
    /* a regular file without frame parameters holds (size - header) / (6 + frame) frames */
    struct stat st;
    long pos = y->is_stdin ? -1 : ftell(y->f);
    if (pos > 0 && !fstat(fileno(y->f), &st) && S_ISREG(st.st_mode) && st.st_size >= pos) {
        uint64_t rest = (uint64_t)st.st_size - (uint64_t)pos, unit = 6 + (uint64_t)y->frame_bytes;
        if (rest % unit == 0) y->frames_estimate = rest / unit;
    }
    return 0;
bad:
    errmsg(name, "malformed Y4M header field");
    return EXIT_INPUT;
}

/* The next Y4M frame into y->buf: 1 read, 0 end of stream, or minus an exit code. */
static int y4m_next(EncInput *in)
{
    Y4mIn *y = &in->y4m;
    const char *name = y->is_stdin ? "<stdin>" : in->path;
    char line[256];
    int r = read_line(y->f, line, sizeof(line));
    if (r == 0) {
        if (ferror(y->f)) {
            errmsg(name, "read error: %s", strerror(errno));
            return -EXIT_SYSTEM;
        }
        return 0;
    }
    if (r < 0 || strncmp(line, "FRAME", 5) || (line[5] && line[5] != ' ')) {
        errmsg(name, "malformed Y4M frame header");
        return -EXIT_INPUT;
    }
    if (fread(y->buf, 1, y->frame_bytes, y->f) != y->frame_bytes) {
        if (ferror(y->f)) {
            errmsg(name, "read error: %s", strerror(errno));
            return -EXIT_SYSTEM;
        }
        errmsg(name, "Y4M frame cut short");
        return -EXIT_INPUT;
    }
    return 1;
}

static void free_inputs(EncInput *ins, int n)
{
    for (int i = 0; ins && i < n; i++) {
        if (ins[i].kind == IN_Y4M) {
            if (ins[i].y4m.f && !ins[i].y4m.is_stdin) fclose(ins[i].y4m.f);
            free(ins[i].y4m.buf);
        }
        free(ins[i].path);
    }
    free(ins);
}

static int file_exists(const char *path)
{
    struct stat st;
    return !stat(path, &st);
}

/* Appends the inputs one command-line argument names: a PNG or Y4M file, '-' (Y4M on
 * stdin) or a numbered PNG pattern. Returns 0 or an exit code (message printed). */
static int add_input(EncInput **ins, int *n, int *cap, const char *arg)
{
    int pat = check_pattern(arg);
    uint32_t first = 0, count = 1;
    if (pat != 0 && file_exists(arg)) pat = 0;   /* a file whose name has a '%' */
    if (pat < 0) {
        errmsg(arg, "bad file pattern: use exactly one %%d (e.g. frame-%%03d.png)");
        return EXIT_USAGE;
    }
    char path[4096];
    if (pat) {
        for (first = 0; first < 5; first++) {
            format_pattern(path, sizeof(path), arg, first);
            if (file_exists(path)) break;
        }
        if (first == 5) {
            errmsg(arg, "no file matches this pattern (tried the numbers 0 to 4)");
            return EXIT_SYSTEM;
        }
        for (count = 1; first + count < UINT32_MAX; count++) {
            format_pattern(path, sizeof(path), arg, first + count);
            if (!file_exists(path)) break;
        }
    }
    for (uint32_t k = 0; k < count; k++) {
        if (*n == *cap) {
            int nc = *cap ? 2 * *cap : 16;
            EncInput *t = realloc(*ins, (size_t)nc * sizeof(*t));
            if (!t) return EXIT_SYSTEM;
            *ins = t;
            *cap = nc;
        }
        EncInput *in = &(*ins)[*n];
        memset(in, 0, sizeof(*in));
        if (pat) format_pattern(path, sizeof(path), arg, first + k);
        else snprintf(path, sizeof(path), "%s", arg);
        in->path = strdup(path);
        if (!in->path) return EXIT_SYSTEM;
        (*n)++;
        if (!strcmp(arg, "-")) {
            in->kind = IN_Y4M;
        } else if (!pat) {   /* a single file: PNG or Y4M by its first bytes */
            FILE *f = fopen(path, "rb");
            char magic[9] = { 0 };
            if (!f) {
                errmsg(path, "%s", strerror(errno));
                return EXIT_SYSTEM;
            }
            size_t got = fread(magic, 1, sizeof(magic), f);
            fclose(f);
            in->kind = got == 9 && !memcmp(magic, "YUV4MPEG2", 9) ? IN_Y4M : IN_PNG;
        }
    }
    return 0;
}

static void encode_usage(FILE *f)
{
    fprintf(f,
        "usage: wai encode INPUT... -o OUT.wai [options]\n"
        "  encodes pictures into one stream, one frame each, all of the same size; prints\n"
        "  frames, bytes and bits per pixel. Each INPUT is\n"
        "    a PNG file        any colour type and depth; alpha is dropped\n"
        "    a PNG pattern     frame-%%03d.png: the numbered files from the first of 0..4 that\n"
        "                      exists up to the first missing number\n"
        "    a Y4M file        or '-' for Y4M on stdin: every frame; 8-bit C444, C422, C420\n"
        "                      (jpeg/mpeg2/paldv), C444alpha, Cmono; progressive only. YCbCr ->\n"
        "                      RGB with the BT.601 matrix (see --matrix), limited range (Y\n"
        "                      16..235) unless the header says XCOLORRANGE=FULL; chroma samples\n"
        "                      are repeated over their 2x2 (4:2:0) or 2x1 (4:2:2) block\n"
        "  -o OUT.wai         the stream ('-': stdout; frame_count 0 there). A file is written\n"
        "                     beside OUT and renamed at the end: on failure OUT is untouched\n"
        "  --quality N        1.." WAI_STR(WAI_ENCODER_MAX_QUALITY) " (default 3; --list-qualities: those installed):\n"
        "                     the model pair wai-qN.whm + wai-qN.ana, or the quality file\n"
        "                     wai-qN.rate (a rate of a variable-rate model pair there),\n"
        "                     from the first directory holding either: --model-dir if\n"
        "                     given (and nothing else), otherwise each directory of\n"
        "                     $WAI_MODEL_PATH, then the installed models (" WAI_MODEL_DIR_HELP ")\n"
        "  --rate N           code every frame at rate N (0..n_rates-1) of a variable-rate\n"
        "                     model (format 1.1, a WHM1 with a rate table): the rate's\n"
        "                     quantisation steps, WIH2 frames naming N (wai info shows it).\n"
        "                     Default: WIH1 frames with unit steps, or the rate of the\n"
        "                     quality's file. Not with a target or a quality file\n"
        "  --target-size BYTES  the quality (per frame) that keeps the stream within BYTES\n"
        "                     (suffixes k, M: powers of 1024): the largest quality whose frame\n"
        "                     fits an even share of what the sequence header leaves\n"
        "  --target-bpp X     the same for X bits per pixel over the whole stream (with Y4M\n"
        "                     from a pipe, whose frame count is unknown: per frame, header\n"
        "                     not counted)\n"
        "  --target-psnr DB   the lowest quality (per frame) whose decoded picture reaches\n"
        "                     DB dB PSNR (RGB8)\n"
        "                     One target at most; it replaces --quality (which becomes the\n"
        "                     first quality tried). Each frame is coded at the candidate\n"
        "                     qualities (usually 2-4) and the one kept is the frame --quality\n"
        "                     would give; a frame whose quality changes gets a sequence header\n"
        "                     (96 bytes, counted). A target no quality meets is met as closely\n"
        "                     as possible (the smallest frame for a size, the highest quality\n"
        "                     for a PSNR) and reported, not an error. The summary says what was\n"
        "                     chosen, and in how many codings\n"
        );
    fprintf(f,   /* two strings: C99 compilers need support only 4095 characters in one */
        "  --model-dir DIRS   where the model pairs are (':'-separated directories)\n"
        "  --model FILE.whm --analysis FILE.ana   an explicit model pair instead\n"
        "  --list-qualities   print the qualities the model search finds, then exit\n"
        "  --embed-model      put the WHM1 model into the stream\n"
        "  --fps NUM[/DEN]    frame rate in the sequence header (default: the first Y4M\n"
        "                     input's F field, else 25)\n"
        "  --matrix M         bt601 (default) or bt709: the YCbCr matrix of Y4M input\n"
        "  --threads N        threads of the analysis and the integer hyper-synthesis\n"
        "                     (0 = automatic); any N gives the same stream\n"
        "  --max-memory BYTES budget of the float analysis per picture (suffixes k, M, G:\n"
        "                     powers of 1024; default 4G): automatic stripes shrink to fit\n"
        "                     it; more is an error, before allocating\n"
        "  --mean-correction N  0..4 extra passes (default 2) where a colour channel's mean\n"
        "                     comes back more than half a level off: the encoder decodes its\n"
        "                     own frame and codes the picture again moved by the error\n"
        "                     (0: one pass, faster)\n"
        "  --stripe-rows N    picture rows the analysis works on at a time (rounded to whole\n"
        "                     latent rows; 0 = automatic, default): the same stream for any N\n"
        "  --kernels NAME     kernel set of the analysis and the decoding side: auto\n"
        "                     (default), reference, c, avx2, avx512, avx512vnni, avx512amx,\n"
        "                     neon or simd128;\n"
        "                     every set gives the same stream\n"
        "  --progress         a progress line per frame (frame i/n, bytes, bpp) on stderr;\n"
        "                     the default when stderr is a terminal (updated in place there)\n"
        "  -q, --quiet        no progress and no summary line\n"
        "Exit codes: 0 success, 1 invalid input, 2 usage error (also a quality that has no\n"
        "model pair: the message lists those there are), 3 I/O error.\n");
}

/* "1, 3, 5, 7" into buf. */
static void format_qualities(const char *model_dir, char *buf, size_t cap)
{
    int q[WAI_ENCODER_MAX_QUALITY];
    int n = wai_encoder_available_qualities(model_dir, q, WAI_ENCODER_MAX_QUALITY);
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n && i < WAI_ENCODER_MAX_QUALITY && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? ", " : "", q[i]);
    if (n <= 0) snprintf(buf, cap, "none");
}

typedef struct EncOut {
    const char *path;            /* as given */
    char *tmp;                   /* the file being written, renamed to path at the end */
    FILE *f;
    uint64_t bytes;
} EncOut;

static int out_write(EncOut *o, const uint8_t *data, size_t n)
{
    if (fwrite(data, 1, n, o->f) != n) {
        errmsg(o->path, "write error: %s", strerror(errno));
        return EXIT_SYSTEM;
    }
    o->bytes += n;
    return 0;
}

/* The result of an encoder call that made one unit (r < 0: its error) written out; an exit code. */
static int put_unit(EncOut *o, WaiEncoder *e, const char *name, int r, uint8_t *unit, size_t n)
{
    if (r < 0) {
        errmsg(name, "%s (%s)", wai_encoder_last_error(e), wai_strerror(r));
        return r == WAI_ERR_INVALID_ARG ? EXIT_INPUT : exit_code(r);
    }
    int ret = out_write(o, unit, n);
    free(unit);
    return ret;
}

static mode_t current_umask(void)
{
    mode_t m = umask(0);   /* the CLI is single-threaded */
    umask(m);
    return m;
}

static int out_open(EncOut *o)
{
    struct stat st;
    if (!strcmp(o->path, "-")) {
        o->f = stdout;
        return 0;
    }
    if (!stat(o->path, &st) && !S_ISREG(st.st_mode)) {   /* /dev/null, a FIFO: write there */
        o->f = fopen(o->path, "wb");
    } else {
        size_t n = strlen(o->path);
        o->tmp = malloc(n + 16);
        if (!o->tmp) return EXIT_SYSTEM;
        memcpy(o->tmp, o->path, n);
        memcpy(o->tmp + n, ".tmp-XXXXXX", 12);
        int fd = mkstemp(o->tmp);
        o->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (fd >= 0 && !o->f) close(fd);
        if (fd >= 0) (void)fchmod(fd, 0666 & ~current_umask());
    }
    if (!o->f) {
        errmsg(o->path, "cannot write: %s", strerror(errno));
        if (o->tmp) unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        return EXIT_SYSTEM;
    }
    return 0;
}

/* Finishes (ok: rename into place) or abandons the output. Returns 0 or an exit code. */
static int out_close(EncOut *o, int ok)
{
    int ret = 0;
    if (o->f && o->f != stdout) {
        if (fclose(o->f) && ok) {
            errmsg(o->path, "write error: %s", strerror(errno));
            ret = EXIT_SYSTEM;
        }
    } else if (o->f == stdout && fflush(stdout) && ok) {
        errmsg("<stdout>", "write error: %s", strerror(errno));
        ret = EXIT_SYSTEM;
    }
    o->f = NULL;
    if (o->tmp) {
        if (ok && !ret && rename(o->tmp, o->path)) {
            errmsg(o->path, "cannot rename %s into place: %s", o->tmp, strerror(errno));
            ret = EXIT_SYSTEM;
        }
        if (!ok || ret) unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return ret;
}

static int cmd_encode(int argc, char **argv)
{
    WaiEncoderSettings s;
    wai_encoder_default_settings(&s);
    const char *outp = NULL;
    EncInput *ins = NULL;
    int n_in = 0, cap = 0, quiet = 0, progress = 0, list_q = 0, fps_given = 0, stdin_used = 0;
    int ret = 0, n_targets = 0;
    uint64_t target_size = 0;
    double target_bpp = 0, target_psnr = 0;
    const char *target_opt = NULL;
    double kr = 0.299, kb = 0.114;
    for (int i = 0; i < argc; i++) {
        int missing = 0;
        const char *v;
        uint64_t u;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            encode_usage(stdout);
            free_inputs(ins, n_in);
            return 0;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--progress")) {
            progress = 1;
        } else if (!strcmp(a, "--list-qualities")) {
            list_q = 1;
        } else if (!strcmp(a, "--embed-model")) {
            s.embed_model = 1;
        } else if (!strcmp(a, "-o")) {
            if (i + 1 >= argc) missing = 1; else outp = argv[++i];
        } else if ((v = opt_value(argc, argv, &i, "--quality", &missing))) {
            if (parse_u64(v, &u, 0) || u < 1 || u > WAI_ENCODER_MAX_QUALITY) goto bad;
            s.quality = (int)u;
        } else if ((v = opt_value(argc, argv, &i, "--rate", &missing))) {
            if (parse_u64(v, &u, 0) || u > 255) goto bad;
            s.rate = (int32_t)u;
        } else if ((v = opt_value(argc, argv, &i, "--target-size", &missing))) {
            if (parse_u64(v, &u, 1) || !u) goto bad;
            target_size = u;
            target_opt = a;
            n_targets++;
        } else if ((v = opt_value(argc, argv, &i, "--target-bpp", &missing))) {
            if (parse_pos_double(v, &target_bpp) || target_bpp > 1e6) goto bad;
            target_opt = a;
            n_targets++;
        } else if ((v = opt_value(argc, argv, &i, "--target-psnr", &missing))) {
            if (parse_pos_double(v, &target_psnr) || target_psnr > 1000) goto bad;
            target_opt = a;
            n_targets++;
        } else if ((v = opt_value(argc, argv, &i, "--model-dir", &missing))) {
            s.model_dir = v;
        } else if ((v = opt_value(argc, argv, &i, "--model", &missing))) {
            s.model_file = v;
        } else if ((v = opt_value(argc, argv, &i, "--analysis", &missing))) {
            s.analysis_file = v;
        } else if ((v = opt_value(argc, argv, &i, "--threads", &missing))) {
            if (parse_u64(v, &u, 0) || u > 64) goto bad;
            s.threads = (int)u;
        } else if ((v = opt_value(argc, argv, &i, "--max-memory", &missing))) {
            if (parse_u64(v, &u, 1) || !u) goto bad;
            s.max_memory = u;
        } else if ((v = opt_value(argc, argv, &i, "--mean-correction", &missing))) {
            if (parse_u64(v, &u, 0) || u > 4) goto bad;
            s.mean_correction = (int)u;
        } else if ((v = opt_value(argc, argv, &i, "--stripe-rows", &missing))) {
            if (parse_u64(v, &u, 0) || u > (1u << 24)) goto bad;
            s.stripe_rows = (int)u;
        } else if ((v = opt_value(argc, argv, &i, "--kernels", &missing))) {
            if (wai_kernels_from_name(v, &s.kernels) < 0) goto bad;
        } else if ((v = opt_value(argc, argv, &i, "--matrix", &missing))) {
            if (!strcmp(v, "bt601")) { kr = 0.299; kb = 0.114; }
            else if (!strcmp(v, "bt709")) { kr = 0.2126; kb = 0.0722; }
            else goto bad;
        } else if ((v = opt_value(argc, argv, &i, "--fps", &missing))) {
            char num[32];
            const char *sl = strchr(v, '/');
            size_t nl = sl ? (size_t)(sl - v) : strlen(v);
            uint64_t d = 1;
            if (nl >= sizeof(num)) goto bad;
            memcpy(num, v, nl);
            num[nl] = 0;
            if (parse_u64(num, &u, 0) || !u || u > UINT32_MAX ||
                (sl && (parse_u64(sl + 1, &d, 0) || !d || d > UINT32_MAX)))
                goto bad;
            s.fps_num = (uint32_t)u;
            s.fps_den = (uint32_t)d;
            fps_given = 1;
        } else if (a[0] == '-' && a[1]) {
            errmsg(NULL, "encode: unknown option '%s'", a);
            goto usage_err;
        } else {
            if (!strcmp(a, "-") && stdin_used++) {
                errmsg(NULL, "encode: '-' (stdin) may be given once");
                goto usage_err;
            }
            if ((ret = add_input(&ins, &n_in, &cap, a))) {
                free_inputs(ins, n_in);
                return ret;
            }
        }
        if (missing) {
            errmsg(NULL, "encode: option '%s' needs a value", a);
            goto usage_err;
        }
        continue;
bad:
        errmsg(NULL, "encode: bad value for '%s'", a);
        goto usage_err;
    }
    if (list_q) {
        char qs[64];
        format_qualities(s.model_dir, qs, sizeof(qs));
        printf("%s\n", qs);
        free_inputs(ins, n_in);
        return 0;
    }
    if (!n_in || !outp) {
        errmsg(NULL, "encode: need inputs (PNG, PNG pattern, Y4M or '-') and -o OUT.wai");
        goto usage_err;
    }
    if ((!s.model_file) != (!s.analysis_file)) {
        errmsg(NULL, "encode: --model and --analysis go together");
        goto usage_err;
    }
    if (n_targets > 1) {
        errmsg(NULL, "encode: one of --target-size, --target-bpp and --target-psnr at most");
        goto usage_err;
    }
    if (n_targets && s.rate >= 0) {
        errmsg(NULL, "encode: --rate codes at a fixed rate, not with %s", target_opt);
        goto usage_err;
    }
    if (n_targets && s.model_file) {
        errmsg(NULL, "encode: %s chooses among the qualities of the model search, not with "
               "--model", target_opt);
        goto usage_err;
    }
    /* a size target is split per frame once the picture size and the header are known */
    s.target_frame_bytes = target_size || target_bpp > 0 ? 1 : 0;
    s.target_psnr = target_psnr;

    /* Y4M headers first: bad input is reported before the model is loaded, and the first
     * one's frame rate goes into the sequence header */
    uint64_t total = 0;
    int total_known = 1;
    for (int k = 0; k < n_in; k++) {
        if (ins[k].kind != IN_Y4M) {
            total++;
            continue;
        }
        if ((ret = y4m_open(&ins[k]))) goto end;
        Y4mIn *y = &ins[k].y4m;
        if (!y->frames_estimate) total_known = 0;
        total += y->frames_estimate;
        if (y->fps_num && !fps_given) {
            s.fps_num = y->fps_num;
            s.fps_den = y->fps_den;
            fps_given = 1;
        }
    }

    if (target_size && !total_known) {
        errmsg(NULL, "encode: --target-size needs the frame count, which Y4M from a pipe does "
               "not give (--target-bpp works per frame there)");
        ret = EXIT_USAGE;
        goto end;
    }

    WaiEncoder *e = NULL;
    int r = wai_encoder_open(&e, &s);
    if (r < 0) {
        if (r == WAI_ERR_MODEL_NOT_FOUND && n_targets) {
            errmsg(NULL, "encode: %s: no quality is installed: %s", target_opt,
                   wai_encoder_last_error(NULL));
            ret = EXIT_USAGE;
        } else if (r == WAI_ERR_MODEL_NOT_FOUND) {
            char qs[64];
            format_qualities(s.model_dir, qs, sizeof(qs));
            errmsg(NULL, "encode: quality %d is not installed: %s", s.quality,
                   wai_encoder_last_error(NULL));
            errmsg(NULL, "encode: qualities with a model pair there: %s%s", qs,
                   s.model_dir ? "" : " (other directories: --model-dir DIRS or $WAI_MODEL_PATH)");
            ret = EXIT_USAGE;
        } else {
            errmsg(NULL, "encode: %s (%s)", wai_encoder_last_error(NULL), wai_strerror(r));
            ret = r == WAI_ERR_INVALID_ARG ? EXIT_USAGE : r == WAI_ERR_IO ? EXIT_SYSTEM
                                                                          : exit_code(r);
        }
        goto end;
    }

    const int tty = isatty(STDERR_FILENO);
    const int show = !quiet && (progress || tty);
    const YuvMatrix mat_lim = yuv_matrix(kr, kb, 0), mat_full = yuv_matrix(kr, kb, 1);
    EncOut out = { outp, NULL, NULL, 0 };
    uint32_t fw = 0, fh = 0, frames = 0;
    uint64_t pixels = 0;
    uint8_t *rgb = NULL;
    size_t rgb_cap = 0;
    int out_ok = 0;
    uint32_t chose[WAI_ENCODER_MAX_QUALITY + 1] = { 0 }, missed = 0;
    uint64_t codings = 0;
    double low_psnr = INFINITY;
    if ((ret = out_open(&out))) goto enc_end;
    for (int k = 0; k < n_in && !ret; k++) {
        EncInput *in = &ins[k];
        const char *name = in->kind == IN_Y4M && in->y4m.is_stdin ? "<stdin>" : in->path;
        for (;;) {
            uint32_t w, h;
            if (in->kind == IN_PNG) {
                free(rgb);
                rgb = NULL;
                rgb_cap = 0;
                if ((ret = read_png(in->path, &rgb, &w, &h))) break;
            } else {
                int g = y4m_next(in);
                if (g < 0) {
                    ret = -g;
                    break;
                }
                if (!g) break;
                w = in->y4m.w;
                h = in->y4m.h;
                size_t need = (size_t)w * h * 3;
                if (need > rgb_cap) {
                    free(rgb);
                    rgb = malloc(need);
                    rgb_cap = rgb ? need : 0;
                    if (!rgb) {
                        errmsg(name, "out of memory");
                        ret = EXIT_SYSTEM;
                        break;
                    }
                }
                y4m_to_rgb(&in->y4m, in->y4m.full_range ? &mat_full : &mat_lim, rgb);
            }
            if (frames && (w != fw || h != fh)) {
                errmsg(name, "picture of %ux%u, but the stream's are %ux%u: every frame must "
                       "have the size of the first", w, h, fw, fh);
                ret = EXIT_INPUT;
                break;
            }
            uint8_t *unit = NULL, *hdr = NULL;
            size_t usize = 0, hsize = 96;   /* a header without an embedded model */
            /* with a target, the header follows the first picture's choice (no header change
             * to pay for); an embedded model's header is needed first, for its size */
            const int hdr_after = !frames && n_targets && !s.embed_model;
            if (!frames) {
                if (!hdr_after) {
                    r = wai_encoder_header(e, w, h, 0, &hdr, &hsize);
                    if ((ret = put_unit(&out, e, name, r, hdr, hsize))) break;
                }
                fw = w;
                fh = h;
                if (s.target_frame_bytes) {   /* the size target, per frame */
                    const double all = target_size ? (double)target_size
                                                   : target_bpp * w * h * (double)total / 8;
                    double per = total_known ? (all - (double)hsize) / (double)total
                                             : target_bpp * w * h / 8;
                    per = per < 1 ? 1 : per > 1e18 ? 1e18 : floor(per);
                    wai_encoder_set_target(e, (uint64_t)per, 0);
                }
            }
            r = wai_encode_picture_unit(e, rgb, (ptrdiff_t)w * 3, w, h, &unit, &usize);
            if (hdr_after && r >= 0) {
                int rh = wai_encoder_header(e, w, h, 0, &hdr, &hsize);
                if ((ret = put_unit(&out, e, name, rh, hdr, hsize))) {
                    free(unit);
                    break;
                }
            }
            if ((ret = put_unit(&out, e, name, r, unit, usize))) break;
            WaiFrameStats fs;
            if (wai_encoder_last_frame(e, &fs) == 0) {
                chose[fs.quality < 0 || fs.quality > WAI_ENCODER_MAX_QUALITY ? 0 : fs.quality]++;
                missed += !fs.target_met;
                codings += (uint64_t)fs.candidates;
                if (fs.psnr >= 0 && fs.psnr < low_psnr) low_psnr = fs.psnr;
            }
            frames++;
            pixels += (uint64_t)w * h;
            if (show) {
                char of[32] = "";
                if (total_known && total >= frames)
                    snprintf(of, sizeof(of), "/%" PRIu64, total);
                fprintf(stderr, "%swai: frame %u%s, %" PRIu64 " bytes, %.4f bpp%s",
                        tty && !progress ? "\r" : "", frames, of, out.bytes,
                        8.0 * (double)out.bytes / (double)pixels,
                        tty && !progress ? "\033[K" : "\n");
                fflush(stderr);
            }
            if (in->kind == IN_PNG) break;
        }
    }
    if (show && tty && !progress && frames) fputs("\r\033[K", stderr);
    if (!ret && !frames) {
        errmsg(NULL, "encode: the inputs hold no picture");
        ret = EXIT_INPUT;
    }
    if (!ret && out.f != stdout) {   /* the header again, with the frame count */
        uint8_t *hdr = NULL;
        size_t hsize = 0;
        r = wai_encoder_header(e, fw, fh, frames, &hdr, &hsize);
        if (r < 0) {
            errmsg(NULL, "encode: %s", wai_encoder_last_error(e));
            ret = EXIT_SYSTEM;
        } else if (fseek(out.f, 0, SEEK_SET) == 0) {
            ret = out_write(&out, hdr, hsize);
            out.bytes -= hsize;
        }   /* not seekable (a FIFO): frame_count stays 0, which the format allows */
        free(hdr);
    }
    out_ok = !ret;
enc_end:
    if (out.f) {
        int c = out_close(&out, out_ok);
        if (!ret) ret = c;
    }
    if (!ret && !quiet)
        fprintf(stderr, "wai: %s: %u frame%s, %" PRIu64 " bytes, %.4f bpp\n",
                strcmp(outp, "-") ? outp : "<stdout>", frames, frames == 1 ? "" : "s",
                out.bytes, pixels ? 8.0 * (double)out.bytes / (double)pixels : 0.0);
    if (!ret && !quiet && n_targets) {   /* what the target chose, e.g. "quality 5 (3 frames)" */
        char list[256] = "";
        size_t len = 0;
        for (int q = WAI_ENCODER_MAX_QUALITY; q >= 1 && len < sizeof(list); q--)
            if (chose[q])
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d (%u frame%s)",
                                        len ? ", " : "", q, chose[q], chose[q] == 1 ? "" : "s");
        char psnr[96] = "";
        size_t pl = 0;
        if (target_psnr > 0 && low_psnr < INFINITY)
            pl = (size_t)snprintf(psnr, sizeof(psnr), ", lowest PSNR %.2f dB", low_psnr);
        else if (target_psnr > 0)
            pl = (size_t)snprintf(psnr, sizeof(psnr), ", lossless");
        snprintf(psnr + pl, sizeof(psnr) - pl, "%s in %" PRIu64 " coding%s", pl ? "," : "", codings,
                 codings == 1 ? "" : "s");
        if (missed)
            fprintf(stderr, "wai: %s: chose quality %s%s; %u frame%s cannot meet it (the %s "
                    "taken)\n", target_opt, list, psnr, missed, missed == 1 ? "" : "s",
                    target_psnr > 0 ? "highest quality" : "smallest frame");
        else
            fprintf(stderr, "wai: %s: chose quality %s%s; target met\n", target_opt, list, psnr);
    }
    free(rgb);
    wai_encoder_close(&e);
end:
    free_inputs(ins, n_in);
    return ret;
usage_err:
    encode_usage(stderr);
    free_inputs(ins, n_in);
    return EXIT_USAGE;
}
/* ---- end encode ---- */

/* ---- main ---- */

/* `wai bench` is the benchmark harness wai-bench (it needs the library's internal kernels, which
 * this tool does not link): run the one installed or built beside this executable. */
static int cmd_bench(char **argv)
{
    char self[4096], path[4096 + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(path, sizeof(path), "%s/wai-bench", self);
            argv[1] = path;
            execv(path, argv + 1);
        }
    }
    argv[1] = "wai-bench";
    execvp("wai-bench", argv + 1);
    errmsg(NULL, "bench: cannot run wai-bench: %s", strerror(errno));
    return EXIT_SYSTEM;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: wai COMMAND [options]\n"
        "  encode IN... -o OUT.wai   encode PNG pictures, PNG patterns or Y4M (--quality N)\n"
        "  decode IN.wai -o OUT    decode to PNG or raw RGB24 (--sha256: conformance hash)\n"
        "  info IN.wai             print the units of a stream\n"
        "  verify MANIFEST         decode and check conformance vectors\n"
        "  bench --model M.whm     benchmark kernel sets and threads (runs wai-bench)\n"
        "  --version               print the library version\n"
        "'wai COMMAND --help' describes each command. Exit codes: 0 success, 1 invalid or\n"
        "corrupt input or a verify mismatch, 2 usage error, 3 I/O or internal error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("wai %s\n", wai_version_string());
        return 0;
    }
    if (!strcmp(cmd, "encode")) return cmd_encode(argc - 2, argv + 2);
    if (!strcmp(cmd, "decode")) return cmd_decode(argc - 2, argv + 2);
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "verify")) return cmd_verify(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argv);
    errmsg(NULL, "unknown command '%s'", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
