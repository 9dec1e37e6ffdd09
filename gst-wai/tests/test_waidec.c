/* GstHarness tests of waidec, waiparse and the type finder, against the public libwai API.
 *
 * Environment: GST_WAI_TEST_DATA (the streams gst-wai-mkstream wrote), WAI_SOURCE_ROOT (for
 * vectors/manifest.txt, used when the vectors exist), WAI_MODEL_PATH (the tiny model). */
#include <stdio.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/base/gsttypefindhelper.h>
#include <gst/video/video.h>
#include <wai/wai.h>

#define MULTI_FRAMES 5
#define MULTI_W 35
#define MULTI_H 21
#define CORRUPT_FRAME 2

/* ---- stream files and the reference decode ---- */

typedef struct Stream {
  guint8 *data;
  gsize size;
} Stream;

typedef struct Ref {
  GByteArray *rgb;              /* all frames, rows of w*3 bytes */
  guint frames, w, h;
  guint32 index[256];           /* frame_index of each picture */
  WaiSequenceInfo info;
} Ref;

static Stream
load (const gchar * dir, const gchar * name)
{
  Stream s = { NULL, 0 };
  gchar *path = g_build_filename (dir, name, NULL);
  GError *err = NULL;

  fail_unless (g_file_get_contents (path, (gchar **) & s.data, &s.size, &err),
      "cannot read %s: %s", path, err ? err->message : "?");
  g_free (path);
  return s;
}

static Stream
load_data (const gchar * name)
{
  const gchar *dir = g_getenv ("GST_WAI_TEST_DATA");

  fail_unless (dir != NULL, "GST_WAI_TEST_DATA is not set");
  return load (dir, name);
}

static void
stream_free (Stream * s)
{
  g_free (s->data);
  s->data = NULL;
}

/* Decode a whole stream with the library (the reference the plugin must reproduce). */
static void
ref_decode (const Stream * s, Ref * ref)
{
  WaiDecoder *d = NULL;
  WaiSettings set;
  WaiPicture p;
  int r;

  memset (ref, 0, sizeof (*ref));
  ref->rgb = g_byte_array_new ();
  wai_default_settings (&set);
  fail_unless_equals_int (wai_decoder_open (&d, &set), 0);
  wai_send_data (d, s->data, s->size);
  wai_send_eos (d);
  for (;;) {
    r = wai_get_picture (d, &p);
    if (r == WAI_ERR_AGAIN)
      break;
    if (r < 0)
      continue;                 /* a damaged unit: the library skips it */
    for (guint32 y = 0; y < p.height; y++)
      g_byte_array_append (ref->rgb, p.data + (gssize) y * p.stride, p.width * 3);
    ref->w = p.width;
    ref->h = p.height;
    if (ref->frames < G_N_ELEMENTS (ref->index))
      ref->index[ref->frames] = p.frame_index;
    ref->frames++;
    wai_picture_unref (&p);
  }
  wai_decoder_get_sequence_info (d, &ref->info);
  wai_decoder_close (&d);
}

static void
ref_clear (Ref * ref)
{
  g_byte_array_unref (ref->rgb);
  ref->rgb = NULL;
}

static GstClockTime
ref_pts (const Ref * ref, guint32 index)
{
  return gst_util_uint64_scale (index, GST_SECOND * (guint64) ref->info.fps_den,
      ref->info.fps_num);
}

/* The sequence header and frame units of a clean stream, found with the public parser. */
static GPtrArray *
split_units (const Stream * s)
{
  GPtrArray *units = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  gsize off = 0;

  while (off < s->size) {
    WaiUnitInfo u;
    int r = wai_find_unit (s->data + off, s->size - off, 1 << 28, &u);

    fail_unless_equals_int (r, 0);
    fail_unless_equals_int ((gint) u.offset, 0);
    g_ptr_array_add (units, gst_buffer_new_memdup (s->data + off, u.size));
    off += u.size;
  }
  return units;
}

/* ---- harness helpers ---- */

static const gsize chunk_sizes[] = { 1, 7, 13, 101, 4093, 3, 64, 999, 2 };

/* Push a stream in odd-sized chunks; returns the first flow that is not OK. */
static GstFlowReturn
push_chunked (GstHarness * h, const Stream * s)
{
  gsize off = 0;
  guint i = 0;

  while (off < s->size) {
    gsize want = chunk_sizes[i++ % G_N_ELEMENTS (chunk_sizes)];
    gsize n = MIN (want, s->size - off);        /* MIN evaluates twice: no i++ in it */
    GstFlowReturn ret = gst_harness_push (h, gst_buffer_new_memdup (s->data + off, n));

    if (ret != GST_FLOW_OK)
      return ret;
    off += n;
  }
  return GST_FLOW_OK;
}

