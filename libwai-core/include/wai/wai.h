/*
 * libwai-core public API: decoding WAI streams (integer-exact learned image/video codec).
 *
 * Model of use (dav1d style):
 *
 *     WaiSettings s;  wai_default_settings(&s);
 *     WaiDecoder *d;  if (wai_decoder_open(&d, &s) < 0) ...
 *     for each chunk of the stream:
 *         wai_send_data(d, buf, len);            // any chunking, raw .wai bytes
 *         while ((r = wai_get_picture(d, &pic)) == 0) { use(pic); wai_picture_unref(&pic); }
 *         if (r != WAI_ERR_AGAIN) report(wai_strerror(r));   // one frame failed; go on
 *     wai_decoder_close(&d);
 *
 * All functions returning int return 0 (or a positive count where stated) on success and a
 * negative WAI_ERR_* code on failure. The library never aborts the host process.
 */
#ifndef WAI_WAI_H
#define WAI_WAI_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "wai/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WAI_API __declspec(dllexport)
#elif defined(__GNUC__)
#define WAI_API __attribute__((visibility("default")))
#else
#define WAI_API
#endif

/** Error codes: negative errno values, so they can pass through errno-style callers. */
enum {
    WAI_OK = 0,
    WAI_ERR_AGAIN = -EAGAIN,                  /**< no picture yet: send more data */
    WAI_ERR_INVALID_ARG = -EINVAL,            /**< a bad argument from the caller */
    WAI_ERR_NOMEM = -ENOMEM,                  /**< an allocation failed */
    WAI_ERR_BITSTREAM = -EBADMSG,             /**< a field breaks the format's rules */
    WAI_ERR_TRUNCATED = -ENODATA,             /**< data ends inside a unit or rANS stream */
    WAI_ERR_CRC = -EILSEQ,                    /**< a CRC does not match */
    WAI_ERR_UNSUPPORTED = -ENOTSUP,           /**< unknown version, flags or feature */
    WAI_ERR_MODEL_NOT_FOUND = -ENOENT,        /**< no model with the stream's SHA-256 */
    WAI_ERR_MODEL_INVALID = -EPROTO,          /**< a model file is malformed or its hash differs */
    WAI_ERR_LIMIT = -E2BIG,                   /**< beyond the max picture size or memory budget */
    WAI_ERR_IO = -EIO,                        /**< reading a file failed */
    WAI_ERR_NO_DEVICE = -ENODEV,              /**< a requested device (GPU) is not available */
    WAI_ERR_INTERNAL = -ENOTRECOVERABLE,      /**< a bug: please report */
};

/** The run-time library version as (major << 16) | (minor << 8) | patch, and as text. */
WAI_API unsigned wai_version(void);
WAI_API const char *wai_version_string(void);

/** A short English message for a WAI_ERR_* code (never NULL). */
WAI_API const char *wai_strerror(int err);

/** Kernel sets. AUTO picks the fastest the CPU supports; REFERENCE is the specification. */
typedef enum WaiKernels {
    WAI_KERNELS_AUTO = 0,
    WAI_KERNELS_REFERENCE = 1,
    WAI_KERNELS_C = 2,
    WAI_KERNELS_AVX2 = 3,
    WAI_KERNELS_AVX512 = 4,
    WAI_KERNELS_NEON = 5,
    WAI_KERNELS_AVX512VNNI = 6, /**< AVX-512 with VNNI (16-bit dot products) for conv/convT */
    WAI_KERNELS_SIMD128 = 7,    /**< WebAssembly SIMD128 (the WebAssembly build only) */
    WAI_KERNELS_AVX512AMX = 8,  /**< AVX512VNNI with AMX-INT8 tiles for conv/convT (x86-64 Linux) */
} WaiKernels;

/** Parse "auto", "reference", "c", "avx2", "avx512", "neon", "avx512vnni", "simd128",
 *  "avx512amx"; returns WAI_ERR_INVALID_ARG otherwise. */
