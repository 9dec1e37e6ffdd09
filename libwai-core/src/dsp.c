/* Kernel set selection (dav1d style): start from the reference table, then let each faster
 * set that is built and that the CPU supports override the entries it speeds up. Every set
 * gives exactly the reference integers, so the choice changes speed only. Environment
 * overrides (WAI_KERNELS) are the decoder's business; this stays a pure function. */
#include "dsp.h"

int wai_dsp_init(WaiDsp *dsp, WaiKernels k)
{
    /* Always a complete table, also on failure: a caller may fall back to it. */
    wai_dsp_init_ref(dsp);

    switch (k) {
    case WAI_KERNELS_REFERENCE:
        return 0;
    case WAI_KERNELS_C:
    case WAI_KERNELS_AUTO:
        /* Portable C fast path plugs in here: wai_dsp_init_c(dsp);
         * then, for AUTO only, the per-CPU ladder, each step on top of the previous:
         *     flags = wai_cpu_flags();
         *     if (flags & WAI_CPU_AVX2)   wai_dsp_init_avx2(dsp);
         *     if (flags & WAI_CPU_AVX512) wai_dsp_init_avx512(dsp);
         *     if (flags & WAI_CPU_NEON)   wai_dsp_init_neon(dsp);
         * None is built yet: the reference table is the answer. */
        return 0;
    case WAI_KERNELS_AVX2:
    case WAI_KERNELS_AVX512:
    case WAI_KERNELS_NEON:
        return WAI_ERR_UNSUPPORTED; /* not built yet */
    }
    return WAI_ERR_INVALID_ARG;
}
