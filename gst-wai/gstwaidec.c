/* GStreamer WAI decoder
 * SPDX-License-Identifier: BSD-2-Clause
 */

/**
 * SECTION:element-waidec
 * @title: waidec
 *
 * Decodes WAI streams (intra-only learned video/image codec) to RGB with libwai.
 *
 * Input is either the raw byte stream (`video/x-wai`, or `image/x-wai` for a still picture,
 * without `parsed=true`, e.g. straight from filesrc: the element finds the units itself) or one
 * unit per buffer (`parsed=true`, from waiparse or a demuxer). In the packetized case the sequence header comes in the caps'
 * `codec_data` and/or as an in-band buffer holding a "WAIS" unit; both are accepted, a repeat
 * of the header in use is ignored, a different one reconfigures the output.
 *
 * A frame that fails to decode (CRC, damaged payload) is dropped with a warning message and
 * counted against the base class' #GstVideoDecoder:max-errors. A header that cannot be used
 * (its model is not found, unsupported version, ...) is a fatal element error. Raw input from
 * a source that can be read at random (filesrc) is checked while the element starts: a stream
 * that is empty, not WAI, has a damaged header or no usable model (or, up to 16 MiB, no intact
 * frame) fails the state change with that error.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=a.wai ! waidec ! videoconvert ! autovideosink
 * ]|
 */

#include "gstwaidec.h"
#include "gstwaicommon.h"

#include <string.h>
#include <wai/wai.h>

GST_DEBUG_CATEGORY_STATIC (gst_wai_dec_debug);
#define GST_CAT_DEFAULT gst_wai_dec_debug

#define DEFAULT_MODEL_PATH NULL
#define DEFAULT_THREADS 0
#define DEFAULT_KERNELS WAI_KERNELS_AUTO
#define DEFAULT_DEVICE WAI_DEVICE_CPU
#define DEFAULT_DEVICE_INDEX 0
#define DEFAULT_MAX_MEMORY (G_GUINT64_CONSTANT (4) << 30)  /* WaiSettings' default */

enum
{
  PROP_0,
  PROP_MODEL_PATH,
  PROP_THREADS,
  PROP_KERNELS,
  PROP_DEVICE,
  PROP_DEVICE_INDEX,
  PROP_MAX_MEMORY,
};

struct _GstWaiDec
{
  GstVideoDecoder parent;

  /* properties, under the object lock; used at the next start */
  gchar *model_path;
  gint threads;
  WaiKernels kernels;
  WaiDevice device;
  gint device_index;
  guint64 max_memory;

  /* streaming state, under the stream lock */
  WaiDecoder *dec;
  GstVideoCodecState *input_state;
  GstBuffer *seqhdr;            /* the sequence header unit in use */
  GstBuffer *pending_header;    /* codec_data not yet given to the library */
  WaiSequenceInfo info;
  gboolean resyncing;           /* skipping damaged bytes (raw input); reported once */
  gboolean fatal;               /* an error was posted: refuse data, say nothing more */
  gboolean got_data;            /* raw input: any bytes arrived (an empty stream is an error) */
  gchar open_msg[512];          /* why the last wai_decoder_open failed (log callback) */
  gpointer changing_state;      /* the thread in change_state, or NULL */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_WAI_ALL_CAPS));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE ("RGB")));

#define gst_wai_dec_parent_class parent_class
G_DEFINE_TYPE (GstWaiDec, gst_wai_dec, GST_TYPE_VIDEO_DECODER)
GST_ELEMENT_REGISTER_DEFINE (waidec, "waidec", GST_RANK_PRIMARY, GST_TYPE_WAI_DEC)

GType
gst_wai_dec_kernels_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {WAI_KERNELS_AUTO, "Fastest the CPU supports (WAI_KERNELS may override)", "auto"},
    {WAI_KERNELS_REFERENCE, "Reference kernels (the specification)", "reference"},
    {WAI_KERNELS_C, "Optimised portable C", "c"},
    {WAI_KERNELS_AVX2, "x86 AVX2", "avx2"},
    {WAI_KERNELS_AVX512, "x86 AVX-512", "avx512"},
    {WAI_KERNELS_NEON, "Arm NEON", "neon"},
    {WAI_KERNELS_AVX512VNNI, "x86 AVX-512 with VNNI", "avx512vnni"},
    {WAI_KERNELS_SIMD128, "WebAssembly SIMD128", "simd128"},
    {WAI_KERNELS_AVX512AMX, "x86 AVX-512 with VNNI and AMX tiles", "avx512amx"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstWaiDecKernels", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_wai_dec_device_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {WAI_DEVICE_CPU, "CPU", "cpu"},
    {WAI_DEVICE_VULKAN, "Vulkan GPU", "vulkan"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstWaiDecDevice", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* Errors that make every later frame fail too: stop the pipeline. */
static gboolean
wai_error_is_fatal (int err)
{
  return err == WAI_ERR_MODEL_NOT_FOUND || err == WAI_ERR_MODEL_INVALID ||
      err == WAI_ERR_NO_DEVICE || err == WAI_ERR_NOMEM || err == WAI_ERR_INTERNAL;
}

static void
sha256_hex (const guint8 sha[32], gchar out[65])
{
  for (int i = 0; i < 32; i++)
    g_snprintf (out + 2 * i, 3, "%02x", sha[i]);
}

/* Posts the element error for a fatal library error. */
static GstFlowReturn
gst_wai_dec_fatal (GstWaiDec * self, int err)
{
  const gchar *detail = self->dec ? wai_decoder_last_error (self->dec) : "";

  self->fatal = TRUE;
  if (err == WAI_ERR_MODEL_NOT_FOUND) {
    gchar hex[65];
    gchar *path;

    sha256_hex (self->info.model_sha256, hex);
    GST_OBJECT_LOCK (self);
    path = g_strdup (self->model_path);
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("The WAI model this stream needs was not found (SHA-256 %s).", hex),
        ("Looked for %s.whm in model-path '%s', then $WAI_MODEL_PATH '%s', then the "
            "installed model directory. Set the model-path property or WAI_MODEL_PATH. "
            "(%s)", hex, path ? path : "", GST_STR_NULL (g_getenv ("WAI_MODEL_PATH")),
            detail));
    g_free (path);
  } else if (err == WAI_ERR_MODEL_INVALID) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The WAI model for this stream is invalid."), ("%s", detail));
  } else if (err == WAI_ERR_NO_DEVICE) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("The requested WAI decoding device is not available."), ("%s", detail));
  } else if (err == WAI_ERR_UNSUPPORTED) {
    GST_ELEMENT_ERROR (self, STREAM, CODEC_NOT_FOUND,
        ("Unsupported WAI stream version or feature."), ("%s", detail));
  } else {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Could not decode the WAI stream: %s.", wai_strerror (err)), ("%s", detail));
  }
  return GST_FLOW_ERROR;
}

