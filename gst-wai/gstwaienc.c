/* GStreamer WAI encoder
 * SPDX-License-Identifier: BSD-2-Clause
 */

/**
 * SECTION:element-waienc
 * @title: waienc
 *
 * Encodes RGB pictures to a WAI stream with libwai's encoder (every frame is a key frame).
 *
 * Output is packetized: `video/x-wai, parsed=true` with the sequence header ("WAIS" unit,
 * frame_count 0 = unknown) as `codec_data`, the same header once in band as a HEADER buffer
 * before the first frame, then one frame unit ("WAIF") per buffer. Written straight to a file,
 * the buffers form a valid `.wai` stream.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=3 ! videoconvert ! waienc ! filesink location=a.wai
 * ]|
 */

#include "gstwaienc.h"
#include "gstwaicommon.h"
#include "gstwaidec.h"          /* GST_TYPE_WAI_DEC_KERNELS, shared with waidec */

#include <stdlib.h>
#include <wai/encoder.h>

GST_DEBUG_CATEGORY_STATIC (gst_wai_enc_debug);
#define GST_CAT_DEFAULT gst_wai_enc_debug

#define DEFAULT_QUALITY 3
#define DEFAULT_MODEL_DIR NULL
#define DEFAULT_THREADS 0
#define DEFAULT_MAX_MEMORY 0    /* the library's default (WaiEncoderSettings.max_memory) */
#define DEFAULT_BITRATE 0       /* kbit/s; 0: the quality property decides */
#define DEFAULT_TARGET_PSNR 0.0
#define DEFAULT_KERNELS WAI_KERNELS_AUTO
/* the rate written to the header when the caps have none (framerate=0/1) */
#define FALLBACK_FPS_N 25
#define FALLBACK_FPS_D 1

enum
{
  PROP_0,
  PROP_QUALITY,
  PROP_MODEL_DIR,
  PROP_THREADS,
  PROP_MAX_MEMORY,
  PROP_BITRATE,
  PROP_TARGET_PSNR,
  PROP_KERNELS,
};

struct _GstWaiEnc
{
  GstVideoEncoder parent;

  /* properties, under the object lock; used at the next caps */
  gint quality;
  gchar *model_dir;
  gint threads;
  guint64 max_memory;
  guint bitrate;
  gdouble target_psnr;
  WaiKernels kernels;

  /* streaming state, under the stream lock */
  WaiEncoder *enc;
  guint enc_fps_n, enc_fps_d;   /* the rate self->enc writes */
  guint64 enc_frames;           /* pictures self->enc has encoded */
  guint enc_bitrate;            /* the bitrate self->enc aims at (0: none) */
  GstVideoCodecState *input_state;
  gboolean failed;              /* an error was posted: post no more */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format = (string) RGB, "
        "width = (int) [ 1, 65536 ], height = (int) [ 1, 65536 ], "
        "framerate = (fraction) [ 0/1, MAX ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_WAI_CAPS ", parsed = (boolean) true, "
        "width = (int) [ 1, 65536 ], height = (int) [ 1, 65536 ], "
        "framerate = (fraction) [ 0/1, MAX ]"));

#define gst_wai_enc_parent_class parent_class
G_DEFINE_TYPE (GstWaiEnc, gst_wai_enc, GST_TYPE_VIDEO_ENCODER)
GST_ELEMENT_REGISTER_DEFINE (waienc, "waienc", GST_RANK_SECONDARY, GST_TYPE_WAI_ENC)

static void
gst_wai_enc_close_encoder (GstWaiEnc * self)
{
  wai_encoder_close (&self->enc);
  g_clear_pointer (&self->input_state, gst_video_codec_state_unref);
}

/* "1, 3, 5, 7" (or "none"): the qualities libwai's model search finds for this model-dir
 * (NULL: $WAI_MODEL_PATH and the installed directory). g_free() the result. */
