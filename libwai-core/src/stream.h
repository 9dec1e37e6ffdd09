/* Stream units (spec section 2): sequence header and frame units. */
#ifndef WAI_STREAM_H
#define WAI_STREAM_H

#include "common.h"

#define WAI_SEQHDR_FIXED 96   /* unit size without an embedded model */
#define WAI_FRAME_OVERHEAD 20

/* Parse a sequence header (the public wai_parse_sequence_header plus a pointer to the
 * embedded model, NULL if none). */
int wai_seqhdr_parse(const uint8_t *buf, size_t size, WaiSequenceInfo *info,
                     const uint8_t **model);

/* Append a sequence header / frame unit to b. info->unit_size and model_size are computed. */
int wai_seqhdr_write(WaiBuf *b, const WaiSequenceInfo *info, const uint8_t *model, size_t model_size);
int wai_frame_write(WaiBuf *b, uint32_t frame_index, const uint8_t *payload, size_t size);

/* Parse a whole frame unit (CRC checked): payload pointer and size. */
int wai_frame_parse(const uint8_t *buf, size_t size, uint32_t *frame_index,
                    const uint8_t **payload, size_t *payload_size);

#endif
