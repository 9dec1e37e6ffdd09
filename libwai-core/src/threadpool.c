/* Thread pool (see threadpool.h). Jobs are handed out one at a time under the mutex: they are
 * large (a band of output rows of a layer), so the lock is not contended. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"
#include "threadpool.h"

/* The reference kernels keep tiles on the stack (conv 2 KiB, IGDN 32 KiB): 1 MiB leaves
 * ample room and does not depend on the system default. */
#define WORKER_STACK (1u << 20)

struct WaiPool {
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    pthread_t *tid;
    int n_workers;
    /* the current run */
    void (*fn)(void *, int);
    void *ctx;
    int n_jobs, next, active; /* active: jobs started and not finished */
    unsigned gen;             /* bumped per run, so a worker sees each run once */
    int quit;
};

/* Takes and runs jobs of the current run until none is left. Called with the lock held. */
static void drain(WaiPool *p)
{
    while (p->next < p->n_jobs) {
        const int j = p->next++;
        p->active++;
        pthread_mutex_unlock(&p->lock);
        p->fn(p->ctx, j);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0 && p->next >= p->n_jobs) pthread_cond_broadcast(&p->done);
    }
}

static void *worker(void *arg)
{
    WaiPool *p = arg;
    unsigned seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->gen == seen) pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit) break;
        seen = p->gen;
        drain(p);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int wai_pool_threads(const WaiPool *p) { return p ? p->n_workers + 1 : 1; }

void wai_pool_destroy(WaiPool **pp)
{
    WaiPool *p = pp ? *pp : NULL;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int k = 0; k < p->n_workers; k++) pthread_join(p->tid[k], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->tid);
    free(p);
    *pp = NULL;
}

int wai_pool_create(WaiPool **out, int threads)
{
    *out = NULL;
    if (threads < 1) threads = 1;
    if (threads > WAI_THREADS_MAX) threads = WAI_THREADS_MAX;
    WaiPool *p = calloc(1, sizeof(*p));
    if (!p) return WAI_ERR_NOMEM;
    if (!(p->tid = calloc((size_t)threads, sizeof(*p->tid)))) {
        free(p);
        return WAI_ERR_NOMEM;
    }
    if (pthread_mutex_init(&p->lock, NULL)) goto fail_mutex;
    if (pthread_cond_init(&p->wake, NULL)) goto fail_wake;
    if (pthread_cond_init(&p->done, NULL)) goto fail_done;

    pthread_attr_t attr;
    int have_attr = !pthread_attr_init(&attr);
    if (have_attr) pthread_attr_setstacksize(&attr, WORKER_STACK);
    int r = 0;
    for (int k = 0; k < threads - 1; k++) {
        if (pthread_create(&p->tid[k], have_attr ? &attr : NULL, worker, p)) {
            r = WAI_ERR_INTERNAL;
            break;
        }
        p->n_workers++;
    }
    if (have_attr) pthread_attr_destroy(&attr);
    if (r) {
        wai_pool_destroy(&p);
        return r;
    }
    *out = p;
    return 0;
fail_done:
    pthread_cond_destroy(&p->wake);
fail_wake:
    pthread_mutex_destroy(&p->lock);
fail_mutex:
    free(p->tid);
    free(p);
    return WAI_ERR_INTERNAL;
}

void wai_pool_run(WaiPool *p, void (*fn)(void *ctx, int job), void *ctx, int n_jobs)
{
    if (n_jobs <= 0) return;
    if (!p || !p->n_workers || n_jobs == 1) {
        for (int j = 0; j < n_jobs; j++) fn(ctx, j);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n_jobs = n_jobs;
    p->next = 0;
    p->active = 0;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    drain(p);
    while (p->active || p->next < p->n_jobs) pthread_cond_wait(&p->done, &p->lock);
    p->fn = NULL;
    p->n_jobs = 0;
    pthread_mutex_unlock(&p->lock);
}

int wai_threads_resolve(int n)
{
    if (n <= 0) {
        const char *env = getenv("WAI_THREADS");
        n = 0;
        if (env && *env) {
            char *end;
            errno = 0;
            const long v = strtol(env, &end, 10);
            if (!errno && !*end && v > 0) n = v > WAI_THREADS_MAX ? WAI_THREADS_MAX : (int)v;
        }
        if (!n) {
            const long c = sysconf(_SC_NPROCESSORS_ONLN);
            n = c < 1 ? 1 : c > WAI_THREADS_MAX ? WAI_THREADS_MAX : (int)c;
        }
    }
    return n > WAI_THREADS_MAX ? WAI_THREADS_MAX : n;
}
