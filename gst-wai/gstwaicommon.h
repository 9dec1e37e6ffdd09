/* Constants shared by the elements of the WAI plugin. */
#ifndef GST_WAI_COMMON_H
#define GST_WAI_COMMON_H

/* The largest unit the parser and the decoder accept (a bigger "unit" is treated as damage
 * and resynchronised past). It bounds how much a bogus size field can make them buffer. */
#define GST_WAI_MAX_UNIT_SIZE (256u << 20)

/* Bytes needed to learn a unit's type and size (start code + size field). */
#define GST_WAI_UNIT_PROBE 12

#define GST_WAI_CAPS "video/x-wai"

#endif
