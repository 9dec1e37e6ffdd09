/* Peak AMX int8 tile throughput of one core (Intel AMX-INT8: tdpbssd), tiles only, no loads in
 * the loop: four 16x16 int32 accumulator tiles, two A tiles (16 rows x 64 int8) and two B tiles
 * (16 rows x 16 int8 quads), each tdpbssd = 16 x 16 x 64 = 16,384 multiply-adds. Prints GMAC/s
 * of int8 pairs, and what that gives for the decoder's operands (12-bit weights and 16-bit
 * activations need two int8 pieces each, so four tile products per product: a quarter).
 * Build and run (gcc >= 11, Linux >= 5.16, a CPU with AMX):
 *   cc -O2 -mamx-tile -mamx-int8 tools/bench-amx-peak.c -o /tmp/amx-peak && /tmp/amx-peak
 * Not part of the build (a measurement of the machine, for docs/research/camera-size.md). */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The tile configuration (palette 1): 8 tiles of 16 rows x 64 bytes. */
struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

int main(void)
{
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) {
        perror("arch_prctl(ARCH_REQ_XCOMP_PERM): AMX not usable here");
        return 1;
    }
    struct tilecfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
    static int8_t a[16 * 64], b[16 * 64];
    static int32_t c[16 * 16];
    for (int i = 0; i < 16 * 64; i++) {
        a[i] = (int8_t)(i % 7 - 3);
        b[i] = (int8_t)(i % 5 - 2);
    }
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const long iters = 20000000;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (long k = 0; k < iters; k++) {
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 4, 7);
            _tile_dpbssd(2, 5, 6);
            _tile_dpbssd(3, 5, 7);
        }
        double t = now() - t0, r = 4.0 * 16384.0 * iters / t / 1e9;
        printf("rep %d: %.3f s, %.1f GMAC/s int8 (%.1f for 12-bit x 16-bit operands)\n", rep, t,
               r, r / 4);
        if (r > best) best = r;
    }
    _tile_stored(0, c, 64);
    _tile_release();
    printf("best %.1f GMAC/s int8, %.1f for the decoder's operands (checksum %d)\n", best,
           best / 4, c[0]);
    return 0;
}
