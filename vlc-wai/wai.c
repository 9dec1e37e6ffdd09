/*
 * vlc-wai: VLC 3.0 plugin for WAI streams (.wai), decoding with libwai-core.
 *
 * Two modules in one plugin:
 *  - "demux" (shortcut "wai"): probes the "WAIS" sequence header, creates a video ES of
 *    fourcc 'WAI1' whose extra data is the sequence header unit, and sends one block per
 *    frame unit with pts = frame_index * fps_den / fps_num, and at the end the last unit once
 *    more at its end time, so that VLC shows the last frame before it closes the video.
 *    Seekable (by frame_index) when the stream is. A still picture (a header with
 *    frame_count 1) is shown as VLC's image demuxer shows a PNG: its frame unit is sent again
 *    at --image-fps (10/1) for --image-duration (10 s; negative: forever), and the time can
 *    be set within that.
 *  - "video decoder": claims 'WAI1' and outputs RV24 (R, G, B bytes) pictures of the display
 *    window size; a block equal to the last one (a still's repeat) gives a copy of its picture
 *    without decoding again. It counts what it decodes and logs "wai: decoded N frames, M
 *    errors" when it closes. A sequence header it cannot use (model not found, ...) is
 *    reported once, as what it is; the decoder then drops the stream's blocks.
 *
 * VLC's own avformat demuxer hands FFmpeg's AV_CODEC_ID_WAI to decoders as 'undf', which no
 * module can identify, so this plugin brings its own demuxer (priority above avformat's).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <vlc_common.h>
#include <vlc_plugin.h>
#include <vlc_codec.h>
#include <vlc_demux.h>
#include <vlc_dialog.h>

#include <wai/wai.h>

#define VLC_CODEC_WAI VLC_FOURCC('W', 'A', 'I', '1')

#define SEQHDR_MIN 96
#define FRAME_HDR 16
#define FRAME_OVERHEAD 20
#define MAX_UNIT (1u << 30)

static uint32_t rl32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*****************************************************************************
 * Demuxer
 *****************************************************************************/
struct demux_sys_t {   /* typedef'd by vlc_common.h */
    es_out_id_t *es;
    date_t date;            /* frame_index -> time */
    mtime_t last_pts;
    uint32_t frame_count;   /* 0 = unknown */
    uint32_t fps_num, fps_den;
    uint64_t first_unit;    /* where the unit after the sequence header starts */
    bool can_seek;
    /* a still picture (frame_count 1): its frame unit, sent again at still_fps */
    bool still;
    block_t *still_unit;
    date_t still_date;      /* time of the next repeat, from 0 */
    mtime_t still_length;   /* how long it is shown; < 0: until stopped */
    /* a video's last unit sent, sent again at its end time when the stream ends */
    block_t *tail;
};

#define UNIT_WAIF 0x46494157u   /* "WAIF" */

/* The frame unit at the read position, whole or (at the end) as far as it goes; NULL at the
 * end of the stream or if no frame unit starts there (*err set). */
static block_t *ReadUnit(demux_t *demux, uint32_t *index, int *err)
{
    const uint8_t *p;
    uint32_t payload;
    block_t *block;

    *err = VLC_DEMUXER_EOF;
    if (vlc_stream_Peek(demux->s, &p, FRAME_HDR) < FRAME_HDR)
        return NULL;
    *err = VLC_DEMUXER_EGENERIC;
    if (rl32(p) != UNIT_WAIF) {
        msg_Err(demux, "no frame unit at %"PRIu64, vlc_stream_Tell(demux->s));
        return NULL;
    }
    payload = rl32(p + 4);
    *index = rl32(p + 8);
    if (payload < 20 || payload > MAX_UNIT - FRAME_OVERHEAD) {
        msg_Err(demux, "invalid payload size %"PRIu32, payload);
        return NULL;
    }
    /* vlc_stream_Block reads what is there: a short unit is left to the decoder */
    block = vlc_stream_Block(demux->s, payload + FRAME_OVERHEAD);
    if (!block) {
        *err = VLC_DEMUXER_EOF;
        return NULL;
    }
    if (block->i_buffer < payload + FRAME_OVERHEAD)
        block->i_flags |= BLOCK_FLAG_CORRUPTED;
    block->i_flags |= BLOCK_FLAG_TYPE_I;
    return block;
}