static gchar *
gst_wai_enc_qualities_string (const gchar * dir)
{
  int q[WAI_ENCODER_MAX_QUALITY];
  int n = wai_encoder_available_qualities (dir, q, WAI_ENCODER_MAX_QUALITY);
  GString *str = g_string_new (NULL);
  for (int i = 0; i < n && i < WAI_ENCODER_MAX_QUALITY; i++)
    g_string_append_printf (str, "%s%d", i ? ", " : "", q[i]);
  if (n <= 0)
    g_string_append (str, "none");
  return g_string_free (str, FALSE);
}

/* Bytes per frame for a bitrate in kbit/s at fps_n/fps_d frames per second (at least 1). */
static guint64
gst_wai_enc_frame_bytes (guint kbps, guint fps_n, guint fps_d)
{
  guint64 b = gst_util_uint64_scale ((guint64) kbps * 1000, fps_d, (guint64) fps_n * 8);
  return b ? b : 1;
}

/* Opens the library's encoder for this rate; posts the element error on failure. */
static gboolean
gst_wai_enc_open_encoder (GstWaiEnc * self, guint fps_n, guint fps_d)
{
  WaiEncoderSettings s;
  gchar *dir;
  int r;

  wai_encoder_default_settings (&s);
  GST_OBJECT_LOCK (self);
  dir = g_strdup (self->model_dir);
  s.quality = self->quality;
  s.threads = self->threads;
  s.max_memory = self->max_memory;
  s.kernels = self->kernels;
  /* a bitrate is a size per frame at this rate; it takes precedence over target-psnr */
  if (self->bitrate)
    s.target_frame_bytes = gst_wai_enc_frame_bytes (self->bitrate, fps_n, fps_d);
  else
    s.target_psnr = self->target_psnr;
  self->enc_bitrate = self->bitrate;
  GST_OBJECT_UNLOCK (self);
  s.model_dir = dir;
  s.fps_num = fps_n;
  s.fps_den = fps_d;
  if (s.target_frame_bytes || s.target_psnr > 0)
    GST_INFO_OBJECT (self, "rate control: %" G_GUINT64_FORMAT " bytes per frame, PSNR %.2f dB "
        "(0: none), among qualities found in %s", s.target_frame_bytes, s.target_psnr,
        dir ? dir : "the model search path");

  r = wai_encoder_open (&self->enc, &s);
  self->enc_fps_n = fps_n;
  self->enc_fps_d = fps_d;
  self->enc_frames = 0;
  if (r < 0) {
    self->failed = TRUE;
    const gchar *where = dir ? dir : "$WAI_MODEL_PATH or the installed model directory";
    const gchar *why = wai_encoder_last_error (NULL);
    if (r == WAI_ERR_MODEL_NOT_FOUND && (s.target_frame_bytes || s.target_psnr > 0)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("No WAI encoder model pair wai-q<N>.whm/.ana was found in %s for the bitrate or "
              "target-psnr to choose from.", where), ("%s (set the model-dir property)", why));
    } else if (r == WAI_ERR_MODEL_NOT_FOUND || r == WAI_ERR_IO) {
      gchar *qs = gst_wai_enc_qualities_string (dir);
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("The WAI encoder model wai-q%d.whm/.ana was not found in %s; qualities with a "
              "model pair there: %s.", s.quality, where, qs),
          ("%s (set the model-dir or quality property)", why));
      g_free (qs);
    } else if (r == WAI_ERR_UNSUPPORTED) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("The requested WAI kernels are not supported on this machine."),
          ("kernels=%s: %s", wai_kernels_name (s.kernels), why));
    } else if (r == WAI_ERR_MODEL_INVALID)
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("The WAI encoder model wai-q%d in %s is invalid.", s.quality, where), ("%s", why));
    else
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("Could not open the WAI encoder: %s.", wai_strerror (r)), ("%s", why));
  }
  g_free (dir);
  return r == 0;
}

/* The model is loaded at start, so that a missing one fails the state change at once; the
 * caps' rate may make set_format reload it. */
static gboolean
gst_wai_enc_start (GstVideoEncoder * venc)
{
  GstWaiEnc *self = GST_WAI_ENC (venc);

  gst_wai_enc_close_encoder (self);
  self->failed = FALSE;
  return gst_wai_enc_open_encoder (self, FALLBACK_FPS_N, FALLBACK_FPS_D);
}

