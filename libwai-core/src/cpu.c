/* CPU feature detection: cpuid for what the CPU has, xgetbv for what the OS saves across
 * context switches (a vector set is usable only if both). */
#define _DEFAULT_SOURCE 1 /* syscall() beside the project's _POSIX_C_SOURCE */
#include "cpu.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>

/* Linux (5.16 and later) hands out the AMX tile data (XSAVE feature 18) to a process only on
 * request; the request is process-wide, idempotent and cheap, but it raises the process's
 * minimum signal stack size, so it is made only when the AMX set is chosen (dsp.c). */
int wai_cpu_amx_grant(void)
{
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
}
#else
int wai_cpu_amx_grant(void) { return 0; }
#endif

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
    /* AMX-TILE and AMX-INT8 (edx bits 24, 25), tile config and data saved by the OS (XCR0
     * bits 17, 18); the process must still ask for the tile data (wai_cpu_amx_grant) */
    if ((flags & WAI_CPU_AVX512VNNI) && ((d >> 24) & 3) == 3 && (xcr0 & 0x60000) == 0x60000)
        flags |= WAI_CPU_AMX;
#ifdef WAI_PLANTED_FAULT_AMX_GRANT_EAGER
    if (flags & WAI_CPU_AMX) wai_cpu_amx_grant(); /* planted: asked whatever the set chosen */
#endif
    return flags;
}

#elif defined(__aarch64__)

unsigned wai_cpu_flags(void) { return WAI_CPU_NEON; }
int wai_cpu_amx_grant(void) { return 0; }

#elif defined(__wasm__) && WAI_HAVE_FAST_SIMD128

/* The SIMD128 set is compiled into the module, and an engine without SIMD128 refuses the
 * whole module: if this code runs, the engine has it. */
unsigned wai_cpu_flags(void) { return WAI_CPU_SIMD128; }
int wai_cpu_amx_grant(void) { return 0; }

#else

unsigned wai_cpu_flags(void) { return 0; }
int wai_cpu_amx_grant(void) { return 0; }

#endif
