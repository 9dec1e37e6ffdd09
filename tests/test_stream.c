/* Stream units (spec section 2): sequence header and frame unit writing and parsing, every rule
 * of 2.1 and 2.2, truncation, CRC, and wai_find_unit's search and resynchronisation. */
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "testutil.h"

static WaiSequenceInfo sample_info(void)
{
    WaiSequenceInfo in;
    memset(&in, 0, sizeof(in));
    in.version_major = 1;
    in.width = 64;
    in.height = 48;
    in.disp_x = 2;
    in.disp_y = 3;
    in.disp_w = 60;
    in.disp_h = 40;
    in.fps_num = 30000;
    in.fps_den = 1001;
    in.frame_count = 5;
    in.colour_primaries = 1;
    in.transfer = 13;
    in.matrix = 0;
    in.full_range = 1;
    for (int i = 0; i < 32; i++) in.model_sha256[i] = (uint8_t)(0xA0 + i);
    return in;
}

/* Recompute the CRC of a unit of usize bytes after a field was changed. */
static void fix_crc(uint8_t *p, size_t usize)
{
    wai_wr32(p + usize - 4, wai_crc32(p, usize - 4));
}

/* Parse a copy of exactly `size` bytes on the heap, so ASan sees any read past the end. */
static int parse_hdr_exact(const uint8_t *p, size_t size, WaiSequenceInfo *info, const uint8_t **model)
{
    uint8_t *c = malloc(size ? size : 1);
    if (size) memcpy(c, p, size);
    const uint8_t *m = NULL;
    int r = wai_seqhdr_parse(c, size, info, &m);
    if (model) *model = m ? p + (m - c) : NULL;
    free(c);
    return r;
}

static int find_exact(const uint8_t *p, size_t size, size_t max, WaiUnitInfo *u)
{
    uint8_t *c = malloc(size ? size : 1);
    if (size) memcpy(c, p, size);
    int r = wai_find_unit(c, size, max, u);
    free(c);
    return r;
}

static void test_crc32(void)
{
    CHECK_EQ(wai_crc32((const uint8_t *)"123456789", 9), 0xCBF43926u);
}

static void test_seqhdr_layout(void)
{
    WaiSequenceInfo in = sample_info();
    WaiBuf b;
    wai_buf_init(&b);
    CHECK_EQ(wai_seqhdr_write(&b, &in, NULL, 0), 0);
    CHECK_EQ(b.size, 96);
    const uint8_t *p = b.data;
    CHECK(!memcmp(p, "WAIS", 4));
    CHECK_EQ(p[4], 1);
    CHECK_EQ(p[5], 0);
    CHECK_EQ(wai_rd16(p + 6), 0);
    CHECK_EQ(wai_rd32(p + 8), 96);
    CHECK_EQ(wai_rd32(p + 12), 64);
    CHECK_EQ(wai_rd32(p + 16), 48);
    CHECK_EQ(wai_rd32(p + 20), 2);
    CHECK_EQ(wai_rd32(p + 24), 3);
    CHECK_EQ(wai_rd32(p + 28), 60);
    CHECK_EQ(wai_rd32(p + 32), 40);
    CHECK_EQ(wai_rd32(p + 36), 30000);
    CHECK_EQ(wai_rd32(p + 40), 1001);
    CHECK_EQ(wai_rd32(p + 44), 5);
    CHECK_EQ(p[48], 1);
    CHECK_EQ(p[49], 13);
    CHECK_EQ(p[50], 0);
    CHECK_EQ(p[51], 1);
    CHECK_EQ(p[52], 0xA0);
    CHECK_EQ(p[83], 0xA0 + 31);
    CHECK_EQ(wai_rd32(p + 84), 0);
    CHECK_EQ(wai_rd32(p + 88), 0);
    CHECK_EQ(wai_rd32(p + 92), wai_crc32(p, 92));

    /* version_major 0 in the info is written as the current version */
    WaiSequenceInfo z = in;
    z.version_major = 0;
    WaiBuf b2;
    wai_buf_init(&b2);
    CHECK_EQ(wai_seqhdr_write(&b2, &z, NULL, 0), 0);
    CHECK(b2.size == 96 && b2.data[4] == 1);
    wai_buf_free(&b2);
    wai_buf_free(&b);
}