static GstBus *
attach_bus (GstHarness * h)
{
  GstBus *bus = gst_bus_new ();

  gst_element_set_bus (h->element, bus);
  return bus;
}

typedef struct Msgs {
  guint warnings, errors;
  GQuark domain;
  gint code;
  gchar *text;
} Msgs;

static Msgs
collect (GstBus * bus)
{
  Msgs m = { 0, 0, 0, 0, NULL };
  GstMessage *msg;

  while ((msg = gst_bus_pop (bus))) {
    GError *err = NULL;
    gchar *dbg = NULL;

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
      gst_message_parse_warning (msg, &err, &dbg);
      GST_INFO ("warning: %s (%s)", err->message, dbg);
      m.warnings++;
    } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      gst_message_parse_error (msg, &err, &dbg);
      GST_INFO ("error: %s (%s)", err->message, dbg);
      if (m.errors++ == 0) {
        m.domain = err->domain;
        m.code = err->code;
        m.text = g_strdup_printf ("%s | %s", err->message, dbg);
      }
    }
    g_clear_error (&err);
    g_free (dbg);
    gst_message_unref (msg);
  }
  return m;
}

/* Pull every output buffer and compare with the reference: caps, bytes, times. frame_of[i]
 * is the reference picture the i-th output must equal (NULL: the identity). */
static void
check_output (GstHarness * h, const Ref * ref, guint n_out, const guint * frame_of)
{
  GstCaps *caps;
  GstVideoInfo vinfo;
  gsize fsize = (gsize) ref->w * ref->h * 3;

  fail_unless_equals_int (gst_harness_buffers_in_queue (h), n_out);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (caps != NULL);
  fail_unless (gst_video_info_from_caps (&vinfo, caps));
  gst_caps_unref (caps);
  fail_unless_equals_int (GST_VIDEO_INFO_FORMAT (&vinfo), GST_VIDEO_FORMAT_RGB);
  fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&vinfo), ref->w);
  fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&vinfo), ref->h);
  if (ref->info.frame_count == 1) {
    /* a still picture: framerate 0/1, as pngdec and jpegdec give */
    fail_unless_equals_int (GST_VIDEO_INFO_FPS_N (&vinfo), 0);
    fail_unless_equals_int (GST_VIDEO_INFO_FPS_D (&vinfo), 1);
  } else if (ref->info.fps_num <= G_MAXINT) {
    fail_unless_equals_int (GST_VIDEO_INFO_FPS_N (&vinfo), ref->info.fps_num);
    fail_unless_equals_int (GST_VIDEO_INFO_FPS_D (&vinfo), ref->info.fps_den);
  }

  for (guint i = 0; i < n_out; i++) {
    guint f = frame_of ? frame_of[i] : i;
    GstBuffer *buf = gst_harness_pull (h);
    GstVideoFrame vf;

    fail_unless (f < ref->frames);
    fail_unless (gst_video_frame_map (&vf, &vinfo, buf, GST_MAP_READ));
    for (guint y = 0; y < ref->h; y++) {
      const guint8 *got = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&vf, 0) +
          (gsize) y * GST_VIDEO_FRAME_PLANE_STRIDE (&vf, 0);
      const guint8 *want = ref->rgb->data + f * fsize + (gsize) y * ref->w * 3;

      fail_unless (memcmp (got, want, ref->w * 3) == 0,
          "output %u (frame %u) differs from the library's decode in row %u", i, f, y);
    }
    gst_video_frame_unmap (&vf);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), ref_pts (ref, ref->index[f]));
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (buf), ref->info.frame_count == 1 ?
        GST_CLOCK_TIME_NONE : ref_pts (ref, 1));
    gst_buffer_unref (buf);
  }
}

/* Raw input in odd chunks, then EOS. filesrc gives a BYTES segment and no timestamps; a
 * TIME segment (the harness default) stands for a source that has times but gave none. */
static GstFlowReturn
run_raw_format (GstHarness * h, const Stream * s, GstFormat format)
{
  GstFlowReturn ret;
  /* the caps typefinding gives (image/x-wai for a still picture), as under decodebin */
  GstCaps *caps = s->size ? gst_type_find_helper_for_data (NULL, s->data, s->size, NULL) : NULL;

  if (caps)
    gst_harness_set_src_caps (h, caps);
  else
    gst_harness_set_src_caps_str (h, "video/x-wai");
  if (format != GST_FORMAT_TIME) {
    GstSegment seg;

    gst_segment_init (&seg, format);
    fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  }
  ret = push_chunked (h, s);
  if (ret == GST_FLOW_OK)
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  return ret;
}

static GstFlowReturn
run_raw (GstHarness * h, const Stream * s)
{
  return run_raw_format (h, s, GST_FORMAT_BYTES);
}

/* ---- tests ---- */

