/* Tiny assertion helpers for the unit tests: each failed check prints where and why and makes
 * the test exit non-zero. */
#ifndef WAI_TESTUTIL_H
#define WAI_TESTUTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int tu_failures;
static int tu_checks;

#define CHECK(cond) do { tu_checks++; if (!(cond)) { tu_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); tu_checks++; \
    if (_a != _b) { tu_failures++; fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
    __FILE__, __LINE__, #a, _a, #b, _b); } } while (0)

static inline int tu_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, tu_checks, tu_failures);
    return tu_failures ? 1 : 0;
}

/* Deterministic PRNG for tests (splitmix64). */
static inline uint64_t tu_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline int64_t tu_range(uint64_t *s, int64_t lo, int64_t hi) /* inclusive */
{
    return lo + (int64_t)(tu_rand(s) % (uint64_t)(hi - lo + 1));
}

#endif
