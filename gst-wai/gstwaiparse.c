/* GStreamer WAI stream parser
 * SPDX-License-Identifier: BSD-2-Clause
 */

/**
 * SECTION:element-waiparse
 * @title: waiparse
 *
 * Splits a WAI byte stream into its units (spec section 2) and outputs one frame unit per
 * buffer with caps `video/x-wai, parsed=true, width, height, framerate, codec_data`, where
 * width/height are the display window and codec_data is the sequence header unit (which is
 * not repeated in band). A still picture (frame_count 1) is `image/x-wai` with framerate 0/1,
 * as image parsers give. Each buffer's PTS is frame_index * fps_den / fps_num seconds (spec
 * 2.2), its duration one frame; every frame is a key frame. With a frame count in the header
 * the stream duration is exact (frame_count frames), else baseparse estimates it.
 * A repeat of the header in use is dropped; a different one updates the caps.
 *
 * Damaged bytes are skipped: the parser resynchronises at the next unit whose CRC matches.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=a.wai ! waiparse ! waidec ! videoconvert ! autovideosink
 * ]|
 */

#include "gstwaiparse.h"
#include "gstwaicommon.h"

#include <string.h>
#include <wai/wai.h>

GST_DEBUG_CATEGORY_STATIC (gst_wai_parse_debug);
#define GST_CAT_DEFAULT gst_wai_parse_debug

struct _GstWaiParse
{
  GstBaseParse parent;

  GstBuffer *seqhdr;            /* the sequence header unit in use (codec_data) */
  WaiSequenceInfo info;
  GstClockTime frame_dur;
  gboolean sent_tags;
  gboolean fatal;               /* an error was posted: say nothing more */
  gpointer changing_state;      /* the thread in change_state, or NULL */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_WAI_ALL_CAPS));

#define WAI_PARSED_FIELDS ", parsed = (boolean) true, " \
    "width = (int) [ 1, 65536 ], height = (int) [ 1, 65536 ], " \
    "framerate = (fraction) [ 0/1, MAX ]"
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_WAI_CAPS WAI_PARSED_FIELDS "; " GST_WAI_IMAGE_CAPS WAI_PARSED_FIELDS));

#define gst_wai_parse_parent_class parent_class
G_DEFINE_TYPE (GstWaiParse, gst_wai_parse, GST_TYPE_BASE_PARSE)
GST_ELEMENT_REGISTER_DEFINE (waiparse, "waiparse", GST_RANK_PRIMARY, GST_TYPE_WAI_PARSE)

static void
gst_wai_parse_reset (GstWaiParse * self)
{
  gst_clear_buffer (&self->seqhdr);
  memset (&self->info, 0, sizeof (self->info));
  self->frame_dur = GST_CLOCK_TIME_NONE;
  self->sent_tags = FALSE;
  self->fatal = FALSE;
}

static gboolean
gst_wai_parse_start (GstBaseParse * parse)
{
  GstWaiParse *self = GST_WAI_PARSE (parse);

  gst_wai_parse_reset (self);
  gst_base_parse_set_min_frame_size (parse, GST_WAI_UNIT_PROBE);
  gst_base_parse_set_has_timing_info (parse, TRUE);
  gst_base_parse_set_syncable (parse, TRUE);
  return TRUE;
}

static gboolean
gst_wai_parse_stop (GstBaseParse * parse)
{
  gst_wai_parse_reset (GST_WAI_PARSE (parse));
  return TRUE;
}

