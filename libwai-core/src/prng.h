/* The project's deterministic PRNG (splitmix64), used by the model and vector generators and
 * the tests. Integer-only, so generated files are byte-identical on every machine. */
#ifndef WAI_PRNG_H
#define WAI_PRNG_H

#include <stdint.h>

typedef struct WaiPrng { uint64_t s; } WaiPrng;

static inline void wai_prng_seed(WaiPrng *r, uint64_t seed) { r->s = seed; }

static inline uint64_t wai_prng_next(WaiPrng *r)
{
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi] (inclusive); the modulo bias is irrelevant for generators but
 * is fixed behaviour, so outputs stay reproducible. */
static inline int64_t wai_prng_range(WaiPrng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(wai_prng_next(r) % (uint64_t)(hi - lo + 1));
}

#endif
