/*
 * ledger_bench: the `ledger` group — the purchase ledger through the C ABI, against the verify-only rate of the same
 * notifications measured in the same run (benchmarks/README.md, "Group ledger").
 *
 *   ledger_bench VECTORS_DIR WORK_DIR [--seconds S] [--runs N] [--callers N] [--postgresql URL] [--pg-callers N]
 *                [--fleet N] [--only CASE,...]
 *
 * VECTORS_DIR: benchmarks/lib/ledger_vectors.py's output. WORK_DIR: where the SQLite files go (a real disk: the
 * durable cases wait for it). Cases, each the best of N runs:
 *   verify_deep        appstore_verifier_verify_notification_deep over the notifications, nothing stored: the
 *                      verify-only rate every other line is compared with (ratio_to_verify)
 *   ingest_sqlite      appstore_ledger_ingest_notification into a fresh SQLite file, one caller: each call verifies
 *                      deeply and returns once its event is durable (WAL, synchronous=FULL: one fsync per commit)
 *   ingest_sqlite_callers  the same with --callers threads (default 16) ingesting at once, on the same core: the
 *                      ledger commits what is waiting together, each call still returning only after the commit
 *                      that holds its event
 *   ingest_memory      the same into sqlite::memory: (nothing durable: the ledger's CPU cost alone)
 *   fsync_floor        the disk: append 16 KiB and fdatasync, one writer (what one durable commit costs at least)
 *   customer_query     appstore_ledger_query_customer for one customer (query.txt), on the ledger ingest_sqlite
 *                      wrote, JSON out and freed: entitlement queries per second
 *   ingest_postgresql_2proc  with --postgresql URL: two processes (forked, each with its own ledger on the same
 *                      database) ingesting distinct notifications at once, one caller each, durable (the server's
 *                      commit); the rate is both together. Each run has a schema of its own (`?schema=`), so every run
 *                      starts from an empty ledger and may use every notification.
 *   ingest_postgresql_2x8  the same with --pg-callers threads (default 8) in each process: each process commits what
 *                      its callers have waiting together (group commit), the processes take turns (the writers' lock)
 *   fleet_postgresql   --fleet N processes (default 2) with --pg-callers threads each ingest distinct notifications at
 *                      once into one schema; then every process answers the same queries (the summary, and every
 *                      customer of customers.txt at its instant) and the answers are compared byte for byte: prints
 *                      `FLEET ledger postgresql processes=N ingest=R/s identical=yes|no` (no: the run fails)
 * Every call's status is checked; a failure aborts with the library's message.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <appstoreserver.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

static void die_on(appstore_status st, appstore_error *err, const char *what) {
    if (st == APPSTORE_OK) return;
    bench_fail("%s: %s / %s: %s", what, appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)),
               appstore_error_message(err));
}

static bench_lines notes;
static appstore_verifier *verifier;
static const char *work;
static double seconds = 1.5;
static int runs = 3;
static int callers = 16;
static const char *only;
static const char *postgresql;
static int pg_callers = 8;
static int fleet = 2;
static bench_lines customers;

static int wants(const char *name) {
    bench_options o = {NULL, 0, 0, only, NULL};
    return bench_wants(&o, name);
}

static void report(const char *name, double rate, double verify_rate, const char *what) {
    printf("RESULT ledger %s %.1f %.4f\n", name, rate, verify_rate > 0 ? rate / verify_rate : 1.0);
    printf("INFO ledger %s %s\n", name, what);
    fflush(stdout);
}

static void ingest_one(appstore_ledger *l, size_t i) {
    char *result = NULL;
    appstore_error *err = NULL;
    die_on(appstore_ledger_ingest_notification(l, notes.items[i].data, notes.items[i].len, &result, &err), err,
           "ingest");
    if (!result || !strstr(result, "\"stored\":true")) bench_fail("ingest #%zu: not stored: %s", i, result);
    appstore_string_free(result);
}

static appstore_ledger *open_ledger(const char *url) {
    appstore_ledger *l = NULL;
    appstore_error *err = NULL;
    die_on(appstore_ledger_open(url, verifier, &l, &err), err, url);
    return l;
}

static void remove_db(const char *path) {
    char p[4400];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* One caller: distinct notifications from the first, until the time budget or the vectors run out. */
