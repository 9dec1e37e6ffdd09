/* waienc: RGB to WAI stream (video/x-wai) encoder element. */
#ifndef GST_WAI_ENC_H
#define GST_WAI_ENC_H

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_WAI_ENC (gst_wai_enc_get_type ())
G_DECLARE_FINAL_TYPE (GstWaiEnc, gst_wai_enc, GST, WAI_ENC, GstVideoEncoder)

GST_ELEMENT_REGISTER_DECLARE (waienc)

G_END_DECLS

#endif
