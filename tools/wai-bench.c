/* wai-bench: decode-throughput benchmark of the kernel sets and thread counts ("policies").
 * All policies run interleaved in one process on the same inputs, in a rotating order; every
 * run's output is hashed and the program aborts if any policy's output differs from the
 * first one's (a benchmark of wrong answers is worthless). Reports median and min-max.
 *
 *   wai-bench --model q6.whm [--size 768x512] [--reps N] [--policies LIST]
 *             [--gs-policies LIST] [--cases LIST]
 *     LIST of policies: comma-separated KERNELS/THREADS, e.g. reference/1,avx512/1,avx512/0
 *       (threads 0 = automatic); default c/1,avx2/1,avx512/1,auto/1,auto/0 (those available)
 *     --gs-policies: other policies for the gs and layers cases (default: --policies)
 *     cases: synthesis (g_s in stripes and RGB8, as the decoder runs it), hyper (h_s as the
 *     decoder runs it: wai_hyper, into the scale index and the means), gs (whole g_s on
 *     the whole tensor), layers (per-layer g_s profile, whole tensors), convt, conv, igdn
 *     (MAC rates count each layer's MACs once: the stripes' overlap rows are extra work)
 *   --stream F.wai: synthesis, gs and layers on the y_hat of F's first frame, hyper on its
 *     z_hat (a real picture's latents,
 *     which random ones are not: they drive activations far past a real decode's), at F's
 *     size; --model must be F's model
 * After each case, for every two policies of the same kernel set with different thread
 * counts, the speed-up (ratio of the wall medians) is printed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsp.h"
#include "graph.h"
#include "model.h"
#include "payload.h"
#include "stream.h"

#define MAX_POL 16
#define MAX_REPS 64

typedef struct Policy {
    char name[64];
    char kernels[32];
    WaiDsp dsp;
} Policy;

static Policy pol_k[MAX_POL], pol_g[MAX_POL];
static int n_pol_k, n_pol_g;
/* the policies of the case being run */
static Policy *pol;
static int n_pol;
static int reps = 5;

