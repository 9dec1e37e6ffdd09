/*
 * Test of FFmpeg's WAI parser (ffmpeg-patches/0002): feed a .wai file in chunks of many
 * sizes and check that every packet is exactly the next frame unit (the first one with the
 * sequence header in front), that the packets concatenate to the file, that the key frame
 * flag, display size and frame index are exported, and that the packet count is right.
 *
 *   parser_test FILE.wai FRAMES        prints "N packets x M chunkings" on success
 *
 * Built by tests/ffmpeg/run.sh against the patched FFmpeg's libavcodec.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>

static uint32_t rl32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static int fail(const char *msg, size_t chunk, int n)
{
    printf("chunk size %zu, packet %d: %s\n", chunk, n, msg);
    return 1;
}

/* Parse buf in chunks of `chunk` bytes; returns 0 if every check holds. */
static int run(const uint8_t *buf, size_t size, size_t chunk, int frames)
{
    AVCodecParserContext *pc = av_parser_init(AV_CODEC_ID_WAI);
    AVCodecContext *avctx = avcodec_alloc_context3(NULL);
    size_t pos = 0, expect = 0, seq = rl32(buf + 8);
    int n = 0, ret = 0;
    uint32_t disp_w = rl32(buf + 28), disp_h = rl32(buf + 32);

    if (!pc || !avctx)
        return fail("cannot allocate the parser", chunk, 0);
    for (;;) {
        const uint8_t *in = buf + pos;
        int in_size = (int)(size - pos < chunk ? size - pos : chunk);
        uint8_t *out;
        int out_size;
        int used = av_parser_parse2(pc, avctx, &out, &out_size, in, in_size,
                                    AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
        if (used < 0) { ret = fail("parse error", chunk, n); break; }
        pos += used;
        if (out_size) {
            /* the next unit: sequence header + frame unit for the first packet */
            size_t start = expect, len;
            if (n == 0) {
                if (rl32(buf) != 0x53494157u) { ret = fail("no WAIS", chunk, n); break; }
                start += seq;
            }
            if (start + 20 > size || rl32(buf + start) != 0x46494157u) {
                ret = fail("expected unit not a WAIF", chunk, n); break;
            }
            len = start + 20 + rl32(buf + start + 4) - expect;
            if ((size_t)out_size != len || memcmp(out, buf + expect, len)) {
                ret = fail("packet is not the next unit", chunk, n); break;
            }
            if (!pc->key_frame || pc->pict_type != AV_PICTURE_TYPE_I) {
                ret = fail("not flagged key frame / I", chunk, n); break;
            }
            if (pc->output_picture_number != (int)rl32(buf + start + 8)) {
                ret = fail("frame index not exported", chunk, n); break;
            }
            if (n == 0 && (pc->width != (int)disp_w || pc->height != (int)disp_h ||
                           pc->format != AV_PIX_FMT_RGB24)) {
                ret = fail("display size / format not exported", chunk, n); break;
            }
            expect += len;
            n++;
        }
        if (in_size == 0)
            break;      /* the flush call was made */
    }
    if (!ret && expect != size)
        ret = fail("packets do not cover the file", chunk, n);
    if (!ret && n != frames)
        ret = fail("wrong packet count", chunk, n);
    av_parser_close(pc);
    avcodec_free_context(&avctx);
    return ret;
}

int main(int argc, char **argv)
{
    static const size_t chunks[] = { 1, 2, 3, 7, 13, 16, 64, 100, 1000, 4096, 1 << 20 };
    FILE *f;
    uint8_t *buf;
    long size;
    int frames, nc = (int)(sizeof(chunks) / sizeof(chunks[0]));

    if (argc != 3)
        return fprintf(stderr, "usage: parser_test FILE.wai FRAMES\n"), 2;
    frames = atoi(argv[2]);
    if (!(f = fopen(argv[1], "rb")) || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 96 ||
        fseek(f, 0, SEEK_SET))
        return fprintf(stderr, "cannot read %s\n", argv[1]), 2;
    buf = malloc(size);
    if (!buf || fread(buf, 1, size, f) != (size_t)size)
        return fprintf(stderr, "cannot read %s\n", argv[1]), 2;
    fclose(f);

    for (int i = 0; i < nc; i++)
        if (run(buf, size, chunks[i], frames))
            return 1;
    printf("%d packets x %d chunkings\n", frames, nc);
    free(buf);
    return 0;
}
