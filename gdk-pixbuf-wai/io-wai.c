/* GdkPixbuf loader for WAI pictures (image/x-wai): image viewers (Eye of GNOME and every other
 * GdkPixbuf user) and gdk-pixbuf-thumbnailer open .wai files through libwai, the same decoder
 * and the same bytes as `wai decode`. Frame 0 of a sequence is the picture.
 *
 * Incremental: GdkPixbuf hands the file over in pieces (begin_load, load_increment, stop_load);
 * each piece goes to wai_send_data() and the picture is announced (prepared, updated) as soon
 * as libwai returns frame 0, so the rest of a long sequence is not decoded. Any error before
 * that picture is a GError carrying libwai's message. */
#include <string.h>

#define GDK_PIXBUF_ENABLE_BACKEND
#include <gdk-pixbuf/gdk-pixbuf.h>
#include <gdk-pixbuf/gdk-pixbuf-io.h>
#undef GDK_PIXBUF_ENABLE_BACKEND

#include <wai/wai.h>

/* The largest piece handed to wai_send_data() at once: with every picture fetched after each
 * piece, a piece of at most 1 MiB always fits (wai.h). */
#define WAI_PIECE (1u << 20)

typedef struct {
    GdkPixbufModuleSizeFunc size_func;
    GdkPixbufModulePreparedFunc prepared_func;
    GdkPixbufModuleUpdatedFunc updated_func;
    gpointer user_data;
    WaiDecoder *dec;
    GdkPixbuf *pixbuf;   /* frame 0, once decoded */
    gboolean sized;      /* size_func was asked */
    gboolean skip;       /* size_func asked for no picture (0 x 0): stop decoding */
} WaiLoad;

static gboolean wai_error(WaiLoad *c, GError **error, int err)
{
    g_set_error(error, GDK_PIXBUF_ERROR,
                err == WAI_ERR_NOMEM ? GDK_PIXBUF_ERROR_INSUFFICIENT_MEMORY
                                     : GDK_PIXBUF_ERROR_CORRUPT_IMAGE,
                "WAI: %s", wai_decoder_last_error(c->dec));
    return FALSE;
}

/* Once the sequence header is in: the size, which the caller may veto (0 x 0). */
static void ask_size(WaiLoad *c)
{
    WaiSequenceInfo si;
    if (c->sized || wai_decoder_get_sequence_info(c->dec, &si) < 0) return;
    c->sized = TRUE;
    int w = (int)si.disp_w, h = (int)si.disp_h;
    if (c->size_func) {
        c->size_func(&w, &h, c->user_data);
        if (w == 0 || h == 0) c->skip = TRUE;
    }
}

/* Fetch pictures until libwai needs more data; keep frame 0 and announce it. */
static gboolean fetch(WaiLoad *c, GError **error)
{
    while (!c->pixbuf && !c->skip) {
        WaiPicture pic;
        int r = wai_get_picture(c->dec, &pic);
        ask_size(c);
        if (r == WAI_ERR_AGAIN) return TRUE;
        if (r < 0) return wai_error(c, error, r);
        if (c->skip) {
            wai_picture_unref(&pic);
            return TRUE;
        }
        GdkPixbuf *pb = gdk_pixbuf_new(GDK_COLORSPACE_RGB, FALSE, 8, (int)pic.width, (int)pic.height);
        if (!pb) {
            wai_picture_unref(&pic);
            g_set_error(error, GDK_PIXBUF_ERROR, GDK_PIXBUF_ERROR_INSUFFICIENT_MEMORY,
                        "WAI: no memory for a %ux%u picture", pic.width, pic.height);
            return FALSE;
        }
        const int stride = gdk_pixbuf_get_rowstride(pb);
        guchar *dst = gdk_pixbuf_get_pixels(pb);
        for (uint32_t y = 0; y < pic.height; y++)
#ifdef WAI_PLANTED_FAULT_PIXBUF_ROWS
            /* planted: the source rows taken at the pixbuf's rowstride */
            memcpy(dst + (size_t)y * stride, pic.data + (size_t)y * stride, (size_t)pic.width * 3);
#else
            memcpy(dst + (size_t)y * stride, pic.data + (size_t)y * pic.stride, (size_t)pic.width * 3);
#endif
        wai_picture_unref(&pic);
        c->pixbuf = pb;
        if (c->prepared_func) c->prepared_func(pb, NULL, c->user_data);
        if (c->updated_func)
            c->updated_func(pb, 0, 0, gdk_pixbuf_get_width(pb), gdk_pixbuf_get_height(pb), c->user_data);
    }
    return TRUE;
}