static uint64_t rng_state = 12345;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int64_t rrange(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t fnv_bytes(const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint8_t *b = p;
    for (size_t e = 0; e < n; e++) h = (h ^ b[e]) * 0x100000001b3ull;
    return h;
}

static uint64_t fnv(const int32_t *p, size_t n) { return fnv_bytes(p, n * 4); }

/* CPU seconds of the whole process (all threads): on a machine shared with other jobs, wall
 * time measures the load as much as the code; CPU time measures the work. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A case's lines: per policy the wall and CPU medians (min-max) and MAC rates (per thread for
 * several threads), the speed-up of more threads over fewer with the same kernel set, the load. */
static void report(const char *name, uint64_t want, double t[][MAX_REPS], double c[][MAX_REPS],
                   double macs)
{
    printf("%s  [output hash %016" PRIx64 ", equal for every policy]\n", name, want);
    for (int p = 0; p < n_pol; p++) {
        qsort(t[p], (size_t)reps, sizeof(double), cmp_double);
        qsort(c[p], (size_t)reps, sizeof(double), cmp_double);
        const double med = t[p][reps / 2], cmed = c[p][reps / 2];
        printf("  %-16s wall median %9.2f ms (min %9.2f, max %9.2f)  cpu median %9.2f ms",
               pol[p].name, med * 1e3, t[p][0] * 1e3, t[p][reps - 1] * 1e3, cmed * 1e3);
        if (macs > 0) {
            printf("  %6.2f GMAC/s wall, %6.2f per cpu-s", macs / med * 1e-9, macs / cmed * 1e-9);
            if (pol[p].dsp.threads > 1)
                printf(", %6.2f per thread", macs / med * 1e-9 / pol[p].dsp.threads);
        }
        printf("\n");
    }
    /* speed-up of more threads over fewer, same kernel set (ratio of wall medians) */
    for (int a = 0; a < n_pol; a++)
        for (int b = 0; b < n_pol; b++) {
            if (a == b || pol[a].dsp.threads >= pol[b].dsp.threads ||
                strcmp(pol[a].kernels, pol[b].kernels))
                continue;
            printf("  speed-up %s -> %s: %.2fx (wall medians)\n", pol[a].name, pol[b].name,
                   t[a][reps / 2] / t[b][reps / 2]);
        }
    /* the load during this case (Linux; elsewhere nothing is printed) */
    FILE *la = fopen("/proc/loadavg", "r");
    char buf[128];
    if (la && fgets(buf, sizeof(buf), la)) printf("  load average after this case: %s", buf);
    if (la) fclose(la);
    fflush(stdout);
}

/* Runs `layers` on `in` with every policy, reps times, rotating the order. A single leaky
 * ReLU or IGDN layer is timed in place (wai_run_layer_in_place, as the decoder's stripes run
 * it) on a copy of `in` made before the clock starts: wai_run_layers would copy its input into
 * fresh memory first, a serial pass that is not the layer's (it was timed until session 25). */
static void bench_layers(const char *name, const WaiLayer *layers, uint32_t n, const int32_t *in,
                         WaiShape s, double macs, int32_t **keep, WaiShape *keep_shape)
{
    static double t[MAX_POL][MAX_REPS], c[MAX_POL][MAX_REPS];
    uint64_t want = 0;
    int have = 0;
    const int in_place = n == 1 && (layers[0].type == WAI_LAYER_IGDN || layers[0].type == WAI_LAYER_LRELU);
    const size_t ne = (size_t)s.c * s.h * s.w;
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < n_pol; k++) {
            const int p = (k + r) % n_pol;
            int32_t *out = NULL;
            WaiShape os = s;
            int err = 0;
            if (in_place && (out = malloc(ne * sizeof(*out))))
                memcpy(out, in, ne * sizeof(*out)); /* also faults its pages in */
            const double t0 = now(), c0 = cpu_now();
            if (in_place)
                err = out ? wai_run_layer_in_place(&pol[p].dsp, layers, out, s) : WAI_ERR_NOMEM;
            else
                err = wai_run_layers(&pol[p].dsp, layers, n, in, s, &out, &os);
            t[p][r] = now() - t0;
            c[p][r] = cpu_now() - c0;
            if (err < 0) {
                fprintf(stderr, "wai-bench: %s: %s failed (%d)\n", name, pol[p].name, err);
                exit(3);
            }
            const uint64_t h = fnv(out, (size_t)os.c * os.h * os.w);
            if (!have) {
                want = h;
                have = 1;
            } else if (h != want) {
                fprintf(stderr, "wai-bench: %s: output of %s differs (hash %016" PRIx64
                        ", expected %016" PRIx64 "): aborting\n", name, pol[p].name, h, want);
                exit(1);
            }
            if (keep && !*keep) {
                *keep = out;
                *keep_shape = os;
            } else {
                free(out);
            }
        }
    report(name, want, t, c, macs);
}

/* wai_synthesis() (g_s in stripes, as the decoder runs it, then RGB8) with every policy. */
static void bench_synthesis(const char *name, const WaiModel *m, const WaiGeometry *g,
                            const int32_t *y, double macs)
{
    static double t[MAX_POL][MAX_REPS], c[MAX_POL][MAX_REPS];
    const size_t n = (size_t)g->width * g->height * 3;
    uint8_t *rgb = malloc(n);
    uint64_t want = 0;
    if (!rgb) exit(3);
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < n_pol; k++) {
            const int p = (k + r) % n_pol;
            memset(rgb, 0, n);
            const double t0 = now(), c0 = cpu_now();
            const int err = wai_synthesis(m, &pol[p].dsp, g, y, 0, 0, g->width, g->height, rgb,
                                          (ptrdiff_t)g->width * 3);
            t[p][r] = now() - t0;
            c[p][r] = cpu_now() - c0;
            if (err < 0) {
                fprintf(stderr, "wai-bench: %s: %s failed (%d)\n", name, pol[p].name, err);
                exit(3);
            }
            const uint64_t h = fnv_bytes(rgb, n);
            if (!r && !k) want = h;
            else if (h != want) {
                fprintf(stderr, "wai-bench: %s: output of %s differs: aborting\n", name, pol[p].name);
                exit(1);
            }
        }
    free(rgb);
    report(name, want, t, c, macs);
}