GST_START_TEST (test_raw_chunks)
{
  Stream s = load_data ("gst-multi.wai");
  Ref ref;
  GstHarness *h = gst_harness_new ("waidec");
  GstBus *bus = attach_bus (h);
  Msgs m;

  ref_decode (&s, &ref);
  fail_unless_equals_int (ref.frames, MULTI_FRAMES);
  fail_unless_equals_int (ref.w, MULTI_W);
  fail_unless_equals_int (ref.h, MULTI_H);
  fail_unless_equals_int (run_raw_format (h, &s, GST_FORMAT_TIME), GST_FLOW_OK);
  check_output (h, &ref, MULTI_FRAMES, NULL);
  m = collect (bus);
  fail_unless_equals_int (m.warnings, 0);
  fail_unless_equals_int (m.errors, 0);

  gst_object_unref (bus);
  gst_harness_teardown (h);
  ref_clear (&ref);
  stream_free (&s);
}

GST_END_TEST;

/* Every conformance vector: the plugin's RGB equals the pinned SHA-256 and the library. */
GST_START_TEST (test_vectors)
{
  const gchar *root = g_getenv ("WAI_SOURCE_ROOT");
  gchar *vdir, *mpath, *text = NULL;
  gchar **lines;
  guint checked = 0;

  fail_unless (root != NULL);
  vdir = g_build_filename (root, "vectors", NULL);
  mpath = g_build_filename (vdir, "manifest.txt", NULL);
  if (!g_file_get_contents (mpath, &text, NULL, NULL)) {
    GST_WARNING ("no %s yet: vectors not checked", mpath);
    g_free (vdir);
    g_free (mpath);
    return;
  }
  lines = g_strsplit (text, "\n", -1);
  for (guint l = 0; lines[l]; l++) {
    gchar file[256], hash[65];
    guint frames, w, h;
    gchar *path;

    if (lines[l][0] == '#' || sscanf (lines[l], "%255s %64s %u %ux%u", file, hash, &frames,
            &w, &h) != 5)
      continue;
    path = g_build_filename (vdir, file, NULL);
    if (g_file_test (path, G_FILE_TEST_EXISTS)) {
      Stream s = load (vdir, file);
      Ref ref;
      GstHarness *hh = gst_harness_new ("waidec");
      gchar *sum;

      GST_INFO ("vector %s", file);
      ref_decode (&s, &ref);
      fail_unless_equals_int (ref.frames, frames);
      sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, ref.rgb->data, ref.rgb->len);
      fail_unless_equals_string (sum, hash);
      g_free (sum);
      fail_unless_equals_int (run_raw (hh, &s), GST_FLOW_OK);
      check_output (hh, &ref, frames, NULL);
      gst_harness_teardown (hh);
      /* waiparse: image/x-wai for a still picture (frame_count 1), video/x-wai else */
      hh = gst_harness_new ("waiparse");
      fail_unless_equals_int (run_raw (hh, &s), GST_FLOW_OK);
      {
        GstCaps *pc = gst_pad_get_current_caps (hh->sinkpad);

        fail_unless (pc != NULL);
        fail_unless_equals_string (gst_structure_get_name (gst_caps_get_structure (pc, 0)),
            ref.info.frame_count == 1 ? "image/x-wai" : "video/x-wai");
        gst_caps_unref (pc);
      }
      gst_harness_teardown (hh);
      ref_clear (&ref);
      stream_free (&s);
      checked++;
    }
    g_free (path);
  }
  GST_INFO ("%u vectors checked", checked);
  g_strfreev (lines);
  g_free (text);
  g_free (vdir);
  g_free (mpath);
}

GST_END_TEST;

/* waiparse ! waidec (the decodebin chain): same pictures, parsed caps on the way. */
GST_START_TEST (test_parse_decode)
{
  Stream s = load_data ("gst-multi.wai");
  Ref ref;
  GstHarness *h = gst_harness_new_parse ("waiparse ! waidec");

  ref_decode (&s, &ref);
  fail_unless_equals_int (run_raw (h, &s), GST_FLOW_OK);
  check_output (h, &ref, MULTI_FRAMES, NULL);
  gst_harness_teardown (h);
  ref_clear (&ref);
  stream_free (&s);
}

GST_END_TEST;