static gboolean
gst_wai_enc_stop (GstVideoEncoder * venc)
{
  gst_wai_enc_close_encoder (GST_WAI_ENC (venc));
  return TRUE;
}

static gboolean
gst_wai_enc_set_format (GstVideoEncoder * venc, GstVideoCodecState * state)
{
  GstWaiEnc *self = GST_WAI_ENC (venc);
  const GstVideoInfo *info = &state->info;
  GstVideoCodecState *out;
  GstBuffer *hdr;
  GstCaps *caps;
  guint fps_n = FALLBACK_FPS_N, fps_d = FALLBACK_FPS_D;
  guint8 *data;
  size_t size;
  int r;

  if (GST_VIDEO_INFO_FPS_N (info) > 0 && GST_VIDEO_INFO_FPS_D (info) > 0) {
    fps_n = GST_VIDEO_INFO_FPS_N (info);
    fps_d = GST_VIDEO_INFO_FPS_D (info);
  }
  if (self->failed)
    return FALSE;
  g_clear_pointer (&self->input_state, gst_video_codec_state_unref);
  /* another rate, or a new stream after frames: a fresh encoder (frame indices from 0) */
  if (!self->enc || fps_n != self->enc_fps_n || fps_d != self->enc_fps_d || self->enc_frames) {
    wai_encoder_close (&self->enc);
    if (!gst_wai_enc_open_encoder (self, fps_n, fps_d))
      return FALSE;
  }

  r = wai_encoder_header (self->enc, GST_VIDEO_INFO_WIDTH (info),
      GST_VIDEO_INFO_HEIGHT (info), 0, &data, &size);
  if (r < 0) {
    self->failed = TRUE;
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The WAI model cannot code %dx%d pictures: %s.", GST_VIDEO_INFO_WIDTH (info),
            GST_VIDEO_INFO_HEIGHT (info), wai_strerror (r)),
        ("%s", wai_encoder_last_error (self->enc)));
    gst_wai_enc_close_encoder (self);
    return FALSE;
  }
  hdr = gst_buffer_new_memdup (data, size);
  free (data);

  caps = gst_caps_new_simple (GST_WAI_CAPS, "parsed", G_TYPE_BOOLEAN, TRUE, NULL);
  out = gst_video_encoder_set_output_state (venc, caps, state);
  /* the base class fills width, height, framerate and pixel-aspect-ratio from state */
  out->codec_data = gst_buffer_ref (hdr);
  gst_video_codec_state_unref (out);

  /* the header also goes in band once, before the first frame, so that the buffers
   * concatenated (filesink) are a valid stream */
  GST_BUFFER_FLAG_SET (hdr, GST_BUFFER_FLAG_HEADER);
  gst_video_encoder_set_headers (venc, g_list_append (NULL, hdr));

  self->input_state = gst_video_codec_state_ref (state);
  return gst_video_encoder_negotiate (venc);
}

