/* gst-wai-lateloop: gst-launch-1.0's way of running a pipeline, with its main thread late.
 *
 *   gst-wai-lateloop DELAY_MS PIPELINE...
 *
 * Like gst-launch-1.0 (1.22): a bus sync handler prints an error and quits the main loop from
 * the thread that posts it; a bus watch in the main loop sets PLAYING once the pipeline is
 * PAUSED and quits at EOS. Between setting PAUSED and entering g_main_loop_run() the main thread
 * sleeps DELAY_MS, where gst-launch-1.0 spends microseconds (or, on a busy machine, a preemption):
 * an error posted in that gap loses gst-launch's quit (g_main_loop_run() marks the loop running
 * again) and, since a bin that saw an error never completes its preroll, the run never ends.
 * waiparse and waidec hold their errors until the application reads its bus (gstwaicommon.h),
 * so with them every run ends; the caller detects a hang with a timeout.
 *
 * Prints "ERROR: <element>: <message>" and "EOS" on stderr. Exit status: 0 EOS, 1 error,
 * 2 usage or parse error, 255 the state change to PAUSED failed (as gst-launch-1.0). */
#include <stdio.h>
#include <stdlib.h>

#include <gst/gst.h>

static GMainLoop *loop;
static GstElement *pipe_;
static int rc;

static GstBusSyncReply
sync_handler (GstBus * bus, GstMessage * msg, gpointer data)
{
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;

    gst_message_parse_error (msg, &err, NULL);
    fprintf (stderr, "ERROR: %s: %s\n", GST_OBJECT_NAME (msg->src), err->message);
    g_clear_error (&err);
    rc = 1;
    g_main_loop_quit (loop);    /* what gst-launch-1.0 does, from this thread */
  }
  return GST_BUS_PASS;
}

static gboolean
watch (GstBus * bus, GstMessage * msg, gpointer data)
{
  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_STATE_CHANGED:
      if (GST_MESSAGE_SRC (msg) == GST_OBJECT (pipe_)) {
        GstState old, state, pending;

        gst_message_parse_state_changed (msg, &old, &state, &pending);
        if (state == GST_STATE_PAUSED && old == GST_STATE_READY)
          gst_element_set_state (pipe_, GST_STATE_PLAYING);
      }
      break;
    case GST_MESSAGE_EOS:
      fprintf (stderr, "EOS\n");
      g_main_loop_quit (loop);
      break;
    default:
      break;
  }
  return TRUE;
}

int
main (int argc, char **argv)
{
  GError *err = NULL;
  GstBus *bus;
  guint id;
  int delay;

  gst_init (&argc, &argv);
  if (argc < 3) {
    fprintf (stderr, "usage: gst-wai-lateloop DELAY_MS PIPELINE...\n");
    return 2;
  }
  delay = atoi (argv[1]);
  pipe_ = gst_parse_launchv ((const gchar **) (argv + 2), &err);
  if (!pipe_ || err) {
    fprintf (stderr, "ERROR: parse: %s\n", err ? err->message : "?");
    return 2;
  }
  if (!GST_IS_PIPELINE (pipe_)) {
    GstElement *p = gst_pipeline_new (NULL);

    gst_bin_add (GST_BIN (p), pipe_);
    pipe_ = p;
  }
  loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (pipe_);
  gst_bus_set_sync_handler (bus, sync_handler, NULL, NULL);
  id = gst_bus_add_watch (bus, watch, NULL);
  gst_object_unref (bus);

  if (gst_element_set_state (pipe_, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
    fprintf (stderr, "Failed to set pipeline to PAUSED.\n");
    rc = 255;
  } else {
    g_usleep ((gulong) delay * 1000);
    g_main_loop_run (loop);
  }
  gst_element_set_state (pipe_, GST_STATE_NULL);
  g_source_remove (id);
  gst_object_unref (pipe_);
  g_main_loop_unref (loop);
  return rc;
}
