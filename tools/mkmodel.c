/* wai-mkmodel: a seeded generator of valid WHM1 models with pseudo-random integer weights at the
 * real mbt2018-mean (CompressAI MeanScaleHyperprior) decoder topologies. See README-mkmodel.md.
 *
 * Randomness comes only from the integer PRNG of prng.h and the weights, shifts, biases, IGDN
 * parameters and z tables are computed with integer arithmetic only. The y tables need the
 * Gaussian CDF (erfc from libm, in double); everything after it is integer again. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model.h"
#include "prng.h"

typedef struct Topology {
    const char *name;
    int n, m;
    /* weight gains in 1/64 (std of the real weights = gain / sqrt(effective fan-in)) */
    int hs_gain[3];                   /* convT, convT, conv */
    int gs_gain[4];                   /* convT x 4 */
} Topology;

static const Topology topologies[] = {
    { "tiny", 64, 96, { 91, 91, 32 }, { 24, 48, 48, 10 } },
    { "q6", 192, 320, { 91, 91, 32 }, { 28, 40, 36, 7 } },
    /* not a codec: a small valid model for fuzzing seeds and quick structural tests */
    { "micro", 8, 8, { 91, 91, 32 }, { 24, 48, 48, 10 } },
};

/* Bias of one output channel, in Q12 real units: centre + uniform in [-spread, spread]. */
typedef struct BiasRule { int32_t centre_q12, spread_q12; } BiasRule;

/* The exponent e with 2^e nearest (in the log domain) to sqrt(var_w * fan) / gain, where
 * var_w = A(A+1)/3 is the variance of a uniform integer in [-A, A], fan = cin*k*k/stride^2 and
 * gain = g64/64: the smallest e with  A(A+1) * cin*k*k * 64^2 < 2^(2e+1) * 3 * stride^2 * g64^2. Exact in uint64 for every topology here (the left side is below 2^46). */
static int weight_shift(int64_t a, int cin, int k, int stride, int g64)
{
    uint64_t lhs = (uint64_t)(a * (a + 1)) * (uint64_t)(cin * k * k) * 4096;
    uint64_t d = 3 * (uint64_t)(stride * stride) * (uint64_t)(g64 * g64);
    int e = 0;
    while (e < 32 && lhs >= (d << (2 * e + 1))) e++;
    return e;
}

static int make_conv(WaiLayer *l, WaiPrng *r, int type, int cin, int cout, int k, int stride,
                     int pad, int out_pad, int g64, const BiasRule *rules, int split)
{
    l->type = type;
    l->cin = cin; l->cout = cout; l->kh = l->kw = k;
    l->stride = stride; l->pad = pad; l->out_pad = out_pad;
    size_t per = (size_t)cin * k * k;
    l->weight = malloc((size_t)cout * per * sizeof(*l->weight));
    l->shift = malloc((size_t)cout);
    l->bias = malloc((size_t)cout * sizeof(*l->bias));
    if (!l->weight || !l->shift || !l->bias) return WAI_ERR_NOMEM;
    /* the fan-in for convT counts the taps that reach one output: cin*k*k/stride^2 */
    int st = type == WAI_LAYER_CONVT ? stride : 1;
    for (int o = 0; o < cout; o++) {
        /* a per-channel amplitude makes channel gains (and so shifts) differ, as in trained nets */
        int64_t a = wai_prng_range(r, 1024, 2047);
        int e = weight_shift(a, cin, k, st, g64);
        l->shift[o] = (uint8_t)e;
        for (size_t i = 0; i < per; i++)
            l->weight[(size_t)o * per + i] = (int16_t)wai_prng_range(r, -a, a);
        const BiasRule *br = &rules[o < split ? 0 : 1];
        int64_t bq12 = br->centre_q12 + wai_prng_range(r, -br->spread_q12, br->spread_q12);
        /* full precision: random bits below Q12 as well */
        int64_t frac = e ? wai_prng_range(r, 0, ((int64_t)1 << e) - 1) : 0;
        l->bias[o] = bq12 * ((int64_t)1 << e) + frac;
    }
    return 0;
}

static void make_lrelu(WaiLayer *l, int channels)
{
    l->type = WAI_LAYER_LRELU;
    l->cin = l->cout = channels;
    l->slope_q16 = 655;               /* 0.01, PyTorch's default negative slope */
}