/* A recoverable error in one unit: a warning, counted against max-errors. */
static GstFlowReturn
gst_wai_dec_soft_error (GstWaiDec * self, const gchar * what, int err)
{
  GstFlowReturn ret = GST_FLOW_OK;
  const gchar *detail = (err && self->dec) ? wai_decoder_last_error (self->dec) : "";

  GST_VIDEO_DECODER_ERROR (self, 1, STREAM, DECODE,
      ("Could not decode a WAI frame: %s.", what),
      ("%s%s%s", err ? wai_strerror (err) : "", *detail ? ": " : "", detail), ret);
  /* below max-errors the base class only logs: tell the application too */
  if (ret != GST_FLOW_OK)
    self->fatal = TRUE;
  else
    GST_ELEMENT_WARNING (self, STREAM, DECODE, ("Could not decode a WAI frame: %s.", what),
        ("%s%s%s", err ? wai_strerror (err) : "", *detail ? ": " : "", detail));
  return ret;
}

static GstClockTime
gst_wai_dec_frame_duration (const WaiSequenceInfo * info)
{
  if (info->fps_num == 0 || info->fps_den == 0 || GST_WAI_IS_STILL (info))
    return GST_CLOCK_TIME_NONE;
  return gst_util_uint64_scale (GST_SECOND, info->fps_den, info->fps_num);
}

/* The header's 32-bit frame rate as a gint fraction GstVideoInfo can hold. */
static void
fps_to_gint (guint32 num, guint32 den, gint * n, gint * d)
{
  if (num <= G_MAXINT && den <= G_MAXINT) {
    *n = (gint) num;
    *d = (gint) den;
  } else {
    gst_util_double_to_fraction ((gdouble) num / (gdouble) den, n, d);
  }
}

static gboolean
gst_wai_dec_configure_output (GstWaiDec * self, guint width, guint height)
{
  GstVideoDecoder *vdec = GST_VIDEO_DECODER (self);
  GstVideoCodecState *out;
  gint n, d;

  out = gst_video_decoder_set_output_state (vdec, GST_VIDEO_FORMAT_RGB, width, height,
      self->input_state);
  if (!out)
    return FALSE;
  if (GST_WAI_IS_STILL (&self->info)) {
    n = 0;                      /* a still picture, like pngdec's */
    d = 1;
  } else {
    fps_to_gint (self->info.fps_num, self->info.fps_den, &n, &d);
  }
  GST_VIDEO_INFO_FPS_N (&out->info) = n;
  GST_VIDEO_INFO_FPS_D (&out->info) = d;
  GST_VIDEO_INFO_PAR_N (&out->info) = 1;
  GST_VIDEO_INFO_PAR_D (&out->info) = 1;
  /* the samples are full-range R, G, B (spec 2.1); primaries and transfer as signalled */
  out->info.colorimetry.range = GST_VIDEO_COLOR_RANGE_0_255;
  out->info.colorimetry.matrix = GST_VIDEO_COLOR_MATRIX_RGB;
  out->info.colorimetry.primaries =
      gst_video_color_primaries_from_iso (self->info.colour_primaries);
  out->info.colorimetry.transfer =
      gst_video_transfer_function_from_iso (self->info.transfer);
  gst_video_codec_state_unref (out);
  return TRUE;
}

