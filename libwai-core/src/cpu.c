/* CPU feature detection: cpuid for what the CPU has, xgetbv for what the OS saves across
 * context switches (a vector set is usable only if both). */
#include "cpu.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

unsigned wai_cpu_flags(void)
{
    unsigned a, b, c, d, flags = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    if (!osxsave || !avx) return 0;
    const unsigned long long xcr0 = xgetbv0();
    const int ymm_ok = (xcr0 & 0x6) == 0x6;          /* SSE and AVX state */
    const int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (ymm_ok && fma && ((b >> 5) & 1)) flags |= WAI_CPU_AVX2;
    const int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    if ((flags & WAI_CPU_AVX2) && zmm_ok && f && dq && bw && vl) {
        flags |= WAI_CPU_AVX512;
        if ((c >> 11) & 1) flags |= WAI_CPU_AVX512VNNI;
    }
    return flags;
}

#elif defined(__aarch64__)

unsigned wai_cpu_flags(void) { return WAI_CPU_NEON; }

#elif defined(__wasm__) && WAI_HAVE_FAST_SIMD128

/* The SIMD128 set is compiled into the module, and an engine without SIMD128 refuses the
 * whole module: if this code runs, the engine has it. */
unsigned wai_cpu_flags(void) { return WAI_CPU_SIMD128; }

#else

unsigned wai_cpu_flags(void) { return 0; }

#endif
