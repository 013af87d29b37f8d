/*
 * verify_capi: the `verify` group through the C ABI — a C program calling libappstoreserver exactly as a C host
 * would (payload JSON requested through json_out and freed with appstore_string_free).
 *
 *   verify_capi VECTORS_DIR [--seconds S] [--runs N] [--only CASE,...]
 *
 * Cases: transaction_cached, transaction_first_sight, notification, notification_deep (see benchmarks/README.md).
 * Every call's status is checked; the first call on each vector also parses the returned JSON with jansson and
 * checks its content (and, for notification_deep, counts the nested JWS the library verified).
 */
#include "bench.h"

#include <appstoreserver.h>
#include <jansson.h>

#define BUNDLE_ID "com.example.bench"
#define APP_APPLE_ID 1234567890LL

typedef appstore_status (*verify_fn)(const appstore_verifier *, const char *, size_t, char **, appstore_error **);

typedef struct {
    const char *name;
    appstore_verifier *verifier;
    verify_fn verify;
    int deep;
    int *jws_count; /* per input; 0 until the first (checked) call on it */
} capi_case;

static void die_on(appstore_status st, appstore_error *err, const char *what) {
    if (st == APPSTORE_OK) return;
    bench_fail("%s: %s / %s: %s", what, appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)),
               appstore_error_message(err));
}

static appstore_verifier *make_verifier(const unsigned char *root, size_t root_len, int cache) {
    appstore_verifier_options *opts = NULL;
    appstore_verifier *v = NULL;
    appstore_error *err = NULL;
    die_on(appstore_verifier_options_new(&opts, &err), err, "options_new");
    die_on(appstore_verifier_options_add_root(opts, root, root_len, &err), err, "add_root");
    die_on(appstore_verifier_options_set_bundle_id(opts, BUNDLE_ID, &err), err, "set_bundle_id");
    die_on(appstore_verifier_options_set_app_apple_id(opts, APP_APPLE_ID, &err), err, "set_app_apple_id");
    die_on(appstore_verifier_options_set_environment(opts, APPSTORE_ENVIRONMENT_PRODUCTION, &err), err,
           "set_environment");
    if (!cache) die_on(appstore_verifier_options_set_chain_cache(opts, 0, 0, &err), err, "set_chain_cache");
    die_on(appstore_verifier_new(opts, &v, &err), err, "verifier_new");
    appstore_verifier_options_free(opts);
    return v;
}

static const char *str_at(json_t *root, const char *obj, const char *key) {
    json_t *o = obj ? json_object_get(root, obj) : root;
    return json_string_value(json_object_get(o, key));
}

/* Full content check of one output, done once per vector. Returns the number of JWS verified. */
static int check_output(const capi_case *c, size_t i, const char *json) {
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    if (!json_is_object(root)) bench_fail("%s: #%zu: output is not a JSON object: %s", c->name, i, jerr.text);
    int count = 1;
    const char *bundle;
    if (c->deep) {
        json_t *n = json_object_get(root, "notification");
        bundle = str_at(n, "data", "bundleId");
        const char *tx_bundle = str_at(root, "transaction", "bundleId");
        if (!tx_bundle || strcmp(tx_bundle, BUNDLE_ID) != 0)
            bench_fail("%s: #%zu: no verified nested transaction in the output", c->name, i);
        count += 1;
        if (json_object_get(root, "renewalInfo")) count++;
        if (json_object_get(root, "appTransaction")) count++;
    } else if (json_object_get(root, "notificationType")) {
        bundle = str_at(root, "data", "bundleId");
    } else {
        bundle = str_at(root, NULL, "bundleId");
        if (!str_at(root, NULL, "transactionId")) bench_fail("%s: #%zu: no transactionId in the output", c->name, i);
    }
    if (!bundle || strcmp(bundle, BUNDLE_ID) != 0) bench_fail("%s: #%zu: wrong or missing bundleId", c->name, i);
    json_decref(root);
    return count;
}

static int run_case(void *ctx, size_t i, const bench_line *in) {
    capi_case *c = ctx;
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_status st = c->verify(c->verifier, in->data, in->len, &json, &err);
    if (st != APPSTORE_OK) {
        bench_fail("%s: #%zu: %s / %s: %s", c->name, i, appstore_status_name(st),
                   appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
    }
    if (!json || json[0] != '{') bench_fail("%s: #%zu: no JSON output", c->name, i);
    if (c->jws_count[i] == 0) c->jws_count[i] = check_output(c, i, json);
    appstore_string_free(json);
    return c->jws_count[i];
}

static void cache_stats(const appstore_verifier *v, uint64_t *hits, uint64_t *misses) {
    appstore_error *err = NULL;
    die_on(appstore_verifier_cache_stats(v, hits, misses, NULL, &err), err, "cache_stats");
}

int main(int argc, char **argv) {
    bench_options o = bench_parse(argc, argv);
    char path[4096];
    snprintf(path, sizeof path, "%s/root.der", o.vectors);
    size_t root_len = 0;
    unsigned char *root = bench_read_file(path, &root_len);
    bench_lines txs = bench_read_lines(o.vectors, "transactions.jws");
    bench_lines notes = bench_read_lines(o.vectors, "notifications.jws");

    appstore_verifier *cached = make_verifier(root, root_len, 1);
    appstore_verifier *uncached = make_verifier(root, root_len, 0);
    size_t n = txs.count > notes.count ? txs.count : notes.count;

    capi_case cases[] = {
        {"transaction_cached", cached, appstore_verifier_verify_transaction, 0, calloc(n, sizeof(int))},
        {"transaction_first_sight", uncached, appstore_verifier_verify_transaction, 0, calloc(n, sizeof(int))},
        {"notification", cached, appstore_verifier_verify_notification, 0, calloc(n, sizeof(int))},
        {"notification_deep", cached, appstore_verifier_verify_notification_deep, 1, calloc(n, sizeof(int))},
    };

    uint64_t h0, m0, h1, m1;
    cache_stats(cached, &h0, &m0);
    bench_measure(&o, "c", cases[0].name, &txs, run_case, &cases[0]);
    cache_stats(cached, &h1, &m1);
    /* The first warm-up call may miss; after that every call must hit, or this is not the cached case. */
    if (bench_wants(&o, cases[0].name) && m1 - m0 > 1)
        bench_fail("transaction_cached: %llu chain cache misses (expected at most 1)", (unsigned long long)(m1 - m0));

    bench_measure(&o, "c", cases[1].name, &txs, run_case, &cases[1]);
    cache_stats(uncached, &h1, NULL);
    if (h1 != 0) bench_fail("transaction_first_sight: the disabled cache hit");

    bench_measure(&o, "c", cases[2].name, &notes, run_case, &cases[2]);
    bench_measure(&o, "c", cases[3].name, &notes, run_case, &cases[3]);

    appstore_verifier_free(cached);
    appstore_verifier_free(uncached);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) free(cases[k].jws_count);
    return 0;
}
