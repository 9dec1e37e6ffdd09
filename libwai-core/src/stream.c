/* Stream units (spec section 2): sequence header and frame units, and the unit finder used by
 * demuxers and the decoder's resynchronisation. */
#include "stream.h"

static const uint8_t seq_code[4] = { 'W', 'A', 'I', 'S' };
static const uint8_t frame_code[4] = { 'W', 'A', 'I', 'F' };

#define SEQ_FLAG_MODEL_EMBEDDED 1u
#define SEQ_MODEL_OFFSET 92
#define FRAME_HEADER 16
#define FRAME_MIN_PAYLOAD 20
#define SEQ_MAX_DIM 65536u

/* CRC of a unit of `usize` bytes: the last 4 bytes hold the CRC of everything before them. */
static int unit_crc_ok(const uint8_t *p, size_t usize)
{
#ifdef WAI_PLANTED_FAULT_STREAM_CRC_RANGE
    return wai_crc32(p, usize - 5) == wai_rd32(p + usize - 4);
#else
    return wai_crc32(p, usize - 4) == wai_rd32(p + usize - 4);
#endif
}

static int check_window(uint32_t pos, uint32_t len, uint32_t total)
{
    return len >= 1 && (uint64_t)pos + len <= total;
}

/* Field rules of spec 2.1, after the CRC has matched. */
static int seqhdr_check(const WaiSequenceInfo *in, uint16_t flags, uint32_t reserved)
{
    if (flags & ~SEQ_FLAG_MODEL_EMBEDDED) return WAI_ERR_UNSUPPORTED;
    if (in->matrix != 0 || in->full_range != 1) return WAI_ERR_UNSUPPORTED;
    if ((uint64_t)in->unit_size != WAI_SEQHDR_FIXED + (uint64_t)in->model_size)
        return WAI_ERR_BITSTREAM;
    if (!(flags & SEQ_FLAG_MODEL_EMBEDDED) != !in->model_size) return WAI_ERR_BITSTREAM;
    if (in->width < 1 || in->width > SEQ_MAX_DIM || in->height < 1 || in->height > SEQ_MAX_DIM)
        return WAI_ERR_BITSTREAM;
    if (!check_window(in->disp_x, in->disp_w, in->width) ||
        !check_window(in->disp_y, in->disp_h, in->height))
        return WAI_ERR_BITSTREAM;
    if (in->fps_num < 1 || in->fps_den < 1) return WAI_ERR_BITSTREAM;
    if (reserved) return WAI_ERR_BITSTREAM;
    return 0;
}

/* Order of checks (spec 2.1, "checking order"): start code, version, framing (unit_size,
 * truncation), CRC, then the field rules. */
int wai_seqhdr_parse(const uint8_t *buf, size_t size, WaiSequenceInfo *info,
                     const uint8_t **model)
{
    if (!buf && size) return WAI_ERR_INVALID_ARG;
    if (!size) return WAI_ERR_TRUNCATED;
    if (memcmp(buf, seq_code, size < 4 ? size : 4)) return WAI_ERR_BITSTREAM;
    if (size < 5) return WAI_ERR_TRUNCATED;
    if (buf[4] != WAI_FORMAT_VERSION_MAJOR) return WAI_ERR_UNSUPPORTED;
    if (size < 12) return WAI_ERR_TRUNCATED;
    uint32_t usize = wai_rd32(buf + 8);
    if (usize < WAI_SEQHDR_FIXED) return WAI_ERR_BITSTREAM;
    if (size < usize) return WAI_ERR_TRUNCATED;
    if (!unit_crc_ok(buf, usize)) return WAI_ERR_CRC;

    WaiSequenceInfo in;
    memset(&in, 0, sizeof(in));
    WaiReader r;
    wai_reader_init(&r, buf + 4, usize - 4);
    in.version_major = wai_read8(&r);
    in.version_minor = wai_read8(&r);
    uint16_t flags = wai_read16(&r);
    in.unit_size = wai_read32(&r);
    in.width = wai_read32(&r);
    in.height = wai_read32(&r);
    in.disp_x = wai_read32(&r);
    in.disp_y = wai_read32(&r);
    in.disp_w = wai_read32(&r);
    in.disp_h = wai_read32(&r);
    in.fps_num = wai_read32(&r);
    in.fps_den = wai_read32(&r);
    in.frame_count = wai_read32(&r);
    in.colour_primaries = wai_read8(&r);
    in.transfer = wai_read8(&r);
    in.matrix = wai_read8(&r);
    in.full_range = wai_read8(&r);
    const uint8_t *sha = wai_reader_take(&r, 32);
    in.model_size = wai_read32(&r);
    uint32_t reserved = wai_read32(&r);
    if (r.err || !sha) return WAI_ERR_INTERNAL; /* usize >= 96 makes this impossible */
    memcpy(in.model_sha256, sha, 32);

    int err = seqhdr_check(&in, flags, reserved);
    if (err) return err;
    if (info) *info = in;
    if (model) *model = in.model_size ? buf + SEQ_MODEL_OFFSET : NULL;
    return 0;
}