static void test_seqhdr_roundtrip(void)
{
    WaiSequenceInfo in = sample_info(), out;
    uint8_t model[37];
    for (int i = 0; i < 37; i++) model[i] = (uint8_t)(i * 7 + 1);
    for (int emb = 0; emb < 2; emb++) {
        WaiBuf b;
        wai_buf_init(&b);
        CHECK_EQ(wai_seqhdr_write(&b, &in, emb ? model : NULL, emb ? sizeof(model) : 0), 0);
        size_t usize = emb ? 96 + sizeof(model) : 96;
        CHECK_EQ(b.size, usize);
        CHECK_EQ(wai_rd16(b.data + 6), emb ? 1 : 0);
        const uint8_t *m = (const uint8_t *)1;
        memset(&out, 0x55, sizeof(out));
        CHECK_EQ(parse_hdr_exact(b.data, b.size, &out, &m), 0);
        CHECK_EQ(out.width, 64);
        CHECK_EQ(out.height, 48);
        CHECK_EQ(out.disp_x, 2);
        CHECK_EQ(out.disp_y, 3);
        CHECK_EQ(out.disp_w, 60);
        CHECK_EQ(out.disp_h, 40);
        CHECK_EQ(out.fps_num, 30000);
        CHECK_EQ(out.fps_den, 1001);
        CHECK_EQ(out.frame_count, 5);
        CHECK_EQ(out.colour_primaries, 1);
        CHECK_EQ(out.transfer, 13);
        CHECK_EQ(out.matrix, 0);
        CHECK_EQ(out.full_range, 1);
        CHECK_EQ(out.version_major, 1);
        CHECK_EQ(out.version_minor, 0);
        CHECK(!memcmp(out.model_sha256, in.model_sha256, 32));
        CHECK_EQ(out.model_size, emb ? sizeof(model) : 0);
        CHECK_EQ(out.unit_size, usize);
        if (emb) CHECK(m == b.data + 92 && !memcmp(m, model, sizeof(model)));
        else CHECK(m == NULL);
        CHECK_EQ(wai_rd32(b.data + usize - 4), wai_crc32(b.data, usize - 4));

        /* the public entry point agrees; trailing bytes are not part of the unit */
        WaiSequenceInfo pub;
        wai_buf_put32(&b, 0xDEADBEEF);
        CHECK_EQ(wai_parse_sequence_header(b.data, b.size, &pub), 0);
        CHECK(!memcmp(&pub, &out, sizeof(pub)));

        /* every truncation */
        int all = 1;
        for (size_t k = 0; k < usize; k++)
            if (parse_hdr_exact(b.data, k, &out, NULL) != WAI_ERR_TRUNCATED) {
                all = 0;
                fprintf(stderr, "truncated to %zu bytes: not TRUNCATED\n", k);
            }
        CHECK(all);

        /* one flipped bit anywhere after the version and outside unit_size: CRC */
        all = 1;
        for (size_t i = 5; i < usize; i++) {
            if (i >= 8 && i < 12) continue;
            b.data[i] ^= 0x10;
            if (parse_hdr_exact(b.data, usize, &out, NULL) != WAI_ERR_CRC) {
                all = 0;
                fprintf(stderr, "bit flip at %zu: not CRC\n", i);
            }
            b.data[i] ^= 0x10;
        }
        CHECK(all);
        CHECK_EQ(parse_hdr_exact(b.data, usize, &out, NULL), 0);
        wai_buf_free(&b);
    }
}

/* Write the sample header, set a field, recompute the CRC and parse. */
static int hdr_with(size_t off, unsigned width, uint32_t v)
{
    WaiSequenceInfo in = sample_info(), out;
    WaiBuf b;
    wai_buf_init(&b);
    wai_seqhdr_write(&b, &in, NULL, 0);
    if (width == 1) b.data[off] = (uint8_t)v;
    else if (width == 2) wai_wr16(b.data + off, (uint16_t)v);
    else wai_wr32(b.data + off, v);
    fix_crc(b.data, 96);
    int r = parse_hdr_exact(b.data, b.size, &out, NULL);
    wai_buf_free(&b);
    return r;
}

