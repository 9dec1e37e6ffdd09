/* NEON set (aarch64): dsp_tmpl.c at 2 doubles per vector, tiles for 32 registers. */
#include "dsp.h"
#include "dsp_fast.h"

#define VLEN 2
#define NB_MAIN 8
#define MB_MAIN 3
#define NB_SMALL 3
#define MB_SMALL 8
#define INIT_FN wai_dsp_init_neon
#ifdef WAI_PLANTED_FAULT_NEON_TILE
/* planted (dsp_tmpl.c's DEF_TILE, this set only): a tile's right edge, its last output
 * position, is not stored; caught by checkasm under qemu-aarch64 (tools/cross-check.sh) */
#define PLANTED_TILE_EDGE 1
#endif
#include "dsp_tmpl.c"