/* wai_hyper() under every policy: the index and the means compared, h_s's MACs per second */
static void bench_hyper(const char *name, const WaiModel *m, const WaiGeometry *g,
                        const int32_t *z, double macs)
{
    static double t[MAX_POL][MAX_REPS], c[MAX_POL][MAX_REPS];
    const size_t ny = (size_t)g->y.c * g->y.h * g->y.w;
    uint8_t *idx = malloc(ny);
    int32_t *mean = malloc(ny * sizeof(*mean));
    uint64_t want = 0;
    if (!idx || !mean) exit(3);
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < n_pol; k++) {
            const int p = (k + r) % n_pol;
            const double t0 = now(), c0 = cpu_now();
            const int err = wai_hyper(m, &pol[p].dsp, g, z, idx, mean);
            t[p][r] = now() - t0;
            c[p][r] = cpu_now() - c0;
            if (err < 0) {
                fprintf(stderr, "wai-bench: %s: %s failed (%d)\n", name, pol[p].name, err);
                exit(3);
            }
            const uint64_t h = fnv_bytes(idx, ny) * 0x100000001b3ull ^ fnv(mean, ny);
            if (!r && !k) want = h;
            else if (h != want) {
                fprintf(stderr, "wai-bench: %s: output of %s differs: aborting\n", name, pol[p].name);
                exit(1);
            }
        }
    free(idx);
    free(mean);
    report(name, want, t, c, macs);
}

static double layer_macs(const WaiLayer *l, WaiShape in, WaiShape out)
{
    const double n = (double)out.c * out.h * out.w;
    switch (l->type) {
    case WAI_LAYER_CONV: return n * l->cin * l->kh * l->kw;
    case WAI_LAYER_CONVT: return (double)in.c * in.h * in.w * l->cout * l->kh * l->kw;
    case WAI_LAYER_IGDN: return n * l->cin;
    default: return 0;
    }
}

static void out_shape(const WaiLayer *l, WaiShape in, WaiShape *out)
{
    *out = in;
    if (l->type == WAI_LAYER_CONV) {
        out->c = l->cout;
        out->h = (in.h + 2 * l->pad - l->kh) / l->stride + 1;
        out->w = (in.w + 2 * l->pad - l->kw) / l->stride + 1;
    } else if (l->type == WAI_LAYER_CONVT) {
        out->c = l->cout;
        out->h = (in.h - 1) * l->stride - 2 * l->pad + l->kh + l->out_pad;
        out->w = (in.w - 1) * l->stride - 2 * l->pad + l->kw + l->out_pad;
    }
}

/* The MACs of a layer list on input shape s */
static double list_macs(const WaiLayer *layers, uint32_t n, WaiShape s)
{
    double total = 0;
    for (uint32_t k = 0; k < n; k++) {
        WaiShape o;
        out_shape(&layers[k], s, &o);
        total += layer_macs(&layers[k], s, o);
        s = o;
    }
    return total;
}

static const char *type_name(int t)
{
    return t == WAI_LAYER_CONV ? "conv" : t == WAI_LAYER_CONVT ? "convT" : t == WAI_LAYER_IGDN ? "IGDN" : "lrelu";
}

static int32_t *rand_act(size_t n, int amp)
{
    int32_t *x = malloc(n * sizeof(*x));
    if (!x) exit(3);
    for (size_t e = 0; e < n; e++) x[e] = (int32_t)rrange(-amp, amp);
    return x;
}

/* A synthetic layer (weights in the model's ranges) for the kernel cases. */
static WaiLayer synth_conv(int type, int cin, int cout, int k, int s, int pad, int op)
{
    WaiLayer l;
    memset(&l, 0, sizeof(l));
    l.type = type;
    l.cin = cin; l.cout = cout; l.kh = l.kw = k; l.stride = s; l.pad = pad; l.out_pad = op;
    const size_t nw = (size_t)cout * cin * k * k;
    l.weight = malloc(nw * sizeof(*l.weight));
    l.shift = malloc((size_t)cout);
    l.bias = malloc((size_t)cout * sizeof(*l.bias));
    if (!l.weight || !l.shift || !l.bias) exit(3);
    for (size_t e = 0; e < nw; e++) l.weight[e] = (int16_t)rrange(-2047, 2047);
    for (int o = 0; o < cout; o++) {
        l.shift[o] = 18;
        l.bias[o] = rrange(-(1 << 20), 1 << 20);
    }
    return l;
}