/* A sequence header unit (from codec_data, in band, or found by the raw parser). */
static GstFlowReturn
gst_wai_dec_handle_seqhdr (GstWaiDec * self, const guint8 * data, gsize size)
{
  WaiSequenceInfo info;
  WaiPicture pic;
  int r;

  r = wai_parse_sequence_header (data, size, &info);
  if (r < 0) {
    self->fatal = TRUE;
    GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Invalid WAI sequence header."),
        ("%s", wai_strerror (r)));
    return GST_FLOW_ERROR;
  }

  /* the same header again (codec_data and in band, or repeated) changes nothing */
  if (self->seqhdr && gst_buffer_get_size (self->seqhdr) == size &&
      gst_buffer_memcmp (self->seqhdr, 0, data, size) == 0)
    return GST_FLOW_OK;

  GST_DEBUG_OBJECT (self, "sequence header: %ux%u display %ux%u+%u+%u, %u/%u fps, %u frames",
      info.width, info.height, info.disp_w, info.disp_h, info.disp_x, info.disp_y,
      info.fps_num, info.fps_den, info.frame_count);
  self->info = info;
  gst_clear_buffer (&self->seqhdr);
  self->seqhdr = gst_buffer_new_memdup (data, size);

  r = wai_send_data (self->dec, data, size);
  /* the library may resolve the model when it reads the unit: let it do so now */
  if (r == 0)
    r = wai_get_picture (self->dec, &pic);
  if (r == 0) {
    wai_picture_unref (&pic);
  } else if (r != WAI_ERR_AGAIN) {
    gst_clear_buffer (&self->seqhdr);
    if (!wai_error_is_fatal (r) && r != WAI_ERR_UNSUPPORTED) {
      self->fatal = TRUE;
      GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Unusable WAI sequence header: %s.",
              wai_strerror (r)), ("%s", wai_decoder_last_error (self->dec)));
      return GST_FLOW_ERROR;
    }
    return gst_wai_dec_fatal (self, r);
  }

  if (!gst_wai_dec_configure_output (self, info.disp_w, info.disp_h))
    return GST_FLOW_NOT_NEGOTIATED;
  return GST_FLOW_OK;
}


/* libwai's error details: to the debug log as they happen; an open failure's reason is kept
 * for the element error (no decoder is left to ask). */
static void
gst_wai_dec_log (void *opaque, int level, const char *msg)
{
  GstWaiDec *self = opaque;

  (void) level;
  GST_DEBUG_OBJECT (self, "libwai: %s", msg);
  if (!self->dec)
    g_strlcpy (self->open_msg, msg, sizeof (self->open_msg));
}

static gboolean
gst_wai_dec_open_decoder (GstWaiDec * self)
{
  WaiSettings s;
  int r;

  wai_default_settings (&s);
  s.log_callback = gst_wai_dec_log;
  s.log_opaque = self;
  self->open_msg[0] = '\0';
  GST_OBJECT_LOCK (self);
  s.model_path = self->model_path;      /* copied by the library */
  s.threads = self->threads;
  s.kernels = self->kernels;
  s.device = self->device;
  s.device_index = self->device_index;
  s.max_memory = self->max_memory;
  r = wai_decoder_open (&self->dec, &s);
  GST_OBJECT_UNLOCK (self);

  if (r == 0)
    return TRUE;
  self->dec = NULL;
  if (r == WAI_ERR_NO_DEVICE) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("The requested WAI decoding device is not available."),
        ("device=%s device-index=%d: %s", s.device == WAI_DEVICE_VULKAN ? "vulkan" : "cpu",
            s.device_index, self->open_msg[0] ? self->open_msg : wai_strerror (r)));
  } else if (r == WAI_ERR_UNSUPPORTED) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("The requested WAI kernels are not supported on this machine."),
        ("kernels=%s: %s", wai_kernels_name (s.kernels),
            self->open_msg[0] ? self->open_msg : wai_strerror (r)));
  } else {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("Could not open the WAI decoder."),
        ("%s", self->open_msg[0] ? self->open_msg : wai_strerror (r)));
  }
  return FALSE;
}

static gboolean
gst_wai_dec_start (GstVideoDecoder * vdec)
{
  GstWaiDec *self = GST_WAI_DEC (vdec);

  GST_DEBUG_OBJECT (self, "start (libwai %s)", wai_version_string ());
  if (!gst_wai_dec_open_decoder (self))
    return FALSE;
  memset (&self->info, 0, sizeof (self->info));
  self->resyncing = FALSE;
  self->fatal = FALSE;
  self->got_data = FALSE;
  gst_video_decoder_set_packetized (vdec, FALSE);
  return TRUE;
}

static gboolean
gst_wai_dec_stop (GstVideoDecoder * vdec)
{
  GstWaiDec *self = GST_WAI_DEC (vdec);

  wai_decoder_close (&self->dec);
  gst_clear_buffer (&self->seqhdr);
  gst_clear_buffer (&self->pending_header);
  g_clear_pointer (&self->input_state, gst_video_codec_state_unref);
  return TRUE;
}