/* waiparse alone: one unit per buffer, caps, codec_data, timestamps, duration. */
GST_START_TEST (test_parse_output)
{
  Stream s = load_data ("gst-multi.wai");
  GPtrArray *units = split_units (&s);
  GstHarness *h = gst_harness_new ("waiparse");
  GstStructure *st;
  GstCaps *caps;
  GstBuffer *cd;
  gint w, hh, fn, fd;
  gboolean parsed;
  gint64 dur = -1;

  fail_unless_equals_int (units->len, 1 + MULTI_FRAMES);
  gst_harness_set_src_caps_str (h, "video/x-wai");
  {
    GstSegment seg;

    gst_segment_init (&seg, GST_FORMAT_BYTES);
    fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  }
  fail_unless_equals_int (push_chunked (h, &s), GST_FLOW_OK);

  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (caps != NULL);
  st = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_has_name (st, "video/x-wai"));
  fail_unless (gst_structure_get_boolean (st, "parsed", &parsed) && parsed);
  fail_unless (gst_structure_get_int (st, "width", &w));
  fail_unless (gst_structure_get_int (st, "height", &hh));
  fail_unless (gst_structure_get_fraction (st, "framerate", &fn, &fd));
  fail_unless_equals_int (w, MULTI_W);
  fail_unless_equals_int (hh, MULTI_H);
  fail_unless_equals_int (fn, 25);
  fail_unless_equals_int (fd, 1);
  cd = gst_value_get_buffer (gst_structure_get_value (st, "codec_data"));
  fail_unless (cd != NULL);
  fail_unless (gst_buffer_get_size (cd) == gst_buffer_get_size (units->pdata[0]));
  fail_unless (gst_buffer_memcmp (cd, 0, s.data, gst_buffer_get_size (cd)) == 0);
  gst_caps_unref (caps);

  fail_unless (gst_element_query_duration (h->element, GST_FORMAT_TIME, &dur));
  fail_unless_equals_int64 (dur, MULTI_FRAMES * GST_SECOND / 25);

  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), MULTI_FRAMES);
  for (guint i = 0; i < MULTI_FRAMES; i++) {
    GstBuffer *b = gst_harness_pull (h);
    GstBuffer *want = units->pdata[1 + i];
    GstMapInfo map;

    fail_unless (gst_buffer_map (want, &map, GST_MAP_READ));
    fail_unless_equals_int (gst_buffer_get_size (b), map.size);
    fail_unless (gst_buffer_memcmp (b, 0, map.data, map.size) == 0);
    gst_buffer_unmap (want, &map);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), i * GST_SECOND / 25);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (b), GST_SECOND / 25);
    fail_if (GST_BUFFER_FLAG_IS_SET (b, GST_BUFFER_FLAG_DELTA_UNIT));
    gst_buffer_unref (b);
  }
  gst_harness_teardown (h);
  g_ptr_array_unref (units);
  stream_free (&s);
}

GST_END_TEST;