static void free_layer(WaiLayer *l)
{
    free(l->weight); free(l->shift); free(l->bias); free(l->beta); free(l->gamma);
}

/* Whether the comma-separated list has the exact token. */
static int has_case(const char *list, const char *tok)
{
    const size_t n = strlen(tok);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, tok, n) && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

static int add_policy(Policy *pols, int *np, const char *spec)
{
    char kn[32];
    int threads = 1;
    const char *slash = strchr(spec, '/');
    size_t len = slash ? (size_t)(slash - spec) : strlen(spec);
    if (len >= sizeof(kn)) return -1;
    memcpy(kn, spec, len);
    kn[len] = 0;
    if (slash) threads = atoi(slash + 1);
    WaiKernels k;
    if (wai_kernels_from_name(kn, &k) < 0 || threads < 0 || *np >= MAX_POL) return -1;
    Policy *p = &pols[*np];
    if (wai_dsp_init(&p->dsp, k) < 0) {
        fprintf(stderr, "wai-bench: kernel set %s not available here, skipped\n", kn);
        return 0;
    }
    const int t = wai_dsp_set_threads(&p->dsp, threads);
    snprintf(p->name, sizeof(p->name), "%s/%d%s", kn, t, threads ? "" : "(auto)");
    snprintf(p->kernels, sizeof(p->kernels), "%s", kn);
    (*np)++;
    return 0;
}

/* y_hat of a stream's first frame: the payload is decoded with a table whose whole-graph hook
 * runs h_s on the CPU and, at g_s, keeps its input and stops the decode. */
static const WaiLayer *cap_gs;
static int32_t *cap_y, *cap_z;
static WaiShape cap_shape;

static int capture_layers(void *backend, const WaiLayer *layers, uint32_t n, const int32_t *in,
                          const int shape[3], int32_t **out, int out_shape[3])
{
    const WaiShape s = { shape[0], shape[1], shape[2] };
    if (layers != cap_gs) { /* h_s: its input is z_hat */
        const size_t nz = (size_t)s.c * s.h * s.w;
        if (!cap_z && (cap_z = malloc(nz * sizeof(*cap_z)))) memcpy(cap_z, in, nz * sizeof(*cap_z));
        WaiShape os;
        const int r = wai_run_layers(backend, layers, n, in, s, out, &os);
        out_shape[0] = os.c, out_shape[1] = os.h, out_shape[2] = os.w;
        return r;
    }
    const size_t ny = (size_t)s.c * s.h * s.w;
    cap_y = malloc(ny * sizeof(*cap_y));
    if (!cap_y) return WAI_ERR_NOMEM;
    memcpy(cap_y, in, ny * sizeof(*cap_y));
    cap_shape = s;
    return WAI_ERR_INTERNAL; /* stop: g_s is what the benchmark runs */
}

