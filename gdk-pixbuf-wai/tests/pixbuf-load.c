/* pixbuf-load FILE [CHUNK]: loads FILE through GdkPixbufLoader in pieces of CHUNK bytes (default
 * 65536), as image viewers do, and prints "WIDTHxHEIGHT SHA256" of its RGB8 rows top to bottom
 * (spec 8; the rowstride padding left out), or "error: MESSAGE" with exit status 1.
 * The loader is found through GDK_PIXBUF_MODULE_FILE like any other. */
#include <stdio.h>
#include <stdlib.h>

#include <gdk-pixbuf/gdk-pixbuf.h>

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: pixbuf-load FILE [CHUNK]\n");
        return 2;
    }
    const gsize chunk = argc > 2 ? (gsize)strtoul(argv[2], NULL, 10) : 65536;
    gchar *data = NULL;
    gsize size = 0;
    GError *err = NULL;
    if (!chunk || !g_file_get_contents(argv[1], &data, &size, &err)) {
        fprintf(stderr, "pixbuf-load: %s\n", err ? err->message : "CHUNK must be >= 1");
        return 2;
    }
    GdkPixbufLoader *ld = gdk_pixbuf_loader_new();
    gboolean ok = TRUE;
    for (gsize at = 0; ok && at < size; at += chunk)
        ok = gdk_pixbuf_loader_write(ld, (const guchar *)data + at, MIN(chunk, size - at), &err);
    /* close reports what stop_load found (a stream cut short, no frame) */
    if (ok) ok = gdk_pixbuf_loader_close(ld, &err);
    else gdk_pixbuf_loader_close(ld, NULL);
    GdkPixbuf *pb = ok ? gdk_pixbuf_loader_get_pixbuf(ld) : NULL;
    int rc = 0;
    if (!pb) {
        printf("error: %s\n", err ? err->message : "no picture");
        rc = 1;
    } else {
        GdkPixbufFormat *f = gdk_pixbuf_loader_get_format(ld);
        const int w = gdk_pixbuf_get_width(pb), h = gdk_pixbuf_get_height(pb);
        const int stride = gdk_pixbuf_get_rowstride(pb);
        const guchar *px = gdk_pixbuf_read_pixels(pb);
        GChecksum *ck = g_checksum_new(G_CHECKSUM_SHA256);
        for (int y = 0; y < h; y++) g_checksum_update(ck, px + (gsize)y * stride, (gssize)w * 3);
        printf("%dx%d %s %s %d\n", w, h, g_checksum_get_string(ck),
               f ? gdk_pixbuf_format_get_name(f) : "?", gdk_pixbuf_get_n_channels(pb));
        g_checksum_free(ck);
    }
    g_clear_error(&err);
    g_object_unref(ld);
    g_free(data);
    return rc;
}
