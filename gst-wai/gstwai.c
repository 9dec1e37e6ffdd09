/* GStreamer WAI plugin: waidec, waienc, waiparse and the video/x-wai type finder
 * SPDX-License-Identifier: BSD-2-Clause
 */

#include "gstwaidec.h"
#include "gstwaienc.h"
#include "gstwaiparse.h"
#include "gstwaitypefind.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  ret |= GST_ELEMENT_REGISTER (waidec, plugin);
  ret |= GST_ELEMENT_REGISTER (waiparse, plugin);
  ret |= GST_ELEMENT_REGISTER (waienc, plugin);
  ret |= GST_TYPE_FIND_REGISTER (wai, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, wai,
    "WAI learned image/video codec: decoder, encoder, parser and type finder",
    plugin_init, GST_WAI_VERSION, "BSD", "wai", "Unknown package origin")
