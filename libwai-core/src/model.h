/* WHM1 model files (spec section 4): parse, validate, serialise. */
#ifndef WAI_MODEL_H
#define WAI_MODEL_H

#include "common.h"

enum {
    WAI_LAYER_CONV = 1,
    WAI_LAYER_CONVT = 2,
    WAI_LAYER_LRELU = 3,
    WAI_LAYER_IGDN = 4,
};

typedef struct WaiLayer {
    int type;
    /* conv / convT */
    int cin, cout, kh, kw, stride, pad, out_pad;
    int16_t *weight;      /* [cout][cin][kh][kw] */
    uint8_t *shift;       /* [cout] */
    int64_t *bias;        /* [cout], at 2^(12 + shift[o]) */
    /* leaky ReLU */
    int32_t slope_q16;
    /* IGDN: channels in cin == cout */
    int gamma_shift;
    int64_t *beta;        /* [C], at 2^(12 + gamma_shift) */
    int32_t *gamma;       /* [C][C], at 2^gamma_shift */
    /* kernel-set data for one layer run (WaiDsp.prep_layer), set by wai_run_layers() in its
     * copy of the layer; NULL everywhere else (never owned by the layer) */
    const void *prep;
} WaiLayer;

/* WHM1 flags (spec 4, version 1.1) */
#define WAI_MODEL_RATES 1u
#define WAI_MAX_RATES 256
#define WAI_STEP_MAX (1u << 24)

typedef struct WaiTable {
    int32_t offset;       /* value of symbol 0 */
    uint32_t length;      /* in-range symbols; symbol `length` is the escape */
    uint16_t *freq;       /* [length + 1] */
    uint32_t *cdf;        /* [length + 2], cdf[0] = 0, cdf[length + 1] = 65536 */
} WaiTable;

typedef struct WaiModel {
    uint8_t sha256[32];
    char name[65];
    uint32_t n_z, n_y, pad_multiple, y_down, z_down;
    uint32_t n_hs, n_gs;
    WaiLayer *hs, *gs;
    int32_t *z_median_q12;     /* [n_z] */
    WaiTable *z_tables;        /* [n_z] */
    uint32_t n_scales;
    int32_t *thresholds_q12;   /* [n_scales - 1] */
    WaiTable *y_tables;        /* [n_scales] */
    uint32_t flags;            /* WAI_MODEL_RATES or 0 */
    uint32_t n_rates;          /* 0 without WAI_MODEL_RATES, else 1..256 */
    uint32_t *qstep_q12;       /* [n_rates][n_y]: quantisation steps (spec 7.4), 1..2^24 */
    uint32_t *rstep_q12;       /* [n_rates][n_y]: reconstruction steps (spec 7.5), 1..2^24 */
    size_t mem_size;           /* bytes this model holds in memory (for the budget) */
} WaiModel;

/* Parse and validate a model file (spec 4.1, 4.2, CRC, every bound). The model does not
 * reference buf afterwards. Errors: WAI_ERR_MODEL_INVALID (with WAI_ERR_CRC folded into it),
 * WAI_ERR_NOMEM. If msg is not NULL, a detail message is written (<= 256 bytes). */
int wai_model_parse(WaiModel **out, const uint8_t *buf, size_t size, char *msg, size_t msg_size);
void wai_model_free(WaiModel *m);

/* Serialise (for the model generator and the trained-model exporter); computes the CRC. The
 * caller owns *out (free()). The model must satisfy every rule the parser checks. */
int wai_model_serialize(const WaiModel *m, uint8_t **out, size_t *size);

/* Read a whole file into memory, refusing files above max_size. */
int wai_read_file(const char *path, size_t max_size, uint8_t **out, size_t *size);

/* Look for <dir>/<sha-hex>.whm in the ':'-separated dirs, then $WAI_MODEL_PATH, then the
 * installed model dir; verify SHA-256. Returns 0 with the file bytes, WAI_ERR_MODEL_NOT_FOUND,
 * or WAI_ERR_MODEL_INVALID (a file with that name whose hash differs). In each directory, after
 * the exact name, every other *.whm file is hashed too (registry.c has the full order);
 * WAI_ERR_MODEL_INVALID only when no file anywhere matches. Files above max_size (and above
 * 512 MiB in any case) are skipped unread; if nothing matched and one was skipped so,
 * WAI_ERR_LIMIT (the model may be that file: it does not fit the caller's budget). */
int wai_model_find(const char *dirs, const uint8_t sha[32], size_t max_size, uint8_t **out,
                   size_t *size);

#endif
