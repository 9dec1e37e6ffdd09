/*
 * libwai-core public API: encoding WAI streams.
 *
 *     WaiEncoderSettings s;  wai_encoder_default_settings(&s);
 *     s.model_dir = "models"; s.quality = 3;     // wai-q3.whm + wai-q3.ana
 *     WaiEncoder *e;  if (wai_encoder_open(&e, &s) < 0) ...
 *     for each picture: wai_encode_picture(e, rgb, stride, width, height);
 *     uint8_t *stream; size_t size;  wai_encoder_finish(e, &stream, &size);  ... free(stream);
 *     wai_encoder_close(&e);
 *
 * The analysis transforms (g_a, h_a) run in float from the `.ana` file (informative format,
 * docs/spec/wai-encoder-weights.md); the hyper-synthesis h_s runs in the decoder's integers,
 * so a conforming decoder reproduces the encoder's tables and means exactly. The same input,
 * model and library binary give the same bytes.
 *
 * Model search: with settings.model_file unset, quality N uses the first directory that
 * defines it, searching
 *   1. settings.model_dir when it is set (a directory, or ':'-separated directories) and
 *      nothing else, or, when it is NULL,
 *   2. each directory of $WAI_MODEL_PATH (':'-separated), then
 *   3. the installed $datadir/wai/models (fixed when the library is built).
 * A directory defines quality N with the pair wai-qN.whm + wai-qN.ana, or else with a quality
 * file wai-qN.rate: a text file (at most 4096 bytes) that makes quality N a rate of a
 * variable-rate model pair of the same directory, e.g.
 *     # quality 10: rate 9 of the upper ladder's model
 *     model wai-vr1          (the pair wai-vr1.whm + wai-vr1.ana)
 *     rate 9                 (0..n_rates-1 of that model)
 * ("model NAME" and "rate K" once each; NAME of letters, digits, '-', '_', '.'; '#' starts a
 * comment). A quality file that is unusable (unparsable, its pair missing) ends the search with
 * WAI_ERR_MODEL_NOT_FOUND naming the file. wai_encoder_available_qualities() lists the
 * qualities this search finds.
 */
#ifndef WAI_ENCODER_H
#define WAI_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "wai/wai.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct WaiEncoder WaiEncoder;

/** Qualities are 1..WAI_ENCODER_MAX_QUALITY; a model directory defines some of them
 *  (wai_encoder_available_qualities() lists them). 16 leaves room above the shipped ladder
 *  for more rates of a variable-rate model. */
#define WAI_ENCODER_MAX_QUALITY 16

