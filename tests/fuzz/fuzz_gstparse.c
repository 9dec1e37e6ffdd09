/* The GStreamer plugin (gst-wai) on arbitrary bytes: the video/x-wai type finder, waiparse
 * (GstBaseParse), `waiparse ! waidec` and waidec alone (raw or packetized input), driven
 * through GstHarness with input-derived chunking, caps (codec_data) and flushes.
 *
 * The plugin is compiled into this binary and registered statically; no other plugin is
 * loaded (GST_REGISTRY_DISABLE, empty plugin paths). GLib criticals and warnings abort.
 *
 * Oracles, besides the sanitizers:
 *   - every buffer waiparse outputs is exactly one frame unit ("WAIF", 20 + payload_size
 *     bytes, CRC-32 of all but the last 4 bytes equal to them; spec 2.2), checked here
 *     independently of libwai;
 *   - every buffer waidec outputs has the size of the caps on its source pad when it is pushed;
 *   - the type finder only says video/x-wai for data that starts with "WAIS".
 *
 * Input: if it starts with 'W' (a plain stream, e.g. a conformance vector), every mode runs on
 * the whole input with fixed chunking; else byte 0 selects the mode and options, byte 1 seeds
 * the chunking and the rest is the stream:
 *   bits 0-1  0: type finder, then waidec (raw)  1: waiparse  2: waiparse ! waidec
 *             3: waidec packetized (units split with wai_find_unit)
 *   bit 2     mode 3: the first unit as codec_data in the caps (else in band)
 *   bit 3     no caps event at all (modes 0-2)
 *   bit 4     a flush (flush-start, flush-stop) after some chunk
 *   bit 5     no EOS at the end
 * waidec runs with threads=1 and max-memory=256 MiB. Models are found through $WAI_MODEL_PATH
 * (tools/fuzz.sh: the micro and tiny models of the build tree).
 */
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/base/gsttypefindhelper.h>
#include <gst/video/video.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <wai/wai.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void gst_plugin_wai_register(void);   /* GST_PLUGIN_DEFINE in gst-wai/gstwai.c */

#define DEC_OPTS "threads=1 max-memory=268435456"

static uint32_t rd32(const guint8 *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The oracle on waiparse's output: one complete, CRC-valid frame unit per buffer. */
static void check_unit(GstBuffer *buf)
{
    GstMapInfo map;
    if (!gst_buffer_map(buf, &map, GST_MAP_READ)) abort();
    const guint8 *d = map.data;
    gsize n = map.size;
    if (n < 40 || memcmp(d, "WAIF", 4) != 0 || (guint64)rd32(d + 4) + 20 != n ||
        (uint32_t)crc32(0, d, (uInt)(n - 4)) != rd32(d + n - 4)) {
        fprintf(stderr, "fuzz_gstparse: waiparse output a buffer of %zu bytes that is not one "
                "CRC-valid frame unit\n", (size_t)n);
        abort();
    }
    gst_buffer_unmap(buf, &map);
}

static GstPadProbeReturn parse_probe(GstPad *pad, GstPadProbeInfo *info, gpointer user)
{
    (void)pad; (void)user;
    if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER)
        check_unit(GST_PAD_PROBE_INFO_BUFFER(info));
    return GST_PAD_PROBE_OK;
}

/* The oracle on waidec's output, checked as each buffer is pushed: its size is that of the
 * caps current on waidec's source pad at that moment. (Checking later, against the harness's
 * caps after a whole push, would be wrong: one push can carry a frame and then a new sequence
 * header with other caps.) */
static GstPadProbeReturn dec_probe(GstPad *pad, GstPadProbeInfo *info, gpointer user)
{
    (void)user;
    if (!(GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER)) return GST_PAD_PROBE_OK;
    GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER(info);
    GstCaps *caps = gst_pad_get_current_caps(pad);
    GstVideoInfo vi;
    if (!caps || !gst_video_info_from_caps(&vi, caps) ||
        gst_buffer_get_size(b) != GST_VIDEO_INFO_SIZE(&vi)) {
        fprintf(stderr, "fuzz_gstparse: waidec output %zu bytes, caps %s\n",
                (size_t)gst_buffer_get_size(b), caps ? "do not match" : "missing");
        abort();
    }
    gst_caps_unref(caps);
    return GST_PAD_PROBE_OK;
}

/* Pull everything the harness received so far (waiparse's buffers are checked here). */
static void drain(GstHarness *h, int mode)
{
    GstBuffer *b;
    while ((b = gst_harness_try_pull(h))) {
        if (mode == 1) check_unit(b);
        gst_buffer_unref(b);
    }
    GstEvent *e;
    while ((e = gst_harness_try_pull_event(h))) gst_event_unref(e);
}

static void push_bytes(GstHarness *h, int mode, const guint8 *p, gsize n, GstFlowReturn *fr)
{
    if (*fr != GST_FLOW_OK && *fr != GST_FLOW_FLUSHING) return;
    *fr = gst_harness_push(h, gst_buffer_new_memdup(p, n));
    drain(h, mode);
}

