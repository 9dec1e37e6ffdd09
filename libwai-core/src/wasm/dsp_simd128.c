/* WebAssembly SIMD128 set: dsp_tmpl.c at 2 doubles per vector (f64x2; built with -msimd128).
 * Engines map v128 onto the host's 128-bit registers (16 XMM on x86-64, 32 on aarch64): the
 * tiles of the portable C set, which are sized for 16. */
#include "dsp.h"
#include "dsp_fast.h"

#define VLEN 2
#define NB_MAIN 6
#define MB_MAIN 2
#define NB_SMALL 3
#define MB_SMALL 4
#define INIT_FN wai_dsp_init_simd128
#ifdef WAI_PLANTED_FAULT_SIMD128_TILE
/* planted (dsp_tmpl.c's DEF_TILE, this set only): a tile's right edge, its last output
 * position, is not stored; caught by checkasm under Node (tests/web.sh --planted) */
#define PLANTED_TILE_EDGE 1
#endif
#include "dsp_tmpl.c"
