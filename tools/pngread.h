/* Reading a PNG as interleaved RGB8: the one reader of the `wai` tool and the test tools. */
#ifndef WAI_TOOLS_PNGREAD_H
#define WAI_TOOLS_PNGREAD_H

#include <stdint.h>

enum { PNGREAD_OK = 0, PNGREAD_IO = 1, PNGREAD_INVALID = 2 };

/* Any PNG colour type and depth becomes RGB8 (palette expanded, 16 bits stripped, alpha
 * dropped, grey replicated); at most 65536 x 65536. Returns PNGREAD_OK with *rgb (malloc'd,
 * w * 3 bytes per row) and the size, or PNGREAD_IO (cannot open / set up) or PNGREAD_INVALID
 * (not a valid PNG) with *why saying so; *rgb is NULL then. */
int png_read_rgb8(const char *path, uint8_t **rgb, uint32_t *w, uint32_t *h, const char **why);

#endif
