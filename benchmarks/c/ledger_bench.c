/*
 * ledger_bench: the `ledger` group — the purchase ledger through the C ABI, against the verify-only rate of the same
 * notifications measured in the same run (benchmarks/README.md, "Group ledger").
 *
 *   ledger_bench VECTORS_DIR WORK_DIR [--seconds S] [--runs N] [--callers N] [--postgresql URL] [--only CASE,...]
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
 *                      database) ingesting distinct notifications at once, durable (the server's commit); the rate is
 *                      both together. Each run takes a fresh slice of the notifications (the database is not emptied).
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

/* Two processes, each ingesting every other notification of [from, to) until the deadline; both counts together. */
static double ingest_two_processes(const char *url, size_t from, size_t to) {
    int fds[2][2];
    pid_t pids[2];
    double start = bench_now(), deadline = start + seconds;
    for (int k = 0; k < 2; k++) {
        if (pipe(fds[k]) != 0) bench_fail("pipe");
        pids[k] = fork();
        if (pids[k] < 0) bench_fail("fork");
        if (pids[k] == 0) {
            appstore_ledger *l = open_ledger(url);
            size_t n = 0;
            for (size_t i = from + (size_t)k; i < to && bench_now() < deadline; i += 2) {
                ingest_one(l, i);
                n++;
            }
            appstore_ledger_free(l);
            if (write(fds[k][1], &n, sizeof n) != (ssize_t)sizeof n) _exit(1);
            _exit(0);
        }
        close(fds[k][1]);
    }
    size_t total = 0;
    for (int k = 0; k < 2; k++) {
        size_t n = 0;
        if (read(fds[k][0], &n, sizeof n) != (ssize_t)sizeof n) bench_fail("a PostgreSQL writer failed");
        close(fds[k][0]);
        int status = 0;
        waitpid(pids[k], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) bench_fail("a PostgreSQL writer exited with %d", status);
        total += n;
    }
    return (double)total / (bench_now() - start);
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
        else if (argv[i][0] != '-' && !vectors) vectors = argv[i];
        else if (argv[i][0] != '-' && !work) work = argv[i];
        else vectors = NULL, i = argc;
    }
    if (!vectors || !work || seconds <= 0 || runs < 1 || callers < 1) {
        fprintf(stderr, "usage: %s VECTORS_DIR WORK_DIR [--seconds S] [--runs N] [--callers N] [--postgresql URL] [--only CASE,...]\n",
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
            size_t slice = notes.count / (size_t)runs;
            double rate = ingest_two_processes(postgresql, slice * (size_t)r, slice * (size_t)(r + 1));
            if (rate > best) best = rate;
        }
        report("ingest_postgresql_2proc", best, verify,
               "PostgreSQL on loopback (synchronous_commit=on), 2 processes at once, both together");
    }
    if (wants("fsync_floor")) {
        report("fsync_floor", fsync_floor(), verify, "the disk: append 16 KiB + fdatasync, one writer (no library)");
    }
    appstore_verifier_free(verifier);
    free(root);
    return 0;
}