static int make_igdn(WaiLayer *l, WaiPrng *r, int c)
{
    l->type = WAI_LAYER_IGDN;
    l->cin = l->cout = c;
    l->gamma_shift = 16;
    l->beta = malloc((size_t)c * sizeof(*l->beta));
    l->gamma = malloc((size_t)c * c * sizeof(*l->gamma));
    if (!l->beta || !l->gamma) return WAI_ERR_NOMEM;
    for (int i = 0; i < c; i++)       /* beta ~ 1.0 (+-6 %) at 2^(12+16) */
        l->beta[i] = ((int64_t)1 << 28) + wai_prng_range(r, -(1 << 24), 1 << 24);
    for (int i = 0; i < c; i++)
        for (int j = 0; j < c; j++)   /* gamma at 2^16: ~0.1 diagonal, 0.001..0.01 elsewhere */
            l->gamma[i * c + j] = (int32_t)(i == j ? wai_prng_range(r, 5243, 7864)
                                                   : wai_prng_range(r, 66, 655));
    return 0;
}

typedef struct SymRem { uint64_t rem; uint32_t idx; } SymRem;

static int cmp_rem(const void *a, const void *b)
{
    const SymRem *x = a, *y = b;
    if (x->rem != y->rem) return x->rem < y->rem ? 1 : -1;  /* larger remainder first */
    return x->idx < y->idx ? -1 : x->idx > y->idx;          /* then lower index: a total order */
}

/* Quantise n (2..32768) nonnegative integer weights w[i] < 2^47 (the last one the escape) to
 * frequencies >= 1 summing to exactly 65536: the largest-remainder (Hamilton) method with a
 * floor of 1.
 *   1. The set F of floored symbols starts empty. Repeat until F stops growing: with
 *      B = 65536 - |F| and T = the sum of w over the other symbols, put into F every other
 *      symbol with w[i] * B < T (its share would be below 1).
 *   2. Symbols in F get 1; every other gets floor(w[i] * B / T), and the B - sum of those
 *      units left go, one each, to the other symbols with the largest remainders
 *      (w[i] * B mod T; ties: lower index first).
 * A heavier symbol never gets a smaller frequency, so a unimodal pmf stays unimodal. */
static int quantise(const uint64_t *w, uint32_t n, uint16_t *freq)
{
    uint8_t *floored = calloc(n, 1);
    SymRem *rem = malloc(n * sizeof(*rem));
    if (!floored || !rem) {
        free(floored);
        free(rem);
        return WAI_ERR_NOMEM;
    }
    uint64_t b = 65536, t;
    for (int grew = 1; grew;) {
        grew = 0;
        t = 0;
        for (uint32_t i = 0; i < n; i++) t += floored[i] ? 0 : w[i];
        for (uint32_t i = 0; i < n; i++) {
            if (!floored[i] && w[i] * b < t) {
                floored[i] = 1;
                grew = 1;
            }
        }
        b = 65536;
        for (uint32_t i = 0; i < n; i++) b -= floored[i];
    }
    /* the heaviest symbol never floors (w_max * B >= T since B >= n), so T > 0 here */
    uint64_t left = b;
    uint32_t nr = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (floored[i]) {
            freq[i] = 1;
            continue;
        }
        uint64_t q = w[i] * b;
        freq[i] = (uint16_t)(q / t);
        left -= q / t;
        rem[nr].rem = q % t;
        rem[nr++].idx = i;
    }
    qsort(rem, nr, sizeof(*rem), cmp_rem);
    for (uint32_t j = 0; j < left; j++) freq[rem[j].idx]++;   /* left < nr */
    free(floored);
    free(rem);
    return 0;
}

static int alloc_table(WaiTable *t, int32_t offset, uint32_t len, uint64_t **w)
{
    t->offset = offset;
    t->length = len;
    t->freq = malloc((len + 1) * sizeof(*t->freq));
    *w = calloc(len + 1, sizeof(**w));
    return t->freq && *w ? 0 : WAI_ERR_NOMEM;
}

/* z table: a discretised Laplacian (two-sided geometric) of ratio rho = r16/65536 per step,
 * weights in Q32 by the integer recursion w(0) = 2^32, w(k+1) = (w(k) * r16) >> 16 (strictly
 * decreasing, so it reaches 0). */