static gboolean
gst_wai_parse_update_caps (GstWaiParse * self)
{
  GstBaseParse *parse = GST_BASE_PARSE (self);
  const WaiSequenceInfo *in = &self->info;
  GstCaps *caps;
  gboolean ok;
  gint n, d;

  if (GST_WAI_IS_STILL (in)) {
    n = 0;                      /* a still picture, like an image parser's */
    d = 1;
  } else if (in->fps_num <= G_MAXINT && in->fps_den <= G_MAXINT) {
    n = (gint) in->fps_num;
    d = (gint) in->fps_den;
  } else {
    gst_util_double_to_fraction ((gdouble) in->fps_num / (gdouble) in->fps_den, &n, &d);
  }
  caps = gst_caps_new_simple (GST_WAI_MEDIA_TYPE (in),
      "parsed", G_TYPE_BOOLEAN, TRUE,
      "width", G_TYPE_INT, (gint) in->disp_w,
      "height", G_TYPE_INT, (gint) in->disp_h,
      "framerate", GST_TYPE_FRACTION, n, d,
      "pixel-aspect-ratio", GST_TYPE_FRACTION, 1, 1,
      "codec_data", GST_TYPE_BUFFER, self->seqhdr, NULL);
  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, (gpointer) caps);
  ok = gst_pad_set_caps (GST_BASE_PARSE_SRC_PAD (parse), caps);
  gst_caps_unref (caps);

  if (GST_WAI_IS_STILL (in))
    return ok;                  /* no frame rate, no duration */
  gst_base_parse_set_frame_rate (parse, in->fps_num, in->fps_den, 0, 0);
  if (in->frame_count > 0)
    gst_base_parse_set_duration (parse, GST_FORMAT_TIME, (gint64)
        gst_util_uint64_scale ((guint64) in->frame_count, GST_SECOND * (guint64) in->fps_den,
            in->fps_num), 0);
  return ok;
}

/* A (new) sequence header unit. Returns FALSE if it is invalid. */
static gboolean
gst_wai_parse_handle_seqhdr (GstWaiParse * self, const guint8 * data, gsize size,
    gboolean * caps_failed)
{
  WaiSequenceInfo info;
  int r;

  *caps_failed = FALSE;
  r = wai_parse_sequence_header (data, size, &info);
  if (r < 0) {
    GST_WARNING_OBJECT (self, "invalid sequence header: %s", wai_strerror (r));
    return FALSE;
  }

  if (self->seqhdr && gst_buffer_get_size (self->seqhdr) == size &&
      gst_buffer_memcmp (self->seqhdr, 0, data, size) == 0)
    return TRUE;

  gst_clear_buffer (&self->seqhdr);
  self->seqhdr = gst_buffer_new_memdup (data, size);
  self->info = info;
  self->frame_dur = GST_WAI_IS_STILL (&info) ? GST_CLOCK_TIME_NONE :
      gst_util_uint64_scale (GST_SECOND, info.fps_den, info.fps_num);
  *caps_failed = !gst_wai_parse_update_caps (self);
  return TRUE;
}

static void
gst_wai_parse_send_tags (GstWaiParse * self)
{
  GstTagList *tags;

  if (self->sent_tags)
    return;
  tags = gst_tag_list_new (GST_TAG_VIDEO_CODEC, "WAI", NULL);
  gst_base_parse_merge_tags (GST_BASE_PARSE (self), tags, GST_TAG_MERGE_REPLACE);
  gst_tag_list_unref (tags);
  self->sent_tags = TRUE;
}

/* Bytes that are not a valid unit (spec 2.4): warn once per damaged region, since the
 * decoder never sees the frames lost in it. Skipping while sync is lost anyway (stream start,
 * after a seek, inside the same damaged region) is only logged. */
static void
gst_wai_parse_damage (GstWaiParse * self, GstBaseParseFrame * frame, gsize n)
{
  GST_DEBUG_OBJECT (self, "skipping %" G_GSIZE_FORMAT " bytes at offset %" G_GUINT64_FORMAT,
      n, frame->offset);
  if (!self->seqhdr || GST_BASE_PARSE_LOST_SYNC (self))
    return;
  GST_ELEMENT_WARNING (self, STREAM, DECODE, ("Skipped damaged WAI stream data."),
      ("no valid unit at byte offset %" G_GUINT64_FORMAT "; resynchronising", frame->offset));
}

