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

/* ---- Hand-set models for the rule vectors (vectors/README.md, "Rule vectors") ----
 * Each pins rules of spec sections 5-8 with operands chosen to sit on ties, bounds and
 * thresholds. All have pad_multiple = y_down = z_down = 1 unless said otherwise, so z, y and
 * the picture have the same size, and wai-mkvectors chooses every z and y value itself. */

static int hand_conv(WaiLayer *l, int type, int cin, int cout, int kh, int kw, int stride,
                     int pad, int out_pad)
{
    l->type = type;
    l->cin = cin; l->cout = cout; l->kh = kh; l->kw = kw;
    l->stride = stride; l->pad = pad; l->out_pad = out_pad;
    size_t n = (size_t)cout * cin * kh * kw;
    l->weight = calloc(n, sizeof(*l->weight));
    l->shift = calloc((size_t)cout, 1);
    l->bias = calloc((size_t)cout, sizeof(*l->bias));
    return l->weight && l->shift && l->bias ? 0 : WAI_ERR_NOMEM;
}

/* a 1x1 conv cin -> cout with w[o][i] = (o == i + off) ? wt[o] : 0 */
static int hand_diag(WaiLayer *l, int cin, int cout, int off, const int16_t *wt, const uint8_t *sh,
                     const int64_t *b)
{
    int ret = hand_conv(l, WAI_LAYER_CONV, cin, cout, 1, 1, 1, 0, 0);
    if (ret < 0) return ret;
    for (int o = 0; o < cout; o++) {
        if (o - off >= 0 && o - off < cin) l->weight[o * cin + (o - off)] = wt[o];
        l->shift[o] = sh[o];
        l->bias[o] = b[o];
    }
    return 0;
}

/* h_s of the hand models: n_z = n_y = c; scale channels 0 (or z_hat itself if scale_is_z),
 * mean channel k = rshr(z_hat[k], mean_shift) (z_hat = 4096 v when the median is 0, so with
 * shift 12 the mean is the z value v itself). Then y_hat = 4096 * v_y + v_z: any integer. */
static int hand_hs(WaiModel *m, int c, int scale_is_z, int mean_shift)
{
    m->n_hs = 1;
    m->hs = calloc(1, sizeof(*m->hs));
    if (!m->hs) return WAI_ERR_NOMEM;
    int16_t wt[2048];
    uint8_t sh[2048];
    int64_t b[2048];
    for (int o = 0; o < 2 * c; o++) {
        wt[o] = o < c ? (int16_t)scale_is_z : 1;
        sh[o] = o < c ? 0 : (uint8_t)mean_shift;
        b[o] = 0;
    }
    /* scale rows take z channel o, mean rows z channel o - c */
    int ret = hand_conv(&m->hs[0], WAI_LAYER_CONV, c, 2 * c, 1, 1, 1, 0, 0);
    if (ret < 0) return ret;
    for (int o = 0; o < 2 * c; o++) {
        m->hs[0].weight[o * c + (o % c)] = wt[o];
        m->hs[0].shift[o] = sh[o];
        m->hs[0].bias[o] = b[o];
    }
    return 0;
}

/* a table for symbols offset .. offset + len - 1: weights 1000 each, the escape 500 */
static int hand_table(WaiTable *t, int32_t offset, uint32_t len)
{
    uint64_t *w;
    if (alloc_table(t, offset, len, &w) < 0) {
        free(w);
        return WAI_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < len; i++) w[i] = 1000 + i;   /* distinct: a swapped cdf shows */
    w[len] = 500;
    int ret = quantise(w, len + 1, t->freq);
    free(w);
    return ret;
}

