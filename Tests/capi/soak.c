/*
 * soak TESTPKI_DIR THREADS CALLS MODE        (MODE: none, or for the leak check's self-test handles | malloc)
 *
 * The C workload of the leak check (Tests/support/leakcheck.py judges it; scripts/leak-check c runs the long form).
 * The calls cycle through a mix of valid payloads (transactions, renewal info, app transactions, retention-messaging
 * requests, notifications verified deeply) and rejected ones (bad signature, wrong bundle, malformed) on a shared
 * verifier with the default chain cache. Every 50th call does full chain work instead: a forged chain or an expired
 * leaf (never cached), or a verifier whose cache holds a single chain while those calls alternate between two (an
 * insertion and an eviction each). Every 5,000th call of a thread creates and frees a verifier of its own. Each
 * call's status, reason and output are checked against the manifest and the first output; outputs and errors are
 * freed as a host would.
 *
 * At the start and after every thirtieth of the calls it prints "leak-sample CALLS LIVE_OBJECTS MALLOC_IN_USE"
 * (appstore_debug_live_objects, appstore_debug_malloc_in_use); the judge reads their trend, not the resident size.
 * MODE handles makes a verifier options handle per call and never frees it; MODE malloc keeps 1,024 bytes of malloc
 * per call: the self-test shows each is caught.
 * Closing line: "soak: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Every call but the 50th: cached chains, or rejected before the chain. */
static const struct {
    const char *id;
    int deep;
} MIX[] = {
    {"tx-valid", 0},
    {"renewal-valid", 0},
    {"notif-valid-did-renew", 1},
    {"tx-bad-signature-bit-flip", 0},
    {"apptx-valid", 0},
    {"tx-wrong-bundle", 0},
    {"realtime-valid", 0},
    {"tx-malformed-two-segments", 0},
    {"notif-valid-summary", 1},
    {"notif-wrong-bundle-data", 1},
    /* Every 50th call, in turn: full chain work (~1 ms each). */
    {"tx-untrusted-forged-chain", 0},
    {"tx-expired-leaf-signed-after-window", 0},
};
#define NMIX (sizeof MIX / sizeof MIX[0])
#define NCHEAP (NMIX - 2)
/* The two chains the single-entry cache alternates between. */
static const char *EVICTING[] = {"tx-valid", "tx-valid-expired-leaf-signed-in-window"};
static capi_case cases[NMIX], evicting[2];
static char *reference[NMIX], *evicting_reference[2];
static appstore_verifier *cached, *single_entry;
static unsigned char *root;
static size_t root_len;
static const char *bundle_id;

static long total_calls = 1000000;
static int threads = 2;
static enum { LEAK_NONE, LEAK_HANDLES, LEAK_MALLOC } leak_mode = LEAK_NONE;
static atomic_long calls_done, failures;
static atomic_int printed;

/* 0: the default chain cache; n: n entries. */
static appstore_verifier *make_verifier(uint32_t cache_entries) {
    return capi_sandbox_verifier(root, root_len, bundle_id, cache_entries ? (int64_t)cache_entries : -1);
}