/* A still picture, as modules/demux/image.c sends one: the same unit every 1/still_fps, from
 * time 0 to still_length. Repeated pictures keep VLC's decoder owner from waiting for a second
 * picture that never comes ("buffer deadlock prevented") and show the picture for the image
 * duration, as for a PNG. */
static int DemuxStill(demux_t *demux)
{
    demux_sys_t *sys = demux->p_sys;
    mtime_t t = date_Get(&sys->still_date);
    block_t *block;

    if (!sys->still_unit) {
        uint32_t index;
        int err;

        if (!(sys->still_unit = ReadUnit(demux, &index, &err)))
            return err;
    }
    if (t > 0 && sys->still_length >= 0 && t >= sys->still_length)
        return VLC_DEMUXER_EOF;
    if (!(block = block_Duplicate(sys->still_unit)))
        return VLC_DEMUXER_EGENERIC;
    block->i_pts = block->i_dts = VLC_TS_0 + t;
    block->i_length = date_Increment(&sys->still_date, 1) - t;
    sys->last_pts = block->i_pts;
    es_out_SetPCR(demux->out, block->i_pts);
    es_out_Send(demux->out, sys->es, block);
    return VLC_DEMUXER_SUCCESS;
}

static int Demux(demux_t *demux)
{
    demux_sys_t *sys = demux->p_sys;
    uint32_t index;
    block_t *block;
    int err;

    if (sys->still)
        return DemuxStill(demux);
    if ((block = ReadUnit(demux, &index, &err))) {
        date_Set(&sys->date, VLC_TS_0);
        block->i_pts = block->i_dts = date_Increment(&sys->date, index);
        block->i_length = date_Increment(&sys->date, 1) - block->i_pts;
        if (sys->tail)
            block_Release(sys->tail);
        sys->tail = block_Duplicate(block);   /* (none without memory: no repeat at the end) */
    } else {
        /* At the end, the last unit once more at its end time (the decoder shows a repeat
         * without decoding it again): VLC ends the input as soon as the video output has
         * taken every picture from its queue, and would close it before the last picture's
         * time comes; the repeat holds it there until the last frame has been shown for its
         * duration. */
        if (err != VLC_DEMUXER_EOF || !sys->tail)
            return err;
        block = sys->tail;
        sys->tail = NULL;
        block->i_pts = block->i_dts = block->i_pts + __MAX(block->i_length, 1);
        block->i_length = 1;
    }
    sys->last_pts = block->i_pts;

    es_out_SetPCR(demux->out, block->i_pts);
    es_out_Send(demux->out, sys->es, block);
    return VLC_DEMUXER_SUCCESS;
}

static mtime_t Length(const demux_sys_t *sys)
{
    if (sys->still)
        return sys->still_length > 0 ? sys->still_length : 0;
    return sys->frame_count
        ? (int64_t)sys->frame_count * CLOCK_FREQ * sys->fps_den / sys->fps_num : 0;
}

/* Moves the read position to the last frame unit whose frame_index is at most that of time t
 * (every frame is a key frame; VLC drops the pictures before t itself when the seek is
 * precise), walking the unit headers from the first unit; a unit that cannot be read ends the
 * walk there. */
