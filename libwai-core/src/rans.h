/* rANS entropy coder with escape/bypass values (spec section 7.1, 7.2). */
#ifndef WAI_RANS_H
#define WAI_RANS_H

#include "model.h"

#define WAI_RANS_L (UINT32_C(1) << 23)
#define WAI_RANS_PREC 16

typedef struct WaiRansDec {
    uint32_t x;
    const uint8_t *p, *end;
} WaiRansDec;

/* Reads the initial state. WAI_ERR_TRUNCATED (< 4 bytes), WAI_ERR_BITSTREAM (state range). */
int wai_rans_dec_init(WaiRansDec *d, const uint8_t *buf, size_t size);
/* One value coded with table t (escape and bypass included). 0, WAI_ERR_TRUNCATED or
 * WAI_ERR_BITSTREAM. */
int wai_rans_dec_value(WaiRansDec *d, const WaiTable *t, int32_t *value);
/* Final check: state == L and all bytes consumed, else WAI_ERR_BITSTREAM. */
int wai_rans_dec_finish(const WaiRansDec *d);

/* The encoder records (start, freq) pairs in order, then codes them in reverse at finish. */
typedef struct WaiRansEnc {
    uint32_t *sym;        /* start << 16 | (freq - 1), freq in 1..65536 */
    size_t n, cap;
    int err;
} WaiRansEnc;

void wai_rans_enc_init(WaiRansEnc *e);
/* Queue value v with table t. WAI_ERR_INVALID_ARG if |v| > WAI_VALUE_MAX. */
int wai_rans_enc_value(WaiRansEnc *e, const WaiTable *t, int32_t v);
/* Produce the stream (malloc'ed into *out). Frees the queue. */
int wai_rans_enc_finish(WaiRansEnc *e, uint8_t **out, size_t *size);
void wai_rans_enc_free(WaiRansEnc *e);

#endif