int wai_parse_sequence_header(const uint8_t *buf, size_t size, WaiSequenceInfo *info)
{
    return wai_seqhdr_parse(buf, size, info, NULL);
}

/* Writes the fields of info as given, except: unit_size, model_size and the MODEL_EMBEDDED
 * flag follow from model_size; a version_major of 0 is written as the current version. */
int wai_seqhdr_write(WaiBuf *b, const WaiSequenceInfo *info, const uint8_t *model, size_t model_size)
{
    if (!b || !info || (model_size && !model)) return WAI_ERR_INVALID_ARG;
    if (model_size > UINT32_MAX - WAI_SEQHDR_FIXED) return WAI_ERR_LIMIT;
    if (wai_buf_reserve(b, WAI_SEQHDR_FIXED + model_size)) return b->err;
    size_t start = b->size;
    wai_buf_put(b, seq_code, 4);
    wai_buf_put8(b, info->version_major ? info->version_major : WAI_FORMAT_VERSION_MAJOR);
    wai_buf_put8(b, info->version_minor);
    wai_buf_put16(b, model_size ? SEQ_FLAG_MODEL_EMBEDDED : 0);
    wai_buf_put32(b, (uint32_t)(WAI_SEQHDR_FIXED + model_size));
    wai_buf_put32(b, info->width);
    wai_buf_put32(b, info->height);
    wai_buf_put32(b, info->disp_x);
    wai_buf_put32(b, info->disp_y);
    wai_buf_put32(b, info->disp_w);
    wai_buf_put32(b, info->disp_h);
    wai_buf_put32(b, info->fps_num);
    wai_buf_put32(b, info->fps_den);
    wai_buf_put32(b, info->frame_count);
    wai_buf_put8(b, info->colour_primaries);
    wai_buf_put8(b, info->transfer);
    wai_buf_put8(b, info->matrix);
    wai_buf_put8(b, info->full_range);
    wai_buf_put(b, info->model_sha256, 32);
    wai_buf_put32(b, (uint32_t)model_size);
    wai_buf_put32(b, 0);
    wai_buf_put(b, model, model_size);
    if (b->err) return b->err;
    wai_buf_put32(b, wai_crc32(b->data + start, b->size - start));
    return b->err;
}

int wai_frame_write(WaiBuf *b, uint32_t frame_index, const uint8_t *payload, size_t size)
{
    if (!b || (size && !payload)) return WAI_ERR_INVALID_ARG;
    if (size > UINT32_MAX - WAI_FRAME_OVERHEAD) return WAI_ERR_LIMIT;
    if (wai_buf_reserve(b, WAI_FRAME_OVERHEAD + size)) return b->err;
    size_t start = b->size;
    wai_buf_put(b, frame_code, 4);
    wai_buf_put32(b, (uint32_t)size);
    wai_buf_put32(b, frame_index);
    wai_buf_put32(b, 0);
    wai_buf_put(b, payload, size);
    if (b->err) return b->err;
    wai_buf_put32(b, wai_crc32(b->data + start, b->size - start));
    return b->err;
}

