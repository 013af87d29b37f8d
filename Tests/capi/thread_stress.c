/*
 * thread_stress TESTPKI_DIR [THREADS [ITERATIONS]]      (defaults: 8 threads x 250 iterations)
 *
 * ONE verifier handle (root.der, the fixtures' bundle id, Sandbox, default chain cache) shared by all threads.
 * Each iteration of each thread:
 *   - verifies one case of a fixed mix (valid transactions, valid notifications verified deeply, and failing
 *     cases: bad signature, wrong bundle, malformed, ...) and checks the exact status, reason, error object and
 *     output (byte-identical to the single-threaded reference output; untouched on failure);
 *   - reads appstore_verifier_cache_stats concurrently (counters never decrease, entries within the limit);
 *   - mutates ONE shared options handle (bundle id, app Apple ID, environment, chain cache, online checks off,
 *     a transport set / removed (never called: online checks stay off), sometimes another root), and every 25 iterations builds a verifier from it mid-mutation, which must work
 *     and verify a transaction with one of the outcomes the racing values allow.
 * All threads start together (barrier). Afterwards the shared options are set to known values and must still
 * give a correct verifier. Zero failures required. Closing line: "stress: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CACHE_ENTRIES 32u

typedef struct {
    const char *id;
    int deep; /* verify with appstore_verifier_verify_notification_deep */
    capi_verify_fn fn;
    char *jws;
    size_t jws_len;
    appstore_status want_status;
    const char *want_reason; /* "none" for valid */
    char *reference;         /* single-threaded output for valid cases */
} item;

/* The mix. Valid transactions and deep notifications, and failing cases of several kinds. */
static const struct {
    const char *id;
    int deep;
} MIX[] = {
    {"tx-valid", 0},
    {"notif-valid-did-renew", 1},
    {"tx-bad-signature-bit-flip", 0},
    {"renewal-valid", 0},
    {"tx-wrong-bundle", 0},
    {"notif-valid-rescind-consent-appdata", 1},
    {"tx-malformed-two-segments", 0},
    {"apptx-valid", 0},
    {"notif-bad-signature-bit-flip", 1},
    {"realtime-valid", 0},
    {"tx-valid-nested-from-did-renew", 0},
    {"notif-wrong-bundle-data", 1},
    {"tx-malformed-header-not-json", 0},
    {"tx-untrusted-forged-chain", 0},
    {"tx-expired-leaf-signed-after-window", 0},
};
#define NMIX (sizeof MIX / sizeof MIX[0])

static item items[NMIX];
static appstore_verifier *shared_verifier;
static appstore_verifier_options *shared_options;
static appstore_transport *shared_transport;

static unsigned char *root_der, *other_root_der;
static size_t root_len, other_root_len;
static const char *bundle_id, *other_bundle = "com.example.other";
static int64_t app_apple_id;
static int tx_item = -1; /* index of tx-valid */
static int iterations = 250;
static pthread_barrier_t start_barrier;

static atomic_long passed, failed;

/* The transport set on the shared options; online checks stay off, so it is never called. */
static int32_t never_called(void *user_data, const char *method, const char *url, const char *headers,
                            size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                            appstore_http_response *response) {
    (void)user_data, (void)method, (void)url, (void)headers, (void)headers_len, (void)body, (void)body_len;
    (void)timeout_ms, (void)response;
    atomic_fetch_add(&failed, 1);
    return APPSTORE_TRANSPORT_RESULT_FAILED;
}

static atomic_int printed;

static void fail(int tid, int it, const char *fmt, const char *a, const char *b) {
    atomic_fetch_add(&failed, 1);
    if (atomic_fetch_add(&printed, 1) < 60) {
        char msg[1024];
        snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
        printf("FAIL [thread %d, iteration %d] %s\n", tid, it, msg);
        fflush(stdout);
    }
}

#define CHECK(cond, tid, it, fmt, a, b)               \
    do {                                               \
        if (cond) atomic_fetch_add(&passed, 1);        \
        else fail((tid), (it), (fmt), (a), (b));       \
    } while (0)

static int sentinel_object;
#define JSON_SENTINEL ((char *)(void *)&sentinel_object)

