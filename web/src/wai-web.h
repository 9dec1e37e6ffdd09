/* The flat C entry points of the browser module (web/src/wai-web.c; called from
 * web/wai-worker.js through emscripten's cwrap). Every int is 0 or a negative WAI_ERR_*. */
#ifndef WAI_WEB_H
#define WAI_WEB_H

#include <stddef.h>
#include <stdint.h>

typedef struct WaiWeb WaiWeb;

WaiWeb *waiweb_open(int kernels);
const char *waiweb_open_error(void);
void waiweb_close(WaiWeb *w);
int waiweb_add_model(WaiWeb *w, const uint8_t *buf, size_t size);
int waiweb_send(WaiWeb *w, const uint8_t *buf, size_t size);
int waiweb_send_eos(WaiWeb *w);
int waiweb_next(WaiWeb *w);
const char *waiweb_error(WaiWeb *w);
const char *waiweb_strerror(int err);
uint32_t waiweb_pic_width(WaiWeb *w);
uint32_t waiweb_pic_height(WaiWeb *w);
uint32_t waiweb_pic_index(WaiWeb *w);
double waiweb_pic_ms(WaiWeb *w);
uint8_t *waiweb_pic_rgba(WaiWeb *w);
const char *waiweb_hash_hex(WaiWeb *w);
/* models must hold 65 * max_models + 1 bytes; info 8 words */
int waiweb_scan(const uint8_t *buf, size_t size, uint32_t *info, char *models, int max_models);

#endif