static int make_z_table(WaiTable *t, int32_t *median, WaiPrng *r)
{
    *median = (int32_t)wai_prng_range(r, -2047, 2047);          /* |median| < 0.5 */
    /* rho = exp(-1/b) for a Laplacian scale b in [0.5, 4] */
    uint64_t r16 = (uint64_t)wai_prng_range(r, 8869, 51039);
    uint64_t wk[4096];
    uint32_t nk = 0;
    for (uint64_t v = UINT64_C(1) << 32; v && nk < 4096; v = (v * r16) >> 16)
        wk[nk++] = v;
    /* range: the least R >= 8 whose next weight is below 2^-14 of the mode, plus 0..4, <= 40 */
    uint32_t rr = 8;
    while (rr + 1 < nk && wk[rr + 1] >= (UINT64_C(1) << 18)) rr++;
    rr += (uint32_t)wai_prng_range(r, 0, 4);
    if (rr > 40) rr = 40;
    uint64_t *w;
    uint32_t len = 2 * rr + 1;
    if (alloc_table(t, -(int32_t)rr, len, &w) < 0) {
        free(w);
        return WAI_ERR_NOMEM;
    }
    for (uint32_t s = 0; s < len; s++) {
        uint32_t k = s > rr ? s - rr : rr - s;
        w[s] = k < nk ? wk[k] : 0;
    }
    for (uint32_t k = rr + 1; k < nk; k++) w[len] += 2 * wk[k];  /* both tails: the escape */
    int ret = quantise(w, len + 1, t->freq);
    free(w);
    return ret;
}

/* y table k: zero-mean Gaussian of std s, symbols -R..R with R = ceil(6.1 s); the pmf
 * p(v) = Phi((v + 1/2)/s) - Phi((v - 1/2)/s), the escape gets the two tails, 2 Phi(-(R+1/2)/s);
 * each is converted to an integer weight round(p * 2^40), then quantised as above. */
static int make_y_table(WaiTable *t, double s)
{
    uint32_t rr = (uint32_t)ceil(s * 6.1);
    uint32_t len = 2 * rr + 1;
    uint64_t *w;
    if (alloc_table(t, -(int32_t)rr, len, &w) < 0) {
        free(w);
        return WAI_ERR_NOMEM;
    }
    const double k = 1.0 / (s * sqrt(2.0));
    for (uint32_t i = 0; i < len; i++) {
        double a = fabs((double)i - (double)rr);
        /* upper-tail form (erfc) keeps precision far from the mode */
        double p = a == 0 ? 1.0 - erfc(0.5 * k) : 0.5 * (erfc((a - 0.5) * k) - erfc((a + 0.5) * k));
        w[i] = (uint64_t)llround(p * 1099511627776.0);
    }
    w[len] = (uint64_t)llround(erfc(((double)rr + 0.5) * k) * 1099511627776.0);
    int ret = quantise(w, len + 1, t->freq);
    free(w);
    return ret;
}

#define N_SCALES 64

static int make_tables(WaiModel *m, WaiPrng *r)
{
    m->z_median_q12 = calloc(m->n_z, sizeof(*m->z_median_q12));
    m->z_tables = calloc(m->n_z, sizeof(*m->z_tables));
    m->n_scales = N_SCALES;
    m->thresholds_q12 = calloc(N_SCALES - 1, sizeof(*m->thresholds_q12));
    m->y_tables = calloc(N_SCALES, sizeof(*m->y_tables));
    if (!m->z_median_q12 || !m->z_tables || !m->thresholds_q12 || !m->y_tables)
        return WAI_ERR_NOMEM;
    for (uint32_t c = 0; c < m->n_z; c++) {
        int ret = make_z_table(&m->z_tables[c], &m->z_median_q12[c], r);
        if (ret < 0) return ret;
    }
    /* CompressAI's scale table: exp(linspace(log 0.11, log 256, 64)) */
    const double lo = log(0.11), hi = log(256.0);
    for (int k = 0; k < N_SCALES; k++) {
        double s = exp(lo + (hi - lo) * k / (N_SCALES - 1));
        if (k < N_SCALES - 1) m->thresholds_q12[k] = (int32_t)llround(s * 4096.0);
        int ret = make_y_table(&m->y_tables[k], s);
        if (ret < 0) return ret;
    }
    return 0;
}