/* Verifies item k on verifier v and checks everything about the result. */
static void verify_item(int tid, int it, const appstore_verifier *v, const item *x, int with_err) {
    char *json = JSON_SENTINEL;
    appstore_error *err = NULL;
    appstore_status st = x->fn(v, x->jws, x->jws_len, &json, with_err ? &err : NULL);
    CHECK(st == x->want_status, tid, it, "%s: wrong status %s", x->id, appstore_status_name(st));
    if (x->want_status == APPSTORE_OK) {
        int have = st == APPSTORE_OK && json != JSON_SENTINEL && json != NULL;
        CHECK(have, tid, it, "%s: no output%s", x->id, "");
        if (have) {
            CHECK(strcmp(json, x->reference) == 0, tid, it, "%s: output differs from the reference: %.200s", x->id,
                  json);
            appstore_string_free(json);
        }
        CHECK(err == NULL, tid, it, "%s: err_out written on success%s", x->id, "");
    } else {
        CHECK(json == JSON_SENTINEL, tid, it, "%s: json_out written on failure%s", x->id, "");
        if (with_err) {
            CHECK(err != NULL, tid, it, "%s: no appstore_error on failure%s", x->id, "");
            CHECK(appstore_error_status(err) == x->want_status, tid, it, "%s: error status %s", x->id,
                  appstore_status_name(appstore_error_status(err)));
            CHECK(strcmp(appstore_reason_name(appstore_error_reason(err)), x->want_reason) == 0, tid, it,
                  "%s: wrong reason %s", x->id, appstore_reason_name(appstore_error_reason(err)));
            CHECK(appstore_error_message(err)[0] != 0, tid, it, "%s: empty message%s", x->id, "");
        }
        appstore_error_free(err);
    }
}

static void mutate_options(int tid, int it) {
    appstore_error *err = NULL;
    appstore_status st = APPSTORE_OK;
    const char *what = "";
    switch ((it + tid) % 6) {
    case 0:
        what = "set_bundle_id";
        st = appstore_verifier_options_set_bundle_id(shared_options, (it / 6) % 2 ? other_bundle : bundle_id, &err);
        break;
    case 1:
        what = "set_environment";
        st = appstore_verifier_options_set_environment(
            shared_options, (it / 6) % 2 ? APPSTORE_ENVIRONMENT_PRODUCTION : APPSTORE_ENVIRONMENT_SANDBOX, &err);
        break;
    case 2:
        what = "set_app_apple_id";
        st = appstore_verifier_options_set_app_apple_id(shared_options, app_apple_id + (it % 3), &err);
        break;
    case 3:
        what = "set_chain_cache";
        st = appstore_verifier_options_set_chain_cache(shared_options, 8u + (uint32_t)tid, 60 + it, &err);
        break;
    case 4:
        if ((it / 6) % 3 == 1) {
            what = "set_transport";
            st = appstore_verifier_options_set_transport(shared_options, (it / 6) % 2 ? shared_transport : NULL,
                                                         (uint32_t)(1000 + it), &err);
        } else {
            what = "set_online_checks";
            st = appstore_verifier_options_set_online_checks(shared_options, 0, &err);
        }
        break;
    case 5:
        if (it % 60 == 5) {
            what = "add_root";
            st = (tid % 2) ? appstore_verifier_options_add_root(shared_options, other_root_der, other_root_len, &err)
                           : appstore_verifier_options_add_root(shared_options, root_der, root_len, &err);
        } else {
            what = "set_bundle_id(own)";
            st = appstore_verifier_options_set_bundle_id(shared_options, bundle_id, &err);
        }
        break;
    }
    CHECK(st == APPSTORE_OK && err == NULL, tid, it, "options %s failed: %s", what, appstore_error_message(err));
    appstore_error_free(err);
}

/* A verifier built while other threads mutate the options: must be created, and verify tx-valid with one of the
 * outcomes the racing settings allow (bundle id and environment vary; app Apple ID is always set). */
