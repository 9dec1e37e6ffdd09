/* Unit scanning and sequence header parsing on arbitrary bytes. */
#include <wai/wai.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    WaiSequenceInfo info;
    (void)wai_parse_sequence_header(data, size, &info);
    size_t off = 0;
    for (int guard = 0; off < size && guard < 100000; guard++) {
        WaiUnitInfo u;
        int r = wai_find_unit(data + off, size - off, 1 << 20, &u);
        if (r == 0) {
            if (u.size == 0) break;
            off += u.offset + u.size;
        } else {
            if (u.offset == 0) break; /* need more data than there is */
            off += u.offset;
        }
    }
    return 0;
}