/* z tables offset -2, length 8 (medians given), one y table (n_scales 1) offset -2 length 5 */
static int hand_tables(WaiModel *m, const int32_t *medians)
{
    m->z_median_q12 = calloc(m->n_z, sizeof(*m->z_median_q12));
    m->z_tables = calloc(m->n_z, sizeof(*m->z_tables));
    m->n_scales = 1;
    m->thresholds_q12 = NULL;
    m->y_tables = calloc(1, sizeof(*m->y_tables));
    if (!m->z_median_q12 || !m->z_tables || !m->y_tables) return WAI_ERR_NOMEM;
    for (uint32_t c = 0; c < m->n_z; c++) {
        m->z_median_q12[c] = medians ? medians[c] : 0;
        int ret = hand_table(&m->z_tables[c], -2, 8);
        if (ret < 0) return ret;
    }
    return hand_table(&m->y_tables[0], -2, 5);
}

static int hand_frame(WaiModel *m, const char *name, int nz, int ny, int n_gs)
{
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->n_z = (uint32_t)nz;
    m->n_y = (uint32_t)ny;
    m->pad_multiple = m->y_down = m->z_down = 1;
    m->n_gs = (uint32_t)n_gs;
    m->gs = calloc((size_t)n_gs, sizeof(*m->gs));
    return m->gs ? 0 : WAI_ERR_NOMEM;
}

/* the last g_s layer of the probe models: out channel k = 2560 + 384 * in channel k, so a
 * probed value r in -6..4 is a distinct output byte (24 levels apart); shift 0 */
static int hand_amplify(WaiLayer *l, const int64_t *centre)
{
    const int16_t wt[3] = { 384, 384, 384 };
    const uint8_t sh[3] = { 0, 0, 0 };
    int64_t b[3];
    for (int k = 0; k < 3; k++) b[k] = 2560 - 384 * (centre ? centre[k] : 0);
    return hand_diag(l, 3, 3, 0, wt, sh, b);
}

/* rule-rshr: rshr(v, s) ties up (conventions), for s = 1, 12 and 32, and s = 0 (the
 * amplifier). Channel 2's bias is -2^31 and weight 1024, so its accumulators are -2^31 + 1024 x:
 * ties at +-2^31 (and 2^31 + 2^32 k), beyond int32, where 2^(s-1) itself needs 64 bits. */
static int build_rshr(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-rshr", 3, 3, 2);
    if (ret >= 0) ret = hand_hs(m, 3, 0, 12);
    const int16_t wt[3] = { 1, 1, 1024 };
    const uint8_t sh[3] = { 1, 12, 32 };
    const int64_t b[3] = { 0, 0, -((int64_t)1 << 31) };
    if (ret >= 0) ret = hand_diag(&m->gs[0], 3, 3, 0, wt, sh, b);
    if (ret >= 0) ret = hand_amplify(&m->gs[1], NULL);
    return ret >= 0 ? hand_tables(m, NULL) : ret;
}

/* rule-lrelu: leaky ReLU with slope 3/4 (49152): x = -2 gives -1.5 (a tie: -1), x = -1 gives
 * -0.75 (-1, where truncation gives 0), x = -6 gives -4.5 (-4). */
static int build_lrelu(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-lrelu", 3, 3, 2);
    if (ret >= 0) ret = hand_hs(m, 3, 0, 12);
    if (ret >= 0) {
        m->gs[0].type = WAI_LAYER_LRELU;
        m->gs[0].cin = m->gs[0].cout = 3;
        m->gs[0].slope_q16 = 49152;
        ret = hand_amplify(&m->gs[1], NULL);
    }
    return ret >= 0 ? hand_tables(m, NULL) : ret;
}

/* rule-isqrt: IGDN with gamma_shift 24 and gamma 0, so n_i = beta_i and
 * Y_i = rshr(x_i * isqrt(beta_i), 18). Channel 0: beta = R^2 - 1 with R = 1027 * 2^17 (above
 * 2^53: the double rounds to R^2, so floor(sqrt(double)) = R, not R - 1; x = 1 gives 513, not
 * 514). Channel 1: beta = 1060921^2, a perfect square (x = 584: 2364; the largest r with
 * r*r < n gives 2363). Channel 2: beta = R^2 + R + 1 with R = 1048619 (the nearest integer to
 * the root is R + 1; x = 2979: 11916, not 11917). The amplifier centres each channel. */
