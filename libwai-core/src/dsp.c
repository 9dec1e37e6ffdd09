/* Kernel set selection (dav1d style): start from the reference table, then let each faster
 * set that is built and that the CPU supports override the entries it speeds up. Every set
 * gives exactly the reference integers, so the choice changes speed only. Environment
 * overrides (WAI_KERNELS) are the decoder's business; this stays a pure function. */
#include "cpu.h"
#include "dsp.h"
#include "dsp_fast.h"
#include "threadpool.h"

/* The fast sets this build has, in the order `auto` stacks them (each on top of the previous,
 * over the portable C set), with the CPU flag each needs. */
typedef struct FastSet {
    WaiKernels kernels;
    unsigned cpu_flag;
    void (*init)(WaiDsp *dsp);
} FastSet;

static const FastSet fast_sets[] = {
#if WAI_HAVE_FAST_X86
    { WAI_KERNELS_AVX2, WAI_CPU_AVX2, wai_dsp_init_avx2 },
    { WAI_KERNELS_AVX512, WAI_CPU_AVX512, wai_dsp_init_avx512 },
    { WAI_KERNELS_AVX512VNNI, WAI_CPU_AVX512VNNI, wai_dsp_init_avx512vnni },
#endif
#if WAI_HAVE_FAST_AMX
    { WAI_KERNELS_AVX512AMX, WAI_CPU_AMX, wai_dsp_init_avx512amx },
#endif
#if WAI_HAVE_FAST_NEON
    { WAI_KERNELS_NEON, WAI_CPU_NEON, wai_dsp_init_neon },
#endif
#if WAI_HAVE_FAST_SIMD128
    { WAI_KERNELS_SIMD128, WAI_CPU_SIMD128, wai_dsp_init_simd128 },
#endif
    { WAI_KERNELS_REFERENCE, 0, NULL }, /* keeps the array non-empty; never matched below */
};

/* Whether set f can run here: its CPU flag, and for AMX the OS's grant, asked for only when
 * the set would be chosen (the grant changes the process: cpu.c). */
static int usable(const FastSet *f, unsigned flags)
{
    if (!(flags & f->cpu_flag)) return 0;
    return f->cpu_flag != WAI_CPU_AMX || wai_cpu_amx_grant();
}

int wai_dsp_init(WaiDsp *dsp, WaiKernels k)
{
    /* Always a complete table, also on failure: a caller may fall back to it. */
    wai_dsp_init_ref(dsp);
    const unsigned flags = wai_cpu_flags();
    const size_t n_fast = sizeof(fast_sets) / sizeof(fast_sets[0]) - 1;

    switch (k) {
    case WAI_KERNELS_REFERENCE:
        return 0;
    case WAI_KERNELS_C:
        wai_dsp_init_c(dsp);
        return 0;
    case WAI_KERNELS_AUTO:
        wai_dsp_init_c(dsp);
        for (size_t i = 0; i < n_fast; i++)
            if (usable(&fast_sets[i], flags)) fast_sets[i].init(dsp);
        return 0;
    case WAI_KERNELS_AVX2:
    case WAI_KERNELS_AVX512:
    case WAI_KERNELS_AVX512VNNI:
    case WAI_KERNELS_AVX512AMX:
    case WAI_KERNELS_NEON:
    case WAI_KERNELS_SIMD128:
        /* a set this build lacks, or this CPU cannot run: unsupported, not invalid */
        for (size_t i = 0; i < n_fast; i++) {
            if (fast_sets[i].kernels != k) continue;
            if (!usable(&fast_sets[i], flags)) return WAI_ERR_UNSUPPORTED;
            fast_sets[i].init(dsp);
            return 0;
        }
        return WAI_ERR_UNSUPPORTED;
    }
    return WAI_ERR_INVALID_ARG;
}

int wai_dsp_set_threads(WaiDsp *dsp, int n)
{
    if (n < 0) return WAI_ERR_INVALID_ARG;
    return dsp->threads = wai_threads_resolve(n);
}
