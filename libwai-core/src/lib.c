/* Library-wide public functions: version, error strings, default settings, kernel names. */
#include "common.h"

unsigned wai_version(void)
{
    return (unsigned)WAI_VERSION_MAJOR << 16 | (unsigned)WAI_VERSION_MINOR << 8 |
           (unsigned)WAI_VERSION_PATCH;
}

const char *wai_version_string(void)
{
    return WAI_VERSION_STRING;
}

const char *wai_strerror(int err)
{
    switch (err) {
    case WAI_OK: return "success";
    case WAI_ERR_AGAIN: return "more data needed";
    case WAI_ERR_INVALID_ARG: return "invalid argument";
    case WAI_ERR_NOMEM: return "out of memory";
    case WAI_ERR_BITSTREAM: return "invalid bitstream";
    case WAI_ERR_TRUNCATED: return "truncated data";
    case WAI_ERR_CRC: return "CRC mismatch";
    case WAI_ERR_UNSUPPORTED: return "unsupported feature or version";
    case WAI_ERR_MODEL_NOT_FOUND: return "model not found";
    case WAI_ERR_MODEL_INVALID: return "invalid model";
    case WAI_ERR_LIMIT: return "limit exceeded";
    case WAI_ERR_IO: return "I/O error";
    case WAI_ERR_NO_DEVICE: return "device not available";
    case WAI_ERR_INTERNAL: return "internal error";
    default: return "unknown error";
    }
}

void wai_default_settings(WaiSettings *s)
{
    if (!s) return;
    memset(s, 0, sizeof(*s));
    s->max_width = 16384;
    s->max_height = 16384;
    s->max_memory = WAI_DEFAULT_MAX_MEMORY;
    s->model_path = NULL;
    s->allow_embedded_model = 1;
    s->kernels = WAI_KERNELS_AUTO;
    s->threads = 0;
    s->device = WAI_DEVICE_CPU;
    s->device_index = 0;
}

static const char *const kernel_names[] = {
    [WAI_KERNELS_AUTO] = "auto",
    [WAI_KERNELS_REFERENCE] = "reference",
    [WAI_KERNELS_C] = "c",
    [WAI_KERNELS_AVX2] = "avx2",
    [WAI_KERNELS_AVX512] = "avx512",
    [WAI_KERNELS_NEON] = "neon",
    [WAI_KERNELS_AVX512VNNI] = "avx512vnni",
    [WAI_KERNELS_SIMD128] = "simd128",
    [WAI_KERNELS_AVX512AMX] = "avx512amx",
};
#define N_KERNELS (sizeof(kernel_names) / sizeof(kernel_names[0]))

/* ASCII case-insensitive equality (the names are ASCII; no locale). */
static int name_eq(const char *a, const char *b)
{
    for (;; a++, b++) {
        int ca = (unsigned char)*a, cb = (unsigned char)*b;
        if (ca >= 'A' && ca <= 'Z') ca += 'a' - 'A';
        if (ca != cb) return 0;
        if (!ca) return 1;
    }
}

int wai_kernels_from_name(const char *name, WaiKernels *out)
{
    if (!name || !out) return WAI_ERR_INVALID_ARG;
    for (unsigned i = 0; i < N_KERNELS; i++) {
        if (name_eq(name, kernel_names[i])) {
            *out = (WaiKernels)i;
            return 0;
        }
    }
    return WAI_ERR_INVALID_ARG;
}

const char *wai_kernels_name(WaiKernels k)
{
    return (unsigned)k < N_KERNELS ? kernel_names[k] : "unknown";
}
