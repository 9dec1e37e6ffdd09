/* Kernel function table (dav1d style): reference kernels are the executable specification
 * (spec section 5); fast kernels fill the same table and must give the same integers. */
#ifndef WAI_DSP_H
#define WAI_DSP_H

#include "model.h"

/* One call of the encoder's float analysis kernel (ana_conv below): for output channels
 * n < no and columns x < nx,
 *     out[n * ostride + x] = bias[n], then for i < cin, then for t < ntaps, in that order:
 *     out[...] = out[...] + w[((size_t)i * kk + widx[t]) * wstride + n] * in[i * cstride + toff[t] + x]
 * one float multiply and one float add per term, or one fused multiply-add: the same float,
 * because every weight and input the encoder hands a kernel is an analysis operand
 * (wai_ana_operand below), so every product is exact. Every element is then the same float
 * whichever kernel set, split or vector width computes it. A kernel may read up to
 * WAI_ANA_SLACK floats past in's last element read and weights and biases up to
 * WAI_ANA_NO_MAX channels past no (the encoder pads them), and writes nothing but out's
 * no x nx elements. */
#define WAI_ANA_SLACK 64
#define WAI_ANA_NO_MAX 32
typedef struct WaiAnaConv {
    const float *in;
    size_t cstride;
    int cin, ntaps, kk;
    const ptrdiff_t *toff;  /* [ntaps] */
    const int *widx;        /* [ntaps], each < kk */
    const float *w;         /* at the first output channel */
    size_t wstride;
    const float *bias;      /* [no + WAI_ANA_NO_MAX] */
    int no, nx;
    float *out;
    size_t ostride;
} WaiAnaConv;

/* Every tensor is planar int32 [c][h][w], contiguous. Kernels compute output rows
 * [oy0, oy1) of every output channel; a thread pool splits work by row ranges. conv and convT
 * write row y of output plane o at out + (o * oh + y) * ow and nothing else: oh is the planes'
 * stride in rows, used for nothing more, and oy1 may exceed it (graph.c's stripes pass
 * oh = oy1 - oy0, so the rows they keep are stored contiguously from out + oy0 * ow). */
typedef struct WaiDsp {
    void (*conv)(const WaiLayer *l, const int32_t *in, int ih, int iw,
                 int32_t *out, int oh, int ow, int oy0, int oy1);
    void (*convt)(const WaiLayer *l, const int32_t *in, int ih, int iw,
                  int32_t *out, int oh, int ow, int oy0, int oy1);
    /* in place; rows [y0, y1) of a C x h x w tensor */
    void (*igdn)(const WaiLayer *l, int32_t *x, int h, int w, int y0, int y1);
    /* in place over n elements */
    void (*lrelu)(int32_t *x, size_t n, int32_t slope_q16);
    /* The encoder's float conv and GDN sums (WaiAnaConv; not normative: the encoder's
     * stream is not specified, but it is the same for every set, thread count and stripe
     * height). Every table has one; the reference's is wai_ana_conv_ref. */
    void (*ana_conv)(const WaiAnaConv *a);

    /* Optional per-layer preparation (packed weights) shared by the row bands of one layer
     * run: wai_run_layers() calls prep_layer(l) once before a layer's bands and hands the
     * result to the kernels in a copy of the layer (WaiLayer.prep), then prep_free() after.
     * NULL (from prep_layer, or no hook): the kernels prepare per call, with the same result.
     * A kernel ignores a preparation it did not make or made for another layer. */
    void *(*prep_layer)(const WaiLayer *l);
    void (*prep_free)(void *prep);

    /* Optional whole-graph backend (a GPU): when set, wai_run_layers() hands the layer list to
     * it after the shape checks; it must produce the same integers as the kernels above.
     * shape is {c, h, w}; *out is malloc'ed by the backend, as wai_run_layers() documents. */
    int (*run_layers)(void *backend, const WaiLayer *layers, uint32_t n, const int32_t *in,
                      const int shape[3], int32_t **out, int out_shape[3]);
    void *backend;

    /* Optional, with run_layers: g_s and its RGB8 output (spec 8) in one go, so that only the
     * bytes of the display window come back from the device. wai_synthesis() calls it after
     * its own checks (window inside the picture, stride >= 3 dw, the list's output shape is
     * 3 x Hp x Wp); it writes the 3 dw bytes of each of the dh rows of rgb (row k at
     * rgb + k stride) and nothing else. Returns 0 when done, a negative WAI_ERR_* on error,
     * or 1 if it declines (beyond the device's limits): wai_synthesis() then runs its usual
     * path (run_layers, then the CPU conversion), with the same bytes. */
    int (*synthesis_rgb)(void *backend, const WaiLayer *layers, uint32_t n, const int32_t *in,
                         const int shape[3], uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh,
                         uint8_t *rgb, ptrdiff_t stride);

    /* Threads wai_run_layers() splits a layer's output rows over (fast path and reference
     * alike: any row split gives the same tensor); 0 or 1: the calling thread only. Set by
     * wai_dsp_set_threads() after wai_dsp_init(), which leaves it 0. */
    int threads;

    /* g_s output rows per stripe of wai_synthesis() on the CPU kernels (graph.c): 0 picks a
     * height that bounds the stripes' memory; any height gives the same bytes. Set by the
     * decoder after wai_dsp_init(), which leaves it 0. */
    int stripe_rows;
} WaiDsp;

