/* GstHarness tests of waienc and of the library's streaming encoder API it uses.
 *
 * Environment: WAI_ENC_MODELS (the directory with wai-q3.whm/.ana, i.e. <source>/models). */
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <wai/encoder.h>
#include <wai/wai.h>

#define W 96
#define H 80
#define FRAMES 3

static const gchar *
models (void)
{
  const gchar *d = g_getenv ("WAI_ENC_MODELS");
  fail_unless (d != NULL, "WAI_ENC_MODELS is not set");
  return d;
}

/* A picture that differs per frame (so frame units differ), rows of `stride` bytes. */
static void
fill (guint8 * p, gsize stride, guint k)
{
  for (guint y = 0; y < H; y++)
    for (guint x = 0; x < W; x++) {
      guint8 *px = p + y * stride + 3 * x;
      px[0] = (guint8) (x * 255 / W + 40 * k);
      px[1] = (guint8) (y * 255 / H);
      px[2] = (guint8) (((x / 8 + y / 8) & 1) ? 200 - 30 * k : 30);
    }
}

static guint32
rd32 (const guint8 * p)
{
  return (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
}

static GstHarness *
new_harness (const gchar * dir)
{
  /* the property before the element starts (start loads the model) */
  gchar *desc = g_strdup_printf ("waienc model-dir=\"%s\"", dir);
  GstHarness *h = gst_harness_new_parse (desc);

  g_free (desc);
  return h;
}

static GstBuffer *
picture (const GstVideoInfo * vi, guint k)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (vi), NULL);
  GstMapInfo m;

  fail_unless (gst_buffer_map (b, &m, GST_MAP_WRITE));
  fill (m.data, GST_VIDEO_INFO_PLANE_STRIDE (vi, 0), k);
  gst_buffer_unmap (b, &m);
  GST_BUFFER_PTS (b) = k * GST_SECOND / 30;
  GST_BUFFER_DURATION (b) = GST_SECOND / 30;
  return b;
}

/* Caps, codec_data, the in-band header, one frame unit per buffer, times; the buffers
 * concatenated decode with libwai to FRAMES pictures of WxH. */
