/* gst-wai-launch: run a pipeline description to EOS or the first error, like gst-launch-1.0
 * but with a deterministic end (gst-launch-1.0 1.22 can hang when two error messages
 * arrive while the pipeline prerolls, e.g. an element's error then the source's "internal
 * data stream error").
 *
 *   gst-wai-launch PIPELINE...
 *
 * Prints "WARNING: <element>: <message> (<debug>)" / "ERROR: ..." lines on stderr.
 * Exit status: 0 EOS without error, 1 error, 2 usage or parse error, 3 no EOS within 120 s. */
#include <stdio.h>

#include <gst/gst.h>

static void
print_message (GstMessage * msg, const gchar * kind)
{
  GError *err = NULL;
  gchar *dbg = NULL;

  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
    gst_message_parse_error (msg, &err, &dbg);
  else
    gst_message_parse_warning (msg, &err, &dbg);
  fprintf (stderr, "%s: %s: %s (%s)\n", kind, GST_OBJECT_NAME (msg->src), err->message,
      dbg ? dbg : "");
  g_clear_error (&err);
  g_free (dbg);
}

int
main (int argc, char **argv)
{
  GstElement *pipe;
  GError *err = NULL;
  GstBus *bus;
  int rc = 3;

  gst_init (&argc, &argv);
  if (argc < 2) {
    fprintf (stderr, "usage: gst-wai-launch PIPELINE...\n");
    return 2;
  }
  /* each argument is one token, as for gst-launch-1.0 (a property value may hold spaces) */
  pipe = gst_parse_launchv ((const gchar **) (argv + 1), &err);
  if (!pipe || err) {
    fprintf (stderr, "ERROR: parse: %s\n", err ? err->message : "?");
    g_clear_error (&err);
    if (pipe)
      gst_object_unref (pipe);
    return 2;
  }
  bus = gst_element_get_bus (pipe);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);

    if (!msg) {
      fprintf (stderr, "ERROR: no EOS within 120 s\n");
      break;
    }
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
      print_message (msg, "WARNING");
      gst_message_unref (msg);
      continue;
    }
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      print_message (msg, "ERROR");
      rc = 1;
    } else {
      rc = 0;
    }
    gst_message_unref (msg);
    break;
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  return rc;
}