static double ingest_sequential(const char *url) {
    appstore_ledger *l = open_ledger(url);
    size_t n = 0;
    double start = bench_now(), elapsed;
    do {
        ingest_one(l, n++);
        elapsed = bench_now() - start;
    } while (elapsed < seconds && n < notes.count);
    appstore_ledger_free(l);
    return (double)n / elapsed;
}

typedef struct {
    appstore_ledger *ledger;
    atomic_size_t next;
    double deadline;
} shared_run;

static void *caller_main(void *arg) {
    shared_run *s = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&s->next, 1);
        if (i >= notes.count || bench_now() >= s->deadline) break;
        ingest_one(s->ledger, i);
    }
    return NULL;
}

static double ingest_concurrent(const char *url) {
    shared_run s;
    s.ledger = open_ledger(url);
    atomic_init(&s.next, 0);
    pthread_t t[64];
    int n = callers < 64 ? callers : 64;
    double start = bench_now();
    s.deadline = start + seconds;
    for (int k = 0; k < n; k++)
        if (pthread_create(&t[k], NULL, caller_main, &s) != 0) bench_fail("pthread_create");
    for (int k = 0; k < n; k++) pthread_join(t[k], NULL);
    double elapsed = bench_now() - start;
    size_t done = atomic_load(&s.next);
    if (done > notes.count) done = notes.count;
    /* Every index handed out below the count was ingested, except the ones taken after the deadline. */
    char *summary = NULL;
    appstore_error *err = NULL;
    die_on(appstore_ledger_query_summary(s.ledger, &summary, &err), err, "summary");
    const char *ev = strstr(summary, "\"events\":");
    size_t events = ev ? (size_t)strtoull(ev + 9, NULL, 10) : 0;
    appstore_string_free(summary);
    appstore_ledger_free(s.ledger);
    (void)done;
    return (double)events / elapsed;
}

/* `url` with `?schema=NAME` (or `&schema=NAME`): a schema of its own for each run. */
static void schema_url(char *out, size_t size, const char *url, const char *name, int run) {
    snprintf(out, size, "%s%cschema=bench_%s_%d_%d", url, strchr(url, '?') ? '&' : '?', name, run, (int)getpid());
}

typedef struct {
    appstore_ledger *ledger;
    atomic_size_t next;
    size_t to, stride, offset;
    double deadline;
    atomic_size_t done;
} stride_run;

/* A caller of one process: indexes offset, offset + stride, ... below `to`, until the deadline. */
static void *stride_caller(void *arg) {
    stride_run *s = arg;
    for (;;) {
        size_t i = s->offset + atomic_fetch_add(&s->next, 1) * s->stride;
        if (i >= s->to || bench_now() >= s->deadline) break;
        ingest_one(s->ledger, i);
        atomic_fetch_add(&s->done, 1);
    }
    return NULL;
}

/* FNV-1a over the answers, in order. */
static uint64_t fnv(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (h ^ 0xff) * 0x100000001b3ULL;
}

/* The answers to the fleet's queries: the summary and every customer of customers.txt at its instant. */
static uint64_t answers(appstore_ledger *l) {
    uint64_t h = 0xcbf29ce484222325ULL;
    appstore_error *err = NULL;
    char *json = NULL;
    die_on(appstore_ledger_query_summary(l, &json, &err), err, "summary");
    h = fnv(h, json);
    appstore_string_free(json);
    for (size_t i = 0; i < customers.count; i++) {
        char customer[256];
        long long at = 0;
        if (sscanf(customers.items[i].data, "%255s %lld", customer, &at) != 2) bench_fail("customers.txt: CUSTOMER AT_MS");
        json = NULL;
        die_on(appstore_ledger_query_customer(l, customer, at, 0, &json, &err), err, "query_customer");
        h = fnv(h, json);
        appstore_string_free(json);
    }
    return h;
}