static GstFlowReturn
gst_wai_parse_handle_frame (GstBaseParse * parse, GstBaseParseFrame * frame, gint * skipsize)
{
  GstWaiParse *self = GST_WAI_PARSE (parse);
  GstBuffer *buf = frame->buffer;
  GstMapInfo map;
  WaiUnitInfo u;
  int r;

  if (self->fatal)
    return GST_FLOW_ERROR;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, CORE, FAILED, ("Could not map the input buffer."), (NULL));
    return GST_FLOW_ERROR;
  }
  memset (&u, 0, sizeof (u));
  r = wai_find_unit (map.data, map.size, GST_WAI_MAX_UNIT_SIZE, &u);

  if (r == WAI_ERR_AGAIN || (r == 0 && u.offset > 0)) {
    /* spec 2: a stream starts with its sequence header: say what is wrong with it */
    if (!self->seqhdr && frame->offset == 0 && (u.offset > 0 ||
            GST_BASE_PARSE_DRAINING (parse))) {
      gchar msg[256];
      gint code;

      if (!gst_wai_bad_stream_start (map.data, map.size, GST_BASE_PARSE_DRAINING (parse),
              &code, msg, sizeof (msg))) {
        code = GST_STREAM_ERROR_WRONG_TYPE;     /* (not expected: the finder skipped it) */
        g_strlcpy (msg, "This is not a WAI stream: it does not start with a sequence "
            "header.", sizeof (msg));
      }
      gst_buffer_unmap (buf, &map);
      self->fatal = TRUE;
      gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR, GST_STREAM_ERROR, code,
          g_strdup (msg), NULL, __FILE__, GST_FUNCTION, __LINE__);
      return GST_FLOW_ERROR;
    }
    gst_buffer_unmap (buf, &map);
    if (u.offset > 0 && u.offset <= map.size) {
      *skipsize = (gint) u.offset;      /* cannot start a unit: resync */
      gst_wai_parse_damage (self, frame, u.offset);
    } else if (GST_BASE_PARSE_DRAINING (parse)) {
      /* a unit that never completes: step past its start code */
      *skipsize = (gint) MIN (map.size, 4);
      gst_wai_parse_damage (self, frame, map.size);
      gst_base_parse_set_min_frame_size (parse, GST_WAI_UNIT_PROBE);
    } else if (u.size > map.size) {
      /* ask for the whole unit at once instead of growing step by step */
      gst_base_parse_set_min_frame_size (parse, (guint) u.size);
    }
    return GST_FLOW_OK;
  }
  if (r < 0) {
    gst_buffer_unmap (buf, &map);
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Internal error in the WAI unit parser."),
        ("wai_find_unit: %s", wai_strerror (r)));
    return GST_FLOW_ERROR;
  }

  gst_base_parse_set_min_frame_size (parse, GST_WAI_UNIT_PROBE);

  if (u.type == WAI_UNIT_SEQUENCE_HEADER) {
    gboolean caps_failed;
    gboolean ok = gst_wai_parse_handle_seqhdr (self, map.data, u.size, &caps_failed);

    gst_buffer_unmap (buf, &map);
    if (!ok) {
      *skipsize = (gint) u.size;
      return GST_FLOW_OK;
    }
    if (caps_failed)
      return GST_FLOW_NOT_NEGOTIATED;
    /* carried in codec_data, not in band; a time keeps seek scanning happy */
    GST_BUFFER_PTS (buf) = GST_BUFFER_DTS (buf) = 0;
    frame->flags |= GST_BASE_PARSE_FRAME_FLAG_DROP;
    return gst_base_parse_finish_frame (parse, frame, (gint) u.size);
  }

  gst_buffer_unmap (buf, &map);
  if (!self->seqhdr) {
    GST_DEBUG_OBJECT (self, "frame unit %u before any sequence header: skipped",
        u.frame_index);
    *skipsize = (gint) u.size;
    return GST_FLOW_OK;
  }

  gst_wai_parse_send_tags (self);
#ifdef WAI_PLANTED_FAULT_GST_PTS
  u.frame_index++;              /* planted: times off by one frame */
#endif
  GST_BUFFER_PTS (buf) = gst_util_uint64_scale ((guint64) u.frame_index,
      GST_SECOND * (guint64) self->info.fps_den, self->info.fps_num);
  GST_BUFFER_DTS (buf) = GST_BUFFER_PTS (buf);
  GST_BUFFER_DURATION (buf) = self->frame_dur;
  GST_BUFFER_FLAG_UNSET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
#ifdef WAI_PLANTED_FAULT_GST_UNIT_TAIL
  u.size--;                     /* planted: a frame unit's last byte is left behind */
#endif
  return gst_base_parse_finish_frame (parse, frame, (gint) u.size);
}