static int build_isqrt(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-isqrt", 3, 3, 2);
    if (ret >= 0) ret = hand_hs(m, 3, 0, 12);
    if (ret < 0) return ret;
    WaiLayer *l = &m->gs[0];
    l->type = WAI_LAYER_IGDN;
    l->cin = l->cout = 3;
    l->gamma_shift = 24;
    l->beta = calloc(3, sizeof(*l->beta));
    l->gamma = calloc(9, sizeof(*l->gamma));
    if (!l->beta || !l->gamma) return WAI_ERR_NOMEM;
    const int64_t r0 = (int64_t)1027 << 17;
    l->beta[0] = r0 * r0 - 1;
    l->beta[1] = (int64_t)1060921 * 1060921;
    l->beta[2] = (int64_t)1048619 * 1048619 + 1048619 + 1;
    const int64_t centre[3] = { 513, 2364, 11916 };
    ret = hand_amplify(&m->gs[1], centre);
    return ret >= 0 ? hand_tables(m, NULL) : ret;
}

/* rule-igdn8: IGDN at the lowest gamma_shift, 8 (shift 6 + 4 = 10), with probes of x2's
 * rounding and of gamma's orientation. gamma = [[1,0,0],[1,0,0],[0,0,1]]; inputs x = 1101,
 * 2000, 3001 give x2 = 296 (1101^2 = 295.95 * 4096, so floor gives 295), 977, 2199 (2198 with
 * floor). beta = 2^20 - 296, 2^20 - 296, 2^20 - 2199 put every n exactly on 1024^2: one unit of
 * n less (x2 floored) or another channel's x2 (gamma transposed) moves the root off 1024, and
 * Y_i = rshr(x_i * r_i, 10) is x_i only with r = 1024. */
static int build_igdn8(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-igdn8", 3, 3, 2);
    if (ret >= 0) ret = hand_hs(m, 3, 0, 12);
    if (ret < 0) return ret;
    WaiLayer *l = &m->gs[0];
    l->type = WAI_LAYER_IGDN;
    l->cin = l->cout = 3;
    l->gamma_shift = 8;
    l->beta = calloc(3, sizeof(*l->beta));
    l->gamma = calloc(9, sizeof(*l->gamma));
    if (!l->beta || !l->gamma) return WAI_ERR_NOMEM;
    l->beta[0] = l->beta[1] = (1 << 20) - 296;
    l->beta[2] = (1 << 20) - 2199;
    l->gamma[0 * 3 + 0] = 1;
    l->gamma[1 * 3 + 0] = 1;
    l->gamma[2 * 3 + 2] = 1;
    const int64_t centre[3] = { 1101, 2000, 3001 };
    ret = hand_amplify(&m->gs[1], centre);
    return ret >= 0 ? hand_tables(m, NULL) : ret;
}

/* rule-scale: one channel; the scale is z_hat itself (4096 v) and the mean v; thresholds
 * 4096, 8192, 12288 (n_scales 4), y table k has offset -1 - k and length 3 + k, so a wrong
 * index decodes other values (or breaks the stream). g_s: out 0 = rshr(y_hat, 4) + 2048
 * (y values visible), out 1 = rshr(y_hat, 13) + 2048 (the y_hat clamp: ACT_MAX gives 3072,
 * an unclamped 2^28 saturates), out 2 = y_hat + 2048 (the mean). */