/* `procs` processes (forked, each with its own ledger on `url`) with `threads` callers each, ingesting the
 * notifications below `to` (process k every procs-th from k) until the deadline; the rate of all together. With
 * `hashes`, each process then answers the fleet's queries once every process has finished ingesting (a barrier
 * through the parent), and hashes[k] is process k's answers' hash. */
static double ingest_processes(const char *url, size_t to, int procs, int threads, uint64_t *hashes) {
    int up[16][2], down[16][2];
    pid_t pids[16];
    if (procs > 16) procs = 16;
    if (threads > 64) threads = 64;
    double start = bench_now(), deadline = start + seconds;
    for (int k = 0; k < procs; k++) {
        if (pipe(up[k]) != 0 || pipe(down[k]) != 0) bench_fail("pipe");
        pids[k] = fork();
        if (pids[k] < 0) bench_fail("fork");
        if (pids[k] == 0) {
            stride_run s;
            s.ledger = open_ledger(url);
            atomic_init(&s.next, 0);
            atomic_init(&s.done, 0);
            s.to = to;
            s.stride = (size_t)procs;
            s.offset = (size_t)k;
            s.deadline = deadline;
            pthread_t t[64];
            for (int c = 0; c < threads; c++)
                if (pthread_create(&t[c], NULL, stride_caller, &s) != 0) bench_fail("pthread_create");
            for (int c = 0; c < threads; c++) pthread_join(t[c], NULL);
            size_t n = atomic_load(&s.done);
            if (write(up[k][1], &n, sizeof n) != (ssize_t)sizeof n) _exit(1);
            if (hashes) {
                char go;
                if (read(down[k][0], &go, 1) != 1) _exit(1);
                uint64_t h = answers(s.ledger);
                if (write(up[k][1], &h, sizeof h) != (ssize_t)sizeof h) _exit(1);
            }
            appstore_ledger_free(s.ledger);
            _exit(0);
        }
        close(up[k][1]);
        close(down[k][0]);
    }
    size_t total = 0;
    for (int k = 0; k < procs; k++) {
        size_t n = 0;
        if (read(up[k][0], &n, sizeof n) != (ssize_t)sizeof n) bench_fail("a PostgreSQL writer failed");
        total += n;
    }
    double elapsed = bench_now() - start;
    for (int k = 0; k < procs; k++) {
        if (hashes) {
            if (write(down[k][1], "g", 1) != 1) bench_fail("a PostgreSQL process is gone");
            if (read(up[k][0], &hashes[k], sizeof hashes[k]) != (ssize_t)sizeof hashes[k])
                bench_fail("a PostgreSQL process failed to answer");
        }
        close(up[k][0]);
        close(down[k][1]);
        int status = 0;
        waitpid(pids[k], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) bench_fail("a PostgreSQL process exited with %d", status);
    }
    return (double)total / elapsed;
}

static double fsync_floor(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/fsync-floor.bin", work);
    static char block[16384];
    memset(block, 'x', sizeof block);
    double best = 0;
    for (int r = 0; r < runs; r++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) bench_fail("cannot create %s", path);
        size_t n = 0;
        double start = bench_now(), elapsed;
        do {
            if (write(fd, block, sizeof block) != (ssize_t)sizeof block) bench_fail("write %s", path);
            if (fdatasync(fd) != 0) bench_fail("fdatasync %s", path);
            n++;
            elapsed = bench_now() - start;
        } while (elapsed < seconds);
        close(fd);
        unlink(path);
        if ((double)n / elapsed > best) best = (double)n / elapsed;
    }
    return best;
}