static gpointer wai_begin_load(GdkPixbufModuleSizeFunc size_func,
                               GdkPixbufModulePreparedFunc prepared_func,
                               GdkPixbufModuleUpdatedFunc updated_func, gpointer user_data,
                               GError **error)
{
    WaiSettings s;
    wai_default_settings(&s);
    WaiLoad *c = g_new0(WaiLoad, 1);
    c->size_func = size_func;
    c->prepared_func = prepared_func;
    c->updated_func = updated_func;
    c->user_data = user_data;
    int r = wai_decoder_open(&c->dec, &s);
    if (r < 0) {
        g_set_error(error, GDK_PIXBUF_ERROR, GDK_PIXBUF_ERROR_FAILED, "WAI: cannot open a decoder: %s",
                    wai_strerror(r));
        g_free(c);
        return NULL;
    }
    return c;
}

static gboolean wai_load_increment(gpointer data, const guchar *buf, guint size, GError **error)
{
    WaiLoad *c = data;
    while (size && !c->pixbuf && !c->skip) {
        const guint n = size < WAI_PIECE ? size : WAI_PIECE;
        const int r = wai_send_data(c->dec, buf, n);
        if (r == WAI_ERR_AGAIN) { /* cannot happen with pictures fetched after each piece */
            if (!fetch(c, error)) return FALSE;
            continue;
        }
        if (r < 0) return wai_error(c, error, r); /* a header that cannot be used */
        buf += n;
        size -= n;
        if (!fetch(c, error)) return FALSE;
    }
    return TRUE; /* once frame 0 is out, the rest of the stream is not needed */
}

static gboolean wai_stop_load(gpointer data, GError **error)
{
    WaiLoad *c = data;
    gboolean ok = TRUE;
    if (!c->pixbuf && !c->skip) {
        const int r = wai_send_eos(c->dec);
        if (r < 0) ok = wai_error(c, error, r);
        else if ((ok = fetch(c, error)) && !c->pixbuf && !c->skip) {
            g_set_error(error, GDK_PIXBUF_ERROR, GDK_PIXBUF_ERROR_CORRUPT_IMAGE,
                        c->sized ? "WAI: the stream has no complete frame"
                                 : "WAI: not a WAI stream (no sequence header)");
            ok = FALSE;
        }
    }
    if (c->pixbuf) g_object_unref(c->pixbuf);
    wai_decoder_close(&c->dec);
    g_free(c);
    return ok;
}

G_MODULE_EXPORT void fill_vtable(GdkPixbufModule *module);
G_MODULE_EXPORT void fill_info(GdkPixbufFormat *info);

void fill_vtable(GdkPixbufModule *module)
{
    module->begin_load = wai_begin_load;
    module->stop_load = wai_stop_load;
    module->load_increment = wai_load_increment;
}

void fill_info(GdkPixbufFormat *info)
{
    /* the start code of a sequence header, the first unit of every stream (spec 2) */
    static GdkPixbufModulePattern signature[] = { { (char *)"WAIS", NULL, 100 }, { NULL, NULL, 0 } };
    static gchar *mime_types[] = { (gchar *)"image/x-wai", NULL };
    static gchar *extensions[] = { (gchar *)"wai", NULL };
    info->name = (gchar *)"wai";
    info->signature = signature;
    info->description = (gchar *)"WAI learned image";
    info->mime_types = mime_types;
    info->extensions = extensions;
    info->flags = GDK_PIXBUF_FORMAT_THREADSAFE;
    info->license = (gchar *)"BSD";
}