static void fail(const char *id, const char *what, appstore_status st, const appstore_error *err) {
    atomic_fetch_add(&failures, 1);
    if (atomic_fetch_add(&printed, 1) < 20)
        printf("FAIL %s: %s (%s / %s: %s)\n", id, what, appstore_status_name(st),
               appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
}

/* One call; the output must be the reference (valid) or absent with the manifest's status and reason. */
static void call(const appstore_verifier *v, const capi_case *c, const char *ref) {
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_status st = c->fn(v, c->jws, c->jws_len, &json, &err);
    if (st != c->want_status) fail(c->id, "wrong status", st, err);
    else if (st == APPSTORE_OK && (!json || strcmp(json, ref) != 0)) fail(c->id, "output differs", st, err);
    else if (st != APPSTORE_OK && strcmp(appstore_reason_name(appstore_error_reason(err)), c->want_reason) != 0)
        fail(c->id, "wrong reason", st, err);
    appstore_string_free(json);
    appstore_error_free(err);
    if (leak_mode == LEAK_HANDLES) {
        appstore_verifier_options *lost = NULL;
        appstore_verifier_options_new(&lost, NULL);
    } else if (leak_mode == LEAK_MALLOC) {
        volatile char *lost = malloc(1024);
        if (lost) lost[0] = 1;
    }
}

static void *worker(void *arg) {
    long share = total_calls / threads, tid = (long)(intptr_t)arg;
    for (long i = 0; i < share; i++) {
        long k = i + tid * 7, slow = i / 50;
        if (i % 5000 == 4999) {
            appstore_verifier *own = make_verifier(0);
            call(own, &cases[0], reference[0]);
            appstore_verifier_free(own);
        } else if (i % 50 == 49 && slow % 2 == 0) {
            call(single_entry, &evicting[slow / 2 % 2], evicting_reference[slow / 2 % 2]);
        } else if (i % 50 == 49) {
            size_t c = NCHEAP + (size_t)(slow / 2 % 2);
            call(cached, &cases[c], reference[c]);
        } else {
            call(cached, &cases[k % NCHEAP], reference[k % NCHEAP]);
        }
        atomic_fetch_add_explicit(&calls_done, 1, memory_order_relaxed);
    }
    return NULL;
}

/* The single-threaded output of a valid case, or NULL. */
static char *first_output(const appstore_verifier *v, const capi_case *c) {
    char *json = NULL;
    if (c->want_status != APPSTORE_OK || c->fn(v, c->jws, c->jws_len, &json, NULL) != APPSTORE_OK) return NULL;
    char *copy = strdup(json);
    appstore_string_free(json);
    return copy;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s TESTPKI_DIR THREADS CALLS none|handles|malloc\n", argv[0]);
        return 2;
    }
    threads = atoi(argv[2]);
    total_calls = atol(argv[3]);
    if (strcmp(argv[4], "handles") == 0) leak_mode = LEAK_HANDLES;
    else if (strcmp(argv[4], "malloc") == 0) leak_mode = LEAK_MALLOC;
    else if (strcmp(argv[4], "none") != 0) {
        fprintf(stderr, "soak: MODE is none, handles or malloc\n");
        return 2;
    }
    if (total_calls < 3000 || threads < 1 || threads > 64) {
        fprintf(stderr, "soak: at least 3,000 calls, 1 to 64 threads\n");
        return 2;
    }
    capi_tally T = {"soak", 0, 0};
    printf("libappstoreserver %s: %ld calls on %d threads (%s)\n", appstore_version(), total_calls, threads, argv[4]);

    const char *dir = argv[1];
    char *path = capi_join(dir, "manifest.json");
    json_error_t jerr;
    json_t *manifest = json_load_file(path, 0, &jerr);
    free(path);
    path = capi_join(dir, "root.der");
    root = capi_read_file(path, &root_len);
    free(path);
    bundle_id = manifest ? json_string_value(json_object_get(manifest, "bundleId")) : NULL;
    int ok = capi_check(&T, manifest && root && bundle_id, "fixtures", "cannot read %s", dir);
    for (size_t k = 0; ok && k < NMIX; k++)
        ok = capi_check(&T, capi_load_default_case(manifest, dir, MIX[k].id, MIX[k].deep, &cases[k]) == 0, MIX[k].id,
                        "not loadable");
    for (size_t k = 0; ok && k < 2; k++)
        ok = capi_check(&T, capi_load_default_case(manifest, dir, EVICTING[k], 0, &evicting[k]) == 0 &&
                                evicting[k].want_status == APPSTORE_OK,
                        EVICTING[k], "not a loadable valid case");
    if (!ok) return capi_finish(&T);
    cached = make_verifier(0);
    single_entry = make_verifier(1);
    for (size_t k = 0; k < NMIX; k++) reference[k] = first_output(cached, &cases[k]);
    for (size_t k = 0; k < 2; k++) evicting_reference[k] = first_output(cached, &evicting[k]);

    pthread_t tids[64];
    for (int t = 0; t < threads; t++) pthread_create(&tids[t], NULL, worker, (void *)(intptr_t)t);
    /* A sample at the start and after every thirtieth of the calls. */
    long expected = total_calls / threads * threads;
    for (int s = 0; s <= 30;) {
        long done = atomic_load(&calls_done);
        if (done >= expected * s / 30) {
            printf("leak-sample %ld %lld %lld\n", done, (long long)appstore_debug_live_objects(),
                   (long long)appstore_debug_malloc_in_use());
            fflush(stdout);
            s++;
            continue;
        }
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    for (int t = 0; t < threads; t++) pthread_join(tids[t], NULL);

    uint64_t hits = 0, misses = 0;
    appstore_verifier_cache_stats(single_entry, &hits, &misses, NULL, NULL);
    /* Threads interleave, so a thread may find the chain the other one just inserted: most calls miss, not all. */
    capi_check(&T, misses >= (uint64_t)(expected / 100 / 2), "single-entry cache evicts", "%llu misses for %ld calls",
               (unsigned long long)misses, expected / 100);
    appstore_verifier_cache_stats(cached, &hits, &misses, NULL, NULL);
    capi_check(&T, hits > (uint64_t)(expected / 2), "default cache hits", "%llu hits", (unsigned long long)hits);
    capi_check(&T, atomic_load(&failures) == 0, "every call's result", "%ld wrong results", atomic_load(&failures));

    appstore_verifier_free(cached);
    appstore_verifier_free(single_entry);
    json_decref(manifest);
    return capi_finish(&T);
}
