/*
 * The purchase ledger through the C ABI (appstore_ledger_*), run against both library flavours:
 *   - every expectation of Tests/support/lifecycles.py's scenarios (written from Apple's documentation), with the
 *     notifications and the history catch-up ingested, as JSON of the spec's Ledger* models;
 *   - the oracle: zero disagreements over every scenario and random lifecycle;
 *   - idempotence: everything ingested again is "stored": false and changes nothing;
 *   - refused input (forged, tampered, wrong bundle, wrong environment, malformed, wrong kind, oversized): the
 *     verifier's status and reason, outputs untouched, the ledger unchanged;
 *   - argument errors, and a reopened database giving the same answers;
 *   - bitemporal queries (docs/ledger.md): the `bitemporal` lifecycles, each delivery in a ledger of its own, asked
 *     with as_of_ms 0 (now), the current time given explicitly, and as_of_ms = at_ms (as known then).
 * Usage: ledger_test TESTPKI_DIR LIFECYCLES_DIR WORK_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capi_util.h"

static capi_tally T = {"ledger", 0, 0};
#define S(x) ((x) ? (x) : "(null)")

/* The current time in milliseconds since 1970 (an explicit "as of now"). */
static int64_t capi_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef appstore_status (*ingest_fn)(appstore_ledger *, const char *, size_t, char **, appstore_error **);

static ingest_fn ingest_for(const char *kind) {
    if (strcmp(kind, "TRANSACTION") == 0) return appstore_ledger_ingest_transaction;
    if (strcmp(kind, "RENEWAL_INFO") == 0) return appstore_ledger_ingest_renewal_info;
    return appstore_ledger_ingest_notification;
}

/* Ingests one value; returns "stored" (1/0) or -1 on failure (reported). */
static int ingest(appstore_ledger *l, const char *kind, const char *jws) {
    char *result = NULL;
    appstore_error *err = NULL;
    appstore_status st = ingest_for(kind)(l, jws, strlen(jws), &result, &err);
    if (!capi_check(&T, st == APPSTORE_OK, "ingest", "%s: %s", kind, appstore_error_message(err))) {
        appstore_error_free(err);
        return -1;
    }
    json_t *r = json_loads(result, 0, NULL);
    int stored = json_is_true(json_object_get(r, "stored"));
    json_decref(r);
    appstore_string_free(result);
    return stored;
}

/* Ingests a lifecycle's notifications and history (delivery "both"; or "notifications", "history" only); the number
 * of values stored. */
static int ingest_delivery(appstore_ledger *l, json_t *lc, const char *delivery) {
    int stored = 0;
    size_t i, j;
    json_t *n, *page, *t;
    json_array_foreach(json_object_get(lc, "notifications"), i, n) {
        if (!strcmp(delivery, "history")) break;
        stored += ingest(l, "NOTIFICATION", json_string_value(json_object_get(n, "signed"))) == 1;
    }
    json_t *h = strcmp(delivery, "notifications") ? json_object_get(lc, "history") : NULL;
    json_array_foreach(json_object_get(h, "pages"), i, page) {
        json_array_foreach(json_object_get(page, "signedTransactions"), j, t) {
            stored += ingest(l, "TRANSACTION", json_string_value(t)) == 1;
        }
    }
    json_array_foreach(json_object_get(h, "signedRenewalInfos"), i, t) {
        stored += ingest(l, "RENEWAL_INFO", json_string_value(t)) == 1;
    }
    return stored;
}

static int ingest_lifecycle(appstore_ledger *l, json_t *lc) { return ingest_delivery(l, lc, "both"); }