GST_START_TEST (test_output)
{
  GstHarness *h = new_harness (models ());
  GstVideoInfo vi;
  GstCaps *caps;
  GstStructure *s;
  const GValue *v;
  GstBuffer *cd, *b;
  GstMapInfo m, cm;
  GByteArray *all = g_byte_array_new ();
  WaiSequenceInfo si;
  gint n, d, wv, hv;
  gboolean parsed = FALSE;

  gst_video_info_set_format (&vi, GST_VIDEO_FORMAT_RGB, W, H);
  vi.fps_n = 30;
  vi.fps_d = 1;
  caps = gst_video_info_to_caps (&vi);
  gst_harness_set_src_caps (h, caps);
  for (guint k = 0; k < FRAMES; k++)
    fail_unless_equals_int (gst_harness_push (h, picture (&vi, k)), GST_FLOW_OK);
  gst_harness_push_event (h, gst_event_new_eos ());

  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (caps != NULL);
  s = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_name (s), "video/x-wai");
  fail_unless (gst_structure_get_boolean (s, "parsed", &parsed) && parsed);
  fail_unless (gst_structure_get_int (s, "width", &wv) && wv == W);
  fail_unless (gst_structure_get_int (s, "height", &hv) && hv == H);
  fail_unless (gst_structure_get_fraction (s, "framerate", &n, &d) && n == 30 && d == 1);
  v = gst_structure_get_value (s, "codec_data");
  fail_unless (v != NULL && G_VALUE_HOLDS (v, GST_TYPE_BUFFER));
  cd = gst_value_get_buffer (v);
  fail_unless (gst_buffer_map (cd, &cm, GST_MAP_READ));
  fail_unless_equals_int (wai_parse_sequence_header (cm.data, cm.size, &si), 0);
  fail_unless (memcmp (cm.data, "WAIS", 4) == 0);
  fail_unless_equals_int (si.width, W);
  fail_unless_equals_int (si.height, H);
  fail_unless_equals_int (si.disp_w, W);
  fail_unless_equals_int (si.disp_h, H);
  fail_unless_equals_int (si.fps_num, 30);
  fail_unless_equals_int (si.fps_den, 1);
  fail_unless_equals_int (si.frame_count, 0);
  fail_unless_equals_int (si.model_size, 0);

  /* the header in band, equal to codec_data, then the frame units */
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), FRAMES + 1);
  b = gst_harness_pull (h);
  fail_unless (GST_BUFFER_FLAG_IS_SET (b, GST_BUFFER_FLAG_HEADER));
  fail_unless (gst_buffer_map (b, &m, GST_MAP_READ));
  fail_unless_equals_int (m.size, cm.size);
  fail_unless (memcmp (m.data, cm.data, cm.size) == 0);
  g_byte_array_append (all, m.data, m.size);
  gst_buffer_unmap (b, &m);
  gst_buffer_unref (b);
  gst_buffer_unmap (cd, &cm);
  for (guint k = 0; k < FRAMES; k++) {
    b = gst_harness_pull (h);
    fail_unless (b != NULL);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), k * GST_SECOND / 30);
    fail_if (GST_BUFFER_FLAG_IS_SET (b, GST_BUFFER_FLAG_DELTA_UNIT));
    fail_if (GST_BUFFER_FLAG_IS_SET (b, GST_BUFFER_FLAG_HEADER));
    fail_unless (gst_buffer_map (b, &m, GST_MAP_READ));
    fail_unless (m.size > 36);
    fail_unless (memcmp (m.data, "WAIF", 4) == 0);
    fail_unless_equals_int (rd32 (m.data + 4) + 20, m.size);     /* exactly one unit */
    fail_unless_equals_int (rd32 (m.data + 8), k);               /* frame_index */
    g_byte_array_append (all, m.data, m.size);
    gst_buffer_unmap (b, &m);
    gst_buffer_unref (b);
  }

  /* the stream decodes */
  {
    WaiSettings ds;
    WaiDecoder *dec = NULL;
    WaiPicture pic;
    guint got = 0;
    int r;
    wai_default_settings (&ds);
    ds.model_path = models ();
    fail_unless_equals_int (wai_decoder_open (&dec, &ds), 0);
    fail_unless_equals_int (wai_send_data (dec, all->data, all->len), 0);
    wai_send_eos (dec);
    while ((r = wai_get_picture (dec, &pic)) == 0) {
      fail_unless_equals_int (pic.width, W);
      fail_unless_equals_int (pic.height, H);
      fail_unless_equals_int (pic.frame_index, got);
      got++;
      wai_picture_unref (&pic);
    }
    fail_unless_equals_int (got, FRAMES);
    wai_decoder_close (&dec);
  }
  g_byte_array_unref (all);
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The streaming API gives the same frame units as wai_encode_picture() + finish, a header
 * that differs only in frame_count, and refuses finish() afterwards. */
GST_START_TEST (test_library_units)
{
  WaiEncoderSettings s;
  WaiEncoder *a = NULL, *b = NULL;
  guint8 pic[W * 3 * H];
  guint8 *stream, *hdr, *unit;
  size_t ssize, hsize, usize, off;

  wai_encoder_default_settings (&s);
  s.model_dir = models ();
  s.fps_num = 30;
  fail_unless_equals_int (wai_encoder_open (&a, &s), 0);
  fail_unless_equals_int (wai_encoder_open (&b, &s), 0);
  fail_unless_equals_int (wai_encoder_header (b, 0, H, 0, &hdr, &hsize), WAI_ERR_INVALID_ARG);
  fail_unless_equals_int (wai_encoder_header (b, W, H, 0, &hdr, &hsize), 0);
  for (guint k = 0; k < 2; k++) {
    fill (pic, W * 3, k);
    fail_unless_equals_int (wai_encode_picture (a, pic, W * 3, W, H), 0);
  }
  fail_unless_equals_int (wai_encoder_finish (a, &stream, &ssize), 0);
  fail_unless (hsize < ssize);
  /* header: same bytes but frame_count (offset 44) and the CRC */
  fail_unless_equals_int (rd32 (stream + 8), hsize);
  fail_unless_equals_int (rd32 (stream + 44), 2);
  fail_unless_equals_int (rd32 (hdr + 44), 0);
  fail_unless (memcmp (stream, hdr, 44) == 0);
  fail_unless (memcmp (stream + 48, hdr + 48, hsize - 52) == 0);
  off = hsize;
  for (guint k = 0; k < 2; k++) {
    fill (pic, W * 3, k);
    fail_unless_equals_int (wai_encode_picture_unit (b, pic, W * 3, W, H, &unit, &usize), 0);
    fail_unless (off + usize <= ssize);
    fail_unless (memcmp (stream + off, unit, usize) == 0, "unit %u differs", k);
    off += usize;
    free (unit);
  }
  fail_unless_equals_int (off, ssize);
  /* another size after the first picture */
  fail_unless_equals_int (wai_encoder_header (b, W / 2, H, 0, &unit, &usize),
      WAI_ERR_INVALID_ARG);
  fail_unless (unit == NULL);
  fail_unless_equals_int (wai_encoder_finish (b, &unit, &usize), WAI_ERR_INVALID_ARG);
  fail_unless (strstr (wai_encoder_last_error (b), "wai_encode_picture_unit") != NULL);
  free (stream);
  free (hdr);
  wai_encoder_close (&a);
  wai_encoder_close (&b);
}

