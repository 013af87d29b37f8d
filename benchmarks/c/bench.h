/*
 * bench.h — the small harness shared by the C benchmark programs (header-only).
 *
 * All functions are static inline (a program may use only some). A case is a function that verifies (in the
 * `sign` group: creates) input i, checks the result (calling bench_fail on any failure, which exits with status 1)
 * and returns how many JWS it verified (created). bench_measure runs one untimed pass over every input
 * (warm-up, and a check of every vector), then `runs` timed runs, each cycling over the inputs until `seconds`
 * have elapsed, and prints the best run as
 *   RESULT <impl> <case> <calls per second> <JWS verified per call>
 * for benchmarks/run to pair with the floor.
 */
#ifndef APPSTORE_BENCH_H
#define APPSTORE_BENCH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char *data; /* NUL-terminated */
    size_t len;
} bench_line;

typedef struct {
    bench_line *items;
    size_t count;
} bench_lines;

typedef struct {
    const char *vectors; /* folder written by gen_vectors.py */
    double seconds;      /* time budget of one run */
    int runs;            /* best of this many runs */
    const char *only;    /* comma-separated case names, or NULL for all */
    void (*after_run)(void *ctx); /* optional: called with the case's ctx after each timed run (e.g. to check
                                     and print a sample of that run); NULL = nothing */
} bench_options;

static inline void bench_fail(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "FAILED: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline unsigned char *bench_read_file(const char *path, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) bench_fail("cannot open %s", path);
    if (fseek(f, 0, SEEK_END) != 0) bench_fail("cannot seek %s", path);
    long n = ftell(f);
    if (n < 0) bench_fail("cannot size %s", path);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    if (!buf) bench_fail("out of memory reading %s", path);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) bench_fail("cannot read %s", path);
    fclose(f);
    buf[n] = 0;
    *len_out = (size_t)n;
    return buf;
}

/* One JWS per non-empty line. The strings point into one buffer that lives until exit. */
static inline bench_lines bench_read_lines(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    char *buf = (char *)bench_read_file(path, &len);
    bench_lines out = {NULL, 0};
    size_t cap = 0;
    char *p = buf, *end = buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        char *e = stop;
        while (e > p && (e[-1] == '\r' || e[-1] == ' ')) e--;
        if (e > p) {
            if (out.count == cap) {
                cap = cap ? cap * 2 : 256;
                out.items = realloc(out.items, cap * sizeof *out.items);
                if (!out.items) bench_fail("out of memory");
            }
            *e = 0;
            out.items[out.count].data = p;
            out.items[out.count].len = (size_t)(e - p);
            out.count++;
        }
        p = stop + 1;
    }
    if (out.count == 0) bench_fail("%s has no JWS lines", path);
    return out;
}

static inline int bench_wants(const bench_options *o, const char *name) {
    if (!o->only || !*o->only) return 1;
    size_t n = strlen(name);
    for (const char *p = o->only; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

typedef int (*bench_case_fn)(void *ctx, size_t index, const bench_line *input);

static inline void bench_measure(const bench_options *o, const char *impl, const char *name, const bench_lines *inputs,
                          bench_case_fn fn, void *ctx) {
    if (!bench_wants(o, name)) return;
    for (size_t i = 0; i < inputs->count; i++) (void)fn(ctx, i, &inputs->items[i]);
    double best = 0, best_jws_per_call = 0;
    for (int r = 0; r < o->runs; r++) {
        unsigned long long calls = 0, jws = 0;
        size_t i = 0;
        double start = bench_now(), elapsed;
        do {
            jws += (unsigned long long)fn(ctx, i, &inputs->items[i]);
            calls++;
            if (++i == inputs->count) i = 0;
            elapsed = bench_now() - start;
        } while (elapsed < o->seconds);
        double rate = (double)calls / elapsed;
        if (o->after_run) o->after_run(ctx);
        if (rate > best) {
            best = rate;
            best_jws_per_call = (double)jws / (double)calls;
        }
    }
    printf("RESULT %s %s %.1f %.4f\n", impl, name, best, best_jws_per_call);
    fflush(stdout);
}

/* PROGRAM VECTORS_DIR [--seconds S] [--runs N] [--only CASE,...]  (the `sign` programs pass their key file as
 * VECTORS_DIR: the one positional argument) */
static inline bench_options bench_parse(int argc, char **argv) {
    bench_options o = {NULL, 1.5, 3, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) o.seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) o.runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) o.only = argv[++i];
        else if (argv[i][0] != '-' && !o.vectors) o.vectors = argv[i];
        else o.vectors = NULL, i = argc; /* force usage */
    }
    if (!o.vectors || o.seconds <= 0 || o.runs < 1) {
        fprintf(stderr, "usage: %s VECTORS_DIR [--seconds S] [--runs N] [--only CASE,...]\n", argv[0]);
        exit(2);
    }
    return o;
}

#endif
