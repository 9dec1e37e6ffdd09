/* Run-time CPU features for kernel selection. */
#ifndef WAI_CPU_H
#define WAI_CPU_H

enum {
    WAI_CPU_AVX2 = 1 << 0,      /* AVX2 + FMA, and the OS saves YMM state */
    WAI_CPU_AVX512 = 1 << 1,    /* AVX-512 F/DQ/BW/VL, and the OS saves ZMM state */
    WAI_CPU_AVX512VNNI = 1 << 2,
    WAI_CPU_NEON = 1 << 3,      /* aarch64: baseline */
    WAI_CPU_SIMD128 = 1 << 4,   /* WebAssembly built with SIMD128 (a module validates only where the engine has it) */
    WAI_CPU_AMX = 1 << 5,       /* AMX-TILE and AMX-INT8, and the OS saves tile state (with
                                 * AVX-512 VNNI); usable once wai_cpu_amx_grant() says so */
};

unsigned wai_cpu_flags(void);
/* Asks the OS for this process's AMX tile data (Linux on x86-64; elsewhere 0): 1 if granted. */
int wai_cpu_amx_grant(void);

#endif