WAI_API int wai_kernels_from_name(const char *name, WaiKernels *out);
WAI_API const char *wai_kernels_name(WaiKernels k);

/** Level of a message passed to WaiSettings.log_callback. */
typedef enum WaiLogLevel {
    WAI_LOG_ERROR = 0,      /**< the detail of an error code the call returns */
} WaiLogLevel;

/**
 * Receives each error's detailed message (the text wai_decoder_last_error() then returns, e.g.
 * "corrupt bitstream: frame 3: y stream ends early"), including why a wai_decoder_open() failed,
 * which leaves no decoder to ask (a Vulkan driver's reason, a bad WAI_KERNELS value, bad
 * settings). Called synchronously from the API call that fails, on the caller's thread; msg is
 * valid during the call only.
 */
typedef void (*WaiLogCallback)(void *opaque, int level, const char *msg);

typedef enum WaiDevice {
    WAI_DEVICE_CPU = 0,
    WAI_DEVICE_VULKAN = 1,
} WaiDevice;

/** Decoder settings. Always initialise with wai_default_settings(). */
typedef struct WaiSettings {
    uint32_t max_width;       /**< largest picture width accepted; default 16384 */
    uint32_t max_height;      /**< largest picture height accepted; default 16384 */
    uint64_t max_memory;      /**< memory budget in bytes for one decode; default 4 GiB
                                   (SIZE_MAX / 2 on 32-bit builds); also the largest model
                                   file the model search reads */
    const char *model_path;   /**< extra model directories, ':'-separated, searched first;
                                   default NULL. Then $WAI_MODEL_PATH, then the installed
                                   $datadir/wai/models. The string is copied. */
    int allow_embedded_model; /**< use a model embedded in the stream; default 1 */
    WaiKernels kernels;       /**< default AUTO; the environment variable WAI_KERNELS
                                   overrides AUTO (not an explicit choice) */
    int threads;              /**< 0 = automatic (default; WAI_THREADS overrides), else count */
    WaiDevice device;         /**< default CPU */
    int device_index;         /**< which device of its kind; default 0 */
    WaiLogCallback log_callback; /**< error details as they happen; default NULL (none) */
    void *log_opaque;         /**< passed to log_callback; default NULL */
    int stripe_rows;          /**< output rows the synthesis computes at a time (and the
                                   hyper-synthesis stripe_rows / y_down rows of the latent, at
                                   least one): memory grows with the picture's width times
                                   this, not its area. 0 = automatic (default;
                                   $WAI_STRIPE_ROWS overrides): a height that keeps the
                                   stripes within about 48 MiB (8 MiB for the
                                   hyper-synthesis). Any value gives the same pictures. */
    uint8_t reserved[64 - 2 * sizeof(void *) - sizeof(int)]; /**< zero; for future fields
                                   without an ABI break (log_callback, log_opaque and
                                   stripe_rows took 2 pointers and an int of it) */
} WaiSettings;

WAI_API void wai_default_settings(WaiSettings *s);

/** What a sequence header says. */
typedef struct WaiSequenceInfo {
    uint32_t width, height;                   /**< coded picture size */
    uint32_t disp_x, disp_y, disp_w, disp_h;  /**< display window (the output size) */
    uint32_t fps_num, fps_den;
    uint32_t frame_count;                     /**< 0 = unknown */
    uint8_t colour_primaries, transfer, matrix, full_range;
    uint8_t version_major, version_minor;
    uint8_t model_sha256[32];
    uint32_t model_size;                      /**< embedded model bytes, 0 = none */
    uint32_t unit_size;                       /**< bytes of the sequence header unit */
} WaiSequenceInfo;

/** Parse a sequence header unit at the start of buf (CRC checked). */
WAI_API int wai_parse_sequence_header(const uint8_t *buf, size_t size, WaiSequenceInfo *info);

typedef enum WaiUnitType {
    WAI_UNIT_SEQUENCE_HEADER = 1,
    WAI_UNIT_FRAME = 2,
} WaiUnitType;