static void build_from_shared_options(int tid, int it) {
    appstore_verifier *v = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_new(shared_options, &v, &err);
    CHECK(st == APPSTORE_OK && v != NULL, tid, it, "verifier_new from the shared options failed: %s%s",
          appstore_error_message(err), "");
    appstore_error_free(err);
    err = NULL;
    if (st != APPSTORE_OK) return;
    const item *x = &items[tx_item];
    char *json = NULL;
    st = appstore_verifier_verify_transaction(v, x->jws, x->jws_len, &json, &err);
    const char *reason = appstore_reason_name(appstore_error_reason(err));
    int allowed = (st == APPSTORE_OK && json && strcmp(json, x->reference) == 0) ||
                  (st == APPSTORE_INVALID_APP_IDENTIFIER && strcmp(reason, "wrong_bundle") == 0) ||
                  (st == APPSTORE_INVALID_ENVIRONMENT && strcmp(reason, "wrong_environment") == 0);
    CHECK(allowed, tid, it, "tx-valid via a verifier from the shared options: %s / %s", appstore_status_name(st),
          reason);
    appstore_string_free(json);
    appstore_error_free(err);
    appstore_verifier_free(v);
}

static void *worker(void *arg) {
    int tid = (int)(intptr_t)arg;
    uint64_t last_hits = 0, last_misses = 0;
    pthread_barrier_wait(&start_barrier);
    for (int it = 0; it < iterations; it++) {
        const item *x = &items[(size_t)(tid * 5 + it) % NMIX];
        verify_item(tid, it, shared_verifier, x, it % 4 != 3);

        uint64_t hits = 0, misses = 0, entries = 0;
        appstore_status st = (it % 10 == 9) ? appstore_verifier_cache_stats(shared_verifier, NULL, &misses, NULL, NULL)
                                            : appstore_verifier_cache_stats(shared_verifier, &hits, &misses, &entries, NULL);
        CHECK(st == APPSTORE_OK, tid, it, "cache_stats failed: %s%s", appstore_status_name(st), "");
        if (it % 10 != 9) {
            char a[64], b[64];
            snprintf(a, sizeof a, "%llu<%llu", (unsigned long long)hits, (unsigned long long)last_hits);
            snprintf(b, sizeof b, "%llu<%llu", (unsigned long long)misses, (unsigned long long)last_misses);
            CHECK(hits >= last_hits && misses >= last_misses, tid, it, "cache counters decreased: hits %s misses %s",
                  a, b);
            snprintf(a, sizeof a, "%llu", (unsigned long long)entries);
            CHECK(entries <= DEFAULT_CACHE_ENTRIES, tid, it, "cache entries %s above the limit%s", a, "");
            last_hits = hits;
        }
        last_misses = misses > last_misses ? misses : last_misses;

        mutate_options(tid, it);
        if (it % 25 == 24) build_from_shared_options(tid, it);
    }
    return NULL;
}