int main(int argc, char **argv) {
    const char *vectors = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--callers") == 0 && i + 1 < argc) callers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--postgresql") == 0 && i + 1 < argc) postgresql = argv[++i];
        else if (strcmp(argv[i], "--pg-callers") == 0 && i + 1 < argc) pg_callers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--fleet") == 0 && i + 1 < argc) fleet = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !vectors) vectors = argv[i];
        else if (argv[i][0] != '-' && !work) work = argv[i];
        else vectors = NULL, i = argc;
    }
    if (!vectors || !work || seconds <= 0 || runs < 1 || callers < 1 || pg_callers < 1 || fleet < 2 || fleet > 16) {
        fprintf(stderr, "usage: %s VECTORS_DIR WORK_DIR [--seconds S] [--runs N] [--callers N] [--postgresql URL] "
                        "[--pg-callers N] [--fleet 2..16] [--only CASE,...]\n",
                argv[0]);
        return 2;
    }
    notes = bench_read_lines(vectors, "notifications.txt");
    char path[4200];
    snprintf(path, sizeof path, "%s/root.der", vectors);
    size_t root_len = 0;
    unsigned char *root = bench_read_file(path, &root_len);
    bench_lines bundle = bench_read_lines(vectors, "bundle.txt");
    bench_lines query = bench_read_lines(vectors, "query.txt");
    customers = bench_read_lines(vectors, "customers.txt");
    char customer[256];
    long long at = 0;
    if (sscanf(query.items[0].data, "%255s %lld", customer, &at) != 2) bench_fail("query.txt: CUSTOMER AT_MS");

    appstore_verifier_options *opts = NULL;
    appstore_error *err = NULL;
    die_on(appstore_verifier_options_new(&opts, &err), err, "options_new");
    die_on(appstore_verifier_options_add_root(opts, root, root_len, &err), err, "add_root");
    die_on(appstore_verifier_options_set_bundle_id(opts, bundle.items[0].data, &err), err, "set_bundle_id");
    die_on(appstore_verifier_options_set_environment(opts, APPSTORE_ENVIRONMENT_SANDBOX, &err), err, "environment");
    die_on(appstore_verifier_new(opts, &verifier, &err), err, "verifier_new");
    appstore_verifier_options_free(opts);

    /* verify_deep: the same notifications, verified deeply, JSON out and freed; the first pass checks each. (Left
     * out only when --only names other cases: the ratios are then against 0.) */
    double verify = 0;
    for (size_t i = 0; i < (wants("verify_deep") ? notes.count : 0); i++) {
        char *json = NULL;
        die_on(appstore_verifier_verify_notification_deep(verifier, notes.items[i].data, notes.items[i].len, &json,
                                                          &err), err, "verify_notification_deep");
        appstore_string_free(json);
    }
    for (int r = 0; r < (wants("verify_deep") ? runs : 0); r++) {
        size_t i = 0, n = 0;
        double start = bench_now(), elapsed;
        do {
            char *json = NULL;
            die_on(appstore_verifier_verify_notification_deep(verifier, notes.items[i].data, notes.items[i].len,
                                                              &json, &err), err, "verify_notification_deep");
            appstore_string_free(json);
            n++;
            if (++i == notes.count) i = 0;
            elapsed = bench_now() - start;
        } while (elapsed < seconds);
        if ((double)n / elapsed > verify) verify = (double)n / elapsed;
    }
    if (wants("verify_deep"))
        report("verify_deep", verify, verify, "notifications verified deeply (the notification and its nested JWS), nothing stored");

    char db[4200], url[4300];
    snprintf(db, sizeof db, "%s/ledger.db", work);
    snprintf(url, sizeof url, "sqlite:%s", db);
    if (wants("ingest_sqlite") || wants("customer_query")) {
        double best = 0;
        for (int r = 0; r < runs; r++) {
            remove_db(db);
            double rate = ingest_sequential(url);
            if (rate > best) best = rate;
        }
        report("ingest_sqlite", best, verify, "durable SQLite file (WAL, synchronous=FULL), one caller");
    }
    if (wants("customer_query")) {
        appstore_ledger *l = open_ledger(url);
        char *json = NULL;
        die_on(appstore_ledger_query_customer(l, customer, at, 0, &json, &err), err, "query_customer");
        if (!strstr(json, "\"entitlements\":[{")) bench_fail("customer %s at %lld has no entitlement: %s", customer, at, json);
        appstore_string_free(json);
        double best = 0;
        for (int r = 0; r < runs; r++) {
            size_t n = 0;
            double start = bench_now(), elapsed;
            do {
                json = NULL;
                die_on(appstore_ledger_query_customer(l, customer, at, 0, &json, &err), err, "query_customer");
                appstore_string_free(json);
                n++;
                elapsed = bench_now() - start;
            } while (elapsed < seconds);
            if ((double)n / elapsed > best) best = (double)n / elapsed;
        }
        appstore_ledger_free(l);
        report("customer_query", best, verify, "entitlements of one customer at an instant, JSON out (the ledger ingest_sqlite wrote)");
    }
    if (wants("ingest_sqlite_callers")) {
        double best = 0;
        for (int r = 0; r < runs; r++) {
            remove_db(db);
            double rate = ingest_concurrent(url);
            if (rate > best) best = rate;
        }
        char what[200];
        snprintf(what, sizeof what, "durable SQLite file, %d callers at once on the same core", callers);
        report("ingest_sqlite_callers", best, verify, what);
    }
    remove_db(db);
    if (wants("ingest_memory")) {
        double best = 0;
        for (int r = 0; r < runs; r++) {
            double rate = ingest_sequential("sqlite::memory:");
            if (rate > best) best = rate;
        }
        report("ingest_memory", best, verify, "sqlite::memory: (nothing durable: the ledger's own cost), one caller");
    }
    if (postgresql && wants("ingest_postgresql_2proc")) {
        double best = 0;
        for (int r = 0; r < runs; r++) {
            char u[4400];
            schema_url(u, sizeof u, postgresql, "2proc", r);
            double rate = ingest_processes(u, notes.count, 2, 1, NULL);
            if (rate > best) best = rate;
        }
        report("ingest_postgresql_2proc", best, verify,
               "PostgreSQL on loopback (synchronous_commit=on), 2 processes x 1 caller at once, all together");
    }
    if (postgresql && wants("ingest_postgresql_2x8")) {
        double best = 0;
        for (int r = 0; r < runs; r++) {
            char u[4400];
            schema_url(u, sizeof u, postgresql, "2x8", r);
            double rate = ingest_processes(u, notes.count, 2, pg_callers, NULL);
            if (rate > best) best = rate;
        }
        char what[200];
        snprintf(what, sizeof what, "PostgreSQL on loopback (synchronous_commit=on), 2 processes x %d callers, all together",
                 pg_callers);
        report("ingest_postgresql_2x8", best, verify, what);
    }
    if (postgresql && wants("fleet_postgresql")) {
        double best = 0;
        int identical = 1;
        for (int r = 0; r < runs; r++) {
            char u[4400];
            schema_url(u, sizeof u, postgresql, "fleet", r);
            uint64_t hashes[16] = {0};
            double rate = ingest_processes(u, notes.count, fleet, pg_callers, hashes);
            for (int k = 1; k < fleet && k < 16; k++)
                if (hashes[k] != hashes[0]) identical = 0;
            if (rate > best) best = rate;
        }
        char what[200];
        snprintf(what, sizeof what, "%d processes x %d callers on one PostgreSQL, then the same %zu queries in each", fleet,
                 pg_callers, customers.count + 1);
        report("fleet_postgresql", best, verify, what);
        printf("FLEET ledger postgresql processes=%d ingest=%.0f/s identical=%s\n", fleet, best, identical ? "yes" : "no");
        fflush(stdout);
        if (!identical) bench_fail("fleet_postgresql: the processes' answers differ");
    }
    if (wants("fsync_floor")) {
        report("fsync_floor", fsync_floor(), verify, "the disk: append 16 KiB + fdatasync, one writer (no library)");
    }
    appstore_verifier_free(verifier);
    free(root);
    return 0;
}
