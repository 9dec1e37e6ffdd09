/* waiparse: splits a WAI byte stream into units and sets caps and timestamps. */
#ifndef GST_WAI_PARSE_H
#define GST_WAI_PARSE_H

#include <gst/gst.h>
#include <gst/base/gstbaseparse.h>

G_BEGIN_DECLS

#define GST_TYPE_WAI_PARSE (gst_wai_parse_get_type ())
G_DECLARE_FINAL_TYPE (GstWaiParse, gst_wai_parse, GST, WAI_PARSE, GstBaseParse)

GST_ELEMENT_REGISTER_DECLARE (waiparse)

G_END_DECLS

#endif
