/* Type finder for WAI streams: "WAIS" sequence header at offset 0. */
#ifndef GST_WAI_TYPEFIND_H
#define GST_WAI_TYPEFIND_H

#include <gst/gst.h>

G_BEGIN_DECLS

GST_TYPE_FIND_REGISTER_DECLARE (wai)

G_END_DECLS

#endif