/** Encoder settings. Always initialise with wai_encoder_default_settings(). */
typedef struct WaiEncoderSettings {
    const char *model_dir;     /**< directory (or ':'-separated directories) holding
                                    wai-q<quality>.whm and .ana, searched alone; default NULL:
                                    $WAI_MODEL_PATH, then the installed $datadir/wai/models */
    const char *model_file;    /**< explicit WHM1 file (overrides model_dir/quality); NULL */
    const char *analysis_file; /**< explicit .ana file, with model_file; NULL */
    int quality;               /**< 1..WAI_ENCODER_MAX_QUALITY; default 3 (with a target:
                                    the search's first candidate, or the nearest available) */
    uint32_t fps_num, fps_den; /**< frame rate written to the sequence header; default 25/1 */
    int embed_model;           /**< embed the WHM1 file in the sequence header; default 0 */
    int threads;               /**< threads of the float analysis and the integer h_s; 0 =
                                    automatic (default); any count gives the same stream */
    uint64_t max_memory;       /**< budget in bytes for the float analysis of one picture
                                    (g_a in its stripes with y, then h_a on y), checked before
                                    it allocates: automatic stripes (stripe_rows 0) shrink
                                    until they fit, the same stream; a larger need fails
                                    wai_encode_picture with WAI_ERR_LIMIT; 0 = the default,
                                    4 GiB (on 32-bit builds SIZE_MAX / 2) */
    int mean_correction;       /**< extra passes (0..4) of colour-mean correction: the encoder
                                    decodes its own frame and, where a channel's mean is off the
                                    picture's by more than half a level, codes the picture
                                    again with that channel shifted by the error, keeping the
                                    pass whose worst channel-mean error is smallest; 0 = off,
                                    default 2 */
    int stripe_rows;           /**< picture rows the float analysis works on at a time,
                                    rounded to whole latent rows (the model's y_down, at least
                                    one): memory grows with the width times this, not the
                                    area; 0 = automatic (default: stripes of about 48 MiB).
                                    Any value gives the same stream. */
    /* Rate control: with a target set, the encoder chooses each picture's quality itself,
     * among the qualities the model search finds (model_file must be unset): it codes the
     * picture at the candidate qualities (a search of usually 2-4 of them) and keeps one.
     * The frame it keeps is byte for byte the frame a plain encode at that quality makes,
     * and a picture whose quality differs from the previous picture's gets a sequence header
     * naming its model before its frame unit (the format's later sequence headers, spec 2.4).
     * At most one target; a target no quality meets is met as closely as possible (for a
     * size the smallest frame tried: the lowest quality, or the quality in force where a
     * change's header costs more; for a PSNR the highest quality) and reported by
     * wai_encoder_last_frame(), not an error. */
    uint64_t target_frame_bytes; /**< 0 (default): off. Else the largest quality whose frame
                                    takes at most this many bytes: the frame unit (20 bytes +
                                    the payload) plus the sequence header a change of quality
                                    puts before it (the stream's first header, written by
                                    wai_encoder_finish() or wai_encoder_header(), is not
                                    counted). */
    double target_psnr;        /**< 0 (default): off. Else the smallest quality whose decoded
                                    picture reaches this PSNR in dB (RGB8, all three channels,
                                    peak 255); each candidate is decoded to measure it. */
    WaiKernels kernels;        /**< kernel set of the float analysis and of the integer
                                    decoding the encoder does (the hyper-synthesis, the mean
                                    correction's decode); default WAI_KERNELS_AUTO. Every set
                                    gives the same stream; an explicit set this CPU lacks fails
                                    wai_encoder_open with WAI_ERR_UNSUPPORTED. */
    int32_t rate;              /**< -1 (default): WIH1 frames (unit quantisation steps, every
                                    model), or a quality file's rate. 0..n_rates-1: every frame at that rate of a
                                    variable-rate model (format 1.1, a WHM1 with a RATES table):
                                    y quantised with the rate's per-channel qstep, WIH2 frames
                                    naming the rate. A rate the model lacks (no table, or
                                    rate >= n_rates), a rate below -1, or a rate with a
                                    rate-control target fails wai_encoder_open with
                                    WAI_ERR_INVALID_ARG (wai_encoder_last_error(NULL) says
                                    why). */
    uint8_t reserved[24];      /**< zero */
} WaiEncoderSettings;

WAI_API void wai_encoder_default_settings(WaiEncoderSettings *s);

/** Load the model pair. Errors: WAI_ERR_INVALID_ARG (also: settings.rate >= 0 with a quality
 *  that a quality file makes a rate, or a quality file's rate the model lacks),
 *  WAI_ERR_MODEL_NOT_FOUND (no directory of the search path defines the quality, or its
 *  quality file is unusable; see wai_encoder_available_qualities()),
 *  WAI_ERR_IO (a file cannot be read), WAI_ERR_MODEL_INVALID (a malformed file, or an .ana not
 *  made for that WHM1), NOMEM. wai_encoder_last_error(NULL) says which files or directories. */
WAI_API int wai_encoder_open(WaiEncoder **enc, const WaiEncoderSettings *s);
/*  With a target, every quality the search finds is opened (WAI_ERR_MODEL_NOT_FOUND when it
 *  finds none), and WAI_ERR_INVALID_ARG means also: both targets set, target_psnr negative
 *  or not a number, or a target with settings.model_file. */

/** Change the target of an encoder opened with one (rate control), from the next picture on:
 *  the same rules as the settings' fields (one of them set, target_psnr a number >= 0).
 *  For a caller that knows the budget only later, e.g. a size per frame that depends on the
 *  picture size, or a bitrate changed while a stream is encoded. Errors: WAI_ERR_INVALID_ARG
 *  (an encoder opened without a target, or a target breaking those rules). */
WAI_API int wai_encoder_set_target(WaiEncoder *enc, uint64_t frame_bytes, double psnr);

/** The qualities for which the model search (above; model_dir as in WaiEncoderSettings, NULL
 *  for $WAI_MODEL_PATH and the installed directory) finds a pair wai-q<N>.whm + wai-q<N>.ana or
 *  a usable quality file wai-q<N>.rate: writes the first min(count, max) of them, ascending, to
 *  list and returns count (0 when there are none). Only the files' presence is checked (regular
 *  files; a quality file is parsed), not the models' contents.
 *  Errors: WAI_ERR_INVALID_ARG (max < 0, or list NULL with max > 0). Example:
 *      int q[WAI_ENCODER_MAX_QUALITY], n = wai_encoder_available_qualities(NULL, q, WAI_ENCODER_MAX_QUALITY); */
