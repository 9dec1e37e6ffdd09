/* Constants shared by the elements of the WAI plugin. */
#ifndef GST_WAI_COMMON_H
#define GST_WAI_COMMON_H

/* The largest unit the parser and the decoder accept (a bigger "unit" is treated as damage
 * and resynchronised past). It bounds how much a bogus size field can make them buffer. */
#define GST_WAI_MAX_UNIT_SIZE (256u << 20)

/* Bytes needed to learn a unit's type and size (start code + size field). */
#define GST_WAI_UNIT_PROBE 12

/* A WAI stream is "video/x-wai"; a still picture (a header with frame_count 1, see
 * GST_WAI_IS_STILL) is "image/x-wai", as a PNG is "image/png": gst-discoverer-1.0 (GstDiscoverer)
 * reports a stream as an image when its caps are image/... and it has no duration, and
 * decodebin/playbin treat image/ caps as video. The elements take both. */
#define GST_WAI_CAPS "video/x-wai"
#define GST_WAI_IMAGE_CAPS "image/x-wai"
#define GST_WAI_ALL_CAPS GST_WAI_CAPS "; " GST_WAI_IMAGE_CAPS

/* Offset of frame_count in the sequence header (spec 2.1). */
#define GST_WAI_FRAME_COUNT_OFFSET 44

#include <string.h>
#include <gst/gst.h>
#include <wai/wai.h>

/* A stream whose header says it holds exactly one frame is a still picture. It is presented
 * as GStreamer's image decoders (pngdec, jpegdec) present theirs: framerate 0/1 and a buffer
 * with no duration, rather than as a video one frame (1 / fps) long. */
#define GST_WAI_IS_STILL(info) ((info)->frame_count == 1)

/* The media type of a stream with this header. */
#define GST_WAI_MEDIA_TYPE(info) (GST_WAI_IS_STILL (info) ? GST_WAI_IMAGE_CAPS : GST_WAI_CAPS)

/* gst-launch-1.0 (1.22, and GStreamer's main branch as of 2025) quits its main loop from a bus
 * *sync* handler when it prints an error, in the thread that posts the error. If that happens
 * before its main thread has entered g_main_loop_run(), the quit is lost (g_main_loop_run() marks
 * the loop running again), and since a bin that saw an error never completes its preroll,
 * nothing else ends the run: it hangs. Any element whose streaming thread fails within a few
 * milliseconds of the start meets it (`filesrc location=garbage ! jpegdec ! fakesink` hangs in
 * about half the runs here).
 *
 * So waiparse and waidec post a fatal error from a streaming thread only once the application
 * has taken the messages already waiting on the pipeline's bus (the state changes and stream
 * start of the preroll are there): gst-launch-1.0 takes them only in its main loop, so when the
 * queue is empty the loop runs and the quit holds. An application that reads its bus from a
 * main loop, with gst_bus_timed_pop*() or a sync handler that drops the messages empties it at
 * once; one that reads nothing within GST_WAI_ERROR_WAIT_US gets the error then. No wait outside
 * a pipeline (a GstHarness), while a state change of the element is under way in any thread
 * (*changing_state set: errors of a start check, in the application's thread, fail the state
 * change instead; and an application shutting the pipeline down is not held up), or when the
 * bus is flushing. */
#define GST_WAI_ERROR_WAIT_US (G_USEC_PER_SEC / 2)

static inline void
gst_wai_wait_for_bus_reader (GstElement * element, gpointer * changing_state)
{
  GstObject *top = gst_object_ref (GST_OBJECT (element)), *parent;
  gint64 end = g_get_monotonic_time () + GST_WAI_ERROR_WAIT_US;

  while ((parent = gst_object_get_parent (top))) {
    gst_object_unref (top);
    top = parent;
  }
  if (GST_IS_PIPELINE (top)) {
    GstBus *bus = gst_pipeline_get_bus (GST_PIPELINE (top));

    /* (a state change that starts meanwhile, e.g. the application stopping the pipeline,
     * would wait for this streaming thread: stop waiting then) */
    while (bus && gst_bus_have_pending (bus) && g_get_monotonic_time () < end &&
        !g_atomic_pointer_get (changing_state))
      g_usleep (1000);
    gst_clear_object (&bus);
  }
  gst_object_unref (top);
}

/* The two element vfuncs around gst_wai_wait_for_bus_reader, shared by waiparse and waidec:
 * change_state notes the thread changing the element's state in *changing_state (an error
 * posted meanwhile is not held back); post_message holds an error from a streaming thread until
 * the application reads its bus. parent: the element's parent class. */