static int build_scale(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-scale", 1, 1, 1);
    if (ret >= 0) ret = hand_hs(m, 1, 1, 12);
    if (ret >= 0) ret = hand_conv(&m->gs[0], WAI_LAYER_CONV, 1, 3, 1, 1, 1, 0, 0);
    if (ret < 0) return ret;
    const uint8_t sh[3] = { 4, 13, 0 };
    for (int o = 0; o < 3; o++) {
        m->gs[0].weight[o] = 1;
        m->gs[0].shift[o] = sh[o];
        m->gs[0].bias[o] = (int64_t)2048 << sh[o];
    }
    m->z_median_q12 = calloc(1, sizeof(*m->z_median_q12));
    m->z_tables = calloc(1, sizeof(*m->z_tables));
    m->n_scales = 4;
    m->thresholds_q12 = calloc(3, sizeof(*m->thresholds_q12));
    m->y_tables = calloc(4, sizeof(*m->y_tables));
    if (!m->z_median_q12 || !m->z_tables || !m->thresholds_q12 || !m->y_tables) return WAI_ERR_NOMEM;
    if ((ret = hand_table(&m->z_tables[0], -2, 8)) < 0) return ret;
    for (int k = 0; k < 4; k++) {
        if (k < 3) m->thresholds_q12[k] = 4096 * (k + 1);
        if ((ret = hand_table(&m->y_tables[k], -1 - k, (uint32_t)(3 + k))) < 0) return ret;
    }
    return 0;
}

/* rule-rates (spec version 1.1): a variable-rate model. Three channels, each like rule-scale's
 * one: the scale is z_hat itself (4096 v, median 0), the mean v; thresholds 4096, 8192, 12288
 * (n_scales 4), y table k offset -1 - k, length 3 + k. g_s: out k = rshr(y_hat_k, 8) + 2048
 * (y_hat within +-2^19 visible). Three rates of per-channel steps (Q12): qstep != rstep, steps
 * below and above 4096, the extremes 1 and 2^24 as qstep and as rstep, and steps that put
 * scales exactly on a threshold after the scaling (s * 4096 == threshold * qs: channel 0 rate 0,
 * qs 2048, v_z = 1 on threshold 1; channel 1 rate 0, qs 8192, v_z = 2, 4, 6 on thresholds 0, 1,
 * 2; channel 0 rate 2, qs 6144, v_z = 3 on threshold 1; channel 2 rate 1, qs 12288, v_z = 3, 6,
 * 9 on thresholds 0, 1, 2). */
static const uint32_t rates_qstep[3][3] = {
    { 2048, 8192, 3072 },
    { 16777216, 1, 12288 },
    { 6144, 4096, 16777216 },
};
static const uint32_t rates_rstep[3][3] = {
    { 6144, 3072, 4096 },
    { 1, 16777216, 12288 },
    { 2048, 12288, 1 },
};

static int build_rates(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-rates", 3, 3, 1);
    if (ret >= 0) ret = hand_hs(m, 3, 1, 12);
    const int16_t wt[3] = { 1, 1, 1 };
    const uint8_t sh[3] = { 8, 8, 8 };
    const int64_t b[3] = { 2048 << 8, 2048 << 8, 2048 << 8 };
    if (ret >= 0) ret = hand_diag(&m->gs[0], 3, 3, 0, wt, sh, b);
    if (ret < 0) return ret;
    m->z_median_q12 = calloc(3, sizeof(*m->z_median_q12));
    m->z_tables = calloc(3, sizeof(*m->z_tables));
    m->n_scales = 4;
    m->thresholds_q12 = calloc(3, sizeof(*m->thresholds_q12));
    m->y_tables = calloc(4, sizeof(*m->y_tables));
    m->flags = WAI_MODEL_RATES;
    m->n_rates = 3;
    m->qstep_q12 = malloc(9 * sizeof(*m->qstep_q12));
    m->rstep_q12 = malloc(9 * sizeof(*m->rstep_q12));
    if (!m->z_median_q12 || !m->z_tables || !m->thresholds_q12 || !m->y_tables ||
        !m->qstep_q12 || !m->rstep_q12)
        return WAI_ERR_NOMEM;
    for (int c = 0; c < 3; c++)
        if ((ret = hand_table(&m->z_tables[c], -2, 8)) < 0) return ret;
    for (int k = 0; k < 4; k++) {
        if (k < 3) m->thresholds_q12[k] = 4096 * (k + 1);
        if ((ret = hand_table(&m->y_tables[k], -1 - k, (uint32_t)(3 + k))) < 0) return ret;
    }
    memcpy(m->qstep_q12, rates_qstep, sizeof(rates_qstep));
    memcpy(m->rstep_q12, rates_rstep, sizeof(rates_rstep));
    return 0;
}

