/* AVX2 + FMA set: dsp_tmpl.c at 4 doubles per vector (built with -mavx2 -mfma). */
#include "dsp.h"
#include "dsp_fast.h"

#define VLEN 4
#define NB_MAIN 6
#define MB_MAIN 2
#define NB_SMALL 3
#define MB_SMALL 4
#define INIT_FN wai_dsp_init_avx2
#include "dsp_tmpl.c"
