/* common.c: CRC-32 and SHA-256 against published check values, hex round trip, the bounded
 * reader, the growable buffer, rounding helpers. */
#include "common.h"
#include "testutil.h"

int main(void)
{
    /* CRC-32/ISO-HDLC check value (spec conventions) */
    CHECK_EQ(wai_crc32((const uint8_t *)"123456789", 9), 0xCBF43926u);
    CHECK_EQ(wai_crc32((const uint8_t *)"", 0), 0);

    /* FIPS 180-2 examples */
    uint8_t sha[32];
    char hex[65];
    wai_sha256((const uint8_t *)"abc", 3, sha);
    wai_sha256_hex(sha, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    wai_sha256((const uint8_t *)"", 0, sha);
    wai_sha256_hex(sha, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    uint8_t back[32];
    CHECK_EQ(wai_sha256_from_hex(hex, back), 0);
    CHECK(!memcmp(back, sha, 32));
    hex[10] = 'g';
    CHECK_EQ(wai_sha256_from_hex(hex, back), WAI_ERR_INVALID_ARG);
    CHECK_EQ(wai_sha256_from_hex("abcd", back), WAI_ERR_INVALID_ARG);

    /* rounding: ties towards +infinity, floor shifts */
    CHECK_EQ(wai_rshr(5, 1), 3);    /* 2.5 -> 3 */
    CHECK_EQ(wai_rshr(-5, 1), -2);  /* -2.5 -> -2 */
    CHECK_EQ(wai_rshr(-6, 2), -1);  /* -1.5 -> -1 */
    CHECK_EQ(wai_rshr(-7, 2), -2);  /* -1.75 -> -2 */
    CHECK_EQ(wai_rshr(7, 0), 7);
    CHECK_EQ(wai_rshr(((int64_t)1 << 52) - 1, 32), 1 << 20);
    CHECK_EQ(wai_clamp_act((int64_t)1 << 40), WAI_ACT_MAX);
    CHECK_EQ(wai_clamp_act(-((int64_t)1 << 40)), WAI_ACT_MIN);
    CHECK_EQ(wai_clamp_act(WAI_ACT_MIN), -(1 << 23));

    /* bounded reader: fails once, stays failed, never reads past the end */
    const uint8_t bytes[5] = { 1, 2, 3, 4, 5 };
    WaiReader r;
    wai_reader_init(&r, bytes, sizeof(bytes));
    CHECK_EQ(wai_read32(&r), 0x04030201u);
    CHECK_EQ(wai_read16(&r), 0);
    CHECK_EQ(r.err, WAI_ERR_TRUNCATED);
    CHECK_EQ(wai_read8(&r), 0);

    /* little-endian writers and the buffer */
    WaiBuf b;
    wai_buf_init(&b);
    wai_buf_put32(&b, 0x11223344u);
    wai_buf_put64(&b, 0x8877665544332211ull);
    wai_buf_put16(&b, 0xBEEF);
    CHECK_EQ(b.size, 14);
    CHECK_EQ(b.data[0], 0x44);
    CHECK_EQ(wai_rd64(b.data + 4), (long long)0x8877665544332211ull);
    CHECK_EQ(wai_rd16(b.data + 12), 0xBEEF);
    for (int i = 0; i < 100000; i++) wai_buf_put8(&b, (uint8_t)i);
    CHECK_EQ(b.size, 100014);
    CHECK_EQ(b.data[100013], (uint8_t)99999);
    wai_buf_free(&b);

    size_t s;
    CHECK_EQ(wai_mul_size(SIZE_MAX / 2 + 1, 2, &s), WAI_ERR_LIMIT);
    CHECK_EQ(wai_mul_size(1000, 1000, &s), 0);
    CHECK_EQ(s, 1000000);
    return tu_finish("common");
}