static int build(WaiModel *m, const Topology *tp, uint64_t seed)
{
    WaiPrng r;
    wai_prng_seed(&r, seed);
    const int n = tp->n, mm = tp->m;
    snprintf(m->name, sizeof(m->name), "wai-%s-n%dm%d seed %llu", tp->name, n, mm,
             (unsigned long long)seed);
    m->n_z = (uint32_t)n;
    m->n_y = (uint32_t)mm;
    m->pad_multiple = 64;
    m->y_down = 16;
    m->z_down = 64;
    m->n_hs = 5;
    m->n_gs = 7;
    m->hs = calloc(m->n_hs, sizeof(*m->hs));
    m->gs = calloc(m->n_gs, sizeof(*m->gs));
    if (!m->hs || !m->gs) return WAI_ERR_NOMEM;

    /* small biases (+-0.05) except: h_s scale channels ~2.0 (+-0.5), means ~0 (+-0.05), and
     * the last g_s layer ~0.5 (mid grey, +-0.05) */
    const BiasRule small[2] = { { 0, 205 }, { 0, 205 } };
    const BiasRule scale_mean[2] = { { 8192, 2048 }, { 0, 205 } };
    const BiasRule grey[2] = { { 2048, 205 }, { 2048, 205 } };
    int ret;
    if ((ret = make_conv(&m->hs[0], &r, WAI_LAYER_CONVT, n, mm, 5, 2, 2, 1, tp->hs_gain[0], small, 0)) < 0)
        return ret;
    make_lrelu(&m->hs[1], mm);
    if ((ret = make_conv(&m->hs[2], &r, WAI_LAYER_CONVT, mm, mm * 3 / 2, 5, 2, 2, 1, tp->hs_gain[1],
                         small, 0)) < 0)
        return ret;
    make_lrelu(&m->hs[3], mm * 3 / 2);
    if ((ret = make_conv(&m->hs[4], &r, WAI_LAYER_CONV, mm * 3 / 2, 2 * mm, 3, 1, 1, 0, tp->hs_gain[2],
                         scale_mean, mm)) < 0)
        return ret;

    for (int i = 0; i < 4; i++) {
        int cin = i ? n : mm, cout = i < 3 ? n : 3;
        if ((ret = make_conv(&m->gs[2 * i], &r, WAI_LAYER_CONVT, cin, cout, 5, 2, 2, 1, tp->gs_gain[i],
                             i < 3 ? small : grey, 0)) < 0)
            return ret;
        if (i < 3 && (ret = make_igdn(&m->gs[2 * i + 1], &r, n)) < 0) return ret;
    }
    return make_tables(m, &r);
}

static void free_built(WaiModel *m)
{
    /* same ownership as a parsed model, except the cdf arrays are never allocated */
    wai_model_free(m);
}

static int usage(FILE *f)
{
    fprintf(f, "usage: wai-mkmodel --topology tiny|q6|micro [--seed N] -o out.whm\n"
               "  tiny: N=64, M=96; q6: N=192, M=320 (mbt2018-mean decoder topologies);\n"
               "  micro: N=8, M=8, the same layer structure, a small seed for fuzzing\n"
               "  prints the SHA-256 of the written file\n");
    return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
    const Topology *tp = NULL;
    const char *outp = NULL;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if (i + 1 >= argc) return usage(stderr);
        const char *v = argv[++i];
        if (!strcmp(a, "--topology")) {
            for (size_t k = 0; k < sizeof(topologies) / sizeof(topologies[0]); k++)
                if (!strcmp(v, topologies[k].name)) tp = &topologies[k];
            if (!tp) {
                fprintf(stderr, "wai-mkmodel: unknown topology '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 0);
            if (errno || *end || !*v || *v == '-') {
                fprintf(stderr, "wai-mkmodel: bad seed '%s'\n", v);
                return 2;
            }
            seed = s;
        } else if (!strcmp(a, "-o")) {
            outp = v;
        } else {
            return usage(stderr);
        }
    }
    if (!tp || !outp) return usage(stderr);

    WaiModel *m = calloc(1, sizeof(*m));
    uint8_t *buf = NULL;
    size_t size = 0;
    int ret = m ? build(m, tp, seed) : WAI_ERR_NOMEM;
    if (ret >= 0) ret = wai_model_serialize(m, &buf, &size);
    free_built(m);
    if (ret < 0) {
        fprintf(stderr, "wai-mkmodel: %s\n", ret == WAI_ERR_NOMEM ? "out of memory"
                                            : "internal error: the model does not validate");
        return 1;
    }
    FILE *f = fopen(outp, "wb");
    int ok = f && fwrite(buf, 1, size, f) == size;
    if (f && fclose(f)) ok = 0;
    if (!ok) {
        fprintf(stderr, "wai-mkmodel: cannot write %s\n", outp);
        free(buf);
        return 1;
    }
    uint8_t sha[32];
    char hex[65];
    wai_sha256(buf, size, sha);
    wai_sha256_hex(sha, hex);
    printf("%s  %s\n", hex, outp);
    free(buf);
    return 0;
}
