/* Kernel set selection (dav1d style): start from the reference table, then let each faster
 * set that is built and that the CPU supports override the entries it speeds up. Every set
 * gives exactly the reference integers, so the choice changes speed only. Environment
 * overrides (WAI_KERNELS) are the decoder's business; this stays a pure function. */
#include "cpu.h"
#include "dsp.h"
#include "dsp_fast.h"
#include "threadpool.h"

int wai_dsp_init(WaiDsp *dsp, WaiKernels k)
{
    /* Always a complete table, also on failure: a caller may fall back to it. */
    wai_dsp_init_ref(dsp);
    const unsigned flags = wai_cpu_flags();
    (void)flags; /* unused where no SIMD set is built */

    switch (k) {
    case WAI_KERNELS_REFERENCE:
        return 0;
    case WAI_KERNELS_C:
        wai_dsp_init_c(dsp);
        return 0;
    case WAI_KERNELS_AUTO:
        /* the ladder: each step on top of the previous */
        wai_dsp_init_c(dsp);
#if WAI_HAVE_FAST_X86
        if (flags & WAI_CPU_AVX2) wai_dsp_init_avx2(dsp);
        if (flags & WAI_CPU_AVX512) wai_dsp_init_avx512(dsp);
        if (flags & WAI_CPU_AVX512VNNI) wai_dsp_init_avx512vnni(dsp);
#endif
#if WAI_HAVE_FAST_NEON
        if (flags & WAI_CPU_NEON) wai_dsp_init_neon(dsp);
#endif
        return 0;
    case WAI_KERNELS_AVX2:
#if WAI_HAVE_FAST_X86
        if (!(flags & WAI_CPU_AVX2)) return WAI_ERR_UNSUPPORTED;
        wai_dsp_init_avx2(dsp);
        return 0;
#else
        return WAI_ERR_UNSUPPORTED;
#endif
    case WAI_KERNELS_AVX512:
#if WAI_HAVE_FAST_X86
        if (!(flags & WAI_CPU_AVX512)) return WAI_ERR_UNSUPPORTED;
        wai_dsp_init_avx512(dsp);
        return 0;
#else
        return WAI_ERR_UNSUPPORTED;
#endif
    case WAI_KERNELS_AVX512VNNI:
#if WAI_HAVE_FAST_X86
        if (!(flags & WAI_CPU_AVX512VNNI)) return WAI_ERR_UNSUPPORTED;
        wai_dsp_init_avx512vnni(dsp);
        return 0;
#else
        return WAI_ERR_UNSUPPORTED;
#endif
    case WAI_KERNELS_NEON:
#if WAI_HAVE_FAST_NEON
        if (!(flags & WAI_CPU_NEON)) return WAI_ERR_UNSUPPORTED;
        wai_dsp_init_neon(dsp);
        return 0;
#else
        return WAI_ERR_UNSUPPORTED;
#endif
    }
    return WAI_ERR_INVALID_ARG;
}

int wai_dsp_set_threads(WaiDsp *dsp, int n)
{
    if (n < 0) return WAI_ERR_INVALID_ARG;
    return dsp->threads = wai_threads_resolve(n);
}