/* Order of checks: start code, truncation, CRC, then payload_size >= 20 and flags == 0. */
int wai_frame_parse(const uint8_t *buf, size_t size, uint32_t *frame_index,
                    const uint8_t **payload, size_t *payload_size)
{
    if (!buf && size) return WAI_ERR_INVALID_ARG;
    if (!size) return WAI_ERR_TRUNCATED;
    if (memcmp(buf, frame_code, size < 4 ? size : 4)) return WAI_ERR_BITSTREAM;
    if (size < 8) return WAI_ERR_TRUNCATED;
    uint64_t usize = WAI_FRAME_OVERHEAD + (uint64_t)wai_rd32(buf + 4);
    if (size < usize) return WAI_ERR_TRUNCATED;
    if (!unit_crc_ok(buf, (size_t)usize)) return WAI_ERR_CRC;
    size_t p = (size_t)usize - WAI_FRAME_OVERHEAD;
    if (p < FRAME_MIN_PAYLOAD || wai_rd32(buf + 12) != 0) return WAI_ERR_BITSTREAM;
    if (frame_index) *frame_index = wai_rd32(buf + 8);
    if (payload) *payload = buf + FRAME_HEADER;
    if (payload_size) *payload_size = p;
    return 0;
}

/* 1 or 2: a full start code of that unit type; 0: the n < 4 bytes left are a prefix of a start
 * code (more data may complete it); -1: no start code here. */
static int start_code_at(const uint8_t *p, size_t n)
{
    size_t k = n < 4 ? n : 4;
    int seq = !memcmp(p, seq_code, k), frm = !memcmp(p, frame_code, k);
    if (!seq && !frm) return -1;
    if (n < 4) return 0;
    return seq ? WAI_UNIT_SEQUENCE_HEADER : WAI_UNIT_FRAME;
}

int wai_find_unit(const uint8_t *buf, size_t size, size_t max_unit_size, WaiUnitInfo *u)
{
    if (!u || (!buf && size)) return WAI_ERR_INVALID_ARG;
    memset(u, 0, sizeof(*u));
    for (size_t i = 0; i < size; i++) {
        const uint8_t *p = buf + i;
        size_t left = size - i;
        int type = start_code_at(p, left);
        if (type < 0) continue;
        u->offset = i;
        if (type == 0) return WAI_ERR_AGAIN;
        int seq = type == WAI_UNIT_SEQUENCE_HEADER;
        if (left < (seq ? 12u : 8u)) return WAI_ERR_AGAIN;
        /* plausible size only: the smallest legal unit of each type */
        uint64_t usize = seq ? wai_rd32(p + 8) : WAI_FRAME_OVERHEAD + (uint64_t)wai_rd32(p + 4);
        uint64_t min = seq ? WAI_SEQHDR_FIXED : WAI_FRAME_OVERHEAD + FRAME_MIN_PAYLOAD;
        if (usize < min || usize > max_unit_size) continue;
        if (left < usize) {
            u->size = (size_t)usize;
            return WAI_ERR_AGAIN;
        }
        if (!unit_crc_ok(p, (size_t)usize)) {
#ifdef WAI_PLANTED_FAULT_STREAM_RESYNC
            return WAI_ERR_AGAIN;
#else
            continue;
#endif
        }
        u->type = seq ? WAI_UNIT_SEQUENCE_HEADER : WAI_UNIT_FRAME;
        u->size = (size_t)usize;
        u->frame_index = seq ? 0 : wai_rd32(p + 8);
        return 0;
    }
    u->offset = size;
    u->size = 0;
    return WAI_ERR_AGAIN;
}