static GstFlowReturn
gst_wai_enc_handle_frame (GstVideoEncoder * venc, GstVideoCodecFrame * frame)
{
  GstWaiEnc *self = GST_WAI_ENC (venc);
  GstVideoFrame vframe;
  guint8 *unit;
  size_t size;
  int r;

  if (!self->enc || !self->input_state) {
    gst_video_encoder_finish_frame (venc, frame);
    if (self->failed)
      return GST_FLOW_NOT_NEGOTIATED;
    self->failed = TRUE;
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No input format was set."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  /* a bitrate changed while playing: the next frames aim at it (a change between a bitrate
   * and none takes effect at the next caps) */
  GST_OBJECT_LOCK (self);
  guint kbps = self->bitrate;
  GST_OBJECT_UNLOCK (self);
  if (kbps && self->enc_bitrate && kbps != self->enc_bitrate) {
    wai_encoder_set_target (self->enc,
        gst_wai_enc_frame_bytes (kbps, self->enc_fps_n, self->enc_fps_d), 0);
    self->enc_bitrate = kbps;
  }
  if (!gst_video_frame_map (&vframe, &self->input_state->info, frame->input_buffer,
          GST_MAP_READ)) {
    gst_video_encoder_finish_frame (venc, frame);
    GST_ELEMENT_ERROR (self, CORE, FAILED, ("Could not map the input frame."), (NULL));
    return GST_FLOW_ERROR;
  }
  r = wai_encode_picture_unit (self->enc, GST_VIDEO_FRAME_PLANE_DATA (&vframe, 0),
      GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, 0), GST_VIDEO_FRAME_WIDTH (&vframe),
      GST_VIDEO_FRAME_HEIGHT (&vframe), &unit, &size);
  gst_video_frame_unmap (&vframe);
  if (r < 0) {
    gst_video_encoder_finish_frame (venc, frame);
    self->failed = TRUE;
    GST_ELEMENT_ERROR (self, STREAM, ENCODE, ("Could not encode a frame: %s.",
            wai_strerror (r)), ("%s", wai_encoder_last_error (self->enc)));
    return GST_FLOW_ERROR;
  }
  self->enc_frames++;
  WaiFrameStats st;
  if (wai_encoder_last_frame (self->enc, &st) == 0)
    GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": quality %d, %" G_GUINT64_FORMAT
        " bytes%s", self->enc_frames - 1, st.quality, st.bytes,
        st.target_met ? "" : " (the target cannot be met: the nearest taken)");
  frame->output_buffer = gst_buffer_new_wrapped_full (0, unit, size, 0, size, unit, free);
  GST_VIDEO_CODEC_FRAME_SET_SYNC_POINT (frame);   /* intra only */
  return gst_video_encoder_finish_frame (venc, frame);
}

static gboolean
gst_wai_enc_propose_allocation (GstVideoEncoder * venc, GstQuery * query)
{
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  return GST_VIDEO_ENCODER_CLASS (parent_class)->propose_allocation (venc, query);
}