GST_END_TEST;

/* Two 96x80 RGB pictures into waienc (model-dir DIR, quality Q unless 0, max-memory M unless
 * 0) set PLAYING with the return *change; the first ERROR (or EOS) message within 20 s is
 * returned (unref it), the pipeline stopped and freed. */
static GstMessage *
run_pipeline (const gchar * dir, gint quality, guint64 max_memory, const gchar * kernels,
    GstStateChangeReturn * change)
{
  GstElement *pipe = gst_parse_launch ("videotestsrc num-buffers=2 ! "
      "video/x-raw,format=RGB,width=96,height=80 ! waienc name=e ! fakesink", NULL);
  GstElement *e;
  GstBus *bus;
  GstMessage *msg;

  fail_unless (pipe != NULL);
  e = gst_bin_get_by_name (GST_BIN (pipe), "e");
  g_object_set (e, "model-dir", dir, NULL);
  if (quality)
    g_object_set (e, "quality", quality, NULL);
  if (max_memory)
    g_object_set (e, "max-memory", max_memory, NULL);
  if (kernels)
    gst_util_set_object_arg (G_OBJECT (e), "kernels", kernels);
  gst_object_unref (e);
  *change = gst_element_set_state (pipe, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipe);
  msg = gst_bus_timed_pop_filtered (bus, 20 * GST_SECOND, GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  return msg;
}

/* Starts waienc with model-dir DIR and quality Q (0: the default): it must fail to start with a
 * RESOURCE/NOT_FOUND error whose message holds each of the NULL-terminated strings; returns
 * the debug detail (g_free it). */
static gchar *
start_fails_not_found (const gchar * dir, gint quality, ...)
{
  GstStateChangeReturn change;
  GstMessage *msg = run_pipeline (dir, quality, 0, NULL, &change);
  GError *err = NULL;
  gchar *dbg = NULL;
  const gchar *want;
  va_list ap;

  fail_unless_equals_int (change, GST_STATE_CHANGE_FAILURE);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR);
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND),
      "%s", err->message);
  va_start (ap, quality);
  while ((want = va_arg (ap, const gchar *)))
    fail_unless (strstr (err->message, want) != NULL, "%s", err->message);
  va_end (ap);
  g_error_free (err);
  gst_message_unref (msg);
  return dbg;
}

/* A model directory without the model: the element fails to start with a clear
 * RESOURCE/NOT_FOUND error naming the model; no crash. */
GST_START_TEST (test_missing_model)
{
  gchar *dbg = start_fails_not_found ("/nonexistent/wai-models", 0, "wai-q3",
      "/nonexistent/wai-models", "model pair there: none", NULL);

  fail_unless (dbg && strstr (dbg, "model-dir") != NULL);
  g_free (dbg);
}

GST_END_TEST;

/* A quality without a model pair in model-dir: the error lists the qualities there are. The
 * directory is made here (pairs 1 and 3 linked from models/), so the test does not depend on
 * which qualities are committed. */
GST_START_TEST (test_missing_quality)
{
  gchar *dir = g_dir_make_tmp ("waienc-q-XXXXXX", NULL);
  const gchar *names[] = { "wai-q1.whm", "wai-q1.ana", "wai-q3.whm", "wai-q3.ana" };
  guint i;

  fail_unless (dir != NULL);
  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    gchar *src = g_build_filename (models (), names[i], NULL);
    gchar *dst = g_build_filename (dir, names[i], NULL);
    fail_unless (symlink (src, dst) == 0, "symlink %s", dst);
    g_free (src);
    g_free (dst);
  }
  g_free (start_fails_not_found (dir, 2, "wai-q2", "model pair there: 1, 3", NULL));
  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    gchar *dst = g_build_filename (dir, names[i], NULL);
    g_unlink (dst);
    g_free (dst);
  }
  g_rmdir (dir);
  g_free (dir);
}

