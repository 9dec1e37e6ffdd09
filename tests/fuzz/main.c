/* Fallback driver when no fuzzing engine is linked: runs LLVMFuzzerTestOneInput on each file
 * given (or every file of each directory given), so the seed corpora run in the normal tests. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); return 1; }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *b = realloc(buf, cap);
            if (!b) { free(buf); fclose(f); return 1; }
            buf = b;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        if (!k) break;
        n += k;
    }
    fclose(f);
    /* exact-size copy so an overread is caught by ASan */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) { free(buf); return 1; }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) { fprintf(stderr, "cannot stat %s\n", argv[i]); return 1; }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.') continue;
                char p[4096];
                snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
                rc |= run_file(p);
                files++;
            }
            if (d) closedir(d);
        } else {
            rc |= run_file(argv[i]);
            files++;
        }
    }
    printf("ran %d inputs\n", files);
    return rc;
}