static gboolean
gst_wai_dec_set_format (GstVideoDecoder * vdec, GstVideoCodecState * state)
{
  GstWaiDec *self = GST_WAI_DEC (vdec);
  GstStructure *s = gst_caps_get_structure (state->caps, 0);
  gboolean parsed = FALSE;

  GST_DEBUG_OBJECT (self, "input caps %" GST_PTR_FORMAT, (gpointer) state->caps);
  g_clear_pointer (&self->input_state, gst_video_codec_state_unref);
  self->input_state = gst_video_codec_state_ref (state);

  if (!gst_structure_get_boolean (s, "parsed", &parsed))
    parsed = FALSE;
  gst_video_decoder_set_packetized (vdec, parsed);

  /* used with the first frame: an error here (model not found) would be taken by
   * decodebin as "this decoder cannot handle the caps" and reported as a missing plugin */
  if (state->codec_data) {
    gst_buffer_replace (&self->pending_header, state->codec_data);
    return TRUE;
  }
  /* new caps but the same header: the output state still refers to the old input state */
  if (self->seqhdr)
    return gst_wai_dec_configure_output (self, self->info.disp_w, self->info.disp_h);
  return TRUE;
}

static GstFlowReturn
gst_wai_dec_take_pending_header (GstWaiDec * self)
{
  GstBuffer *hdr = self->pending_header;
  GstMapInfo map;
  GstFlowReturn ret;

  if (!hdr)
    return GST_FLOW_OK;
  self->pending_header = NULL;
  if (!gst_buffer_map (hdr, &map, GST_MAP_READ)) {
    gst_buffer_unref (hdr);
    GST_ELEMENT_ERROR (self, CORE, FAILED, ("Could not map codec_data."), (NULL));
    return GST_FLOW_ERROR;
  }
  ret = gst_wai_dec_handle_seqhdr (self, map.data, map.size);
  gst_buffer_unmap (hdr, &map);
  gst_buffer_unref (hdr);
  return ret;
}

static GstFlowReturn
gst_wai_dec_not_wai (GstWaiDec * self, const gchar * what)
{
  self->fatal = TRUE;
  GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
      ("This is not a WAI stream: it does not start with a sequence header."), ("%s", what));
  return GST_FLOW_ERROR;
}

/* The first bytes of a raw stream are not a usable sequence header (gst_wai_bad_stream_start
 * says why); the debug text shows them. */
static GstFlowReturn
gst_wai_dec_bad_start (GstWaiDec * self, gint code, const gchar * msg, const guint8 * data,
    gsize size, const gchar * when)
{
  GString *dbg = g_string_new (NULL);

  g_string_append_printf (dbg, "%s; %" G_GSIZE_FORMAT " bytes%s", when, size,
      size ? ", the first:" : "");
  for (gsize i = 0; i < MIN (size, 16); i++)
    g_string_append_printf (dbg, " %02x", data[i]);
  self->fatal = TRUE;
  gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR, GST_STREAM_ERROR, code,
      g_strdup (msg), g_string_free (dbg, FALSE), __FILE__, GST_FUNCTION, __LINE__);
  return GST_FLOW_ERROR;
}

