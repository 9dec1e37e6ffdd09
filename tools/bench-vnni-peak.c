/* Peak vpdpwssd (AVX-512 VNNI, 512-bit) throughput of one core: 12 independent accumulator
 * chains (as the decoder's 6x2 tile), registers only, no loads. Prints GMAC/s (one vpdpwssd on
 * zmm = 32 int16 multiply-adds). Build and run:
 *   cc -O2 -mavx512f -mavx512bw -mavx512vnni tools/bench-vnni-peak.c -o /tmp/vnni-peak && /tmp/vnni-peak
 * Not part of the build (a measurement of the machine, for docs/research/camera-size.md). */
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* 12 named accumulators (an array in a loop may be kept in memory by the compiler) */
#define ACCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECL(i) __m512i a##i = _mm512_set1_epi32(i);
#define STEP(i) a##i = _mm512_dpwssd_epi32(a##i, x, w);
#define SUM(i) s = _mm512_add_epi32(s, a##i);

int main(void)
{
    __m512i x = _mm512_set1_epi32(0x00010001), w = _mm512_set1_epi32(0x00020003);
    ACCS(DECL)
    const long iters = 50000000;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        for (long k = 0; k < iters; k++) {
            ACCS(STEP)
            __asm__ volatile("" : "+v"(x), "+v"(w));
        }
        double t = now() - t0, r = 12.0 * 32.0 * iters / t / 1e9;
        printf("rep %d: %.3f s, %.1f GMAC/s\n", rep, t, r);
        if (r > best) best = r;
    }
    int32_t out[16];
    __m512i s = _mm512_setzero_si512();
    ACCS(SUM)
    _mm512_storeu_si512(out, s);
    printf("best %.1f GMAC/s (checksum %d)\n", best, out[0]);
    return 0;
}
