#include "pngread.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int png_read_rgb8(const char *path, uint8_t **rgb, uint32_t *w, uint32_t *h, const char **why)
{
    *rgb = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *why = strerror(errno);
        return PNGREAD_IO;
    }
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop pinfo = png ? png_create_info_struct(png) : NULL;
    uint8_t *volatile data = NULL;
    png_bytep *volatile rows = NULL;
    if (!pinfo) {
        png_destroy_read_struct(&png, NULL, NULL);
        fclose(f);
        *why = "cannot create a PNG reader";
        return PNGREAD_IO;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &pinfo, NULL);
        fclose(f);
        free(data);
        free(rows);
        *why = "not a valid PNG file";
        return PNGREAD_INVALID;
    }
    png_init_io(png, f);
    png_set_user_limits(png, 65536, 65536);
    png_read_info(png, pinfo);
    int ct = png_get_color_type(png, pinfo);
    png_set_expand(png);           /* palette -> RGB, grey < 8 bits -> 8, tRNS -> alpha */
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, pinfo);
    uint32_t pw = png_get_image_width(png, pinfo), ph = png_get_image_height(png, pinfo);
    if (png_get_rowbytes(png, pinfo) != (size_t)pw * 3) png_error(png, "unexpected row format");
    data = malloc((size_t)pw * ph * 3);
    rows = malloc(ph * sizeof(*rows));
    if (!data || !rows) png_error(png, "out of memory");
    for (uint32_t y = 0; y < ph; y++) rows[y] = data + (size_t)y * pw * 3;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &pinfo, NULL);
    fclose(f);
    free(rows);
    *rgb = data;
    *w = pw;
    *h = ph;
    return PNGREAD_OK;
}