/* Raw input: hand the base class one frame unit at a time; consume headers here. */
static GstFlowReturn
gst_wai_dec_parse (GstVideoDecoder * vdec, GstVideoCodecFrame * frame, GstAdapter * adapter,
    gboolean at_eos)
{
  GstWaiDec *self = GST_WAI_DEC (vdec);
  gsize avail = gst_adapter_available (adapter);
  const guint8 *data;
  WaiUnitInfo u;
  gsize skip;
  int r;

  if (avail == 0)
    return GST_VIDEO_DECODER_FLOW_NEED_DATA;
  self->got_data = TRUE;
  if (self->fatal) {
    gst_adapter_flush (adapter, avail);
    return GST_FLOW_ERROR;
  }

  data = gst_adapter_map (adapter, avail);
  memset (&u, 0, sizeof (u));
  r = wai_find_unit (data, avail, GST_WAI_MAX_UNIT_SIZE, &u);

  if (r == 0 && u.offset == 0) {
    GstFlowReturn ret = GST_FLOW_OK;

    self->resyncing = FALSE;
    if (u.type == WAI_UNIT_SEQUENCE_HEADER) {
      ret = gst_wai_dec_handle_seqhdr (self, data, u.size);
      gst_adapter_unmap (adapter);
      gst_adapter_flush (adapter, u.size);
      return ret;
    }
    gst_adapter_unmap (adapter);
    gst_video_decoder_add_to_frame (vdec, (gint) u.size);
    return gst_video_decoder_have_frame (vdec);
  }
  gst_adapter_unmap (adapter);

  if (r != 0 && r != WAI_ERR_AGAIN) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Internal error in the WAI unit parser."),
        ("wai_find_unit: %s", wai_strerror (r)));
    return GST_FLOW_ERROR;
  }

  /* spec 2: a stream starts with its sequence header (so without one, these bytes are the
   * start of the stream): say what is wrong with it */
  if (!self->seqhdr && (u.offset > 0 || at_eos)) {
    GstFlowReturn ret;
    gchar msg[256];
    gint code;

    data = gst_adapter_map (adapter, avail);
    if (!gst_wai_bad_stream_start (data, avail, at_eos, &code, msg, sizeof (msg))) {
      code = GST_STREAM_ERROR_WRONG_TYPE;       /* (not expected: the unit finder skipped it) */
      g_strlcpy (msg, "This is not a WAI stream: it does not start with a sequence header.",
          sizeof (msg));
    }
    ret = gst_wai_dec_bad_start (self, code, msg, data, avail, at_eos ?
        "at the end of the stream" : "no valid unit at offset 0");
    gst_adapter_unmap (adapter);
    return ret;
  }

  if (u.offset > 0 && u.offset <= avail) {
    skip = u.offset;            /* bytes that cannot start a unit: damage */
  } else if (r == WAI_ERR_AGAIN && !at_eos) {
    return GST_VIDEO_DECODER_FLOW_NEED_DATA;
  } else {
    /* at EOS a unit that never completes is truncated or has a bogus size: step past its
     * start code and look for a later unit */
    skip = MIN (avail, 4);
  }

  GST_DEBUG_OBJECT (self, "skipping %" G_GSIZE_FORMAT " bytes of %" G_GSIZE_FORMAT
      " (damaged or truncated)", skip, avail);
  gst_adapter_flush (adapter, skip);
  if (!self->resyncing) {
    self->resyncing = TRUE;
    return gst_wai_dec_soft_error (self, r == WAI_ERR_AGAIN && u.offset == 0 ?
        "truncated unit at the end of the stream" : "damaged or invalid unit skipped", 0);
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_wai_dec_output (GstWaiDec * self, GstVideoCodecFrame * frame, const WaiPicture * pic)
{
  GstVideoDecoder *vdec = GST_VIDEO_DECODER (self);
  GstVideoCodecState *state;
  GstVideoFrame vframe;
  GstClockTime dur;
  GstFlowReturn ret;

  state = gst_video_decoder_get_output_state (vdec);
  if (!state || (guint) GST_VIDEO_INFO_WIDTH (&state->info) != pic->width ||
      (guint) GST_VIDEO_INFO_HEIGHT (&state->info) != pic->height) {
    g_clear_pointer (&state, gst_video_codec_state_unref);
    if (!gst_wai_dec_configure_output (self, pic->width, pic->height)) {
      gst_video_decoder_drop_frame (vdec, frame);
      return GST_FLOW_NOT_NEGOTIATED;
    }
    state = gst_video_decoder_get_output_state (vdec);
  }

  ret = gst_video_decoder_allocate_output_frame (vdec, frame);
  if (ret != GST_FLOW_OK) {
    gst_video_codec_state_unref (state);
    gst_video_decoder_drop_frame (vdec, frame);
    return ret;
  }
  if (!gst_video_frame_map (&vframe, &state->info, frame->output_buffer, GST_MAP_WRITE)) {
    gst_video_codec_state_unref (state);
    gst_video_decoder_drop_frame (vdec, frame);
    GST_ELEMENT_ERROR (self, CORE, FAILED, ("Could not map the output buffer."), (NULL));
    return GST_FLOW_ERROR;
  }
  {
    guint8 *dst = GST_VIDEO_FRAME_PLANE_DATA (&vframe, 0);
    gint dstride = GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, 0);
    gsize row = (gsize) pic->width * 3;

#ifdef WAI_PLANTED_FAULT_GST_STRIDE
    dstride = (gint) row;       /* planted: ignores GStreamer's 4-byte row alignment */
#endif
    for (guint y = 0; y < pic->height; y++)
      memcpy (dst + (gsize) y * dstride, pic->data + (gssize) y * pic->stride, row);
  }
  gst_video_frame_unmap (&vframe);
  gst_video_codec_state_unref (state);

  /* raw input has no timestamps: the frame's time is frame_index / fps (spec 2.2) */
  dur = gst_wai_dec_frame_duration (&self->info);
  if (!GST_CLOCK_TIME_IS_VALID (frame->pts) && self->info.fps_num && self->info.fps_den)
    frame->pts = gst_util_uint64_scale ((guint64) pic->frame_index,
        GST_SECOND * (guint64) self->info.fps_den, self->info.fps_num);
  if (!GST_CLOCK_TIME_IS_VALID (frame->duration))
    frame->duration = dur;

  return gst_video_decoder_finish_frame (vdec, frame);
}