WAI_API int wai_encoder_available_qualities(const char *model_dir, int *list, int max);

/** Encode one picture (interleaved RGB8, height rows of stride bytes) as the next frame. Every
 *  picture of a stream has the size of the first (else WAI_ERR_INVALID_ARG). */
WAI_API int wai_encode_picture(WaiEncoder *enc, const uint8_t *rgb, ptrdiff_t stride,
                               uint32_t width, uint32_t height);

/** The whole stream so far (sequence header with frame_count, then the frames); *out is
 *  malloc'ed, the caller free()s it. At least one picture must have been encoded. */
WAI_API int wai_encoder_finish(WaiEncoder *enc, uint8_t **out, size_t *size);

/* ---- Streaming use (e.g. a GStreamer element): units as they are made ----
 *
 *     wai_encoder_header(e, w, h, 0, &hdr, &n);              // "WAIS" unit, frame_count 0
 *     for each picture: wai_encode_picture_unit(e, rgb, stride, w, h, &unit, &n);  // "WAIF"
 *
 * The header followed by the units, in order, is a valid stream. Units made this way are not
 * kept: after the first one, wai_encoder_finish() fails (WAI_ERR_INVALID_ARG). */

/** The sequence header unit for pictures of width x height with this frame_count (0 = unknown),
 *  using the settings' frame rate and the model; *out is malloc'ed, the caller free()s it.
 *  With a rate-control target, the model is, before the first picture, that of the available
 *  quality nearest settings.quality (ties to the lower), which the first picture's unit then
 *  changes if it needs another; after a picture, that of the stream's first header (the
 *  first picture's quality when no header was asked for before it): so a caller can encode
 *  the first picture, then ask for the header and write it first, and save the change.
 *  Errors: WAI_ERR_INVALID_ARG (bad arguments, or a size other than that of the pictures
 *  already encoded), WAI_ERR_LIMIT or another code for a size the model cannot code, NOMEM. */
WAI_API int wai_encoder_header(WaiEncoder *enc, uint32_t width, uint32_t height,
                               uint32_t frame_count, uint8_t **out, size_t *size);

/** Like wai_encode_picture(), but returns the frame unit ("WAIF", frame_index = the number of
 *  pictures encoded before) in *unit (malloc'ed, the caller free()s it) instead of keeping it.
 *  With a rate-control target, *unit starts with a sequence header unit when the picture's
 *  quality differs from the previous picture's (for the first picture: from the quality of
 *  wai_encoder_header()'s header, the available quality nearest settings.quality). */
WAI_API int wai_encode_picture_unit(WaiEncoder *enc, const uint8_t *rgb, ptrdiff_t stride,
                                    uint32_t width, uint32_t height, uint8_t **unit,
                                    size_t *size);

/** What the encoder did with the last picture (wai_encoder_last_frame()). */
typedef struct WaiFrameStats {
    int quality;        /**< the quality whose model coded it; 0 with settings.model_file */
    int target_met;     /**< 1 when it meets the settings' target (always, without one); 0
                             when no quality does and the nearest was taken */
    uint64_t bytes;     /**< bytes it added to the stream: its frame unit, and the sequence
                             header put before it on a change of quality */
    double psnr;        /**< its PSNR in dB (RGB8, peak 255; INFINITY when lossless) when the
                             encoder measured it (settings.target_psnr), else -1 */
    int candidates;     /**< qualities coded to choose it (1 without a target) */
    int32_t rate;       /**< the rate it was coded at (settings.rate or the quality file's;
                             -1: a WIH1 frame) */
    uint8_t reserved[24];
} WaiFrameStats;

/** The stats of the last picture encoded. Errors: WAI_ERR_INVALID_ARG (no picture yet). */
WAI_API int wai_encoder_last_frame(WaiEncoder *enc, WaiFrameStats *stats);

/** Bytes of the last encoded frame's payload, split into z and y streams (for statistics). */
WAI_API int wai_encoder_last_sizes(WaiEncoder *enc, size_t *z_bytes, size_t *y_bytes);

/** The message of the last error (never NULL); with enc NULL, that of the last failed
 *  wai_encoder_open() in this thread. */
WAI_API const char *wai_encoder_last_error(WaiEncoder *enc);

WAI_API void wai_encoder_close(WaiEncoder **enc);

#ifdef __cplusplus
}
#endif

#endif