/* rule-zhat: z_hat = clamp(v * 4096 + median, ACT_MIN, ACT_MAX) in int64 with medians
 * 2^31 - 1, -2^31 and 2^23 - 4096 * 3 + 1000 (channel 2 crosses ACT_MAX between v = 2 and 3);
 * the means are rshr(z_hat, 9) (Q12 values within +-2^14); g_s shows channels 0 and 1 as
 * rshr(y_hat, 4) + 2048, channel 2 as below. */
static int build_zhat(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-zhat", 3, 3, 1);
    if (ret >= 0) ret = hand_hs(m, 3, 0, 9);
    /* channel 2: 2048 + 256 (mean - 16384), so z_hat = ACT_MAX (mean 16384) is mid grey and a
     * z_hat one step of 512 off is 8 levels away */
    const int16_t wt[3] = { 1, 1, 256 };
    const uint8_t sh[3] = { 4, 4, 0 };
    const int64_t b[3] = { 2048 << 4, 2048 << 4, 2048 - (int64_t)16384 * 256 };
    if (ret >= 0) ret = hand_diag(&m->gs[0], 3, 3, 0, wt, sh, b);
    const int32_t med[3] = { INT32_MAX, INT32_MIN, (1 << 23) - 4096 * 3 + 1000 };
    return ret >= 0 ? hand_tables(m, med) : ret;
}

/* rule-output: g_s is one 1x1 conv, out k = y_hat + k (shift 0): the decoded R values are
 * chosen directly (a ramp through the whole 8-bit range and beyond), for spec 8. */
static int build_output(WaiModel *m)
{
    int ret = hand_frame(m, "wai-rule-output", 1, 1, 1);
    if (ret >= 0) ret = hand_hs(m, 1, 0, 12);
    const int16_t wt[3] = { 1, 1, 1 };
    const uint8_t sh[3] = { 0, 0, 0 };
    const int64_t b[3] = { 0, 1, 2 };
    if (ret >= 0) ret = hand_diag(&m->gs[0], 1, 3, 0, wt, sh, b);
    /* hand_diag with off 0 connects only o == i: connect every output to the one input */
    if (ret >= 0) for (int o = 0; o < 3; o++) m->gs[0].weight[o] = 1;
    return ret >= 0 ? hand_tables(m, NULL) : ret;
}

/* Random 12-bit weights (seeded) for the rule-graph model: shift e with
 * 4^e >= 1440000 * taps (about 1200 * sqrt(taps), the weights' spread), plus extra. */
static int rand_conv(WaiLayer *l, WaiPrng *r, int type, int cin, int cout, int kh, int kw,
                     int stride, int pad, int out_pad, int extra, int64_t centre)
{
    int ret = hand_conv(l, type, cin, cout, kh, kw, stride, pad, out_pad);
    if (ret < 0) return ret;
    int taps = cin * kh * kw / (type == WAI_LAYER_CONVT ? stride * stride : 1);
    if (taps < cin) taps = cin;
    int base = 0;
    while (((uint64_t)1 << (2 * base)) < (uint64_t)1440000 * (uint64_t)taps) base++;
    size_t per = (size_t)cin * kh * kw;
    for (int o = 0; o < cout; o++) {
        for (size_t i = 0; i < per; i++)
            l->weight[(size_t)o * per + i] = (int16_t)wai_prng_range(r, -2048, 2047);
        int e = base + extra + (int)wai_prng_range(r, -1, 1);
        l->shift[o] = (uint8_t)e;
        l->bias[o] = (centre + wai_prng_range(r, -1024, 1023)) * ((int64_t)1 << e);
    }
    return 0;
}

