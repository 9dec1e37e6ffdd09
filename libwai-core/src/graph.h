/* Running h_s and g_s (spec 4.3, 6) and the RGB8 output (spec 8). */
#ifndef WAI_GRAPH_H
#define WAI_GRAPH_H

#include "dsp.h"

typedef struct WaiShape { int c, h, w; } WaiShape;

/* Latent geometry for a picture (spec 3). Returns WAI_ERR_MODEL_INVALID / WAI_ERR_LIMIT. */
typedef struct WaiGeometry {
    uint32_t width, height, wp, hp;
    WaiShape z, y;        /* z: n_z x Hz x Wz; y: n_y x Hy x Wy */
    size_t pair_hs, pair_gs; /* spec 9.2: largest (input + output) elements of h_s, g_s */
} WaiGeometry;

int wai_geometry(const WaiModel *m, uint32_t width, uint32_t height, WaiGeometry *g);

/* Spec 9.2: *work, the bytes a decode of display rows [dy, dy + dh) needs besides the model on
 * dsp's path: g_s in stripes of dsp->stripe_rows (0: automatic) on the CPU kernels, or whole on
 * a backend with run_layers. WAI_ERR_LIMIT if it overflows size_t, WAI_ERR_NOMEM. */
int wai_decode_work(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, uint32_t dy,
                    uint32_t dh, size_t *work);

/* Run a layer list. in: shape `s`; *out receives a malloc'ed tensor of shape *os. The input is
 * not modified. Returns 0, WAI_ERR_MODEL_INVALID (a shape check of spec 4.3) or WAI_ERR_NOMEM. */
int wai_run_layers(const WaiDsp *dsp, const WaiLayer *layers, uint32_t n, const int32_t *in,
                   WaiShape s, int32_t **out, WaiShape *os);

/* Run one leaky ReLU or IGDN layer in place on x (shape s), on dsp's threads, as the stripes
 * run it (wai_run_layers copies its input first). Returns 0, or WAI_ERR_INVALID_ARG for
 * another layer type or a device backend. For wai-bench. */
int wai_run_layer_in_place(const WaiDsp *dsp, const WaiLayer *l, int32_t *x, WaiShape s);

/* h_s on z_hat (shape g->z): scale table index per y element [n_y][Hy][Wy] and the mean. */
int wai_hyper(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, const int32_t *z_hat,
              uint8_t *y_index, int32_t *y_mean);

/* The same with the quantisation steps of `rate` (spec 7.4, version 1.1): rate -1 is a WIH1
 * frame (every step 4096), else 0..n_rates-1 of a RATES model (WAI_ERR_INVALID_ARG if not). */
int wai_hyper_rate(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g,
                   const int32_t *z_hat, int rate, uint8_t *y_index, int32_t *y_mean);

/* The [n_y] quantisation / reconstruction steps of a rate; NULL for rate -1 or a model without
 * RATES (unit steps, 4096). The rate must be below n_rates. */
const uint32_t *wai_rate_qsteps(const WaiModel *m, int rate);
const uint32_t *wai_rate_rsteps(const WaiModel *m, int rate);

/* Spec 7.4 with the unit step (qs = 4096), and with a channel's quantisation step qs (Q12). */
int wai_scale_index(const WaiModel *m, int32_t scale_q12);
int wai_scale_index_q(const WaiModel *m, int32_t scale_q12, uint32_t qstep_q12);

/* g_s on y_hat, then RGB8 of the display window into rgb (stride bytes per row). */
int wai_synthesis(const WaiModel *m, const WaiDsp *dsp, const WaiGeometry *g, const int32_t *y_hat,
                  uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh, uint8_t *rgb, ptrdiff_t stride);

#endif
