/* AVX-512 set: dsp_tmpl.c at 8 doubles per vector, 24 of the 32 registers accumulating
 * (built with -mavx512f -mavx512dq -mavx512bw -mavx512vl). */
#include "dsp.h"
#include "dsp_fast.h"

#define VLEN 8
#define NB_MAIN 12
#define MB_MAIN 2
#define NB_SMALL 3
#define MB_SMALL 8
/* the encoder's float tile: 8 output channels x 3 vectors, 24 of the 32 registers (10 %
 * faster than 4 x 3 on a 1080p encode with the N=128 model; the same floats) */
#define ANA_NO 8
#define ANA_MV 3
#define INIT_FN wai_dsp_init_avx512
#include "dsp_tmpl.c"