static int rand_igdn(WaiLayer *l, WaiPrng *r, int c, int g)
{
    l->type = WAI_LAYER_IGDN;
    l->cin = l->cout = c;
    l->gamma_shift = g;
    l->beta = malloc((size_t)c * sizeof(*l->beta));
    l->gamma = malloc((size_t)c * c * sizeof(*l->gamma));
    if (!l->beta || !l->gamma) return WAI_ERR_NOMEM;
    for (int i = 0; i < c; i++)
        l->beta[i] = ((int64_t)1 << (12 + g)) + wai_prng_range(r, -((int64_t)1 << (8 + g)), ((int64_t)1 << (8 + g)) - 1);
    for (int i = 0; i < c; i++)
        for (int j = 0; j < c; j++) {
            int64_t hi = ((int64_t)1 << (i == j ? g - 2 : g - 4)) - 1;
            if (hi > (1 << 17) - 1) hi = (1 << 17) - 1;
            l->gamma[i * c + j] = (int32_t)wai_prng_range(r, 0, hi);
        }
    return 0;
}

/* rule-graph: seeded random weights on a graph with every structural feature the tiny model
 * lacks: pad_multiple 8, z_down 8, y_down 2; h_s: convT k4x4 s4, leaky 1/2 (every odd
 * negative is a tie), conv k3x5 p2 ((H+2) x W), ReLU, conv k3x1 p0; g_s: convT k4 s4, IGDN
 * gamma_shift 8, conv k3 s2 p1, IGDN gamma_shift 24, convT k3 s3 p1 op2 (3x), leaky slope 1,
 * conv k5x4 s3 p1. Tables: 8 Gaussian y tables, z tables as the seeded models'. */