GST_END_TEST;

/* max-memory below what the analysis of a 96x80 picture needs (about 1.4 MB): the first frame
 * fails with STREAM/ENCODE, the library's message giving both figures; no crash. */
GST_START_TEST (test_max_memory)
{
  GstElement *e = gst_element_factory_make ("waienc", NULL);
  GstStateChangeReturn change;
  GstMessage *msg;
  GError *err = NULL;
  gchar *dbg = NULL;
  guint64 mm = 1;

  g_object_get (e, "max-memory", &mm, NULL);
  fail_unless (mm == 0);
  gst_object_unref (e);
  msg = run_pipeline (models (), 0, 65536, NULL, &change);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR);
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (g_error_matches (err, GST_STREAM_ERROR, GST_STREAM_ERROR_ENCODE), "%s",
      err->message);
  fail_unless (dbg && strstr (dbg, "more than max_memory (65536)") != NULL, "%s", dbg);
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (msg);
}

GST_END_TEST;

/* Properties and registration. */
GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("waienc", NULL);
  GstElementFactory *f = gst_element_factory_find ("waienc");
  gint q = 0, t = -1;
  gchar *dir = (gchar *) "x";

  fail_unless (e != NULL && f != NULL);
  g_object_get (e, "quality", &q, "threads", &t, "model-dir", &dir, NULL);
  fail_unless_equals_int (q, 3);
  fail_unless_equals_int (t, 0);
  fail_unless (dir == NULL);
  g_object_set (e, "quality", 5, "threads", 2, "model-dir", "/m", NULL);
  g_object_get (e, "quality", &q, "threads", &t, "model-dir", &dir, NULL);
  fail_unless_equals_int (q, 5);
  fail_unless_equals_int (t, 2);
  fail_unless_equals_string (dir, "/m");
  g_free (dir);
  fail_unless_equals_int (gst_plugin_feature_get_rank (GST_PLUGIN_FEATURE (f)),
      GST_RANK_SECONDARY);
  fail_unless_equals_string (gst_element_factory_get_klass (f), "Codec/Encoder/Video");
  gst_object_unref (f);
  gst_object_unref (e);
}

GST_END_TEST;

/* Busy frames (noise, many bits) between smooth ones, so that a bitrate picks different
 * qualities; k even: smooth. */
static GstBuffer *
mixed_picture (const GstVideoInfo * vi, guint k)
{
  GstBuffer *b = picture (vi, k);
  GstMapInfo m;
  guint32 x = 777 + k;

  if (!(k & 1))
    return b;
  fail_unless (gst_buffer_map (b, &m, GST_MAP_WRITE));
  for (guint y = 0; y < H; y++)
    for (guint i = 0; i < W * 3; i++) {
      x = x * 1103515245u + 12345u;
      m.data[y * GST_VIDEO_INFO_PLANE_STRIDE (vi, 0) + i] = (guint8) (x >> 16);
    }
  gst_buffer_unmap (b, &m);
  return b;
}

/* bitrate: each frame is the library's rate-controlled frame for bitrate / framerate bytes
 * (codec_data and every buffer byte for byte, a header before a frame whose quality
 * changes), a change of bitrate while playing applies from the next frame, and waidec
 * decodes the buffers (a header and a frame in one buffer) to the library's pictures. */
