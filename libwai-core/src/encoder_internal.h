/* The encoder's internals the tests reach (not the public API, wai/encoder.h). */
#ifndef WAI_ENCODER_INTERNAL_H
#define WAI_ENCODER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "wai/encoder.h"

/* The picture's g_a output y and h_a output z as the encoder's float analysis computes them
 * (no mean correction), malloc'ed into *y and *z (the caller frees them), with their element
 * counts. Returns 0 or a negative WAI_ERR_* (then nothing is allocated). */
int wai_encoder_analysis_floats(WaiEncoder *e, const uint8_t *rgb, ptrdiff_t stride, uint32_t w,
                                uint32_t h, float **y, size_t *ny, float **z, size_t *nz);

#endif
