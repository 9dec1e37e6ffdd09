/* Plays `filesrc location=FILE ! waidec ! videoconvert ! autovideosink` on the X display
 * (run under Xvfb) and checks that it reaches EOS without an error, that a real video sink
 * (not autovideosink's fakesink fallback) was chosen and rendered frames (QoS may drop late
 * ones on a loaded machine, so not necessarily all).
 *
 *   test_autovideosink FILE FRAMES
 *
 * Exit status: 0 pass, 1 fail, 77 skip (no X display). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>

/* The element autovideosink picked (its only child) and, inside it (glimagesink is a bin),
 * the element that keeps the base sink's "stats". */
static const gchar *
chosen_sink (GstElement * autosink, GstElement ** with_stats)
{
  GstIterator *it = gst_bin_iterate_recurse (GST_BIN (autosink));
  GValue v = G_VALUE_INIT;
  const gchar *name = NULL;
  GstObject *parent;

  *with_stats = NULL;
  while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&v);
    GstElementFactory *f = gst_element_get_factory (e);

    parent = gst_object_get_parent (GST_OBJECT (e));
    if (parent == GST_OBJECT (autosink) && f)
      name = gst_plugin_feature_get_name (GST_PLUGIN_FEATURE (f));
    if (parent)
      gst_object_unref (parent);
    if (!*with_stats && g_object_class_find_property (G_OBJECT_GET_CLASS (e), "stats"))
      *with_stats = gst_object_ref (e);
    g_value_reset (&v);
  }
  g_value_unset (&v);
  gst_iterator_free (it);
  return name;
}

int
main (int argc, char **argv)
{
  GstElement *pipe, *autosink, *child = NULL;
  GstMessage *msg;
  GstBus *bus;
  GError *err = NULL;
  const gchar *sink;
  gchar *launch;
  guint64 rendered = 0, dropped = 0;
  int frames, rc = 1;

  gst_init (&argc, &argv);
  if (argc != 3) {
    fprintf (stderr, "usage: test_autovideosink FILE FRAMES\n");
    return 2;
  }
  if (!g_getenv ("DISPLAY")) {
    printf ("SKIP: no X display (run under xvfb-run)\n");
    return 77;
  }
  frames = atoi (argv[2]);
  launch = g_strdup_printf ("filesrc location=\"%s\" ! waidec ! videoconvert ! "
      "autovideosink name=out", argv[1]);
  pipe = gst_parse_launch (launch, &err);
  g_free (launch);
  if (!pipe) {
    fprintf (stderr, "FAIL: %s\n", err ? err->message : "parse error");
    return 1;
  }
  autosink = gst_bin_get_by_name (GST_BIN (pipe), "out");
  bus = gst_element_get_bus (pipe);
  if (gst_element_set_state (pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
    fprintf (stderr, "FAIL: could not start the pipeline\n");

  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  sink = chosen_sink (autosink, &child);
  if (child) {
    GstStructure *stats = NULL;

    g_object_get (child, "stats", &stats, NULL);
    if (stats) {
      gst_structure_get_uint64 (stats, "rendered", &rendered);
      gst_structure_get_uint64 (stats, "dropped", &dropped);
      gst_structure_free (stats);
    }
  }
  printf ("autovideosink chose %s: %" G_GUINT64_FORMAT " frames rendered, %" G_GUINT64_FORMAT
      " dropped\n", sink ? sink : "nothing", rendered, dropped);

  if (!msg) {
    fprintf (stderr, "FAIL: no EOS within 60 s\n");
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    fprintf (stderr, "FAIL: error from %s: %s (%s)\n", GST_OBJECT_NAME (msg->src),
        err->message, dbg ? dbg : "");
    g_clear_error (&err);
    g_free (dbg);
  } else if (!sink || !strcmp (sink, "fakesink") || !strcmp (sink, "fakevideosink")) {
    fprintf (stderr, "FAIL: no real video sink was used (%s)\n", sink ? sink : "none");
  } else if (rendered == 0 || rendered + dropped > (guint64) frames) {
    /* QoS may drop late frames on a loaded machine (in the decoder or the sink) */
    fprintf (stderr, "FAIL: expected 1..%d frames rendered\n", frames);
  } else {
    rc = 0;
  }
  if (msg)
    gst_message_unref (msg);
  gst_element_set_state (pipe, GST_STATE_NULL);
  if (child)
    gst_object_unref (child);
  gst_object_unref (autosink);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  printf ("%s\n", rc ? "FAIL" : "PASS");
  return rc;
}
