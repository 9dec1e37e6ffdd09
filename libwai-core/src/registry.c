/* Model files on disk: bounded file reading and the model search path.
 *
 * Search order of wai_model_find (first match wins):
 *   1. each directory of `dirs` (':'-separated, empty entries skipped; may be NULL),
 *   2. each directory of $WAI_MODEL_PATH (same syntax),
 *   3. WAI_MODEL_DIR, the installed $datadir/wai/models (compile-time define).
 * In each directory: first <dir>/<64 lower-case hex of the SHA-256>.whm, then every other
 * regular file whose name ends in ".whm" (the build installs descriptive names such as
 * wai-tiny-n64m96.whm), in readdir order. A candidate matches when the SHA-256 of its bytes is
 * the one asked for; files above the caller's limit (at most WAI_MODEL_MAX_FILE bytes) or
 * unreadable are skipped, before they are read. Since a match is identified by its hash, the
 * result does not depend on the scan order. */
#include "model.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef WAI_MODEL_DIR
#define WAI_MODEL_DIR ""
#endif

#define WAI_MODEL_MAX_FILE ((size_t)512 << 20)

int wai_read_file(const char *path, size_t max_size, uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    /* O_NONBLOCK: a FIFO in a model directory must not hang the scan (regular files ignore it) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return WAI_ERR_IO;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 0) {
        close(fd);
        return WAI_ERR_IO;
    }
    if ((uint64_t)st.st_size > max_size) {
        close(fd);
        return WAI_ERR_LIMIT;
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return WAI_ERR_NOMEM;
    }
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;              /* error, or the file shrank under us */
        got += (size_t)k;
    }
    close(fd);
    if (got != n) {
        free(buf);
        return WAI_ERR_IO;
    }
    *out = buf;
    *size = n;
    return 0;
}

static char *join_path(const char *dir, size_t dlen, const char *name)
{
    size_t nlen = strlen(name);
    char *p = malloc(dlen + nlen + 2);
    if (!p) return NULL;
    memcpy(p, dir, dlen);
    p[dlen] = '/';
    memcpy(p + dlen + 1, name, nlen + 1);
    return p;
}

/* What a search saw besides the match: the file under the exact name differed (mismatch), a
 * candidate was larger than the caller's limit (oversized). */
typedef struct Search {
    const uint8_t *sha;
    const char *want;
    size_t max_size;
    int mismatch, oversized;
} Search;

/* 1: *out holds a file with the wanted hash; 0: not this file; < 0: out of memory. */
static int try_file(const char *path, Search *q, int exact, uint8_t **out, size_t *size)
{
    uint8_t *buf, got[32];
    size_t n;
    int ret = wai_read_file(path, q->max_size, &buf, &n);
    if (ret == WAI_ERR_NOMEM) return ret;
    if (ret < 0) {
        /* an unreadable or oversized file under the exact name cannot be the model either */
        if (ret == WAI_ERR_LIMIT) {
            q->oversized = 1;
            if (exact) q->mismatch = 1;
        }
        return 0;
    }
    wai_sha256(buf, n, got);
#ifndef WAI_PLANTED_FAULT_REGISTRY_NOHASH
    if (memcmp(got, q->sha, 32)) {
        if (exact) q->mismatch = 1;
        free(buf);
        return 0;
    }
#endif
    *out = buf;
    *size = n;
    return 1;
}

static int has_whm_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, ".whm");
}

static int search_dir(const char *dir, size_t dlen, Search *q, uint8_t **out, size_t *size)
{
    char *path = join_path(dir, dlen, q->want);
    if (!path) return WAI_ERR_NOMEM;
    int ret = try_file(path, q, 1, out, size);
    free(path);
    if (ret) return ret;

    char *d = join_path(dir, dlen, ".");   /* a NUL-terminated copy of the directory */
    if (!d) return WAI_ERR_NOMEM;
    DIR *dh = opendir(d);
    free(d);
    if (!dh) return 0;
    struct dirent *e;
    while (!ret && (e = readdir(dh))) {
        if (!has_whm_suffix(e->d_name) || !strcmp(e->d_name, q->want)) continue;
        if (!(path = join_path(dir, dlen, e->d_name))) {
            ret = WAI_ERR_NOMEM;
            break;
        }
        ret = try_file(path, q, 0, out, size);
        free(path);
    }
    closedir(dh);
    return ret;
}

static int search_list(const char *list, Search *q, uint8_t **out, size_t *size)
{
    const char *dir;
    size_t len;
    while (wai_path_next(&list, &dir, &len)) {
        int ret = search_dir(dir, len, q, out, size);
        if (ret) return ret;
    }
    return 0;
}

int wai_model_find(const char *dirs, const uint8_t sha[32], size_t max_size, uint8_t **out,
                   size_t *size)
{
    char want[64 + 5];
    int ret;
    *out = NULL;
    *size = 0;
    wai_sha256_hex(sha, want);
    memcpy(want + 64, ".whm", 5);
    Search q = { sha, want, max_size < WAI_MODEL_MAX_FILE ? max_size : WAI_MODEL_MAX_FILE, 0, 0 };
    const char *lists[3] = { dirs, getenv("WAI_MODEL_PATH"), WAI_MODEL_DIR };
    for (int i = 0; i < 3; i++) {
        if ((ret = search_list(lists[i], &q, out, size)))
            return ret < 0 ? ret : 0;
    }
    return q.oversized ? WAI_ERR_LIMIT : q.mismatch ? WAI_ERR_MODEL_INVALID
                                                    : WAI_ERR_MODEL_NOT_FOUND;
}