static inline GstStateChangeReturn
gst_wai_change_state_noted (GstElementClass * parent, GstElement * element,
    GstStateChange transition, gpointer * changing_state)
{
  GstStateChangeReturn ret;

  /* (a bin passes its state on to children already there: PAUSED to PAUSED is no change) */
  if (GST_STATE_TRANSITION_CURRENT (transition) == GST_STATE_TRANSITION_NEXT (transition))
    return parent->change_state (element, transition);
  g_atomic_pointer_set (changing_state, g_thread_self ());
  ret = parent->change_state (element, transition);
  g_atomic_pointer_set (changing_state, NULL);
  return ret;
}

static inline gboolean
gst_wai_post_message_held (GstElementClass * parent, GstElement * element,
    GstMessage * message, gpointer * changing_state)
{
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR && !g_atomic_pointer_get (changing_state))
    gst_wai_wait_for_bus_reader (element, changing_state);
  return parent->post_message (element, message);
}

/* What is wrong with the first bytes of a raw stream (spec 2: a stream starts with its sequence
 * header), in words a user can act on: empty, not WAI at all, or a WAI header that is damaged,
 * cut short or of a version this library does not know. data/size: the bytes from offset 0;
 * at_eos: no more follow. Returns FALSE if they are (or may still become, with more data) a
 * valid sequence header unit; else TRUE with *code (a GstStreamError) and the message (a
 * sentence) in msg. */
static inline gboolean
gst_wai_bad_stream_start (const guint8 * data, gsize size, gboolean at_eos, gint * code,
    gchar * msg, gsize msg_size)
{
  WaiSequenceInfo info;
  guint32 usize = 0;
  int r;

  if (size == 0) {
    if (!at_eos)
      return FALSE;
    *code = GST_STREAM_ERROR_DECODE;
    g_snprintf (msg, msg_size, "The stream contains no data (a WAI stream starts with a "
        "sequence header).");
    return TRUE;
  }
  if (size >= 12)
    usize = GST_READ_UINT32_LE (data + 8);
  r = wai_parse_sequence_header (data, size, &info);
  switch (r) {
    case 0:
      return FALSE;
    case WAI_ERR_TRUNCATED:
      /* (a size field beyond what the elements accept can never complete) */
      if (!at_eos && (size < 12 || usize <= GST_WAI_MAX_UNIT_SIZE))
        return FALSE;
      *code = GST_STREAM_ERROR_DECODE;
      if (size >= 12 && usize > GST_WAI_MAX_UNIT_SIZE)
        g_snprintf (msg, msg_size, "The WAI sequence header is damaged: its size field "
            "(%u bytes) is beyond the limit of %u.", usize, GST_WAI_MAX_UNIT_SIZE);
      else if (size >= 12)
        g_snprintf (msg, msg_size, "The stream ends inside its WAI sequence header (%"
            G_GSIZE_FORMAT " of %u bytes).", size, usize);
      else
        g_snprintf (msg, msg_size, "The stream ends inside its WAI sequence header (%"
            G_GSIZE_FORMAT " bytes).", size);
      return TRUE;
    case WAI_ERR_CRC:
      *code = GST_STREAM_ERROR_DECODE;
      g_snprintf (msg, msg_size, "The WAI sequence header is damaged (CRC mismatch).");
      return TRUE;
    case WAI_ERR_UNSUPPORTED:
      *code = GST_STREAM_ERROR_CODEC_NOT_FOUND;
      g_snprintf (msg, msg_size, "Unsupported WAI stream: format version %u.%u or a "
          "feature this decoder does not know.", data[4], size > 5 ? data[5] : 0);
      return TRUE;
    default:
      break;
  }
  if (memcmp (data, "WAIS", MIN (size, 4)) != 0) {
    *code = GST_STREAM_ERROR_WRONG_TYPE;
    if (size >= 4 && memcmp (data, "WAIF", 4) == 0)
      g_snprintf (msg, msg_size, "This is not a WAI stream: it starts with a frame unit, "
          "not with a sequence header.");
    else
      g_snprintf (msg, msg_size, "This is not a WAI stream: it does not start with a "
          "sequence header (\"WAIS\").");
    return TRUE;
  }
  *code = GST_STREAM_ERROR_DECODE;
  g_snprintf (msg, msg_size, "Invalid WAI sequence header: %s.", wai_strerror (r));
  return TRUE;
}

#endif
