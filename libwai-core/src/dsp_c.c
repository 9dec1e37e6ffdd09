/* Portable C fast path: the kernels of dsp_tmpl.c at a vector of two doubles (SSE2 on
 * x86-64, scalar code elsewhere), tiles sized for 16 registers. */
#include "dsp.h"
#include "dsp_fast.h"

#define VLEN 2
#define NB_MAIN 6
#define MB_MAIN 2
#define NB_SMALL 3
#define MB_SMALL 4
#define INIT_FN wai_dsp_init_c
#include "dsp_tmpl.c"