static void
gst_wai_enc_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstWaiEnc *self = GST_WAI_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_QUALITY:
      self->quality = g_value_get_int (value);
      break;
    case PROP_MODEL_DIR:
      g_free (self->model_dir);
      self->model_dir = g_value_dup_string (value);
      break;
    case PROP_THREADS:
      self->threads = g_value_get_int (value);
      break;
    case PROP_MAX_MEMORY:
      self->max_memory = g_value_get_uint64 (value);
      break;
    case PROP_BITRATE:
      self->bitrate = g_value_get_uint (value);
      break;
    case PROP_TARGET_PSNR:
      self->target_psnr = g_value_get_double (value);
      break;
    case PROP_KERNELS:
      self->kernels = (WaiKernels) g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_wai_enc_get_property (GObject * object, guint prop_id, GValue * value, GParamSpec * pspec)
{
  GstWaiEnc *self = GST_WAI_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_QUALITY:
      g_value_set_int (value, self->quality);
      break;
    case PROP_MODEL_DIR:
      g_value_set_string (value, self->model_dir);
      break;
    case PROP_THREADS:
      g_value_set_int (value, self->threads);
      break;
    case PROP_MAX_MEMORY:
      g_value_set_uint64 (value, self->max_memory);
      break;
    case PROP_BITRATE:
      g_value_set_uint (value, self->bitrate);
      break;
    case PROP_TARGET_PSNR:
      g_value_set_double (value, self->target_psnr);
      break;
    case PROP_KERNELS:
      g_value_set_enum (value, self->kernels);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_wai_enc_finalize (GObject * object)
{
  GstWaiEnc *self = GST_WAI_ENC (object);

  gst_wai_enc_close_encoder (self);
  g_free (self->model_dir);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_wai_enc_class_init (GstWaiEncClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstVideoEncoderClass *venc_class = GST_VIDEO_ENCODER_CLASS (klass);

  gobject_class->set_property = gst_wai_enc_set_property;
  gobject_class->get_property = gst_wai_enc_get_property;
  gobject_class->finalize = gst_wai_enc_finalize;

  /* the blurb names the qualities installed when the class is made (gst-inspect-1.0) */
  gchar *qs = gst_wai_enc_qualities_string (NULL);
  gchar *blurb = g_strdup_printf ("Quality level: the encoder loads the model pair "
      "wai-q<quality>.whm + .ana (or the quality file wai-q<quality>.rate: a rate of a "
      "variable-rate model pair) from model-dir, or when that is unset from the first "
      "directory of $WAI_MODEL_PATH, then of the installed models, that holds them "
      "(installed qualities: %s)", qs);
  g_object_class_install_property (gobject_class, PROP_QUALITY,
      g_param_spec_int ("quality", "Quality", blurb, 1, WAI_ENCODER_MAX_QUALITY,
          DEFAULT_QUALITY, G_PARAM_READWRITE | G_PARAM_STATIC_NAME | G_PARAM_STATIC_NICK |
          GST_PARAM_MUTABLE_READY));
  g_free (blurb);
  g_free (qs);
  g_object_class_install_property (gobject_class, PROP_MODEL_DIR,
      g_param_spec_string ("model-dir", "Model directory",
          "Directory (or ':'-separated directories) holding wai-q<quality>.whm and .ana "
          "(or wai-q<quality>.rate), "
          "searched alone (NULL: $WAI_MODEL_PATH, then the installed model directory)",
          DEFAULT_MODEL_DIR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_int ("threads", "Threads",
          "Worker threads of the integer hyper-synthesis (0 = automatic)", 0, 1024,
          DEFAULT_THREADS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_MEMORY,
      g_param_spec_uint64 ("max-memory", "Maximum memory",
          "Memory budget in bytes of the float analysis of one picture "
          "(WaiEncoderSettings.max_memory): a picture that needs more is an error, found "
          "before allocating; 0 = the library's default (4 GiB)", 0, G_MAXUINT64,
          DEFAULT_MAX_MEMORY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_BITRATE,
      g_param_spec_uint ("bitrate", "Bitrate",
          "Bitrate to aim at in kbit/s (0 = off: the quality property decides): each frame "
          "gets the largest installed quality whose frame fits bitrate / framerate (a "
          "framerate of 0/1 counts as 25/1); a frame that cannot fit takes the smallest. "
          "Changes while playing apply from the next frame", 0, G_MAXUINT / 1000,
          DEFAULT_BITRATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_TARGET_PSNR,
      g_param_spec_double ("target-psnr", "Target PSNR",
          "PSNR in dB (RGB8) to aim at (0 = off): each frame gets the lowest installed "
          "quality whose decoded frame reaches it (the highest when none does); bitrate "
          "takes precedence", 0, 1000, DEFAULT_TARGET_PSNR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_KERNELS,
      g_param_spec_enum ("kernels", "Kernels",
          "Kernel set of the float analysis and the integer decoding the encoder does (all "
          "give the same stream; auto: the fastest this CPU supports, WAI_KERNELS is not "
          "read here; applies at the next caps)",
          GST_TYPE_WAI_DEC_KERNELS, DEFAULT_KERNELS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "WAI video encoder",
      "Codec/Encoder/Video", "Encodes RGB video to WAI (learned intra-only codec) with libwai",
      "WAI developers");

  venc_class->start = GST_DEBUG_FUNCPTR (gst_wai_enc_start);
  venc_class->stop = GST_DEBUG_FUNCPTR (gst_wai_enc_stop);
  venc_class->set_format = GST_DEBUG_FUNCPTR (gst_wai_enc_set_format);
  venc_class->handle_frame = GST_DEBUG_FUNCPTR (gst_wai_enc_handle_frame);
  venc_class->propose_allocation = GST_DEBUG_FUNCPTR (gst_wai_enc_propose_allocation);

  GST_DEBUG_CATEGORY_INIT (gst_wai_enc_debug, "waienc", 0, "WAI encoder");
}

static void
gst_wai_enc_init (GstWaiEnc * self)
{
  self->quality = DEFAULT_QUALITY;
  self->model_dir = g_strdup (DEFAULT_MODEL_DIR);
  self->threads = DEFAULT_THREADS;
  self->max_memory = DEFAULT_MAX_MEMORY;
  self->bitrate = DEFAULT_BITRATE;
  self->target_psnr = DEFAULT_TARGET_PSNR;
  self->kernels = DEFAULT_KERNELS;
}
