/* Whole decode through the public API with small limits: any input, any chunking. */
#include <stdlib.h>
#include <string.h>

#include <wai/wai.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    WaiSettings s;
    wai_default_settings(&s);
    s.max_width = 512;
    s.max_height = 512;
    s.max_memory = (uint64_t)256 << 20;
    s.kernels = WAI_KERNELS_AUTO;
    WaiDecoder *d = NULL;
    if (wai_decoder_open(&d, &s) < 0) return 0;
    /* the first byte picks a chunk size so chunked parsing is exercised too */
    size_t chunk = size ? (size_t)data[0] * 97 + 1 : 1;
    int frames = 0;
    for (size_t off = 0; off < size && frames < 8;) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (wai_send_data(d, data + off, n) < 0 && off == 0) { /* header refused: still drain */ }
        off += n;
        WaiPicture p;
        int r;
        while (frames < 8 && (r = wai_get_picture(d, &p)) != WAI_ERR_AGAIN) {
            if (r == 0) {
                /* touch every output byte: ASan catches a short buffer */
                volatile uint8_t acc = 0;
                for (uint32_t y = 0; y < p.height; y++)
                    for (uint32_t x = 0; x < p.width * 3; x++) acc ^= p.data[y * p.stride + x];
                (void)acc;
                wai_picture_unref(&p);
            }
            frames++;
        }
    }
    wai_send_eos(d);
    WaiPicture p;
    if (wai_get_picture(d, &p) == 0) wai_picture_unref(&p);
    wai_decoder_close(&d);
    return 0;
}
