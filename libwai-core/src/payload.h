/* WIH1 / WIH2 picture payloads (spec section 3, 7.3-7.5): decode to RGB8, encode from integer
 * latents. */
#ifndef WAI_PAYLOAD_H
#define WAI_PAYLOAD_H

#include "graph.h"

#define WAI_PAYLOAD_HEADER 20    /* WIH1 */
#define WAI_PAYLOAD_HEADER2 24   /* WIH2 (version 1.1): a u32 rate after the height */

/* Decode one payload to RGB8 (the display window given). */
int wai_payload_decode(const WaiModel *m, const WaiDsp *dsp, const uint8_t *buf, size_t size,
                       uint32_t width, uint32_t height,
                       uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh,
                       uint8_t *rgb, ptrdiff_t stride);

/* Encode: z_sym [n_z][Hz][Wz] values, y_sym [n_y][Hy][Wy] values (the decoder adds the means),
 * y_index the table index per y element from wai_hyper_rate() on the same z with the same rate
 * (wai_hyper() for rate -1). rate -1 writes WIH1 (unit steps); 0..n_rates-1 writes WIH2 with
 * that rate (a RATES model; else WAI_ERR_INVALID_ARG). */
int wai_payload_encode(const WaiModel *m, const WaiGeometry *g, int rate, const int32_t *z_sym,
                       const int32_t *y_sym, const uint8_t *y_index, uint8_t **out, size_t *size);

/* Spec 7.5: y_hat of value v in channel c at a rate (-1: WIH1) over the mean. */
int32_t wai_y_hat(const WaiModel *m, int rate, uint32_t c, int32_t v, int32_t mean);

/* z_hat from z values (spec 7.3), for encoders that run wai_hyper(). */
void wai_z_hat(const WaiModel *m, const WaiGeometry *g, const int32_t *z_sym, int32_t *z_hat);

#endif