/* After a fatal error, EOS goes straight on: baseparse would add "no valid frames". */
static gboolean
gst_wai_parse_sink_event (GstBaseParse * parse, GstEvent * event)
{
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && GST_WAI_PARSE (parse)->fatal)
    return gst_pad_push_event (GST_BASE_PARSE_SRC_PAD (parse), event);
  return GST_BASE_PARSE_CLASS (parent_class)->sink_event (parse, event);
}

/* Input that is already parsed (from a demuxer) brings the header in codec_data. */
static gboolean
gst_wai_parse_set_sink_caps (GstBaseParse * parse, GstCaps * caps)
{
  GstWaiParse *self = GST_WAI_PARSE (parse);
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  const GValue *v = gst_structure_get_value (s, "codec_data");
  GstMapInfo map;
  gboolean ok, caps_failed = FALSE;
  GstBuffer *cd;

  if (!v || !GST_VALUE_HOLDS_BUFFER (v))
    return TRUE;
  cd = gst_value_get_buffer (v);
  if (!gst_buffer_map (cd, &map, GST_MAP_READ))
    return FALSE;
  ok = gst_wai_parse_handle_seqhdr (self, map.data, map.size, &caps_failed);
  gst_buffer_unmap (cd, &map);
  return ok && !caps_failed;
}

/* Errors from a streaming thread wait for the application's bus reader (gstwaicommon.h). */
static GstStateChangeReturn
gst_wai_parse_change_state (GstElement * element, GstStateChange transition)
{
  return gst_wai_change_state_noted (GST_ELEMENT_CLASS (parent_class), element, transition,
      &GST_WAI_PARSE (element)->changing_state);
}

static gboolean
gst_wai_parse_post_message (GstElement * element, GstMessage * message)
{
  return gst_wai_post_message_held (GST_ELEMENT_CLASS (parent_class), element, message,
      &GST_WAI_PARSE (element)->changing_state);
}

static void
gst_wai_parse_class_init (GstWaiParseClass * klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseParseClass *parse_class = GST_BASE_PARSE_CLASS (klass);

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_wai_parse_change_state);
  element_class->post_message = GST_DEBUG_FUNCPTR (gst_wai_parse_post_message);
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "WAI stream parser",
      "Codec/Parser/Video", "Splits WAI streams into units and timestamps them",
      "The WAI developers");

  parse_class->start = GST_DEBUG_FUNCPTR (gst_wai_parse_start);
  parse_class->stop = GST_DEBUG_FUNCPTR (gst_wai_parse_stop);
  parse_class->handle_frame = GST_DEBUG_FUNCPTR (gst_wai_parse_handle_frame);
  parse_class->set_sink_caps = GST_DEBUG_FUNCPTR (gst_wai_parse_set_sink_caps);
  parse_class->sink_event = GST_DEBUG_FUNCPTR (gst_wai_parse_sink_event);

  GST_DEBUG_CATEGORY_INIT (gst_wai_parse_debug, "waiparse", 0, "WAI stream parser");
}

/* Push mode only, whatever upstream offers. In pull mode GstBaseParse starts its own streaming
 * thread when the pad activates, and under decodebin that happens while decodebin sets the
 * parser to PAUSED with the parser's error messages filtered (dropped when the state change
 * succeeds, gstdecodebin2.c add_error_filter): on a small damaged file the thread can read the
 * whole stream and post its error in that window, and the error is lost (playbin then ends
 * with EOS and status 0, now and then). In push mode the data comes from typefind's thread,
 * which pushes only once decodebin has plugged the parser and removed the filter. Seeking and
 * the duration work in push mode too (byte seeks upstream; the duration from frame_count). */
static gboolean
gst_wai_parse_sink_activate (GstPad * pad, GstObject * parent)
{
  return gst_pad_activate_mode (pad, GST_PAD_MODE_PUSH, TRUE);
}

static void
gst_wai_parse_init (GstWaiParse * self)
{
  gst_wai_parse_reset (self);
  gst_pad_set_activate_function (GST_BASE_PARSE_SINK_PAD (self),
      GST_DEBUG_FUNCPTR (gst_wai_parse_sink_activate));
}