static int SeekTime(demux_t *demux, int64_t t)
{
    demux_sys_t *sys = demux->p_sys;
    uint64_t target = t > 0 ? (uint64_t)t * sys->fps_num / ((uint64_t)CLOCK_FREQ * sys->fps_den) : 0;
    uint64_t off = sys->first_unit, best = sys->first_unit;
    uint32_t best_index = 0;

    for (;;) {
        const uint8_t *p;
        uint32_t payload, index;

        if (vlc_stream_Seek(demux->s, off) ||
            vlc_stream_Peek(demux->s, &p, FRAME_HDR) < FRAME_HDR || rl32(p) != UNIT_WAIF)
            break;
        payload = rl32(p + 4);
        index = rl32(p + 8);
        if (payload < 20 || payload > MAX_UNIT - FRAME_OVERHEAD || index > target)
            break;
        best = off;
        best_index = index;
        if (index == target)
            break;
        off += (uint64_t)payload + FRAME_OVERHEAD;
    }
    if (sys->tail) {   /* the end is not the next thing any more */
        block_Release(sys->tail);
        sys->tail = NULL;
    }
    if (vlc_stream_Seek(demux->s, best))
        return VLC_EGENERIC;
    date_Set(&sys->date, VLC_TS_0);
    sys->last_pts = date_Increment(&sys->date, best_index);
    msg_Dbg(demux, "seek to %"PRId64" us: frame %"PRIu32" at %"PRIu64, t, best_index, best);
    return VLC_SUCCESS;
}

static int Control(demux_t *demux, int query, va_list args)
{
    demux_sys_t *sys = demux->p_sys;
    mtime_t length = Length(sys);

    switch (query) {
    case DEMUX_CAN_SEEK:
        *va_arg(args, bool *) = sys->still ? sys->still_length >= 0 : sys->can_seek;
        return VLC_SUCCESS;
    case DEMUX_GET_LENGTH:
        *va_arg(args, int64_t *) = length;
        return VLC_SUCCESS;
    case DEMUX_GET_TIME:
        *va_arg(args, int64_t *) = sys->still ? date_Get(&sys->still_date)
                                              : sys->last_pts - VLC_TS_0;
        return VLC_SUCCESS;
    case DEMUX_GET_POSITION:
        if (length <= 0)
            break;
        *va_arg(args, double *) = (double)(sys->still ? date_Get(&sys->still_date)
                                           : sys->last_pts - VLC_TS_0) / length;
        return VLC_SUCCESS;
    case DEMUX_SET_POSITION:
    case DEMUX_SET_TIME: {
        int64_t t;

        if (query == DEMUX_SET_POSITION) {
            double pos = va_arg(args, double);

            if (length <= 0)
                return VLC_EGENERIC;
            t = (int64_t)(pos * length);
        } else {
            t = va_arg(args, int64_t);
        }
        if (sys->still) {
            if (sys->still_length < 0)
                return VLC_EGENERIC;
            date_Set(&sys->still_date, VLC_CLIP(t, 0, sys->still_length));
            return VLC_SUCCESS;
        }
        if (!sys->can_seek)
            return VLC_EGENERIC;
        return SeekTime(demux, t);
    }
    default:
        break;
    }
    return demux_vaControlHelper(demux->s, 0, -1, 0, 1, query, args);
}