typedef struct WaiUnitInfo {
    WaiUnitType type;
    size_t offset;          /**< where the unit starts in buf (bytes before it are not a unit) */
    size_t size;            /**< total bytes of the unit */
    uint32_t frame_index;   /**< frame units only */
} WaiUnitInfo;

/**
 * Find the next unit in buf, for parsers and demuxers. Returns 0 with *u filled if a complete
 * unit with a valid CRC starts at u->offset. Returns WAI_ERR_AGAIN if more data is needed; then
 * u->offset bytes can be dropped (they cannot start a unit) and u->size, if nonzero, is the total
 * the unit will need. Units longer than max_unit_size are not accepted (resync continues past
 * them). Never reads beyond buf + size.
 */
WAI_API int wai_find_unit(const uint8_t *buf, size_t size, size_t max_unit_size, WaiUnitInfo *u);

/** A decoded picture: interleaved RGB8, the display window of the coded picture. */
typedef struct WaiPicture {
    uint8_t *data;          /**< disp_h rows of stride bytes, each disp_w * 3 used */
    ptrdiff_t stride;
    uint32_t width, height; /**< the display window size */
    uint32_t frame_index;
    int64_t pts_num;        /**< presentation time = pts_num / pts_den seconds */
    int64_t pts_den;
    void *priv;             /**< owned by the library */
} WaiPicture;

WAI_API void wai_picture_unref(WaiPicture *p);

typedef struct WaiDecoder WaiDecoder;

WAI_API int wai_decoder_open(WaiDecoder **out, const WaiSettings *s);
WAI_API void wai_decoder_close(WaiDecoder **d);

/**
 * Register a model from memory (copied). Models registered this way are searched before the
 * model path. Returns WAI_ERR_MODEL_INVALID if it does not parse.
 */
WAI_API int wai_decoder_add_model(WaiDecoder *d, const uint8_t *buf, size_t size);

/**
 * Feed stream bytes in any chunking. The data is copied, all of it or none of it. Returns:
 * - 0: taken;
 * - WAI_ERR_AGAIN: the buffer is full; nothing was taken: fetch pictures with wai_get_picture()
 *   until it returns WAI_ERR_AGAIN, then send the same data again (it then fits);
 * - WAI_ERR_LIMIT: this one chunk is larger than a call may ever send (half the buffer, below);
 *   nothing was taken: send it in smaller pieces;
 * - another error for a sequence header that cannot be used (bad header, model not found:
 *   nothing decodes then); the data was accepted.
 * The buffer holds at most B = max(4 MiB, min(max_memory / 4, 1 GiB)) bytes; one unit may use
 * at most B / 2 (a larger unit is refused with WAI_ERR_LIMIT by wai_get_picture and skipped),
 * and one call may send at most B / 2, so after the pictures are fetched a chunk always fits.
 * A caller that fetches every picture after each send of at most 1 MiB never sees AGAIN.
 */
WAI_API int wai_send_data(WaiDecoder *d, const uint8_t *data, size_t size);

/**
 * Decode the next complete frame unit. Returns 0 and a picture, WAI_ERR_AGAIN if no complete
 * unit is buffered, or the error of that one unit (the unit is dropped; call again for the next).
 */
WAI_API int wai_get_picture(WaiDecoder *d, WaiPicture *pic);

/** Signal the end of the stream: a partial unit left in the buffer then reports TRUNCATED. */
WAI_API int wai_send_eos(WaiDecoder *d);

/** Drop buffered data (seek/flush); the sequence header and the model stay. */
WAI_API void wai_decoder_flush(WaiDecoder *d);

/** The sequence header once one was sent; WAI_ERR_AGAIN before. */
WAI_API int wai_decoder_get_sequence_info(WaiDecoder *d, WaiSequenceInfo *info);

/** The message of the last error this decoder returned, with detail (never NULL). */
WAI_API const char *wai_decoder_last_error(WaiDecoder *d);

#ifdef __cplusplus
}
#endif

#endif