static int build_graph(WaiModel *m)
{
    WaiPrng r;
    wai_prng_seed(&r, 13);
    snprintf(m->name, sizeof(m->name), "wai-rule-graph");
    m->n_z = 2; m->n_y = 3;
    m->pad_multiple = 8; m->y_down = 2; m->z_down = 8;
    m->n_hs = 5; m->n_gs = 7;
    m->hs = calloc(5, sizeof(*m->hs));
    m->gs = calloc(7, sizeof(*m->gs));
    if (!m->hs || !m->gs) return WAI_ERR_NOMEM;
    int ret;
    if ((ret = rand_conv(&m->hs[0], &r, WAI_LAYER_CONVT, 2, 6, 4, 4, 4, 0, 0, 0, 0)) < 0) return ret;
    m->hs[1].type = WAI_LAYER_LRELU; m->hs[1].cin = m->hs[1].cout = 6; m->hs[1].slope_q16 = 32768;
    if ((ret = rand_conv(&m->hs[2], &r, WAI_LAYER_CONV, 6, 5, 3, 5, 1, 2, 0, 0, 0)) < 0) return ret;
    m->hs[3].type = WAI_LAYER_LRELU; m->hs[3].cin = m->hs[3].cout = 5; m->hs[3].slope_q16 = 0;
    if ((ret = rand_conv(&m->hs[4], &r, WAI_LAYER_CONV, 5, 6, 3, 1, 1, 0, 0, 0, 0)) < 0) return ret;
    /* the scale channels: centre 2.0 */
    for (int o = 0; o < 3; o++) m->hs[4].bias[o] += (int64_t)8192 << m->hs[4].shift[o];
    if ((ret = rand_conv(&m->gs[0], &r, WAI_LAYER_CONVT, 3, 4, 4, 4, 4, 0, 0, 0, 0)) < 0) return ret;
    if ((ret = rand_igdn(&m->gs[1], &r, 4, 8)) < 0) return ret;
    if ((ret = rand_conv(&m->gs[2], &r, WAI_LAYER_CONV, 4, 4, 3, 3, 2, 1, 0, 0, 0)) < 0) return ret;
    if ((ret = rand_igdn(&m->gs[3], &r, 4, 24)) < 0) return ret;
    if ((ret = rand_conv(&m->gs[4], &r, WAI_LAYER_CONVT, 4, 3, 3, 3, 3, 1, 2, 0, 0)) < 0) return ret;
    m->gs[5].type = WAI_LAYER_LRELU; m->gs[5].cin = m->gs[5].cout = 3; m->gs[5].slope_q16 = 65536;
    if ((ret = rand_conv(&m->gs[6], &r, WAI_LAYER_CONV, 3, 3, 5, 4, 3, 1, 0, 1, 2048)) < 0) return ret;

    m->z_median_q12 = calloc(2, sizeof(*m->z_median_q12));
    m->z_tables = calloc(2, sizeof(*m->z_tables));
    m->n_scales = 8;
    m->thresholds_q12 = calloc(7, sizeof(*m->thresholds_q12));
    m->y_tables = calloc(8, sizeof(*m->y_tables));
    if (!m->z_median_q12 || !m->z_tables || !m->thresholds_q12 || !m->y_tables) return WAI_ERR_NOMEM;
    for (int c = 0; c < 2; c++)
        if ((ret = make_z_table(&m->z_tables[c], &m->z_median_q12[c], &r)) < 0) return ret;
    for (int k = 0; k < 8; k++) {
        double s = 0.25 * (double)(1 << k) / 2.0;    /* 0.125 .. 16 */
        if (k < 7) m->thresholds_q12[k] = (int32_t)(s * 4096.0 * 1.5);
        if ((ret = make_y_table(&m->y_tables[k], s)) < 0) return ret;
    }
    return 0;
}

typedef struct HandModel { const char *name; int (*build)(WaiModel *m); } HandModel;
static const HandModel hand_models[] = {
    { "rule-rshr", build_rshr }, { "rule-lrelu", build_lrelu }, { "rule-isqrt", build_isqrt },
    { "rule-scale", build_scale }, { "rule-zhat", build_zhat }, { "rule-output", build_output },
    { "rule-graph", build_graph }, { "rule-igdn8", build_igdn8 }, { "rule-rates", build_rates },
};

static void free_built(WaiModel *m)
{
    /* same ownership as a parsed model, except the cdf arrays are never allocated */
    wai_model_free(m);
}

static int usage(FILE *f)
{
    fprintf(f, "usage: wai-mkmodel --topology tiny|q6|micro|rule-NAME [--seed N] -o out.whm\n"
               "  tiny: N=64, M=96; q6: N=192, M=320 (mbt2018-mean decoder topologies);\n"
               "  micro: N=8, M=8, the same layer structure, a small seed for fuzzing\n"
               "  rule-rshr, rule-lrelu, rule-isqrt, rule-scale, rule-zhat, rule-output,\n"
               "  rule-graph, rule-igdn8, rule-rates: hand-set models for the rule vectors (no seed)\n"
               "  prints the SHA-256 of the written file\n");
    return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
    const Topology *tp = NULL;
    const HandModel *hm = NULL;
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
            for (size_t k = 0; k < sizeof(hand_models) / sizeof(hand_models[0]); k++)
                if (!strcmp(v, hand_models[k].name)) hm = &hand_models[k];
            if (!tp && !hm) {
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
    if ((!tp && !hm) || !outp) return usage(stderr);

    WaiModel *m = calloc(1, sizeof(*m));
    uint8_t *buf = NULL;
    size_t size = 0;
    int ret = !m ? WAI_ERR_NOMEM : hm ? hm->build(m) : build(m, tp, seed);
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