static int OpenDemux(vlc_object_t *obj)
{
    demux_t *demux = (demux_t *)obj;
    const uint8_t *p;
    uint32_t size, fps_num, fps_den;
    es_format_t fmt;
    demux_sys_t *sys;
    uint8_t *hdr;

    if (vlc_stream_Peek(demux->s, &p, SEQHDR_MIN) < SEQHDR_MIN)
        return VLC_EGENERIC;
    if (rl32(p) != 0x53494157u || p[4] != 1)   /* "WAIS", major version 1 */
        return VLC_EGENERIC;
    size = rl32(p + 8);
    fps_num = rl32(p + 36);
    fps_den = rl32(p + 40);
    if (size < SEQHDR_MIN || size > MAX_UNIT || !fps_num || !fps_den ||
        !rl32(p + 28) || !rl32(p + 32) || rl32(p + 28) > 65536 || rl32(p + 32) > 65536)
        return VLC_EGENERIC;

    hdr = malloc(size);
    if (!hdr)
        return VLC_ENOMEM;
    if (vlc_stream_Read(demux->s, hdr, size) != (ssize_t)size) {
        free(hdr);
        return VLC_EGENERIC;
    }

    sys = calloc(1, sizeof(*sys));
    if (!sys) {
        free(hdr);
        return VLC_ENOMEM;
    }
    sys->fps_num = fps_num;
    sys->fps_den = fps_den;
    sys->frame_count = rl32(hdr + 44);
    sys->first_unit = vlc_stream_Tell(demux->s);
    if (vlc_stream_Control(demux->s, STREAM_CAN_SEEK, &sys->can_seek))
        sys->can_seek = false;
    date_Init(&sys->date, fps_num, fps_den);
    sys->last_pts = VLC_TS_0;

    es_format_Init(&fmt, VIDEO_ES, VLC_CODEC_WAI);
    fmt.video.i_width = fmt.video.i_visible_width = rl32(hdr + 28);
    fmt.video.i_height = fmt.video.i_visible_height = rl32(hdr + 32);
    fmt.video.i_frame_rate = fps_num;
    fmt.video.i_frame_rate_base = fps_den;
    if (sys->frame_count == 1) {
        /* VLC's still-image convention (modules/demux/image.c), with its options */
        unsigned num = 10, den = 1;
        double duration = 10.;

        sys->still = true;
        if (config_FindConfig("image-fps") &&
            (var_InheritURational(demux, &num, &den, "image-fps") || !num || !den)) {
            num = 10;
            den = 1;
        }
        if (config_FindConfig("image-duration"))
            duration = var_InheritFloat(demux, "image-duration");
        sys->still_length = duration < 0 ? -1 : (mtime_t)(duration * CLOCK_FREQ);
        date_Init(&sys->still_date, num, den);
        date_Set(&sys->still_date, 0);
        fmt.video.i_frame_rate = num;
        fmt.video.i_frame_rate_base = den;
    }
    fmt.video.i_sar_num = fmt.video.i_sar_den = 1;
    fmt.i_extra = size;
    fmt.p_extra = hdr;            /* owned by fmt from here */
    sys->es = es_out_Add(demux->out, &fmt);
    es_format_Clean(&fmt);
    if (!sys->es) {
        free(sys);
        return VLC_EGENERIC;
    }

    demux->p_sys = sys;
    demux->pf_demux = Demux;
    demux->pf_control = Control;
    return VLC_SUCCESS;
}

static void CloseDemux(vlc_object_t *obj)
{
    demux_t *demux = (demux_t *)obj;
    demux_sys_t *sys = demux->p_sys;

    if (sys->still_unit)
        block_Release(sys->still_unit);
    if (sys->tail)
        block_Release(sys->tail);
    free(sys);
}

/*****************************************************************************
 * Decoder
 *****************************************************************************/
struct decoder_sys_t {
    WaiDecoder *wai;
    unsigned decoded, errors;
    bool unusable;          /* the sequence header cannot be used: drop every block */
    /* the last frame unit and, if it decoded, its picture: a block equal to it (a still
     * picture's repeat) gives a copy of the picture, or nothing, without decoding again */
    uint8_t *last;
    size_t last_size;
    bool last_ok;
    WaiPicture last_pic;
};

static void ForgetLast(decoder_sys_t *sys)
{
    free(sys->last);
    sys->last = NULL;
    sys->last_size = 0;
    if (sys->last_ok)
        wai_picture_unref(&sys->last_pic);
    sys->last_ok = false;
}

static void SetOutputFormat(decoder_t *dec, unsigned w, unsigned h)
{
    video_format_t *v = &dec->fmt_out.video;

    dec->fmt_out.i_codec = VLC_CODEC_RGB24;
    v->i_chroma = VLC_CODEC_RGB24;
    v->i_width = v->i_visible_width = w;
    v->i_height = v->i_visible_height = h;
    v->i_x_offset = v->i_y_offset = 0;
    /* bytes R, G, B: VLC 3 describes that as RV24 with these masks whatever the
     * endianness (its avcodec module maps AV_PIX_FMT_RGB24 so; the BGR24 masks are swapped) */
    v->i_rmask = 0xff0000; v->i_gmask = 0x00ff00; v->i_bmask = 0x0000ff;
    if (!v->i_sar_num || !v->i_sar_den)
        v->i_sar_num = v->i_sar_den = 1;
    v->b_color_range_full = true;
}

