/* waidec: WAI stream (video/x-wai) to RGB decoder element. */
#ifndef GST_WAI_DEC_H
#define GST_WAI_DEC_H

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_WAI_DEC (gst_wai_dec_get_type ())
G_DECLARE_FINAL_TYPE (GstWaiDec, gst_wai_dec, GST, WAI_DEC, GstVideoDecoder)

#define GST_TYPE_WAI_DEC_KERNELS (gst_wai_dec_kernels_get_type ())
GType gst_wai_dec_kernels_get_type (void);

#define GST_TYPE_WAI_DEC_DEVICE (gst_wai_dec_device_get_type ())
GType gst_wai_dec_device_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (waidec)

G_END_DECLS

#endif