GST_START_TEST (test_bitrate)
{
  gchar *desc = g_strdup_printf ("waienc model-dir=\"%s\" bitrate=200", models ());
  GstHarness *h = gst_harness_new_parse (desc);
  GstVideoInfo vi;
  GstCaps *ocaps;
  WaiEncoderSettings s;
  WaiEncoder *e = NULL;
  guint8 *hdr, *unit;
  size_t hsize, usize;
  GstMapInfo m;
  GstBuffer *b;
  const guint n = 4;
  guint switches = 0;
  GstBuffer *out[8];

  g_free (desc);
  gst_video_info_set_format (&vi, GST_VIDEO_FORMAT_RGB, W, H);
  vi.fps_n = 30;
  vi.fps_d = 1;
  gst_harness_set_src_caps (h, gst_video_info_to_caps (&vi));
  for (guint k = 0; k < n; k++) {
    if (k == 2) {
      GstElement *enc = gst_harness_find_element (h, "waienc");
      g_object_set (enc, "bitrate", 400, NULL);
      gst_object_unref (enc);
    }
    fail_unless_equals_int (gst_harness_push (h, mixed_picture (&vi, k)), GST_FLOW_OK);
  }
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), n + 1);
  ocaps = gst_pad_get_current_caps (h->sinkpad);

  wai_encoder_default_settings (&s);
  s.model_dir = models ();
  s.fps_num = 30;
  s.target_frame_bytes = 200 * 1000 / 8 / 30;
  fail_unless_equals_int (wai_encoder_open (&e, &s), 0);
  fail_unless_equals_int (wai_encoder_header (e, W, H, 0, &hdr, &hsize), 0);
  for (guint k = 0; k <= n; k++) {
    out[k] = gst_harness_pull (h);
    fail_unless (gst_buffer_map (out[k], &m, GST_MAP_READ));
    if (k == 0) {
      fail_unless (m.size == hsize && memcmp (m.data, hdr, hsize) == 0);
    } else {
      GstBuffer *pic = mixed_picture (&vi, k - 1);
      GstMapInfo pm;
      WaiFrameStats st;
      if (k - 1 == 2)
        fail_unless_equals_int (wai_encoder_set_target (e, 400 * 1000 / 8 / 30, 0), 0);
      fail_unless (gst_buffer_map (pic, &pm, GST_MAP_READ));
      fail_unless_equals_int (wai_encode_picture_unit (e, pm.data,
              GST_VIDEO_INFO_PLANE_STRIDE (&vi, 0), W, H, &unit, &usize), 0);
      gst_buffer_unmap (pic, &pm);
      gst_buffer_unref (pic);
      fail_unless (m.size == usize && memcmp (m.data, unit, usize) == 0,
          "frame %u differs from the library's", k - 1);
      fail_unless_equals_int (wai_encoder_last_frame (e, &st), 0);
      fail_unless (st.bytes <= (k - 1 < 2 ? 833u : 1666u) || !st.target_met);
      switches += memcmp (m.data, "WAIS", 4) == 0;
      free (unit);
    }
    gst_buffer_unmap (out[k], &m);
  }
  fail_unless (switches >= 1, "no frame changed quality");
  free (hdr);
  wai_encoder_close (&e);
  gst_harness_teardown (h);

  /* waidec: the library's decode of the same bytes */
  {
    gchar *dd = g_strdup_printf ("waidec model-path=\"%s\"", models ());
    GstHarness *d = gst_harness_new_parse (dd);
    GByteArray *all = g_byte_array_new ();
    WaiSettings ds;
    WaiDecoder *dec = NULL;
    WaiPicture pic;
    guint got = 0;

    g_free (dd);
    gst_harness_set_src_caps (d, ocaps);
    for (guint k = 0; k <= n; k++) {
      fail_unless (gst_buffer_map (out[k], &m, GST_MAP_READ));
      g_byte_array_append (all, m.data, m.size);
      gst_buffer_unmap (out[k], &m);
      fail_unless_equals_int (gst_harness_push (d, out[k]), GST_FLOW_OK);
    }
    gst_harness_push_event (d, gst_event_new_eos ());
    wai_default_settings (&ds);
    ds.model_path = models ();
    fail_unless_equals_int (wai_decoder_open (&dec, &ds), 0);
    fail_unless_equals_int (wai_send_data (dec, all->data, all->len), 0);
    wai_send_eos (dec);
    while (wai_get_picture (dec, &pic) == 0) {
      GstVideoFrame vf;
      GstVideoInfo ovi;
      GstCaps *dcaps = gst_pad_get_current_caps (d->sinkpad);
      fail_unless (gst_video_info_from_caps (&ovi, dcaps));
      gst_caps_unref (dcaps);
      b = gst_harness_pull (d);
      fail_unless (b != NULL, "waidec gave %u of %u frames", got, n);
      fail_unless (gst_video_frame_map (&vf, &ovi, b, GST_MAP_READ));
      for (guint y = 0; y < H; y++)
        fail_unless (memcmp ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&vf, 0) +
                y * GST_VIDEO_FRAME_PLANE_STRIDE (&vf, 0), pic.data + y * pic.stride,
                W * 3) == 0, "frame %u row %u differs", got, y);
      gst_video_frame_unmap (&vf);
      gst_buffer_unref (b);
      wai_picture_unref (&pic);
      got++;
    }
    fail_unless_equals_int (got, n);
    wai_decoder_close (&dec);
    g_byte_array_unref (all);
    gst_harness_teardown (d);
  }
}