static int Decode(decoder_t *dec, block_t *block)
{
    decoder_sys_t *sys = dec->p_sys;
    const WaiPicture *wp;
    picture_t *pic;
    int ret;

    if (!block)   /* drain: every block is decoded when it arrives */
        return VLCDEC_SUCCESS;
    if (sys->unusable) {   /* said once, when the decoder opened */
        block_Release(block);
        return VLCDEC_ECRITICAL;
    }

    if (!(sys->last && sys->last_size == block->i_buffer &&
          !memcmp(sys->last, block->p_buffer, block->i_buffer))) {
        ForgetLast(sys);
        ret = wai_send_data(sys->wai, block->p_buffer, block->i_buffer);
        if (ret >= 0)
            ret = wai_get_picture(sys->wai, &sys->last_pic);
        wai_decoder_flush(sys->wai);  /* one block is one frame unit */
        if ((sys->last = malloc(block->i_buffer))) {
            memcpy(sys->last, block->p_buffer, block->i_buffer);
            sys->last_size = block->i_buffer;
        }
        if (ret < 0) {
            if (ret == WAI_ERR_AGAIN)
                msg_Err(dec, "incomplete frame unit");
            else
                msg_Err(dec, "decoding failed: %s", wai_decoder_last_error(sys->wai));
            sys->errors++;
            block_Release(block);
            return VLCDEC_SUCCESS;   /* one bad frame; go on with the next */
        }
        sys->last_ok = true;
        sys->decoded++;
        msg_Dbg(dec, "decoded frame %"PRIu32, sys->last_pic.frame_index);
    } else if (!sys->last_ok) {
        block_Release(block);    /* a repeat of a unit that failed: reported once */
        return VLCDEC_SUCCESS;
    }
    wp = &sys->last_pic;

    if (dec->fmt_out.video.i_width != wp->width || dec->fmt_out.video.i_height != wp->height)
        SetOutputFormat(dec, wp->width, wp->height);
    if (decoder_UpdateVideoFormat(dec) || !(pic = decoder_NewPicture(dec))) {
        block_Release(block);
        if (!sys->last)
            ForgetLast(sys);
        return VLCDEC_SUCCESS;
    }
    for (unsigned y = 0; y < wp->height; y++)
        memcpy(pic->p[0].p_pixels + (size_t)y * pic->p[0].i_pitch,
               wp->data + (ptrdiff_t)y * wp->stride, (size_t)wp->width * 3
#ifdef WAI_PLANTED_FAULT_VLC_ROW_TAIL
               - 1   /* planted: the last byte of every row is not copied */
#endif
               );
    pic->date = block->i_pts > VLC_TS_INVALID ? block->i_pts : block->i_dts;
    pic->b_progressive = true;
    pic->b_force = true;
    block_Release(block);
    if (!sys->last)     /* (no memory to recognise a repeat: the next one decodes again) */
        ForgetLast(sys);
    decoder_QueueVideo(dec, pic);
    return VLCDEC_SUCCESS;
}

static void Flush(decoder_t *dec)
{
    decoder_sys_t *sys = dec->p_sys;
    if (sys->wai)
        wai_decoder_flush(sys->wai);
}

/* libwai's error details (and why an open failed) into VLC's debug log */
static void wai_log(void *opaque, int level, const char *msg)
{
    (void)level;
    msg_Dbg((decoder_t *)opaque, "libwai: %s", msg);
}

