/* Initialisers of the fast kernel sets (each overrides the entries it speeds up). */
#ifndef WAI_DSP_FAST_H
#define WAI_DSP_FAST_H

#include "dsp.h"

void wai_dsp_init_c(WaiDsp *dsp);
void wai_dsp_init_avx2(WaiDsp *dsp);
void wai_dsp_init_avx512(WaiDsp *dsp);
void wai_dsp_init_avx512vnni(WaiDsp *dsp);
void wai_dsp_init_avx512amx(WaiDsp *dsp);
void wai_dsp_init_neon(WaiDsp *dsp);
void wai_dsp_init_simd128(WaiDsp *dsp);

#endif