static void flush(GstHarness *h, int mode, GstFlowReturn *fr)
{
    gst_harness_push_event(h, gst_event_new_flush_start());
    gst_harness_push_event(h, gst_event_new_flush_stop(TRUE));
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    gst_harness_push_event(h, gst_event_new_segment(&seg));
    drain(h, mode);
    *fr = GST_FLOW_OK;
}

static void run(int mode, unsigned ctl, unsigned seed, const guint8 *d, gsize n)
{
    GstHarness *h;
    GstFlowReturn fr = GST_FLOW_OK;
    gboolean caps = !(ctl & 8);
    guint32 rng = seed * 2654435761u + 1;

    if (mode == 0) {
        GstTypeFindProbability prob = GST_TYPE_FIND_NONE;
        GstCaps *tc = gst_type_find_helper_for_data(NULL, d, n, &prob);
        if (tc) {
            if (n < 4 || memcmp(d, "WAIS", 4) != 0) {
                fprintf(stderr, "fuzz_gstparse: type finder says video/x-wai without WAIS\n");
                abort();
            }
            gst_caps_unref(tc);
        }
    }

    switch (mode) {
    case 0: h = gst_harness_new_parse("waidec " DEC_OPTS); break;
    case 1: h = gst_harness_new("waiparse"); break;
    case 2: h = gst_harness_new_parse("waiparse ! waidec " DEC_OPTS); break;
    default: h = gst_harness_new_parse("waidec " DEC_OPTS); break;
    }
    if (mode == 2) {
        GstElement *p = gst_harness_find_element(h, "waiparse");
        GstPad *src = gst_element_get_static_pad(p, "src");
        gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, parse_probe, NULL, NULL);
        gst_object_unref(src);
        gst_object_unref(p);
    }
    if (mode != 1) {
        GstElement *dec = gst_harness_find_element(h, "waidec");
        GstPad *src = gst_element_get_static_pad(dec, "src");
        gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, dec_probe, NULL, NULL);
        gst_object_unref(src);
        gst_object_unref(dec);
    }

    if (mode == 3) {
        /* packetized: one unit per buffer, the bytes between units dropped */
        WaiUnitInfo u;
        gsize off = 0;
        gboolean first = TRUE;
        GstCaps *c = gst_caps_new_simple("video/x-wai", "parsed", G_TYPE_BOOLEAN, TRUE, NULL);
        while (off < n) {
            memset(&u, 0, sizeof(u));
            int r = wai_find_unit(d + off, n - off, 1u << 24, &u);
            if (r != 0) break;
            const guint8 *p = d + off + u.offset;
            if (first) {
                first = FALSE;
                if (ctl & 4) {
                    GstBuffer *cd = gst_buffer_new_memdup(p, u.size);
                    gst_caps_set_simple(c, "codec_data", GST_TYPE_BUFFER, cd, NULL);
                    gst_buffer_unref(cd);
                    gst_harness_set_src_caps(h, c);
                    c = NULL;
                    off += u.offset + u.size;
                    continue;
                }
                gst_harness_set_src_caps(h, c);
                c = NULL;
            }
            push_bytes(h, mode, p, u.size, &fr);
            if ((ctl & 16) && (rng = rng * 1103515245u + 12345u) >> 29 == 0) flush(h, mode, &fr);
            off += u.offset + u.size;
        }
        if (c) gst_harness_set_src_caps(h, c);
    } else {
        if (caps) {
            gst_harness_set_src_caps_str(h, "video/x-wai");
        } else {
            /* what set_src_caps would send, less the caps */
            GstSegment seg;
            gst_segment_init(&seg, GST_FORMAT_TIME);
            gst_harness_push_event(h, gst_event_new_stream_start("fuzz"));
            gst_harness_push_event(h, gst_event_new_segment(&seg));
        }
        gsize off = 0;
        gsize flush_at = (ctl & 16) ? (seed * 7919u) % (n + 1) : (gsize)-1;
        while (off < n) {
            rng = rng * 1103515245u + 12345u;
            gsize k = 1 + (rng >> 16) % (seed & 1 ? 97 : 4096);
            if (seed == 0) k = 1024;
            if (k > n - off) k = n - off;
            push_bytes(h, mode, d + off, k, &fr);
            if (off < flush_at && off + k >= flush_at) flush(h, mode, &fr);
            off += k;
        }
    }
    if (!(ctl & 32)) {
        gst_harness_push_event(h, gst_event_new_eos());
        drain(h, mode);
    }
    gst_harness_teardown(h);
}

static void init_once(void)
{
    static int done;
    if (done) return;
    done = 1;
    /* only this binary's plugin: no registry file, no plugin scan */
    setenv("GST_REGISTRY_DISABLE", "yes", 1);
    setenv("GST_PLUGIN_SYSTEM_PATH_1_0", "", 1);
    setenv("GST_PLUGIN_PATH_1_0", "", 1);
    setenv("GST_REGISTRY_FORK", "no", 1);
    gst_init(NULL, NULL);
    gst_plugin_wai_register();
    g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    if (size < 2) return 0;
    if (data[0] == 'W') {
        for (int mode = 0; mode < 4; mode++) run(mode, mode == 3 ? 4 : 0, 0, data, size);
        return 0;
    }
    run(data[0] & 3, data[0], data[1], data + 2, size - 2);
    return 0;
}