static char *query_as_of(appstore_ledger *l, const char *what, const char *id, int64_t at, int64_t as_of) {
    char *json = NULL;
    appstore_error *err = NULL;
    appstore_status st = strcmp(what, "subscription") == 0 ? appstore_ledger_query_subscription(l, id, at, as_of, &json, &err)
                         : strcmp(what, "customer") == 0   ? appstore_ledger_query_customer(l, id, at, as_of, &json, &err)
                                                           : appstore_ledger_query_summary(l, &json, &err);
    capi_check(&T, st == APPSTORE_OK && json != NULL, "query", "%s %s: %s", what, id ? id : "", appstore_error_message(err));
    appstore_error_free(err);
    return json;
}

static char *query(appstore_ledger *l, const char *what, const char *id, int64_t at) {
    return query_as_of(l, what, id, at, 0);
}

/* The expectation's fields are a subset of the answer ("absent": missing; lists matched by productId). */
static int matches(json_t *answer, json_t *want, char *why, size_t why_len) {
    const char *key;
    json_t *w;
    json_object_foreach(want, key, w) {
        if (!strcmp(key, "at") || !strcmp(key, "subscription") || !strcmp(key, "customer") || !strcmp(key, "rule") ||
            !strcmp(key, "deliveries") || !strcmp(key, "asOf"))
            continue;
        json_t *got = json_object_get(answer, key);
        if (json_is_string(w) && !strcmp(json_string_value(w), "absent")) {
            if (got) { snprintf(why, why_len, "%s: expected absent", key); return 0; }
            continue;
        }
        if (json_is_array(w)) {
            if (json_array_size(got) != json_array_size(w)) { snprintf(why, why_len, "%s: count differs", key); return 0; }
            size_t i, j;
            json_t *x, *g;
            json_array_foreach(w, i, x) {
                int found = 0;
                json_array_foreach(got, j, g) {
                    if (json_equal(json_object_get(g, "productId"), json_object_get(x, "productId"))) {
                        if (!matches(g, x, why, why_len)) return 0;
                        found = 1;
                    }
                }
                if (!found) { snprintf(why, why_len, "%s: no entry for %s", key, json_string_value(json_object_get(x, "productId"))); return 0; }
            }
            continue;
        }
        if (!json_equal(got, w)) { snprintf(why, why_len, "%s differs", key); return 0; }
    }
    return 1;
}

/* Checks the expectations that hold for `delivery` (NULL: all); the number checked. "asOf": absent = 0 (now), "now" =
 * the current time given explicitly, a number = that knowledge time. */
static int check_expectations_for(appstore_ledger *l, json_t *scenario, const char *delivery) {
    size_t i, j;
    json_t *e, *d;
    int checked = 0;
    json_array_foreach(json_object_get(scenario, "expect"), i, e) {
        if (delivery) {
            int holds = 0;
            json_array_foreach(json_object_get(e, "deliveries"), j, d) holds |= !strcmp(json_string_value(d), delivery);
            if (!holds) continue;
        }
        int64_t at = json_integer_value(json_object_get(e, "at"));
        json_t *k = json_object_get(e, "asOf");
        int64_t as_of = json_is_integer(k) ? (int64_t)json_integer_value(k) : k ? capi_now_ms() : 0;
        const char *sub = json_string_value(json_object_get(e, "subscription"));
        char *json = query_as_of(l, sub ? "subscription" : "customer",
                                 sub ? sub : json_string_value(json_object_get(e, "customer")), at, as_of);
        json_t *answer = json_loads(json ? json : "null", 0, NULL);
        char why[256] = "";
        checked++;
        capi_check(&T, answer && matches(answer, e, why, sizeof why), "expectation", "%s [%s] at %lld as of %lld (%s): %s: %s",
                   json_string_value(json_object_get(scenario, "name")), delivery ? delivery : "both", (long long)at,
                   (long long)as_of, json_string_value(json_object_get(e, "rule")), why, json);
        json_decref(answer);
        appstore_string_free(json);
    }
    return checked;
}

static void check_expectations(appstore_ledger *l, json_t *scenario) { check_expectations_for(l, scenario, NULL); }