static GstFlowReturn
gst_wai_dec_handle_frame (GstVideoDecoder * vdec, GstVideoCodecFrame * frame)
{
  GstWaiDec *self = GST_WAI_DEC (vdec);
  GstMapInfo map;
  WaiPicture pic;
  GstFlowReturn ret;
  int r;

  if (self->fatal) {
    gst_video_decoder_release_frame (vdec, frame);
    return GST_FLOW_ERROR;
  }
  if (!gst_buffer_map (frame->input_buffer, &map, GST_MAP_READ)) {
    gst_video_decoder_drop_frame (vdec, frame);
    GST_ELEMENT_ERROR (self, CORE, FAILED, ("Could not map the input buffer."), (NULL));
    return GST_FLOW_ERROR;
  }

  ret = gst_wai_dec_take_pending_header (self);

  /* packetized input may carry the sequence header in band: alone, or before the frame unit
   * it applies to (an encoder changing its model mid-stream, e.g. waienc's rate control) */
  gsize off = 0;
  if (ret == GST_FLOW_OK && map.size >= 4 && memcmp (map.data, "WAIS", 4) == 0) {
    guint32 usize = map.size >= 12 ? GST_READ_UINT32_LE (map.data + 8) : 0;
#ifdef WAI_PLANTED_FAULT_GST_HEADER_FRAME
    usize = 0;                  /* planted: the frame after an in-band header is lost */
#endif
    if (usize >= 96 && usize < map.size && memcmp (map.data + usize, "WAIF", 4) == 0) {
      ret = gst_wai_dec_handle_seqhdr (self, map.data, usize);
      off = usize;
    } else {
      ret = gst_wai_dec_handle_seqhdr (self, map.data, map.size);
      gst_buffer_unmap (frame->input_buffer, &map);
      gst_video_decoder_release_frame (vdec, frame);
      return ret;
    }
  }

  if (ret == GST_FLOW_OK && !self->seqhdr) {
    ret = gst_wai_dec_not_wai (self, gst_video_decoder_get_packetized (vdec) ?
        "a frame unit came before any sequence header (in band or codec_data)" :
        "a frame unit came before any sequence header");
  }
  if (ret != GST_FLOW_OK) {
    gst_buffer_unmap (frame->input_buffer, &map);
    gst_video_decoder_drop_frame (vdec, frame);
    return ret;
  }

  /* late frames are not worth a (costly) decode; every frame is a key frame */
  if (gst_video_decoder_get_max_decode_time (vdec, frame) < 0) {
    GST_DEBUG_OBJECT (self, "skipping late frame");
    gst_buffer_unmap (frame->input_buffer, &map);
    return gst_video_decoder_drop_frame (vdec, frame);
  }

  r = wai_send_data (self->dec, map.data + off, map.size - off);
  gst_buffer_unmap (frame->input_buffer, &map);
  if (r == 0)
    r = wai_get_picture (self->dec, &pic);
  /* each buffer is one unit: nothing may stay behind for the next one */
  wai_decoder_flush (self->dec);

  if (r == 0) {
    ret = gst_wai_dec_output (self, frame, &pic);
    wai_picture_unref (&pic);
    return ret;
  }

  gst_video_decoder_drop_frame (vdec, frame);
  if (wai_error_is_fatal (r))
    return gst_wai_dec_fatal (self, r);
  return gst_wai_dec_soft_error (self, r == WAI_ERR_AGAIN ? "incomplete frame unit" :
      wai_strerror (r), r == WAI_ERR_AGAIN ? 0 : r);
}

static gboolean
gst_wai_dec_flush (GstVideoDecoder * vdec)
{
  GstWaiDec *self = GST_WAI_DEC (vdec);

  GST_DEBUG_OBJECT (self, "flush");
  if (self->dec)
    wai_decoder_flush (self->dec);
  self->resyncing = FALSE;
  return TRUE;
}

/* After a fatal error, EOS goes straight on: the base class would drain (and fail) again
 * and add "no valid frames" as a second error. Raw input that brought no bytes at all is an
 * error too (the base class would let it end quietly). */
static gboolean
gst_wai_dec_sink_event (GstVideoDecoder * vdec, GstEvent * event)
{
  GstWaiDec *self = GST_WAI_DEC (vdec);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && !self->fatal && !self->got_data &&
      !self->seqhdr && !self->pending_header && !gst_video_decoder_get_packetized (vdec)) {
    gchar msg[256];
    gint code;

    if (gst_wai_bad_stream_start (NULL, 0, TRUE, &code, msg, sizeof (msg)))
      gst_wai_dec_bad_start (self, code, msg, NULL, 0, "end of stream before any data");
  }
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->fatal)
    return gst_pad_push_event (GST_VIDEO_DECODER_SRC_PAD (vdec), event);
  return GST_VIDEO_DECODER_CLASS (parent_class)->sink_event (vdec, event);
}

/* Whether bytes [0, size) of a stream hold at least one intact frame unit (CRC ok). */
static gboolean
has_intact_frame (const guint8 * data, gsize size)
{
  gsize off = 0;
  WaiUnitInfo u;

  while (off < size && wai_find_unit (data + off, size - off, GST_WAI_MAX_UNIT_SIZE, &u) == 0) {
    if (u.type == WAI_UNIT_FRAME)
      return TRUE;
    off += u.offset + u.size;
  }
  return FALSE;
}

/* Raw input from a source that can be read at random (filesrc): the start of the stream is
 * checked here, while the element starts, before any streaming thread runs (as typefind does
 * in pull mode): the sequence header (empty, not WAI, damaged, cut, unsupported), its model
 * (found, valid: loaded here, once), and, for a stream of at most GST_WAI_PRECHECK_MAX bytes,
 * whether any frame unit in it is intact. Whatever fails here fails the state change at once,
 * with the error message posted from the thread that changes the state, never from a
 * streaming thread racing with it: an application such as gst-launch-1.0 (1.22) quits its
 * main loop from a bus sync handler, and loses that quit if the error comes before the loop
 * runs; the run then never ends. Returns FALSE (error posted) if the stream cannot be decoded. */
#define GST_WAI_PRECHECK_MAX (16u << 20)

