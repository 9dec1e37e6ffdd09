/* The rANS value decoder: the input gives a table, then a stream. Every exit is a defined code
 * and no read leaves the buffer. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "rans.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    uint32_t len = 1 + (uint32_t)(data[0] | (data[1] & 3) << 8);   /* 1..1024 symbols */
    int32_t offset = (int32_t)data[2] - 128;
    data += 3;
    size -= 3;
    WaiTable t;
    uint16_t *freq = malloc((len + 1) * sizeof(*freq));
    uint32_t *cdf = malloc((len + 2) * sizeof(*cdf));
    if (!freq || !cdf) { free(freq); free(cdf); return 0; }
    /* a valid table: spread 65536 over len + 1 symbols, skewed by the input */
    uint32_t left = 65536;
    for (uint32_t i = 0; i <= len; i++) {
        uint32_t rest = len - i;               /* symbols after this one need >= 1 each */
        uint32_t f = i == len ? left : 1 + (size ? data[i % size] : 0) * (left - rest - 1) / 4096;
        if (f > left - rest) f = left - rest;
        freq[i] = (uint16_t)f;
        left -= f;
    }
    cdf[0] = 0;
    for (uint32_t i = 0; i <= len; i++) cdf[i + 1] = cdf[i] + freq[i];
    t.offset = offset;
    t.length = len;
    t.freq = freq;
    t.cdf = cdf;
    if (cdf[len + 1] == 65536 && freq[len] >= 1) {
        uint8_t *stream = malloc(size ? size : 1);   /* exact-size copy: overreads trap */
        if (stream) {
            memcpy(stream, data, size);
            WaiRansDec d;
            if (wai_rans_dec_init(&d, stream, size) == 0) {
                int32_t v;
                for (int i = 0; i < 4096; i++)
                    if (wai_rans_dec_value(&d, &t, &v) < 0) break;
                (void)wai_rans_dec_finish(&d);
            }
            free(stream);
        }
    }
    free(freq);
    free(cdf);
    return 0;
}