static int setup(const char *dir) {
    char *path = capi_join(dir, "manifest.json");
    json_error_t jerr;
    json_t *manifest = json_load_file(path, 0, &jerr);
    if (!manifest) {
        printf("FAIL cannot load %s: %s\n", path, jerr.text);
        free(path);
        return -1;
    }
    free(path);
    bundle_id = strdup(json_string_value(json_object_get(manifest, "bundleId")) ? json_string_value(
                                                                                        json_object_get(manifest, "bundleId"))
                                                                                  : "");
    app_apple_id = (int64_t)json_integer_value(json_object_get(manifest, "appAppleId"));
    int rc = 0;
    for (size_t k = 0; k < NMIX; k++) {
        capi_case c;
        if (capi_load_default_case(manifest, dir, MIX[k].id, MIX[k].deep, &c) != 0) {
            rc = -1;
            continue;
        }
        item *x = &items[k];
        x->id = c.id;
        x->deep = MIX[k].deep;
        x->fn = c.fn;
        x->jws = c.jws;
        x->jws_len = c.jws_len;
        x->want_status = c.want_status;
        x->want_reason = c.want_reason;
        if (strcmp(x->id, "tx-valid") == 0) tx_item = (int)k;
    }
    if (rc == 0 && tx_item < 0) rc = -1;

    /* Reference outputs, single-threaded, on the shared verifier. */
    for (size_t k = 0; rc == 0 && k < NMIX; k++) {
        item *x = &items[k];
        char *json = NULL;
        appstore_error *err = NULL;
        appstore_status st = x->fn(shared_verifier, x->jws, x->jws_len, &json, &err);
        if (st != x->want_status ||
            (st != APPSTORE_OK && strcmp(appstore_reason_name(appstore_error_reason(err)), x->want_reason) != 0)) {
            printf("FAIL %s single-threaded: expected %s/%s, got %s/%s: %s\n", x->id, appstore_status_name(x->want_status),
                   x->want_reason, appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)),
                   appstore_error_message(err));
            rc = -1;
        }
        if (st == APPSTORE_OK) x->reference = strdup(json);
        appstore_string_free(json);
        appstore_error_free(err);
    }
    /* The references themselves must be right: compare with the manifest. */
    for (size_t k = 0; rc == 0 && k < NMIX; k++) {
        item *x = &items[k];
        if (!x->reference) continue;
        json_t *out = json_loads(x->reference, 0, &jerr);
        json_t *c = capi_find_case(manifest, x->id);
        json_t *fields = json_object_get(c, "fields");
        json_t *payload = x->deep ? json_object_get(out, "notification") : out;
        const char *key;
        json_t *want;
        json_object_foreach(fields, key, want) {
            if (!json_equal(json_object_get(payload, key), want)) {
                printf("FAIL %s reference output: field %s differs from the manifest\n", x->id, key);
                rc = -1;
            }
        }
        if (x->deep && strcmp(x->id, "notif-valid-did-renew") == 0) {
            json_t *tx_fields = json_object_get(capi_find_case(manifest, "tx-valid-nested-from-did-renew"), "fields");
            if (!json_equal(json_object_get(json_object_get(out, "transaction"), "transactionId"),
                            json_object_get(tx_fields, "transactionId")) ||
                !json_is_object(json_object_get(out, "renewalInfo")) || json_object_get(out, "appTransaction")) {
                printf("FAIL %s deep output lacks the verified nested transaction/renewal info\n", x->id);
                rc = -1;
            }
        }
        if (x->deep && strcmp(x->id, "notif-valid-rescind-consent-appdata") == 0 &&
            (!json_is_object(json_object_get(out, "appTransaction")) || json_object_get(out, "transaction"))) {
            printf("FAIL %s deep output lacks the verified nested app transaction\n", x->id);
            rc = -1;
        }
        json_decref(out);
    }
    json_decref(manifest);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TESTPKI_DIR [THREADS [ITERATIONS]]\n", argv[0]);
        return 2;
    }
    int nthreads = argc > 2 ? atoi(argv[2]) : 8;
    iterations = argc > 3 ? atoi(argv[3]) : 250;
    if (nthreads < 2 || nthreads > 256 || iterations < 1) {
        fprintf(stderr, "bad THREADS/ITERATIONS\n");
        return 2;
    }
    const char *dir = argv[1];
    char *p = capi_join(dir, "root.der");
    root_der = capi_read_file(p, &root_len);
    free(p);
    p = capi_join(dir, "other_root.der");
    other_root_der = capi_read_file(p, &other_root_len);
    free(p);
    if (!root_der || !other_root_der) {
        printf("FAIL cannot read %s/root.der or other_root.der\n", dir);
        printf("stress: 0 passed, 1 failed\n");
        return 1;
    }

    /* The shared verifier; bundle id from the manifest (read in setup, so build after a first manifest read). */
    json_error_t jerr;
    char *mpath = capi_join(dir, "manifest.json");
    json_t *m = json_load_file(mpath, 0, &jerr);
    free(mpath);
    const char *bid = json_string_value(json_object_get(m, "bundleId"));
    appstore_verifier_options *opts = NULL;
    appstore_error *err = NULL;
    if (!bid || appstore_verifier_options_new(&opts, &err) != APPSTORE_OK ||
        appstore_verifier_options_add_root(opts, root_der, root_len, &err) != APPSTORE_OK ||
        appstore_verifier_options_set_bundle_id(opts, bid, &err) != APPSTORE_OK ||
        appstore_verifier_new(opts, &shared_verifier, &err) != APPSTORE_OK) {
        printf("FAIL cannot build the shared verifier: %s\n", appstore_error_message(err));
        printf("stress: 0 passed, 1 failed\n");
        return 1;
    }
    json_decref(m);
    appstore_verifier_options_free(opts); /* the verifier keeps what it needs */

    if (setup(dir) != 0) {
        printf("stress: 0 passed, 1 failed\n");
        return 1;
    }

    /* The shared options: valid from the start (app Apple ID set, so Production builds too). */
    if (appstore_transport_new(never_called, NULL, &shared_transport, NULL) != APPSTORE_OK ||
        appstore_verifier_options_new(&shared_options, NULL) != APPSTORE_OK ||
        appstore_verifier_options_add_root(shared_options, root_der, root_len, NULL) != APPSTORE_OK ||
        appstore_verifier_options_set_bundle_id(shared_options, bundle_id, NULL) != APPSTORE_OK ||
        appstore_verifier_options_set_app_apple_id(shared_options, app_apple_id, NULL) != APPSTORE_OK) {
        printf("FAIL cannot build the shared options\nstress: 0 passed, 1 failed\n");
        return 1;
    }

    uint64_t hits0 = 0, misses0 = 0, entries0 = 0;
    appstore_verifier_cache_stats(shared_verifier, &hits0, &misses0, &entries0, NULL);
    printf("libappstoreserver %s: %d threads x %d iterations on one verifier, %zu cases in the mix\n",
           appstore_version(), nthreads, iterations, NMIX);

    pthread_t *threads = calloc((size_t)nthreads, sizeof *threads);
    pthread_barrier_init(&start_barrier, NULL, (unsigned)nthreads);
    int started = 0;
    for (int t = 0; t < nthreads; t++) {
        if (pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) != 0) {
            printf("FAIL pthread_create %d\n", t);
            atomic_fetch_add(&failed, 1);
            break; /* the barrier would never open: abort below */
        }
        started++;
    }
    if (started != nthreads) {
        printf("stress: %ld passed, %ld failed\n", atomic_load(&passed), atomic_load(&failed));
        return 1;
    }
    for (int t = 0; t < nthreads; t++) pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&start_barrier);
    free(threads);

    uint64_t hits = 0, misses = 0, entries = 0;
    appstore_status st = appstore_verifier_cache_stats(shared_verifier, &hits, &misses, &entries, NULL);
    printf("chain cache after the run: %llu hits, %llu misses, %llu entries (before: %llu/%llu/%llu)\n",
           (unsigned long long)hits, (unsigned long long)misses, (unsigned long long)entries,
           (unsigned long long)hits0, (unsigned long long)misses0, (unsigned long long)entries0);
    CHECK(st == APPSTORE_OK && hits > hits0 && entries >= 1 && entries <= DEFAULT_CACHE_ENTRIES, -1, -1,
          "final cache statistics implausible%s%s", "", "");

    /* The shared options survived the races: known values give a correct verifier. */
    appstore_verifier *v = NULL;
    CHECK(appstore_verifier_options_set_bundle_id(shared_options, bundle_id, NULL) == APPSTORE_OK &&
              appstore_verifier_options_set_environment(shared_options, APPSTORE_ENVIRONMENT_SANDBOX, NULL) == APPSTORE_OK &&
              appstore_verifier_new(shared_options, &v, NULL) == APPSTORE_OK,
          -1, -1, "shared options unusable after the run%s%s", "", "");
    if (v) {
        for (size_t k = 0; k < NMIX; k++) verify_item(-1, -1, v, &items[k], 1);
        appstore_verifier_free(v);
    }

    appstore_verifier_options_free(shared_options);
    appstore_transport_free(shared_transport);
    appstore_verifier_free(shared_verifier);
    for (size_t k = 0; k < NMIX; k++) {
        free(items[k].jws);
        free(items[k].reference);
        if (items[k].want_status != APPSTORE_OK) free((char *)items[k].want_reason);
    }
    free((char *)bundle_id);
    free(root_der);
    free(other_root_der);
    long np = atomic_load(&passed), nf = atomic_load(&failed);
    printf("stress: %ld passed, %ld failed\n", np, nf);
    return (nf == 0 && np > 0) ? 0 : 1;
}
