/* The model loader on arbitrary bytes (the CRC is fixed up half the time so the deeper checks
 * are reached). */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (16u << 20)) return 0;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (size >= 12 && (data[size / 2] & 1)) {
        wai_wr32(copy + 8, (uint32_t)size);                       /* file_size */
        wai_wr32(copy + size - 4, wai_crc32(copy, size - 4));
    }
    WaiModel *m = NULL;
    char msg[256];
    if (wai_model_parse(&m, copy, size, msg, sizeof(msg)) == 0) wai_model_free(m);
    free(copy);
    return 0;
}