/* Packetized input (a demuxer): header in codec_data, or in band as the first buffer. */
static void
run_packetized (gboolean codec_data)
{
  Stream s = load_data ("gst-multi.wai");
  GPtrArray *units = split_units (&s);
  GstHarness *h = gst_harness_new ("waidec");
  Ref ref;
  GstCaps *caps;

  ref_decode (&s, &ref);
  caps = gst_caps_new_simple ("video/x-wai", "parsed", G_TYPE_BOOLEAN, TRUE, NULL);
  if (codec_data)
    gst_caps_set_simple (caps, "codec_data", GST_TYPE_BUFFER, units->pdata[0], NULL);
  gst_harness_set_src_caps (h, caps);
  for (guint i = codec_data ? 1 : 0; i < units->len; i++) {
    GstBuffer *b = gst_buffer_copy (units->pdata[i]);

    if (i > 0)
      GST_BUFFER_PTS (b) = ref_pts (&ref, i - 1);
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  check_output (h, &ref, MULTI_FRAMES, NULL);
  gst_harness_teardown (h);
  ref_clear (&ref);
  g_ptr_array_unref (units);
  stream_free (&s);
}

GST_START_TEST (test_packetized_codec_data)
{
  run_packetized (TRUE);
}

GST_END_TEST;

GST_START_TEST (test_packetized_inband)
{
  run_packetized (FALSE);
}

GST_END_TEST;

/* One damaged frame: dropped with a warning, the others decode (raw and parsed input). */
static void
run_corrupt (const gchar * launch)
{
  Stream good = load_data ("gst-multi.wai");
  Stream s = load_data ("gst-corrupt.wai");
  static const guint frame_of[] = { 0, 1, 3, 4 };
  GstHarness *h = gst_harness_new_parse (launch);
  GstBus *bus = attach_bus (h);
  Ref ref;
  Msgs m;

  ref_decode (&good, &ref);
  fail_unless_equals_int (run_raw (h, &s), GST_FLOW_OK);
  check_output (h, &ref, MULTI_FRAMES - 1, frame_of);
  m = collect (bus);
  fail_unless_equals_int (m.errors, 0);
  fail_unless (m.warnings >= 1);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  ref_clear (&ref);
  stream_free (&s);
  stream_free (&good);
}

GST_START_TEST (test_corrupt_frame_raw)
{
  run_corrupt ("waidec");
}

GST_END_TEST;

GST_START_TEST (test_corrupt_frame_parsed)
{
  run_corrupt ("waiparse ! waidec");
}

GST_END_TEST;

/* A damaged unit handed over as one packet: the decoder drops it with a warning. */
GST_START_TEST (test_corrupt_packet)
{
  Stream s = load_data ("gst-corrupt.wai");
  Stream good = load_data ("gst-multi.wai");
  GPtrArray *units = split_units (&good);
  GstHarness *h = gst_harness_new ("waidec");
  GstBus *bus = attach_bus (h);
  static const guint frame_of[] = { 0, 1, 3, 4 };
  gsize off = 0;
  Ref ref;
  Msgs m;

  ref_decode (&good, &ref);
  gst_harness_set_src_caps (h, gst_caps_new_simple ("video/x-wai", "parsed", G_TYPE_BOOLEAN,
          TRUE, "codec_data", GST_TYPE_BUFFER, units->pdata[0], NULL));
  /* the same unit boundaries, cut from the damaged stream */
  for (guint i = 0; i < units->len; i++) {
    gsize n = gst_buffer_get_size (units->pdata[i]);

    if (i > 0) {
      GstBuffer *b = gst_buffer_new_memdup (s.data + off, n);

      GST_BUFFER_PTS (b) = ref_pts (&ref, i - 1);
      fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    }
    off += n;
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  check_output (h, &ref, MULTI_FRAMES - 1, frame_of);
  m = collect (bus);
  fail_unless_equals_int (m.errors, 0);
  fail_unless_equals_int (m.warnings, 1);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_ptr_array_unref (units);
  ref_clear (&ref);
  stream_free (&s);
  stream_free (&good);
}

GST_END_TEST;

/* max-errors=0: the first bad frame is fatal. */
GST_START_TEST (test_corrupt_max_errors)
{
  Stream s = load_data ("gst-corrupt.wai");
  GstHarness *h = gst_harness_new ("waidec");
  GstBus *bus = attach_bus (h);
  Msgs m;

  g_object_set (h->element, "max-errors", 0, NULL);
  gst_harness_set_src_caps_str (h, "video/x-wai");
  fail_unless_equals_int (push_chunked (h, &s), GST_FLOW_ERROR);
  m = collect (bus);
  fail_unless_equals_int (m.errors, 1);
  fail_unless (m.domain == GST_STREAM_ERROR);
  g_free (m.text);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  stream_free (&s);
}

GST_END_TEST;

/* The model is nowhere: a fatal RESOURCE/NOT_FOUND error that says so. */
GST_START_TEST (test_missing_model)
{
  Stream s = load_data ("gst-nomodel.wai");
  GstHarness *h = gst_harness_new ("waidec");
  GstBus *bus = attach_bus (h);
  Msgs m;

  gst_harness_set_src_caps_str (h, "video/x-wai");
  fail_unless_equals_int (push_chunked (h, &s), GST_FLOW_ERROR);
  m = collect (bus);
  fail_unless_equals_int (m.errors, 1);
  fail_unless (m.domain == GST_RESOURCE_ERROR);
  fail_unless_equals_int (m.code, GST_RESOURCE_ERROR_NOT_FOUND);
  fail_unless (strstr (m.text, "model") != NULL, "%s", m.text);
  g_free (m.text);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  stream_free (&s);
}

GST_END_TEST;

/* Bytes with no unit in them: not a WAI stream, at once; no output, no crash. */
GST_START_TEST (test_garbage)
{
  Stream s = load_data ("gst-garbage.bin");
  GstHarness *h = gst_harness_new ("waidec");
  GstBus *bus = attach_bus (h);
  Msgs m;

  fail_unless_equals_int (run_raw (h, &s), GST_FLOW_ERROR);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  m = collect (bus);
  fail_unless_equals_int (m.errors, 1);   /* one error, not a second one at EOS */
  fail_unless (m.domain == GST_STREAM_ERROR);
  fail_unless_equals_int (m.code, GST_STREAM_ERROR_WRONG_TYPE);
  g_free (m.text);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  stream_free (&s);
}

GST_END_TEST;

/* A stream with no bytes at all: an error (the base class would end quietly), one only. */
GST_START_TEST (test_empty)
{
  Stream s = { NULL, 0 };
  GstHarness *h = gst_harness_new ("waidec");
  GstBus *bus = attach_bus (h);
  Msgs m;

  fail_unless_equals_int (run_raw (h, &s), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  m = collect (bus);
  fail_unless_equals_int (m.errors, 1);
  fail_unless (m.domain == GST_STREAM_ERROR);
  fail_unless (strstr (m.text, "no data") != NULL, "%s", m.text);
  g_free (m.text);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A sequence header whose CRC does not match: waidec and waiparse say so (not "this is not a
 * WAI stream"); the start of a PNG is "not a WAI stream". */
static void
check_bad_start (const gchar * element, const Stream * s, GQuark domain, gint code,
    const gchar * want)
{
  GstHarness *h = gst_harness_new (element);
  GstBus *bus = attach_bus (h);
  GstFlowReturn ret;
  Msgs m;

  gst_harness_set_src_caps_str (h, "video/x-wai");
  {
    GstSegment seg;

    gst_segment_init (&seg, GST_FORMAT_BYTES);
    fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  }
  ret = push_chunked (h, s);
  if (ret == GST_FLOW_OK)       /* (the parser may need the end to decide) */
    gst_harness_push_event (h, gst_event_new_eos ());
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  m = collect (bus);
  fail_unless (m.errors >= 1, "%s: no error", element);
  fail_unless (m.domain == domain, "%s: %s", element, m.text);
  fail_unless_equals_int (m.code, code);
  fail_unless (strstr (m.text, want) != NULL, "%s: %s", element, m.text);
  g_free (m.text);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_bad_start_messages)
{
  Stream s = load_data ("gst-multi.wai");
  static const guint8 png[] = { 0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d,
    'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0
  };
  Stream p = { (guint8 *) png, sizeof (png) };

  s.data[20] ^= 0xff;           /* a header field: the header's CRC no longer matches */
  check_bad_start ("waidec", &s, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      "sequence header is damaged (CRC mismatch)");
  check_bad_start ("waiparse", &s, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      "sequence header is damaged (CRC mismatch)");
  check_bad_start ("waidec", &p, GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
      "This is not a WAI stream");
  check_bad_start ("waiparse", &p, GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
      "This is not a WAI stream");
  stream_free (&s);
}

GST_END_TEST;

/* A stream cut inside its last frame: the whole frames decode, a warning for the rest. */
GST_START_TEST (test_truncated)
{
  Stream good = load_data ("gst-multi.wai");
  Stream s = load_data ("gst-truncated.wai");
  GstHarness *h = gst_harness_new ("waidec");
  GstBus *bus = attach_bus (h);
  Ref ref;
  Msgs m;

  ref_decode (&good, &ref);
  fail_unless_equals_int (run_raw (h, &s), GST_FLOW_OK);
  check_output (h, &ref, MULTI_FRAMES - 1, NULL);
  m = collect (bus);
  fail_unless_equals_int (m.errors, 0);
  fail_unless_equals_int (m.warnings, 1);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  ref_clear (&ref);
  stream_free (&s);
  stream_free (&good);
}

GST_END_TEST;

/* A flush (seek) in the middle: nothing half-parsed survives it. */
GST_START_TEST (test_flush)
{
  Stream s = load_data ("gst-multi.wai");
  Stream half = { s.data, s.size / 2 + 17 };
  GstHarness *h = gst_harness_new ("waidec");
  GstSegment seg;
  Ref ref;

  ref_decode (&s, &ref);
  gst_harness_set_src_caps_str (h, "video/x-wai");
  fail_unless_equals_int (push_chunked (h, &half), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  while (gst_harness_buffers_in_queue (h))
    gst_buffer_unref (gst_harness_pull (h));
  fail_unless_equals_int (push_chunked (h, &s), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  check_output (h, &ref, MULTI_FRAMES, NULL);
  gst_harness_teardown (h);
  ref_clear (&ref);
  stream_free (&s);
}

GST_END_TEST;

/* Properties reach the library: kernels, threads, model-path (with WAI_MODEL_PATH unset). */
GST_START_TEST (test_properties)
{
  Stream s = load_data ("gst-multi.wai");
  gchar *models = g_strdup (g_getenv ("WAI_MODEL_PATH"));
  GstElement *dec = gst_element_factory_make ("waidec", NULL);
  GstHarness *h;
  gint threads = -1, kernels = -1;
  gchar *path = NULL;
  Ref ref;

  ref_decode (&s, &ref);
  g_unsetenv ("WAI_MODEL_PATH");
  gst_util_set_object_arg (G_OBJECT (dec), "kernels", "reference");
  g_object_set (dec, "threads", 2, "model-path", models, NULL);
  g_object_get (dec, "threads", &threads, "kernels", &kernels, "model-path", &path, NULL);
  fail_unless_equals_int (threads, 2);
  fail_unless_equals_int (kernels, WAI_KERNELS_REFERENCE);
  fail_unless_equals_string (path, models);
  g_free (path);
  h = gst_harness_new_with_element (dec, "sink", "src");
  gst_object_unref (dec);
  fail_unless_equals_int (run_raw (h, &s), GST_FLOW_OK);
  check_output (h, &ref, MULTI_FRAMES, NULL);
  gst_harness_teardown (h);
  g_setenv ("WAI_MODEL_PATH", models, TRUE);
  g_free (models);
  ref_clear (&ref);
  stream_free (&s);
}

GST_END_TEST;

/* device=vulkan: where there is no Vulkan device start fails with a clear error; where there
 * is one (even a software one), the pictures must be the CPU's, byte for byte. */
GST_START_TEST (test_vulkan)
{
  GstElement *dec = gst_element_factory_make ("waidec", NULL);
  GstBus *bus = gst_bus_new ();
  GstStateChangeReturn sret;
  Msgs m;

  fail_unless (dec != NULL);
  gst_element_set_bus (dec, bus);
  gst_util_set_object_arg (G_OBJECT (dec), "device", "vulkan");
  sret = gst_element_set_state (dec, GST_STATE_PAUSED);
  m = collect (bus);
  gst_element_set_state (dec, GST_STATE_NULL);
  if (sret == GST_STATE_CHANGE_FAILURE) {
    GST_INFO ("no Vulkan device: %s", m.text);
    fail_unless (m.errors >= 1);        /* ours, then the base class' "failed to start" */
    fail_unless (m.domain == GST_RESOURCE_ERROR);
    fail_unless_equals_int (m.code, GST_RESOURCE_ERROR_NOT_FOUND);
  } else {
    Stream s = load_data ("gst-multi.wai");
    GstHarness *h;
    Ref ref;

    fail_unless_equals_int (m.errors, 0);
    ref_decode (&s, &ref);
    h = gst_harness_new_with_element (dec, "sink", "src");
    fail_unless_equals_int (run_raw (h, &s), GST_FLOW_OK);
    check_output (h, &ref, MULTI_FRAMES, NULL);
    gst_harness_teardown (h);
    ref_clear (&ref);
    stream_free (&s);
  }
  g_free (m.text);
  gst_object_unref (dec);
  gst_object_unref (bus);
}

GST_END_TEST;

GST_START_TEST (test_typefind)
{
  Stream s = load_data ("gst-multi.wai");
  Stream g = load_data ("gst-garbage.bin");
  GstTypeFindProbability prob = GST_TYPE_FIND_NONE;
  GstCaps *caps = gst_type_find_helper_for_data (NULL, s.data, s.size, &prob);

  fail_unless (caps != NULL);
  fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-wai"));
  fail_unless_equals_int (prob, GST_TYPE_FIND_MAXIMUM);
  gst_caps_unref (caps);
  /* frame_count 1 (the typefinder reads the field, not the CRC): a still picture, like a
   * PNG; 0 (unknown) and 2: video */
  for (guint32 fc = 0; fc <= 2; fc++) {
    guint8 saved[4];

    memcpy (saved, s.data + 44, 4);
    s.data[44] = (guint8) fc;
    s.data[45] = s.data[46] = s.data[47] = 0;
    caps = gst_type_find_helper_for_data (NULL, s.data, s.size, &prob);
    fail_unless (caps != NULL);
    fail_unless_equals_string (gst_structure_get_name (gst_caps_get_structure (caps, 0)),
        fc == 1 ? "image/x-wai" : "video/x-wai");
    fail_unless_equals_int (prob, GST_TYPE_FIND_MAXIMUM);
    gst_caps_unref (caps);
    memcpy (s.data + 44, saved, 4);
  }
  /* "WAIS" and version 1 with damaged flags or unit_size: still WAI (LIKELY), so that waiparse
   * says what is wrong with the header */
  for (guint i = 0; i < 2; i++) {
    guint8 saved = s.data[i ? 9 : 6];

    s.data[i ? 9 : 6] ^= 0x37;
    caps = gst_type_find_helper_for_data (NULL, s.data, s.size, &prob);
    fail_unless (caps != NULL);
    fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-wai"));
    fail_unless_equals_int (prob, GST_TYPE_FIND_LIKELY);
    gst_caps_unref (caps);
    s.data[i ? 9 : 6] = saved;
  }
  /* a header alone is still recognised */
  caps = gst_type_find_helper_for_data (NULL, s.data, 96, &prob);
  fail_unless (caps != NULL);
  fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-wai"));
  gst_caps_unref (caps);
  caps = gst_type_find_helper_for_data (NULL, g.data, g.size, &prob);
  fail_unless (caps == NULL
      || !gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-wai"));
  gst_clear_caps (&caps);
  /* the right magic but version 2 */
  s.data[4] = 2;
  caps = gst_type_find_helper_for_data (NULL, s.data, s.size, &prob);
  fail_unless (caps == NULL
      || !gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-wai"));
  gst_clear_caps (&caps);
  stream_free (&s);
  stream_free (&g);
}

GST_END_TEST;

GST_START_TEST (test_registry)
{
  GstElementFactory *f;

  f = gst_element_factory_find ("waidec");
  fail_unless (f != NULL);
  fail_unless_equals_int (gst_plugin_feature_get_rank (GST_PLUGIN_FEATURE (f)),
      GST_RANK_PRIMARY);
  fail_unless (gst_element_factory_list_is_type (f, GST_ELEMENT_FACTORY_TYPE_DECODER |
          GST_ELEMENT_FACTORY_TYPE_MEDIA_VIDEO));
  gst_object_unref (f);
  f = gst_element_factory_find ("waiparse");
  fail_unless (f != NULL);
  fail_unless_equals_int (gst_plugin_feature_get_rank (GST_PLUGIN_FEATURE (f)),
      GST_RANK_PRIMARY);
  fail_unless (gst_element_factory_list_is_type (f, GST_ELEMENT_FACTORY_TYPE_PARSER));
  gst_object_unref (f);
  /* decodebin finds the parser and the decoder for both media types */
  for (guint i = 0; i < 2; i++) {
    GstCaps *caps = gst_caps_from_string (i ? "image/x-wai" : "video/x-wai");
    GList *all = gst_element_factory_list_get_elements (GST_ELEMENT_FACTORY_TYPE_DECODABLE,
        GST_RANK_MARGINAL);
    GList *ok = gst_element_factory_list_filter (all, caps, GST_PAD_SINK, FALSE);
    gboolean dec = FALSE, parse = FALSE;

    for (GList * l = ok; l; l = l->next) {
      const gchar *name = gst_plugin_feature_get_name (GST_PLUGIN_FEATURE (l->data));

      dec |= !strcmp (name, "waidec");
      parse |= !strcmp (name, "waiparse");
    }
    fail_unless (dec && parse, "no waidec or waiparse for %" GST_PTR_FORMAT, (gpointer) caps);
    gst_plugin_feature_list_free (ok);
    gst_plugin_feature_list_free (all);
    gst_caps_unref (caps);
  }
}

GST_END_TEST;

/* Under playbin (decodebin), waiparse takes its data in push mode from typefind's thread. In
 * pull mode its own thread would start while decodebin plugs it with its error messages
 * filtered, and an error found in that window (a small damaged file) was dropped. */
static gboolean
is_waiparse (const GValue * v, gpointer unused)
{
  GstElement *e = g_value_get_object (v);
  GstElementFactory *f = gst_element_get_factory (e);

  return !(f && !strcmp (gst_plugin_feature_get_name (GST_PLUGIN_FEATURE (f)), "waiparse"));
}

GST_START_TEST (test_parse_push_mode)
{
  const gchar *dir = g_getenv ("GST_WAI_TEST_DATA");
  gchar *path = g_build_filename (dir, "gst-multi.wai", NULL);
  gchar *uri = gst_filename_to_uri (path, NULL);
  GstElement *pb = gst_element_factory_make ("playbin", NULL);
  GstElement *vs = gst_element_factory_make ("fakesink", NULL);
  GstIterator *it;
  GValue v = G_VALUE_INIT;
  GstElement *parse;
  GstPad *pad;

  fail_unless (pb && vs);
  g_object_set (pb, "uri", uri, "video-sink", vs, NULL);
  fail_unless (gst_element_set_state (pb, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (gst_element_get_state (pb, NULL, NULL, 60 * GST_SECOND),
      GST_STATE_CHANGE_SUCCESS);
  it = gst_bin_iterate_recurse (GST_BIN (pb));
  fail_unless (gst_iterator_find_custom (it, (GCompareFunc) is_waiparse, &v, NULL));
  parse = g_value_get_object (&v);
  pad = gst_element_get_static_pad (parse, "sink");
  fail_unless_equals_int (GST_PAD_MODE (pad), GST_PAD_MODE_PUSH);
  gst_object_unref (pad);
  g_value_unset (&v);
  gst_iterator_free (it);
  gst_element_set_state (pb, GST_STATE_NULL);
  gst_object_unref (pb);
  g_free (uri);
  g_free (path);
}

GST_END_TEST;

static Suite *
waidec_suite (void)
{
  Suite *s = suite_create ("waidec");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_registry);
  tcase_add_test (tc, test_typefind);
  tcase_add_test (tc, test_parse_push_mode);
  tcase_add_test (tc, test_raw_chunks);
  tcase_add_test (tc, test_vectors);
  tcase_add_test (tc, test_parse_decode);
  tcase_add_test (tc, test_parse_output);
  tcase_add_test (tc, test_packetized_codec_data);
  tcase_add_test (tc, test_packetized_inband);
  tcase_add_test (tc, test_corrupt_frame_raw);
  tcase_add_test (tc, test_corrupt_frame_parsed);
  tcase_add_test (tc, test_corrupt_packet);
  tcase_add_test (tc, test_corrupt_max_errors);
  tcase_add_test (tc, test_missing_model);
  tcase_add_test (tc, test_garbage);
  tcase_add_test (tc, test_empty);
  tcase_add_test (tc, test_bad_start_messages);
  tcase_add_test (tc, test_truncated);
  tcase_add_test (tc, test_flush);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_vulkan);
  return s;
}

GST_CHECK_MAIN (waidec);
