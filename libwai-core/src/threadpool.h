/* A small pthread pool: one call runs n_jobs independent jobs on the workers and the calling
 * thread, and returns when all are done. Used by the graph to split a layer's output rows. */
#ifndef WAI_THREADPOOL_H
#define WAI_THREADPOOL_H

/* Largest thread count honoured (more are clamped: the row split gains nothing beyond it). */
#define WAI_THREADS_MAX 64

typedef struct WaiPool WaiPool;

/* threads - 1 workers are started (the caller is the last one). Returns 0, WAI_ERR_NOMEM or
 * WAI_ERR_INTERNAL (a thread could not be started); *out is NULL on failure. */
int wai_pool_create(WaiPool **out, int threads);

/* Runs fn(ctx, j) for every j in [0, n_jobs), each exactly once, in any order and on any
 * thread; returns when all have returned. Not reentrant (one run at a time per pool). */
void wai_pool_run(WaiPool *p, void (*fn)(void *ctx, int job), void *ctx, int n_jobs);

int wai_pool_threads(const WaiPool *p);
void wai_pool_destroy(WaiPool **p);

/* The thread count for a request: n > 0 is taken (clamped to WAI_THREADS_MAX); 0 means
 * automatic: $WAI_THREADS if it is a positive integer, else the online CPUs. */
int wai_threads_resolve(int n);

#endif