static int OpenDecoder(vlc_object_t *obj)
{
    decoder_t *dec = (decoder_t *)obj;
    decoder_sys_t *sys;
    WaiSettings s;
    WaiSequenceInfo info;
    char *model_path, *kernels;
    int ret;

    if (dec->fmt_in.i_codec != VLC_CODEC_WAI)
        return VLC_EGENERIC;

    sys = calloc(1, sizeof(*sys));
    if (!sys)
        return VLC_ENOMEM;

    wai_default_settings(&s);
    s.log_callback = wai_log;
    s.log_opaque = dec;
    model_path = var_InheritString(dec, "wai-model-path");
    kernels = var_InheritString(dec, "wai-kernels");
    s.model_path = model_path;
    s.threads = var_InheritInteger(dec, "wai-threads");
    if (kernels && wai_kernels_from_name(kernels, &s.kernels) < 0)
        msg_Warn(dec, "unknown kernel set %s, using auto", kernels);
    ret = wai_decoder_open(&sys->wai, &s);
    free(model_path);
    free(kernels);
    if (ret < 0) {
        msg_Err(dec, "cannot open the WAI decoder: %s", wai_strerror(ret));
        free(sys);
        return VLC_EGENERIC;
    }

    if (dec->fmt_in.i_extra > 0) {
        ret = wai_send_data(sys->wai, dec->fmt_in.p_extra, dec->fmt_in.i_extra);
        if (ret < 0) {
            /* The codec is supported, the stream is not usable here: say why, once, and keep
             * the decoder (a failed open would make VLC add "Codec `WAI1' is not supported"
             * and a "Codec not supported" dialog); Decode() then tells VLC the decoder cannot
             * go on (VLCDEC_ECRITICAL), which drops the stream's blocks without a message. */
            WaiSequenceInfo hi;
            char hex[65] = "";

            if (ret == WAI_ERR_MODEL_NOT_FOUND &&
                wai_parse_sequence_header(dec->fmt_in.p_extra, dec->fmt_in.i_extra, &hi) == 0)
                for (int i = 0; i < 32; i++)
                    snprintf(hex + 2 * i, 3, "%02x", hi.model_sha256[i]);
            if (hex[0]) {
                msg_Err(dec, "the WAI model this stream needs was not found (SHA-256 %s): "
                        "%s; set --wai-model-path or WAI_MODEL_PATH", hex,
                        wai_decoder_last_error(sys->wai));
                vlc_dialog_display_error(dec, "WAI model not found",
                    "The WAI model this stream needs (SHA-256 %s) was not found. Set "
                    "--wai-model-path or WAI_MODEL_PATH to the directory that holds %s.whm.",
                    hex, hex);
            } else {
                msg_Err(dec, "unusable sequence header: %s", wai_decoder_last_error(sys->wai));
                vlc_dialog_display_error(dec, "Cannot decode this WAI stream",
                    "Its sequence header cannot be used: %s.", wai_decoder_last_error(sys->wai));
            }
            wai_decoder_close(&sys->wai);
            sys->unusable = true;
        }
    }

    dec->p_sys = sys;
    video_format_Copy(&dec->fmt_out.video, &dec->fmt_in.video);
    if (sys->wai && wai_decoder_get_sequence_info(sys->wai, &info) == 0)
        SetOutputFormat(dec, info.disp_w, info.disp_h);
    else
        SetOutputFormat(dec, dec->fmt_in.video.i_visible_width, dec->fmt_in.video.i_visible_height);
    dec->pf_decode = Decode;
    dec->pf_flush = Flush;
    msg_Dbg(dec, "libwai %s", wai_version_string());
    return VLC_SUCCESS;
}

static void CloseDecoder(vlc_object_t *obj)
{
    decoder_t *dec = (decoder_t *)obj;
    decoder_sys_t *sys = dec->p_sys;

    msg_Info(dec, "wai: decoded %u frames, %u errors", sys->decoded, sys->errors);
    ForgetLast(sys);
    if (sys->wai)
        wai_decoder_close(&sys->wai);
    free(sys);
}

vlc_module_begin()
    set_shortname("WAI")
    set_description("WAI video decoder (libwai)")
    set_category(CAT_INPUT)
    set_subcategory(SUBCAT_INPUT_VCODEC)
    set_capability("video decoder", 150)
    set_callbacks(OpenDecoder, CloseDecoder)
    add_string("wai-model-path", NULL, "Model path",
               "Extra WAI model directories, ':'-separated, searched first", true)
    add_string("wai-kernels", "auto", "Kernels",
               "auto, reference, c, avx2, avx512 or neon", true)
    add_integer("wai-threads", 0, "Threads", "Decoder threads (0: automatic)", true)
    add_submodule()
        set_shortname("WAI")
        set_description("WAI demuxer")
        set_category(CAT_INPUT)
        set_subcategory(SUBCAT_INPUT_DEMUX)
        set_capability("demux", 200)
        set_callbacks(OpenDemux, CloseDemux)
        add_shortcut("wai")
vlc_module_end()