static gboolean
gst_wai_dec_check_start (GstWaiDec * self, GstPad * pad)
{
  GstBuffer *buf = NULL, *rest = NULL;
  GstMapInfo map;
  gboolean at_eos, ok = TRUE;
  gchar msg[256];
  gint code;
  gsize want = GST_WAI_UNIT_PROBE;
  gint64 total = -1;
  GstFlowReturn fr;

  fr = gst_pad_pull_range (pad, 0, GST_WAI_UNIT_PROBE, &buf);
  if (fr == GST_FLOW_OK && gst_buffer_get_size (buf) >= GST_WAI_UNIT_PROBE &&
      gst_buffer_memcmp (buf, 0, "WAIS", 4) == 0) {
    guint32 usize;

    gst_buffer_extract (buf, 8, &usize, 4);
    usize = GUINT32_FROM_LE (usize);
    if (usize > GST_WAI_UNIT_PROBE && usize <= GST_WAI_MAX_UNIT_SIZE) {
      gst_clear_buffer (&buf);
      want = usize;
      fr = gst_pad_pull_range (pad, 0, usize, &buf);
    }
  }
  if (fr == GST_FLOW_EOS) {
    buf = gst_buffer_new ();    /* an empty stream */
  } else if (fr != GST_FLOW_OK) {
    GST_DEBUG_OBJECT (self, "could not read the stream's start (%s): left to streaming",
        gst_flow_get_name (fr));
    return TRUE;
  }
  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    gst_buffer_unref (buf);
    return TRUE;
  }
  at_eos = map.size < want;     /* (a short read ends the file) */
  if (gst_wai_bad_stream_start (map.data, map.size, at_eos, &code, msg, sizeof (msg))) {
    gst_wai_dec_bad_start (self, code, msg, map.data, map.size, "checked when starting");
    ok = FALSE;
  } else if (at_eos || map.size != want) {
    ok = TRUE;                  /* (cannot happen: a valid header is whole) */
  } else {
    /* the header and its model, as the first buffer would bring them (the streaming thread
     * then meets the same header and skips it); errors are posted there */
    GST_VIDEO_DECODER_STREAM_LOCK (self);
    ok = gst_wai_dec_handle_seqhdr (self, map.data, map.size) == GST_FLOW_OK;
    GST_VIDEO_DECODER_STREAM_UNLOCK (self);
  }
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  if (!ok)
    return FALSE;

  /* a small stream with no intact frame would fail at its end ("no valid frames"), a few
   * microseconds later: decide it now */
  if (gst_pad_peer_query_duration (pad, GST_FORMAT_BYTES, &total) && total > (gint64) want
      && total <= GST_WAI_PRECHECK_MAX &&
      gst_pad_pull_range (pad, want, (guint) (total - (gint64) want), &rest) == GST_FLOW_OK) {
    if (gst_buffer_map (rest, &map, GST_MAP_READ)) {
      if (!has_intact_frame (map.data, map.size)) {
        GST_ELEMENT_ERROR (self, STREAM, DECODE, ("The WAI stream has no intact frame: "
                "every frame unit is damaged or missing."), ("checked when starting; %"
                G_GINT64_FORMAT " bytes after the sequence header", total - (gint64) want));
        self->fatal = TRUE;
        ok = FALSE;
      }
      gst_buffer_unmap (rest, &map);
    }
    gst_buffer_unref (rest);
  } else if (total == (gint64) want) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE, ("The WAI stream has no frame: it holds a "
            "sequence header only."), ("checked when starting"));
    self->fatal = TRUE;
    ok = FALSE;
  }
  GST_DEBUG_OBJECT (self, "stream start checked (%" G_GINT64_FORMAT " bytes): %s", total,
      ok ? "ok" : "refused");
  return ok;
}

static gboolean
gst_wai_dec_sink_activate (GstPad * pad, GstObject * parent)
{
  GstWaiDec *self = GST_WAI_DEC (parent);
  GstQuery *query = gst_query_new_scheduling ();
  gboolean pull = FALSE, ok = TRUE;

  if (gst_pad_peer_query (pad, query))
    pull = gst_query_has_scheduling_mode_with_flags (query, GST_PAD_MODE_PULL,
        GST_SCHEDULING_FLAG_SEEKABLE);
  gst_query_unref (query);

  if (pull && gst_pad_activate_mode (pad, GST_PAD_MODE_PULL, TRUE)) {
    ok = gst_wai_dec_check_start (self, pad);
    gst_pad_activate_mode (pad, GST_PAD_MODE_PULL, FALSE);
  }
  if (!ok)
    return FALSE;
  return gst_pad_activate_mode (pad, GST_PAD_MODE_PUSH, TRUE);
}

static GstFlowReturn
gst_wai_dec_finish (GstVideoDecoder * vdec)
{
  /* the library returns each picture as its unit arrives: nothing is held back */
  return GST_FLOW_OK;
}