/* Two fields at once (window checks). */
static int hdr_with2(size_t off1, uint32_t v1, size_t off2, uint32_t v2)
{
    WaiSequenceInfo in = sample_info(), out;
    WaiBuf b;
    wai_buf_init(&b);
    wai_seqhdr_write(&b, &in, NULL, 0);
    wai_wr32(b.data + off1, v1);
    wai_wr32(b.data + off2, v2);
    fix_crc(b.data, 96);
    int r = parse_hdr_exact(b.data, b.size, &out, NULL);
    wai_buf_free(&b);
    return r;
}

static void test_seqhdr_rules(void)
{
    CHECK_EQ(hdr_with(0, 1, 'X'), WAI_ERR_BITSTREAM);          /* start code */
    CHECK_EQ(hdr_with(3, 1, 'F'), WAI_ERR_BITSTREAM);          /* a frame start code */
    CHECK_EQ(hdr_with(4, 1, 2), WAI_ERR_UNSUPPORTED);          /* version_major */
    CHECK_EQ(hdr_with(4, 1, 0), WAI_ERR_UNSUPPORTED);
    CHECK_EQ(hdr_with(5, 1, 7), 0);                            /* version_minor: ignored */
    CHECK_EQ(hdr_with(6, 2, 2), WAI_ERR_UNSUPPORTED);          /* unknown flag */
    CHECK_EQ(hdr_with(6, 2, 0x8000), WAI_ERR_UNSUPPORTED);
    CHECK_EQ(hdr_with(6, 2, 1), WAI_ERR_BITSTREAM);            /* EMBEDDED with model_size 0 */
    CHECK_EQ(hdr_with(84, 4, 4), WAI_ERR_BITSTREAM);           /* model_size != unit_size - 96 */
    CHECK_EQ(hdr_with(8, 4, 95), WAI_ERR_BITSTREAM);           /* unit_size below 96 */
    CHECK_EQ(hdr_with(8, 4, 97), WAI_ERR_TRUNCATED);           /* unit_size beyond the buffer */
    CHECK_EQ(hdr_with(12, 4, 0), WAI_ERR_BITSTREAM);           /* width 0 */
    CHECK_EQ(hdr_with(12, 4, 65537), WAI_ERR_BITSTREAM);
    CHECK_EQ(hdr_with(12, 4, 65536), 0);                       /* the largest width */
    CHECK_EQ(hdr_with(16, 4, 0), WAI_ERR_BITSTREAM);           /* height 0 */
    CHECK_EQ(hdr_with(16, 4, 65537), WAI_ERR_BITSTREAM);
    CHECK_EQ(hdr_with(16, 4, 65536), 0);
    CHECK_EQ(hdr_with(20, 4, 4), 0);                           /* disp_x 4 + 60 = 64 */
    CHECK_EQ(hdr_with(20, 4, 5), WAI_ERR_BITSTREAM);           /* 65 > 64 */
    CHECK_EQ(hdr_with(24, 4, 8), 0);                           /* disp_y 8 + 40 = 48 */
    CHECK_EQ(hdr_with(24, 4, 9), WAI_ERR_BITSTREAM);
    CHECK_EQ(hdr_with(28, 4, 0), WAI_ERR_BITSTREAM);           /* disp_w 0 */
    CHECK_EQ(hdr_with(28, 4, 62), 0);
    CHECK_EQ(hdr_with(28, 4, 63), WAI_ERR_BITSTREAM);
    CHECK_EQ(hdr_with(32, 4, 0), WAI_ERR_BITSTREAM);           /* disp_h 0 */
    CHECK_EQ(hdr_with(32, 4, 45), 0);                          /* 3 + 45 = 48 */
    CHECK_EQ(hdr_with(32, 4, 46), WAI_ERR_BITSTREAM);
    /* a window whose end wraps around 2^32 */
    CHECK_EQ(hdr_with2(20, 0xFFFFFFFFu, 28, 2), WAI_ERR_BITSTREAM);
    CHECK_EQ(hdr_with2(24, 0xFFFFFFF0u, 32, 0x20), WAI_ERR_BITSTREAM);
    CHECK_EQ(hdr_with(36, 4, 0), WAI_ERR_BITSTREAM);           /* fps_num 0 */
    CHECK_EQ(hdr_with(40, 4, 0), WAI_ERR_BITSTREAM);           /* fps_den 0 */
    CHECK_EQ(hdr_with(44, 4, 0), 0);                           /* frame_count 0 = unknown */
    CHECK_EQ(hdr_with(48, 1, 9), 0);                           /* primaries: informative */
    CHECK_EQ(hdr_with(50, 1, 1), WAI_ERR_UNSUPPORTED);         /* matrix */
    CHECK_EQ(hdr_with(51, 1, 0), WAI_ERR_UNSUPPORTED);         /* full_range */
    CHECK_EQ(hdr_with(51, 1, 2), WAI_ERR_UNSUPPORTED);
    CHECK_EQ(hdr_with(88, 4, 1), WAI_ERR_BITSTREAM);           /* reserved */

    /* unit_size 100 with a CRC at 96: a consistent unit whose model_size (0) does not match */
    WaiSequenceInfo in = sample_info(), out;
    WaiBuf b;
    wai_buf_init(&b);
    wai_seqhdr_write(&b, &in, NULL, 0);
    wai_buf_put32(&b, 0);
    wai_wr32(b.data + 8, 100);
    fix_crc(b.data, 100);
    CHECK_EQ(parse_hdr_exact(b.data, 100, &out, NULL), WAI_ERR_BITSTREAM);
    /* ... and with model_size 4 and the flag it is valid */
    wai_wr32(b.data + 84, 4);
    wai_wr16(b.data + 6, 1);
    memmove(b.data + 96, b.data + 92, 4);
    fix_crc(b.data, 100);
    const uint8_t *m = NULL;
    CHECK_EQ(parse_hdr_exact(b.data, 100, &out, &m), 0);
    CHECK_EQ(out.model_size, 4);
    CHECK(m == b.data + 92);
    wai_buf_free(&b);

    CHECK_EQ(wai_seqhdr_parse(NULL, 0, &out, NULL), WAI_ERR_TRUNCATED);
    CHECK_EQ(wai_seqhdr_parse(NULL, 5, &out, NULL), WAI_ERR_INVALID_ARG);
}