static appstore_ledger *open_ledger(const char *url, appstore_verifier *v) {
    appstore_ledger *l = NULL;
    appstore_error *err = NULL;
    capi_check(&T, appstore_ledger_open(url, v, &l, &err) == APPSTORE_OK, "open", "%s: %s", url, appstore_error_message(err));
    appstore_error_free(err);
    return l;
}

static void expect_failure(appstore_status st, appstore_error *err, appstore_status want, const char *want_reason,
                           const char *what) {
    capi_check(&T, st == want && err && appstore_error_status(err) == want &&
                   (!want_reason || !strcmp(appstore_reason_name(appstore_error_reason(err)), want_reason)),
               "refused", "%s: got %s (%s): %s", what, appstore_status_name(st),
               err ? appstore_reason_name(appstore_error_reason(err)) : "-", appstore_error_message(err));
    appstore_error_free(err);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s TESTPKI_DIR LIFECYCLES_DIR WORK_DIR\n", argv[0]);
        return 2;
    }
    size_t root_len = 0;
    char *root_path = capi_join(argv[1], "root.der");
    unsigned char *root = capi_read_file(root_path, &root_len);
    char *lc_path = capi_join(argv[2], "lifecycles.json");
    json_error_t jerr;
    json_t *doc = json_load_file(lc_path, 0, &jerr);
    if (!root || !doc) {
        fprintf(stderr, "FAIL cannot read %s or %s: %s\n", root_path, lc_path, jerr.text);
        return 1;
    }
    appstore_verifier *v = capi_sandbox_verifier(root, root_len, json_string_value(json_object_get(doc, "bundleId")), -1);
    char db[4096];
    snprintf(db, sizeof db, "%s/ledger.db", argv[3]);
    remove(db);
    char url[4200];
    snprintf(url, sizeof url, "sqlite:%s", db);
    appstore_ledger *l = open_ledger(url, v);
    if (!v || !l) return capi_finish(&T);

    /* 1. scenarios: every expectation, with both deliveries ingested */
    size_t i;
    json_t *s;
    int stored = 0;
    json_array_foreach(json_object_get(doc, "scenarios"), i, s) stored += ingest_lifecycle(l, s);
    json_array_foreach(json_object_get(doc, "scenarios"), i, s) check_expectations(l, s);

    /* 2. random lifecycles, and the oracle over everything */
    json_array_foreach(json_object_get(doc, "random"), i, s) stored += ingest_lifecycle(l, s);
    char *summary = query(l, "summary", NULL, 0);
    json_t *sj = json_loads(summary, 0, NULL);
    capi_check(&T, json_array_size(json_object_get(sj, "disagreements")) == 0 &&
                       json_integer_value(json_object_get(sj, "checkedNotifications")) > 300 &&
                       json_integer_value(json_object_get(sj, "events")) == stored,
               "oracle", "%s", summary);
    printf("ledger: %d values stored, summary %s\n", stored, summary);
    json_decref(sj);

    /* 3. idempotence: all again, nothing stored, nothing changed */
    int again = 0;
    json_array_foreach(json_object_get(doc, "scenarios"), i, s) again += ingest_lifecycle(l, s);
    json_array_foreach(json_object_get(doc, "random"), i, s) again += ingest_lifecycle(l, s);
    char *summary2 = query(l, "summary", NULL, 0);
    capi_check(&T, again == 0 && summary2 && !strcmp(summary, summary2), "idempotent", "%d stored again", again);
    appstore_string_free(summary2);

    /* 4. refused input: the verifier's reason, outputs untouched, the ledger unchanged */
    json_t *first = json_array_get(json_object_get(doc, "scenarios"), 0);
    const char *customer = json_string_value(json_object_get(json_array_get(json_object_get(first, "expect"), 4), "customer"));
    char *before = query(l, "customer", customer, 1900000000000LL);
    json_t *bad;
    json_array_foreach(json_object_get(doc, "bad"), i, bad) {
        const char *kind = json_string_value(json_object_get(bad, "kind"));
        json_int_t over = json_integer_value(json_object_get(bad, "oversizedBytes"));
        char *big = NULL;
        const char *jws = json_string_value(json_object_get(bad, "signed"));
        size_t len = jws ? strlen(jws) : 0;
        if (over > 0) {
            big = malloc((size_t)over);
            memset(big, 'a', (size_t)over);
            jws = big;
            len = (size_t)over;
        }
        char *result = (char *)0x1;  /* sentinel: must stay untouched */
        appstore_error *err = NULL;
        appstore_status st = ingest_for(kind)(l, jws, len, &result, &err);
        capi_check(&T, result == (char *)0x1, "outputs untouched", "%s", json_string_value(json_object_get(bad, "name")));
        const char *want_status = json_string_value(json_object_get(bad, "status"));
        capi_check(&T, st != APPSTORE_OK && !strcmp(appstore_status_name(st), want_status) &&
                           !strcmp(appstore_reason_name(appstore_error_reason(err)), json_string_value(json_object_get(bad, "reason"))),
                   "bad input refused", "%s: %s (%s): %s", json_string_value(json_object_get(bad, "name")),
                   appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
        appstore_error_free(err);
        free(big);
    }
    char *after = query(l, "summary", NULL, 0);
    char *after_customer = query(l, "customer", customer, 1900000000000LL);
    capi_check(&T, after && !strcmp(after, summary), "unchanged by refused input", "%s", S(after));
    capi_check(&T, after_customer && before && !strcmp(after_customer, before), "customer unchanged", "%s", S(after_customer));
    appstore_string_free(after);
    appstore_string_free(after_customer);

    /* 5. argument errors */
    char *out = NULL;
    appstore_error *err = NULL;
#define EXPECT_FAIL(call, want, reason, what)                                                                          \
    do {                                                                                                               \
        err = NULL;                                                                                                    \
        appstore_status st_ = (call);                                                                                  \
        expect_failure(st_, err, want, reason, what);                                                                  \
    } while (0)
    EXPECT_FAIL(appstore_ledger_query_customer(NULL, "x", 0, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL ledger");
    EXPECT_FAIL(appstore_ledger_query_customer(l, NULL, 0, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL customer");
    EXPECT_FAIL(appstore_ledger_query_customer(l, "\xff\xfe", 0, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "not UTF-8");
    EXPECT_FAIL(appstore_ledger_query_subscription(l, "1", -5, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "negative at_ms");
    EXPECT_FAIL(appstore_ledger_query_subscription(l, "1", 0, -5, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "negative as_of_ms");
    EXPECT_FAIL(appstore_ledger_query_customer(l, "x", 1, INT64_MIN, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "negative as_of_ms");
    {
        /* the reason names the argument */
        err = NULL;
        appstore_ledger_query_customer(l, "x", 0, -1, &out, &err);
        capi_check(&T, err && strstr(appstore_error_message(err), "as_of_ms"), "as_of_ms named", "%s", appstore_error_message(err));
        appstore_error_free(err);
    }
    EXPECT_FAIL(appstore_ledger_query_summary(l, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL json_out");
    /* appstore_ledger_query_disagreements: cursors and limits it did not make refused, naming what is wrong */
    EXPECT_FAIL(appstore_ledger_query_disagreements(NULL, NULL, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL ledger (pages)");
    EXPECT_FAIL(appstore_ledger_query_disagreements(l, NULL, 0, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL json_out (pages)");
    EXPECT_FAIL(appstore_ledger_query_disagreements(l, NULL, 10001, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "limit over 10,000");
    EXPECT_FAIL(appstore_ledger_query_disagreements(l, "\xff\xfe", 10, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "cursor not UTF-8");
    EXPECT_FAIL(appstore_ledger_query_disagreements(l, "CONTRADICTION:soon:x", 10, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "not a cursor");
    {
        /* the first page (NULL and "" alike) holds what the summary lists, in its order, and says no page follows */
        char *first = NULL, *empty = NULL, *summary = NULL;
        err = NULL;
        int ok = appstore_ledger_query_disagreements(l, NULL, 0, &first, &err) == APPSTORE_OK &&
                 appstore_ledger_query_disagreements(l, "", 10000, &empty, &err) == APPSTORE_OK &&
                 appstore_ledger_query_summary(l, &summary, &err) == APPSTORE_OK;
        json_t *pj = ok ? json_loads(first, 0, NULL) : NULL, *ej = ok ? json_loads(empty, 0, NULL) : NULL;
        json_t *sj = ok ? json_loads(summary, 0, NULL) : NULL;
        capi_check(&T, pj && ej && sj && json_equal(pj, ej) && !json_object_get(pj, "next") &&
                           json_equal(json_object_get(pj, "disagreements"), json_object_get(sj, "disagreements")),
                   "disagreements: the first page is the summary's list", "%s", ok ? first : appstore_error_message(err));
        json_decref(pj); json_decref(ej); json_decref(sj);
        appstore_string_free(first); appstore_string_free(empty); appstore_string_free(summary);
        appstore_error_free(err);
    }
    /* appstore_ledger_query_subscription_ids / _customer_ids: arguments; pages of one id, walked by "next", are the
     * ids of one page of 10,000 (each page's id its last; none after the last page) */
    EXPECT_FAIL(appstore_ledger_query_subscription_ids(NULL, NULL, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL ledger (ids)");
    EXPECT_FAIL(appstore_ledger_query_customer_ids(l, NULL, 0, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL json_out (ids)");
    EXPECT_FAIL(appstore_ledger_query_customer_ids(l, NULL, 10001, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "ids limit over 10,000");
    EXPECT_FAIL(appstore_ledger_query_subscription_ids(l, "\xff\xfe", 10, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "ids cursor not UTF-8");
    for (int which = 0; which < 2; which++) {
        appstore_status (*ids)(const appstore_ledger *, const char *, uint32_t, char **, appstore_error **) =
            which == 0 ? appstore_ledger_query_subscription_ids : appstore_ledger_query_customer_ids;
        char *all = NULL;
        err = NULL;
        json_t *aj = ids(l, "", 10000, &all, &err) == APPSTORE_OK ? json_loads(all, 0, NULL) : NULL;
        json_t *want = aj ? json_object_get(aj, "ids") : NULL;
        json_t *walked = json_array();
        char *after = NULL;
        int ok = want && json_array_size(want) > 0 && !json_object_get(aj, "next");
        for (size_t n = 0; ok && n <= json_array_size(want); n++) {
            char *page = NULL;
            json_t *pj = ids(l, after, 1, &page, &err) == APPSTORE_OK ? json_loads(page, 0, NULL) : NULL;
            appstore_string_free(page);
            json_t *one = pj ? json_object_get(pj, "ids") : NULL, *next = pj ? json_object_get(pj, "next") : NULL;
            ok = one && json_array_size(one) == 1 &&
                 (!next || json_equal(next, json_array_get(one, 0)));
            if (ok) json_array_append(walked, json_array_get(one, 0));
            free(after);
            after = next ? strdup(json_string_value(next)) : NULL;
            json_decref(pj);
            if (!after) break;
        }
        free(after);
        capi_check(&T, ok && json_equal(walked, want), which == 0 ? "subscription ids: pages of one walk every id" :
                   "customer ids: pages of one walk every id", "%s", all ? all : appstore_error_message(err));
        json_decref(walked); json_decref(aj);
        appstore_string_free(all);
        appstore_error_free(err);
    }
    EXPECT_FAIL(appstore_ledger_ingest_notification(l, NULL, 5, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL jws");
    EXPECT_FAIL(appstore_ledger_ingest_transaction(NULL, "a.b.c", 5, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL ledger ingest");
    capi_check(&T, out == NULL, "outputs untouched", "argument errors");
    appstore_ledger *l2 = NULL;
    EXPECT_FAIL(appstore_ledger_open("mysql://localhost/x", v, &l2, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "unsupported scheme");
    /* PostgreSQL: libpq loaded on demand; no server there: a storage error (or, without libpq, a configuration one). */
    err = NULL;
    appstore_status pg = appstore_ledger_open("postgresql://x:secret@127.0.0.1:1/x?connect_timeout=3", v, &l2, &err);
    capi_check(&T, (pg == APPSTORE_STORAGE_ERROR || pg == APPSTORE_CONFIGURATION_ERROR) && err &&
                       !strstr(appstore_error_message(err), "secret"),
               "postgresql unreachable", "%s: %s", appstore_status_name(pg), appstore_error_message(err));
    appstore_error_free(err);
    EXPECT_FAIL(appstore_ledger_open("/tmp/no-scheme.db", v, &l2, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "no scheme");
    EXPECT_FAIL(appstore_ledger_open(url, NULL, &l2, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "NULL verifier");
    EXPECT_FAIL(appstore_ledger_open("sqlite:/nonexistent-dir/a/b.db", v, &l2, &err), APPSTORE_STORAGE_ERROR, "storage_failed", "unopenable file");
    capi_check(&T, l2 == NULL, "outputs untouched", "open failures");
    char *unknown = query(l, "subscription", "no-such-subscription", 0);
    capi_check(&T, unknown && !strcmp(unknown, "null"), "unknown subscription", "%s", S(unknown));
    appstore_string_free(unknown);

    /* 7. identity (docs/ledger.md, "Identity"): a Production verifier, or another app's, on this Sandbox ledger is
     * refused before anything is read or written; the rightful verifier still opens it. */
    {
        appstore_verifier_options *o = NULL;
        appstore_verifier *prod = NULL;
        if (appstore_verifier_options_new(&o, NULL) == APPSTORE_OK &&
            appstore_verifier_options_add_root(o, root, root_len, NULL) == APPSTORE_OK &&
            appstore_verifier_options_set_bundle_id(o, json_string_value(json_object_get(doc, "bundleId")), NULL) == APPSTORE_OK &&
            appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_PRODUCTION, NULL) == APPSTORE_OK &&
            appstore_verifier_options_set_app_apple_id(o, 1234, NULL) == APPSTORE_OK)
            appstore_verifier_new(o, &prod, NULL);
        appstore_verifier_options_free(o);
        appstore_verifier *other = capi_sandbox_verifier(root, root_len, "com.example.other", -1);
        capi_check(&T, prod && other, "verifiers", "production / other app");
        EXPECT_FAIL(appstore_ledger_open(url, prod, &l2, &err), APPSTORE_CONFIGURATION_ERROR, "ledger_identity_mismatch",
                    "Production verifier on a Sandbox ledger");
        EXPECT_FAIL(appstore_ledger_open(url, other, &l2, &err), APPSTORE_CONFIGURATION_ERROR, "ledger_identity_mismatch",
                    "another app's verifier");
        capi_check(&T, l2 == NULL, "outputs untouched", "identity mismatch");
        appstore_verifier_free(prod);
        appstore_verifier_free(other);
    }

    /* 8. reverify: every stored value verified again with the ledger's verifier, none refused */
    char *rv = NULL;
    err = NULL;
    capi_check(&T, appstore_ledger_reverify(l, &rv, &err) == APPSTORE_OK, "reverify", "%s", appstore_error_message(err));
    appstore_error_free(err);
    json_t *rj = rv ? json_loads(rv, 0, NULL) : NULL;
    capi_check(&T, rj && json_integer_value(json_object_get(rj, "checked")) == stored &&
                       json_array_size(json_object_get(rj, "refused")) == 0,
               "reverify result", "%s (stored %d)", S(rv), stored);
    json_decref(rj);
    appstore_string_free(rv);
    EXPECT_FAIL(appstore_ledger_reverify(NULL, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "reverify NULL ledger");
    EXPECT_FAIL(appstore_ledger_reverify(l, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument", "reverify NULL json_out");

    /* 9. bulk import (docs/ledger.md, "Bulk import"): the first scenario's notifications as JSON lines and one line
     *    that is not JSON, into a new ledger; a second run stores nothing; bad arguments and a missing file */
    {
        char jl[4200], idb[4200], iurl[4300];
        snprintf(jl, sizeof jl, "%s/import.jsonl", argv[3]);
        snprintf(idb, sizeof idb, "%s/import.db", argv[3]);
        snprintf(iurl, sizeof iurl, "sqlite:%s", idb);
        remove(idb);
        FILE *f = fopen(jl, "w");
        json_t *n;
        size_t k, lines = 0;
        json_array_foreach(json_object_get(first, "notifications"), k, n) {
            fprintf(f, "{\"notification\": \"%s\"}\n", json_string_value(json_object_get(n, "signed")));
            if (++lines == 2) { fputs("{not json\n", f); lines++; }
        }
        fclose(f);
        appstore_ledger *il = open_ledger(iurl, v);
        for (int run = 0; run < 2 && il; run++) {
            char *res = NULL;
            err = NULL;
            capi_check(&T, appstore_ledger_import_jsonl(il, jl, 2, &res, &err) == APPSTORE_OK, "import", "%s",
                       appstore_error_message(err));
            appstore_error_free(err);
            json_t *rj2 = res ? json_loads(res, 0, NULL) : NULL;
            json_t *ref = json_array_get(json_object_get(rj2, "refused"), 0);
            long long stored_now = json_integer_value(json_object_get(rj2, "stored"));
            capi_check(&T, rj2 && json_integer_value(json_object_get(rj2, "read")) == (long long)lines &&
                               json_integer_value(json_object_get(rj2, "refusedCount")) == 1 &&
                               json_integer_value(json_object_get(ref, "line")) == 3 &&
                               !strcmp(S(json_string_value(json_object_get(ref, "reason"))), "malformed") &&
                               (run == 0 ? stored_now > 0 : stored_now == 0) &&
                               stored_now + json_integer_value(json_object_get(rj2, "alreadyPresent")) == (long long)lines - 1,
                       "import result", "run %d: %s", run, S(res));
            json_decref(rj2);
            appstore_string_free(res);
        }
        char missing[4300];
        snprintf(missing, sizeof missing, "%s/missing.jsonl", argv[3]);
        EXPECT_FAIL(appstore_ledger_import_jsonl(il, missing, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "import a missing file");
        EXPECT_FAIL(appstore_ledger_import_jsonl(NULL, jl, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "import NULL ledger");
        EXPECT_FAIL(appstore_ledger_import_jsonl(il, NULL, 0, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "import NULL path");
        EXPECT_FAIL(appstore_ledger_import_jsonl(il, jl, 0, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "import NULL result_out");
        appstore_ledger_free(il);
    }

    /* 10. export (docs/ledger.md, "Export"): the main ledger's values as JSON lines, one per stored value; imported
     *     into a new ledger, the same summary; bad arguments and a directory that does not exist */
    {
        char xl[4200], xdb[4200], xurl[4300], missing[4300];
        snprintf(xl, sizeof xl, "%s/export.jsonl", argv[3]);
        snprintf(xdb, sizeof xdb, "%s/exported.db", argv[3]);
        snprintf(xurl, sizeof xurl, "sqlite:%s", xdb);
        snprintf(missing, sizeof missing, "%s/no-such-dir/export.jsonl", argv[3]);
        remove(xdb);
        char *res = NULL, *imported = NULL;
        err = NULL;
        capi_check(&T, appstore_ledger_export_jsonl(l, xl, &res, &err) == APPSTORE_OK, "export", "%s", appstore_error_message(err));
        appstore_error_free(err);
        json_t *xj = res ? json_loads(res, 0, NULL) : NULL;
        long long exported = json_integer_value(json_object_get(xj, "exported"));
        size_t lines = 0;
        FILE *f = fopen(xl, "r");
        for (int c; f && (c = fgetc(f)) != EOF;) lines += c == '\n';
        if (f) fclose(f);
        capi_check(&T, exported == stored && lines == (size_t)stored &&
                           json_integer_value(json_object_get(xj, "notifications")) +
                           json_integer_value(json_object_get(xj, "transactions")) +
                           json_integer_value(json_object_get(xj, "renewalInfos")) == exported,
                   "export: one line per stored value", "%s, %zu lines, %d stored", S(res), lines, stored);
        appstore_ledger *xlg = open_ledger(xurl, v);
        err = NULL;
        int ok = xlg && appstore_ledger_import_jsonl(xlg, xl, 0, &imported, &err) == APPSTORE_OK;
        char *copy = ok ? query(xlg, "summary", NULL, 0) : NULL;
        capi_check(&T, copy && !strcmp(copy, summary), "export imported back: the same summary", "%s / %s",
                   S(copy), ok ? "" : appstore_error_message(err));
        appstore_error_free(err);
        appstore_string_free(copy);
        appstore_string_free(imported);
        appstore_ledger_free(xlg);
        json_decref(xj);
        appstore_string_free(res);
        EXPECT_FAIL(appstore_ledger_export_jsonl(l, missing, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "export into a missing directory");
        EXPECT_FAIL(appstore_ledger_export_jsonl(NULL, xl, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "export NULL ledger");
        EXPECT_FAIL(appstore_ledger_export_jsonl(l, NULL, &out, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "export NULL path");
        EXPECT_FAIL(appstore_ledger_export_jsonl(l, xl, NULL, &err), APPSTORE_INVALID_ARGUMENT, "invalid_argument",
                    "export NULL result_out");
    }

    /* 6. reopened (and a second handle on the same file): the same answers */
    appstore_ledger *r = open_ledger(url, v);
    char *reopened = r ? query(r, "summary", NULL, 0) : NULL;
    char *reopened_customer = r ? query(r, "customer", customer, 1900000000000LL) : NULL;
    capi_check(&T, reopened && !strcmp(reopened, summary), "reopened", "%s", S(reopened));
    capi_check(&T, reopened_customer && before && !strcmp(reopened_customer, before), "reopened customer", "%s", S(reopened_customer));
    appstore_string_free(reopened);
    appstore_string_free(reopened_customer);
    appstore_ledger_free(r);

    /* 9. bitemporal queries: each delivery of each bitemporal lifecycle in a ledger of its own */
    {
        static const char *deliveries[] = {"notifications", "history", "both"};
        int checked = 0, known_then = 0;
        json_array_foreach(json_object_get(doc, "bitemporal"), i, s) {
            for (size_t d = 0; d < 3; d++) {
                appstore_ledger *b = open_ledger("sqlite::memory:", v);
                if (!b) continue;
                ingest_delivery(b, s, deliveries[d]);
                checked += check_expectations_for(b, s, deliveries[d]);
                appstore_ledger_free(b);
            }
            size_t j;
            json_t *e;
            json_array_foreach(json_object_get(s, "expect"), j, e) known_then += json_is_integer(json_object_get(e, "asOf"));
        }
        capi_check(&T, json_array_size(json_object_get(doc, "bitemporal")) == 3 && checked >= 20 && known_then >= 4,
                   "bitemporal", "%d expectations checked, %d as known then", checked, known_then);
        printf("ledger bitemporal: %d expectations checked\n", checked);
    }

    appstore_string_free(before);
    appstore_string_free(summary);
    appstore_ledger_free(l);
    appstore_ledger_free(NULL);
    appstore_verifier_free(v);
    json_decref(doc);
    free(root);
    free(root_path);
    free(lc_path);
    return capi_finish(&T);
}