static int stream_y(const WaiModel *m, const char *path, int *W, int *H)
{
    uint8_t *buf, *rgb;
    size_t size, psize;
    const uint8_t *emb, *payload;
    WaiSequenceInfo info;
    uint32_t idx;
    if (wai_read_file(path, (size_t)1 << 30, &buf, &size) < 0) return -1;
    if (wai_seqhdr_parse(buf, size, &info, &emb) < 0 || info.unit_size > size ||
        wai_frame_parse(buf + info.unit_size, size - info.unit_size, &idx, &payload, &psize) < 0 ||
        memcmp(info.model_sha256, m->sha256, 32) || !(rgb = malloc((size_t)info.width * 3))) {
        free(buf);
        return -1;
    }
    WaiDsp cpu, cap;
    wai_dsp_init(&cpu, WAI_KERNELS_AUTO);
    cap = cpu;
    cap.run_layers = capture_layers;
    cap.backend = &cpu;
    cap_gs = m->gs;
    /* a one-row window: nothing is converted, the decode stops at g_s */
    wai_payload_decode(m, &cap, payload, psize, info.width, info.height, 0, 0, info.width, 1,
                       rgb, (ptrdiff_t)info.width * 3);
    free(rgb);
    free(buf);
    *W = (int)info.width;
    *H = (int)info.height;
    return cap_y ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *policies = "c/1,avx2/1,avx512/1,auto/1,auto/0";
    const char *gs_policies = NULL;
    const char *cases = "synthesis,gs,layers,convt,conv,igdn";
    const char *stream_path = NULL;
    int W = 768, H = 512;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--model") && a + 1 < argc) model_path = argv[++a];
        else if (!strcmp(argv[a], "--size") && a + 1 < argc) {
            if (sscanf(argv[++a], "%dx%d", &W, &H) != 2 || W < 64 || H < 64) return 2;
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--policies") && a + 1 < argc) policies = argv[++a];
        else if (!strcmp(argv[a], "--gs-policies") && a + 1 < argc) gs_policies = argv[++a];
        else if (!strcmp(argv[a], "--cases") && a + 1 < argc) cases = argv[++a];
        else if (!strcmp(argv[a], "--stream") && a + 1 < argc) stream_path = argv[++a];
        else {
            fprintf(stderr, "usage: wai-bench --model M.whm [--size WxH] [--reps N] "
                            "[--policies KERNELS/THREADS,...] [--gs-policies KERNELS/THREADS,...]\n"
                            "       [--cases synthesis,hyper,gs,layers,convt,conv,igdn] [--stream F.wai]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    for (int g = 0; g < 2; g++) {
        const char *list = g ? (gs_policies ? gs_policies : policies) : policies;
        char *pl = strdup(list);
        for (char *tok = strtok(pl, ","); tok; tok = strtok(NULL, ","))
            if (add_policy(g ? pol_g : pol_k, g ? &n_pol_g : &n_pol_k, tok) < 0) {
                fprintf(stderr, "wai-bench: bad policy '%s'\n", tok);
                return 2;
            }
        free(pl);
    }
    if (!n_pol_k || !n_pol_g) return 2;
    printf("wai-bench: %d policies (%d for g_s), %d reps each, interleaved in rotating order\n",
           n_pol_k, n_pol_g, reps);

    WaiModel *m = NULL;
    if (model_path) {
        uint8_t *bytes;
        size_t size;
        char msg[256];
        if (wai_read_file(model_path, (size_t)512 << 20, &bytes, &size) < 0 ||
            wai_model_parse(&m, bytes, size, msg, sizeof(msg)) < 0) {
            fprintf(stderr, "wai-bench: cannot load %s\n", model_path);
            return 3;
        }
        free(bytes);
    }

    pol = pol_g;
    n_pol = n_pol_g;
    if (m && (has_case(cases, "gs") || has_case(cases, "layers") || has_case(cases, "synthesis") ||
              has_case(cases, "hyper"))) {
        WaiGeometry g;
        if (stream_path && stream_y(m, stream_path, &W, &H) < 0) {
            fprintf(stderr, "wai-bench: cannot take y_hat from %s (with this model)\n", stream_path);
            return 3;
        }
        if (wai_geometry(m, (uint32_t)W, (uint32_t)H, &g) < 0) return 3;
        const size_t ny = (size_t)g.y.c * g.y.h * g.y.w;
        int32_t *y = cap_y;
        if (y && (cap_shape.c != g.y.c || cap_shape.h != g.y.h || cap_shape.w != g.y.w)) return 3;
        if (!y) {
            y = malloc(ny * sizeof(*y));
            for (size_t e = 0; e < ny; e++) /* y_hat-like: small integers in Q12 plus a mean */
                y[e] = (int32_t)(rrange(-2, 2) * 4096 + rrange(-2048, 2048));
        }
        const double total = list_macs(m->gs, m->n_gs, g.y);
        WaiShape s = g.y;
        char title[256];
        if (has_case(cases, "hyper")) {
            const size_t nz = (size_t)g.z.c * g.z.h * g.z.w;
            int32_t *z = cap_z;
            if (!z) {
                z = malloc(nz * sizeof(*z));
                for (size_t e = 0; e < nz; e++) z[e] = (int32_t)(rrange(-3, 3) * 4096); /* z_hat-like */
            }
            const double hs_macs = list_macs(m->hs, m->n_hs, g.z);
            snprintf(title, sizeof(title), "hyper (h_s as the decoder runs it, index and means) %s, "
                     "%dx%d (z %s)", m->name, W, H, cap_z ? "the stream's" : "random");
            bench_hyper(title, m, &g, z, hs_macs);
            if (z != cap_z) free(z);
        }
        if (has_case(cases, "synthesis")) {
            snprintf(title, sizeof(title), "synthesis (g_s in the decoder's stripes, RGB8) %s, %dx%d (y %s)",
                     m->name, W, H, cap_y ? "the stream's" : "random");
            bench_synthesis(title, m, &g, y, total);
        }
        if (has_case(cases, "gs")) {
            snprintf(title, sizeof(title), "g_s %s, %dx%d (y %dx%dx%d%s)", m->name, W, H, g.y.c,
                     g.y.h, g.y.w, cap_y ? ", the stream's" : ", random");
            bench_layers(title, m->gs, m->n_gs, y, g.y, total, NULL, NULL);
        }
        if (has_case(cases, "layers")) {
            int32_t *cur = y;
            s = g.y;
            for (uint32_t k = 0; k < m->n_gs; k++) {
                const WaiLayer *l = &m->gs[k];
                WaiShape o;
                out_shape(l, s, &o);
                snprintf(title, sizeof(title), "g_s layer %u: %s %dx%dx%d -> %dx%dx%d", k,
                         type_name(l->type), s.c, s.h, s.w, o.c, o.h, o.w);
                int32_t *next = NULL;
                WaiShape ns;
                bench_layers(title, l, 1, cur, s, layer_macs(l, s, o), &next, &ns);
                if (cur != y) free(cur);
                cur = next;
                s = ns;
            }
            if (cur != y) free(cur);
        }
        free(y);
        free(cap_z);
    }
    pol = pol_k;
    n_pol = n_pol_k;
    if (has_case(cases, "convt")) {
        WaiLayer l = synth_conv(WAI_LAYER_CONVT, 192, 192, 5, 2, 2, 1);
        int32_t *x = rand_act((size_t)192 * 64 * 64, 1 << 14);
        bench_layers("convT 192->192 k5 s2 p2 op1, 64x64 -> 128x128", &l, 1, x,
                     (WaiShape){ 192, 64, 64 }, 192.0 * 192 * 25 * 64 * 64, NULL, NULL);
        free(x);
        free_layer(&l);
    }
    if (has_case(cases, "conv")) {
        WaiLayer l = synth_conv(WAI_LAYER_CONV, 192, 192, 3, 1, 1, 0);
        int32_t *x = rand_act((size_t)192 * 64 * 64, 1 << 14);
        bench_layers("conv 192->192 k3 s1 p1, 64x64", &l, 1, x, (WaiShape){ 192, 64, 64 },
                     192.0 * 192 * 9 * 64 * 64, NULL, NULL);
        free(x);
        free_layer(&l);
    }
    if (has_case(cases, "igdn")) {
        WaiLayer l;
        memset(&l, 0, sizeof(l));
        l.type = WAI_LAYER_IGDN;
        l.cin = l.cout = 192;
        l.gamma_shift = 16;
        l.beta = malloc(192 * sizeof(*l.beta));
        l.gamma = malloc(192 * 192 * sizeof(*l.gamma));
        for (int i = 0; i < 192; i++) l.beta[i] = ((int64_t)1 << 28) + rrange(-(1 << 24), 1 << 24);
        for (int e = 0; e < 192 * 192; e++) l.gamma[e] = (int32_t)(e % 193 ? rrange(66, 655) : rrange(5243, 7864));
        int32_t *x = rand_act((size_t)192 * 128 * 128, 1 << 14);
        bench_layers("IGDN 192 ch, 128x128", &l, 1, x, (WaiShape){ 192, 128, 128 },
                     192.0 * 192 * 128 * 128, NULL, NULL);
        free(x);
        free_layer(&l);
    }
    wai_model_free(m);
    return 0;
}