static void test_frame(void)
{
    uint8_t payload[25];
    for (int i = 0; i < 25; i++) payload[i] = (uint8_t)(i * 13 + 5);
    WaiBuf b;
    wai_buf_init(&b);
    CHECK_EQ(wai_frame_write(&b, 7, payload, sizeof(payload)), 0);
    CHECK_EQ(b.size, 45);
    CHECK(!memcmp(b.data, "WAIF", 4));
    CHECK_EQ(wai_rd32(b.data + 4), 25);
    CHECK_EQ(wai_rd32(b.data + 8), 7);
    CHECK_EQ(wai_rd32(b.data + 12), 0);
    CHECK(!memcmp(b.data + 16, payload, 25));
    CHECK_EQ(wai_rd32(b.data + 41), wai_crc32(b.data, 41));

    uint32_t idx = 0;
    const uint8_t *pl = NULL;
    size_t ps = 0;
    CHECK_EQ(wai_frame_parse(b.data, b.size, &idx, &pl, &ps), 0);
    CHECK_EQ(idx, 7);
    CHECK(pl == b.data + 16);
    CHECK_EQ(ps, 25);
    /* trailing bytes are not part of the unit */
    wai_buf_put8(&b, 0x99);
    CHECK_EQ(wai_frame_parse(b.data, b.size, &idx, &pl, &ps), 0);
    CHECK_EQ(ps, 25);

    int all = 1;
    for (size_t k = 0; k < 45; k++) {
        uint8_t *c = malloc(k ? k : 1);
        memcpy(c, b.data, k);
        if (wai_frame_parse(c, k, &idx, &pl, &ps) != WAI_ERR_TRUNCATED) {
            all = 0;
            fprintf(stderr, "frame truncated to %zu: not TRUNCATED\n", k);
        }
        free(c);
    }
    CHECK(all);
    all = 1;
    for (size_t i = 8; i < 45; i++) {
        b.data[i] ^= 1;
        if (wai_frame_parse(b.data, 45, &idx, &pl, &ps) != WAI_ERR_CRC) all = 0;
        b.data[i] ^= 1;
    }
    CHECK(all);
    b.data[0] = 'X';
    CHECK_EQ(wai_frame_parse(b.data, 45, &idx, &pl, &ps), WAI_ERR_BITSTREAM);
    b.data[0] = 'W';
    b.data[3] = 'S';
    CHECK_EQ(wai_frame_parse(b.data, 45, &idx, &pl, &ps), WAI_ERR_BITSTREAM);
    b.data[3] = 'F';
    /* flags must be 0 (CRC recomputed) */
    wai_wr32(b.data + 12, 1);
    fix_crc(b.data, 45);
    CHECK_EQ(wai_frame_parse(b.data, 45, &idx, &pl, &ps), WAI_ERR_BITSTREAM);
    wai_buf_free(&b);

    /* payload_size >= 20 */
    wai_buf_init(&b);
    wai_frame_write(&b, 0, payload, 19);
    CHECK_EQ(wai_frame_parse(b.data, b.size, &idx, &pl, &ps), WAI_ERR_BITSTREAM);
    wai_buf_free(&b);
    wai_buf_init(&b);
    wai_frame_write(&b, 0, payload, 20);
    CHECK_EQ(wai_frame_parse(b.data, b.size, &idx, &pl, &ps), 0);
    CHECK_EQ(ps, 20);
    wai_buf_free(&b);
}