GST_END_TEST;

/* Encode two pictures (a flat one and noise) through waienc with extra properties: the
 * buffers (header, frames) joined into one array, or NULL when a push fails. */
static GByteArray *
encode_with (const gchar * props)
{
  gchar *desc = g_strdup_printf ("waienc model-dir=\"%s\" %s", models (), props);
  GstHarness *h = gst_harness_new_parse (desc);
  GByteArray *all = g_byte_array_new ();
  GstVideoInfo vi;
  GstBuffer *b;
  gboolean ok = TRUE;

  g_free (desc);
  gst_video_info_set_format (&vi, GST_VIDEO_FORMAT_RGB, W, H);
  vi.fps_n = 25;
  vi.fps_d = 1;
  gst_harness_set_src_caps (h, gst_video_info_to_caps (&vi));
  for (guint k = 0; k < 2 && ok; k++)
    ok = gst_harness_push (h, mixed_picture (&vi, k)) == GST_FLOW_OK;
  while (ok && (b = gst_harness_try_pull (h))) {
    GstMapInfo m;
    fail_unless (gst_buffer_map (b, &m, GST_MAP_READ));
    g_byte_array_append (all, m.data, m.size);
    gst_buffer_unmap (b, &m);
    gst_buffer_unref (b);
  }
  gst_harness_teardown (h);
  if (!ok) {
    g_byte_array_unref (all);
    return NULL;
  }
  return all;
}

/* kernels: every set gives the same bytes (the reference kernels are the specification); a
 * set this CPU lacks fails to start instead of falling back. */
GST_START_TEST (test_kernels)
{
  GstElement *e = gst_element_factory_make ("waienc", NULL);
  gint k = -1;
  GByteArray *ref, *c, *autok;

  g_object_get (e, "kernels", &k, NULL);
  fail_unless_equals_int (k, WAI_KERNELS_AUTO);
  gst_util_set_object_arg (G_OBJECT (e), "kernels", "reference");
  g_object_get (e, "kernels", &k, NULL);
  fail_unless_equals_int (k, WAI_KERNELS_REFERENCE);
  gst_object_unref (e);

  ref = encode_with ("kernels=reference");
  c = encode_with ("kernels=c");
  autok = encode_with ("");
  fail_unless (ref != NULL && c != NULL && autok != NULL);
  fail_unless (ref->len > 100);
  fail_unless (c->len == ref->len && memcmp (c->data, ref->data, ref->len) == 0,
      "kernels=c differs from the reference kernels");
  fail_unless (autok->len == ref->len && memcmp (autok->data, ref->data, ref->len) == 0,
      "kernels=auto differs from the reference kernels");
  {
#if defined(__x86_64__) || defined(__i386__)
    const gchar *lacking = "neon";
#else
    const gchar *lacking = "avx2";
#endif
    GstStateChangeReturn change;
    GstMessage *msg = run_pipeline (models (), 0, 0, lacking, &change);
    GError *err = NULL;
    gchar *dbg = NULL;

    fail_unless_equals_int (change, GST_STATE_CHANGE_FAILURE);
    fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR);
    gst_message_parse_error (msg, &err, &dbg);
    fail_unless (g_error_matches (err, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS), "%s",
        err->message);
    fail_unless (strstr (err->message, "not supported") != NULL, "%s", err->message);
    fail_unless (dbg && strstr (dbg, lacking) != NULL, "%s", dbg);
    g_error_free (err);
    g_free (dbg);
    gst_message_unref (msg);
  }
  g_byte_array_unref (ref);
  g_byte_array_unref (c);
  g_byte_array_unref (autok);
}

GST_END_TEST;

static Suite *
waienc_suite (void)
{
  Suite *s = suite_create ("waienc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_library_units);
  tcase_add_test (tc, test_output);
  tcase_add_test (tc, test_bitrate);
  tcase_add_test (tc, test_missing_model);
  tcase_add_test (tc, test_missing_quality);
  tcase_add_test (tc, test_max_memory);
  tcase_add_test (tc, test_kernels);
  return s;
}

GST_CHECK_MAIN (waienc);