void wai_dsp_init_ref(WaiDsp *dsp);
void wai_ana_conv_ref(const WaiAnaConv *a);

/* An analysis operand: v rounded to 12 significant bits (to nearest, ties to even), 0 where
 * |v| < 2^-60, and at most 2^60 in magnitude (infinities and NaNs, which the encoder never
 * has, are left as they are). The product of two such floats has at most 24 significant bits
 * and a magnitude of 0 or within [2^-120, 2^120]: a normal float, exact. So a fused
 * multiply-add gives the same float as the product rounded and then added, and the kernel
 * sets may fuse or not (the encoder's float analysis, not normative: the stream is the same
 * for every set). */
#if defined(__GNUC__)
#define WAI_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define WAI_ALWAYS_INLINE inline
#endif
/* branch-free, so that loops over arrays of them vectorise */
static WAI_ALWAYS_INLINE float wai_ana_operand(float v)
{
    uint32_t u, a, r;
    memcpy(&u, &v, 4);
    a = u & 0x7fffffffu;
#ifdef WAI_PLANTED_FAULT_ANA_OPERAND_BITS
    r = (a + 0x3ffu + ((a >> 11) & 1)) & ~0x7ffu; /* planted: 13 significant bits */
#else
    r = (a + 0x7ffu + ((a >> 12) & 1)) & ~0xfffu; /* 11 stored bits, the 12th implicit */
#endif
    r = r > 0x5d800000u ? 0x5d800000u : r;         /* 2^60 (biased exponent 187) */
    r |= u & 0x80000000u;
    r = a < 0x21800000u ? 0u : r;                  /* below 2^-60 (biased exponent 67) */
    u = a >= 0x7f800000u ? u : r;
    memcpy(&v, &u, 4);
    return v;
}

/* v[0..n) as analysis operands, in place. */
static inline void wai_ana_operands(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) v[i] = wai_ana_operand(v[i]);
}

/* Select a table for a kernel set; REFERENCE and any set the CPU lacks fall back as
 * documented. Returns WAI_ERR_UNSUPPORTED if an explicit set is not available here. */
int wai_dsp_init(WaiDsp *dsp, WaiKernels k);

/* Thread count for wai_run_layers(): n > 0 is taken (at most 64); 0 is automatic
 * ($WAI_THREADS if a positive integer, else the online CPUs). Returns the count, or
 * WAI_ERR_INVALID_ARG for n < 0 (the table is then unchanged). */
int wai_dsp_set_threads(WaiDsp *dsp, int n);

/* floor(sqrt(n)) for n >= 0, exact (spec 5.5). */
uint32_t wai_isqrt64(uint64_t n);

#endif