static void
gst_wai_dec_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstWaiDec *self = GST_WAI_DEC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL_PATH:
      g_free (self->model_path);
      self->model_path = g_value_dup_string (value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_int (value);
      break;
    case PROP_KERNELS:
      self->kernels = (WaiKernels) g_value_get_enum (value);
      break;
    case PROP_DEVICE:
      self->device = (WaiDevice) g_value_get_enum (value);
      break;
    case PROP_DEVICE_INDEX:
      self->device_index = g_value_get_int (value);
      break;
    case PROP_MAX_MEMORY:
      self->max_memory = g_value_get_uint64 (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_wai_dec_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstWaiDec *self = GST_WAI_DEC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL_PATH:
      g_value_set_string (value, self->model_path);
      break;
    case PROP_THREADS:
      g_value_set_int (value, self->threads);
      break;
    case PROP_KERNELS:
      g_value_set_enum (value, self->kernels);
      break;
    case PROP_DEVICE:
      g_value_set_enum (value, self->device);
      break;
    case PROP_DEVICE_INDEX:
      g_value_set_int (value, self->device_index);
      break;
    case PROP_MAX_MEMORY:
      g_value_set_uint64 (value, self->max_memory);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_wai_dec_finalize (GObject * object)
{
  GstWaiDec *self = GST_WAI_DEC (object);

  g_free (self->model_path);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* Errors from a streaming thread wait for the application's bus reader (gstwaicommon.h). */
static GstStateChangeReturn
gst_wai_dec_change_state (GstElement * element, GstStateChange transition)
{
  return gst_wai_change_state_noted (GST_ELEMENT_CLASS (parent_class), element, transition,
      &GST_WAI_DEC (element)->changing_state);
}

static gboolean
gst_wai_dec_post_message (GstElement * element, GstMessage * message)
{
  return gst_wai_post_message_held (GST_ELEMENT_CLASS (parent_class), element, message,
      &GST_WAI_DEC (element)->changing_state);
}

static void
gst_wai_dec_class_init (GstWaiDecClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstVideoDecoderClass *vdec_class = GST_VIDEO_DECODER_CLASS (klass);

  gobject_class->set_property = gst_wai_dec_set_property;
  gobject_class->get_property = gst_wai_dec_get_property;
  gobject_class->finalize = gst_wai_dec_finalize;

  g_object_class_install_property (gobject_class, PROP_MODEL_PATH,
      g_param_spec_string ("model-path", "Model path",
          "Directories (':'-separated) searched for <sha256>.whm model files before "
          "$WAI_MODEL_PATH and the installed model directory (applies at start)",
          DEFAULT_MODEL_PATH,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_int ("threads", "Threads",
          "Worker threads (0 = automatic, WAI_THREADS may override; applies at start)",
          0, 1024, DEFAULT_THREADS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_KERNELS,
      g_param_spec_enum ("kernels", "Kernels",
          "Kernel set (all give the same output; applies at start)",
          GST_TYPE_WAI_DEC_KERNELS, DEFAULT_KERNELS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_enum ("device", "Device", "Where to decode (applies at start)",
          GST_TYPE_WAI_DEC_DEVICE, DEFAULT_DEVICE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_DEVICE_INDEX,
      g_param_spec_int ("device-index", "Device index",
          "Which device of the chosen kind (applies at start)", 0, 64, DEFAULT_DEVICE_INDEX,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_MEMORY,
      g_param_spec_uint64 ("max-memory", "Maximum memory",
          "Memory budget in bytes for decoding (WaiSettings.max_memory): a stream whose "
          "model and picture size need more is refused with an error, and the input buffer "
          "holds at most max(4 MiB, min(max-memory / 4, 1 GiB)) (applies at start)",
          1, G_MAXUINT64, DEFAULT_MAX_MEMORY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_wai_dec_change_state);
  element_class->post_message = GST_DEBUG_FUNCPTR (gst_wai_dec_post_message);
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "WAI video decoder",
      "Codec/Decoder/Video", "Decodes WAI learned-codec streams to RGB with libwai",
      "The WAI developers");

  vdec_class->start = GST_DEBUG_FUNCPTR (gst_wai_dec_start);
  vdec_class->stop = GST_DEBUG_FUNCPTR (gst_wai_dec_stop);
  vdec_class->set_format = GST_DEBUG_FUNCPTR (gst_wai_dec_set_format);
  vdec_class->parse = GST_DEBUG_FUNCPTR (gst_wai_dec_parse);
  vdec_class->handle_frame = GST_DEBUG_FUNCPTR (gst_wai_dec_handle_frame);
  vdec_class->flush = GST_DEBUG_FUNCPTR (gst_wai_dec_flush);
  vdec_class->finish = GST_DEBUG_FUNCPTR (gst_wai_dec_finish);
  vdec_class->sink_event = GST_DEBUG_FUNCPTR (gst_wai_dec_sink_event);

  gst_type_mark_as_plugin_api (GST_TYPE_WAI_DEC_KERNELS, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_WAI_DEC_DEVICE, 0);

  GST_DEBUG_CATEGORY_INIT (gst_wai_dec_debug, "waidec", 0, "WAI decoder");
}

static void
gst_wai_dec_init (GstWaiDec * self)
{
  GstVideoDecoder *vdec = GST_VIDEO_DECODER (self);

  self->model_path = g_strdup (DEFAULT_MODEL_PATH);
  self->threads = DEFAULT_THREADS;
  self->kernels = DEFAULT_KERNELS;
  self->device = DEFAULT_DEVICE;
  self->device_index = DEFAULT_DEVICE_INDEX;
  self->max_memory = DEFAULT_MAX_MEMORY;

  /* filesrc ! waidec gives no caps at all: that is raw input */
  gst_video_decoder_set_packetized (vdec, FALSE);
  gst_video_decoder_set_use_default_pad_acceptcaps (vdec, TRUE);
  GST_PAD_SET_ACCEPT_TEMPLATE (GST_VIDEO_DECODER_SINK_PAD (vdec));
  gst_pad_set_activate_function (GST_VIDEO_DECODER_SINK_PAD (vdec),
      GST_DEBUG_FUNCPTR (gst_wai_dec_sink_activate));
}