/* A header (96 bytes) followed by a frame of index 7 (45 bytes). */
static void make_stream(WaiBuf *b)
{
    WaiSequenceInfo in = sample_info();
    uint8_t payload[25];
    for (int i = 0; i < 25; i++) payload[i] = (uint8_t)(i * 13 + 5);
    wai_buf_init(b);
    wai_seqhdr_write(b, &in, NULL, 0);
    wai_frame_write(b, 7, payload, sizeof(payload));
}

static void test_find_unit(void)
{
    const size_t MAX = 1 << 20;
    WaiUnitInfo u;
    WaiBuf s;
    make_stream(&s);
    CHECK_EQ(s.size, 141);

    CHECK_EQ(wai_find_unit(NULL, 0, MAX, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, 0);
    CHECK_EQ(u.size, 0);

    /* two units back to back */
    CHECK_EQ(find_exact(s.data, s.size, MAX, &u), 0);
    CHECK_EQ(u.type, WAI_UNIT_SEQUENCE_HEADER);
    CHECK_EQ(u.offset, 0);
    CHECK_EQ(u.size, 96);
    CHECK_EQ(find_exact(s.data + 96, s.size - 96, MAX, &u), 0);
    CHECK_EQ(u.type, WAI_UNIT_FRAME);
    CHECK_EQ(u.offset, 0);
    CHECK_EQ(u.size, 45);
    CHECK_EQ(u.frame_index, 7);

    /* garbage prefix (no 'W' in it) */
    WaiBuf g;
    wai_buf_init(&g);
    for (int i = 0; i < 37; i++) wai_buf_put8(&g, (uint8_t)(i * 3));
    wai_buf_put(&g, s.data, s.size);
    CHECK_EQ(find_exact(g.data, g.size, MAX, &u), 0);
    CHECK_EQ(u.offset, 37);
    CHECK_EQ(u.size, 96);
    CHECK_EQ(u.type, WAI_UNIT_SEQUENCE_HEADER);
    /* garbage only: all droppable */
    CHECK_EQ(find_exact(g.data, 37, MAX, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, 37);
    CHECK_EQ(u.size, 0);
    /* garbage then a partial start code: keep it */
    CHECK_EQ(find_exact(g.data, 39, MAX, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, 37);
    /* "WAX": not a start code prefix */
    uint8_t wax[5] = { 1, 'W', 'A', 'X', 'W' };
    CHECK_EQ(find_exact(wax, 5, MAX, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, 4);
    wai_buf_free(&g);

    /* split at every byte boundary: AGAIN (offset 0) until the unit is complete */
    int ok = 1;
    for (size_t k = 0; k <= s.size; k++) {
        int r = find_exact(s.data, k, MAX, &u);
        int want = k >= 96 ? 0 : WAI_ERR_AGAIN;
        size_t want_size = k >= 12 ? 96 : 0;
        if (r != want || u.offset != 0 || u.size != want_size) {
            ok = 0;
            fprintf(stderr, "split %zu: r %d offset %zu size %zu\n", k, r, u.offset, u.size);
        }
    }
    for (size_t k = 0; k <= 45; k++) {
        int r = find_exact(s.data + 96, k, MAX, &u);
        int want = k == 45 ? 0 : WAI_ERR_AGAIN;
        size_t want_size = k >= 8 ? 45 : 0;
        if (r != want || u.offset != 0 || u.size != want_size) {
            ok = 0;
            fprintf(stderr, "frame split %zu: r %d offset %zu size %zu\n", k, r, u.offset, u.size);
        }
    }
    CHECK(ok);

    /* a corrupted unit, then a good one: resync finds the good one */
    WaiBuf c;
    wai_buf_init(&c);
    wai_buf_put(&c, s.data + 96, 45);
    wai_buf_put(&c, s.data + 96, 45);
    wai_wr32(c.data + 45 + 8, 8);           /* second frame: index 8 */
    fix_crc(c.data + 45, 45);
    c.data[20] ^= 0x40;                     /* first frame: payload damaged */
    CHECK_EQ(find_exact(c.data, c.size, MAX, &u), 0);
    CHECK_EQ(u.offset, 45);
    CHECK_EQ(u.size, 45);
    CHECK_EQ(u.frame_index, 8);
    /* ... and while the good one is incomplete: AGAIN at its start */
    CHECK_EQ(find_exact(c.data, 60, MAX, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, 45);
    CHECK_EQ(u.size, 45);
    /* a damaged header start code is skipped too */
    c.data[20] ^= 0x40;
    c.data[1] = 'B';
    CHECK_EQ(find_exact(c.data, c.size, MAX, &u), 0);
    CHECK_EQ(u.offset, 45);
    wai_buf_free(&c);

    /* max_unit_size */
    CHECK_EQ(find_exact(s.data + 96, 45, 45, &u), 0);
    CHECK_EQ(find_exact(s.data + 96, 45, 44, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, 45);
    CHECK_EQ(find_exact(s.data, s.size, 95, &u), 0);   /* the header is skipped, the frame fits */
    CHECK_EQ(u.offset, 96);
    CHECK_EQ(u.type, WAI_UNIT_FRAME);
    CHECK_EQ(find_exact(s.data, s.size, 44, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, s.size);
    CHECK_EQ(find_exact(s.data, s.size, 96, &u), 0);
    CHECK_EQ(u.offset, 0);

    /* an implausible size field (unit_size < 96, payload < 20) is no candidate */
    WaiBuf t;
    wai_buf_init(&t);
    wai_buf_put(&t, "WAIS", 4);
    wai_buf_put32(&t, 0x101);
    wai_buf_put32(&t, 95);
    wai_buf_put(&t, "WAIF", 4);
    wai_buf_put32(&t, 19);
    wai_buf_put32(&t, 0);
    CHECK_EQ(find_exact(t.data, t.size, MAX, &u), WAI_ERR_AGAIN);
    CHECK_EQ(u.offset, t.size);
    wai_buf_free(&t);

    CHECK_EQ(wai_find_unit(s.data, s.size, MAX, NULL), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_find_unit(NULL, 3, MAX, &u), WAI_ERR_INVALID_ARG);
    wai_buf_free(&s);
}

int main(void)
{
    test_crc32();
    test_seqhdr_layout();
    test_seqhdr_roundtrip();
    test_seqhdr_rules();
    test_frame();
    test_find_unit();
    return tu_finish("test_stream");
}
