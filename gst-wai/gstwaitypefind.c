/* GStreamer type finder for WAI streams
 * SPDX-License-Identifier: BSD-2-Clause
 */

#include "gstwaitypefind.h"
#include "gstwaicommon.h"

#include <string.h>

static GstStaticCaps wai_caps = GST_STATIC_CAPS (GST_WAI_CAPS);
static GstStaticCaps wai_image_caps = GST_STATIC_CAPS (GST_WAI_IMAGE_CAPS);
static GstStaticCaps wai_all_caps = GST_STATIC_CAPS (GST_WAI_ALL_CAPS);

static guint32
rd32 (const guint8 * p)
{
  return (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
}

/* A stream starts with its sequence header (spec 2.1): "WAIS", version_major 1, then flags
 * with only MODEL_EMBEDDED defined and a unit_size of at least 96 bytes (exactly 96 without an
 * embedded model, then the next unit starts right after it). A header whose frame_count is 1 is
 * a still picture: image/x-wai, else video/x-wai. "WAIS" and version 1 with flags or a
 * unit_size that break those rules is a damaged header: still claimed (LIKELY), so that
 * waiparse says what is wrong with it instead of "Could not determine type of stream". */
static void
wai_type_find (GstTypeFind * tf, gpointer user_data)
{
  const guint8 *d = gst_type_find_peek (tf, 0, 12);
  const guint8 *fc = gst_type_find_peek (tf, GST_WAI_FRAME_COUNT_OFFSET, 4);
  GstTypeFindProbability prob;
  guint16 flags;
  guint32 unit_size;

  if (!d || memcmp (d, "WAIS", 4) != 0 || d[4] != 1)
    return;
  flags = (guint16) (d[6] | d[7] << 8);
  unit_size = rd32 (d + 8);
  if ((flags & ~1u) != 0 || unit_size < 96 || (!(flags & 1u) && unit_size != 96)) {
    prob = GST_TYPE_FIND_LIKELY;        /* damaged header fields */
  } else if (flags & 1u) {
    prob = GST_TYPE_FIND_NEARLY_CERTAIN;
  } else {
    const guint8 *n = gst_type_find_peek (tf, 96, 4);

    if (n && memcmp (n, "WAIF", 4) == 0)
      prob = GST_TYPE_FIND_MAXIMUM;
    else if (!n)
      prob = GST_TYPE_FIND_NEARLY_CERTAIN;
    else
      prob = GST_TYPE_FIND_LIKELY;      /* damaged after the header */
  }
  gst_type_find_suggest (tf, prob, gst_static_caps_get (fc && rd32 (fc) == 1 ?
          &wai_image_caps : &wai_caps));
}

static gboolean
wai_type_find_register (GstPlugin * plugin)
{
  GstCaps *caps = gst_static_caps_get (&wai_all_caps);
  gboolean ret = gst_type_find_register (plugin, "video/x-wai", GST_RANK_PRIMARY,
      wai_type_find, "wai", caps, NULL, NULL);

  gst_caps_unref (caps);
  return ret;
}

GST_TYPE_FIND_REGISTER_DEFINE_CUSTOM (wai, wai_type_find_register)
