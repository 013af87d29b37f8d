/*
 * error_paths TESTPKI_DIR spec/errors.json
 *
 * NULL and garbage through every C entry point, with exact statuses and reasons, and the header's conventions:
 * outputs are written only on success (sentinels stay), err_out may be NULL, a failure with err_out gives a new
 * error whose status equals the returned one, _free(NULL) is a no-op, accessors on NULL give 0 / "", names of
 * unknown values are "UNKNOWN" / "unknown"; every status and reason name is the one of spec/errors.json, and every
 * failure's status is one the spec lists for its reason. Garbage inputs run in a forked child each, so a crash is reported as
 * a failure of that input (with the signal) instead of ending the run.
 * Closing line: "errors: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static capi_tally T = {"errors", 0, 0};

static int sentinel_a, sentinel_b, sentinel_c;
#define JSON_SENTINEL ((char *)(void *)&sentinel_a)
#define ERR_SENTINEL ((appstore_error *)(void *)&sentinel_b)
#define VERIFIER_SENTINEL ((appstore_verifier *)(void *)&sentinel_c)
#define OPTIONS_SENTINEL ((appstore_verifier_options *)(void *)&sentinel_c)

static const struct {
    const char *name;
    capi_verify_fn fn;
} VERIFY[] = {
    {"verify_notification", appstore_verifier_verify_notification},
    {"verify_transaction", appstore_verifier_verify_transaction},
    {"verify_renewal_info", appstore_verifier_verify_renewal_info},
    {"verify_app_transaction", appstore_verifier_verify_app_transaction},
    {"verify_realtime_request", appstore_verifier_verify_realtime_request},
    {"verify_notification_deep", appstore_verifier_verify_notification_deep},
};
#define NVERIFY (sizeof VERIFY / sizeof VERIFY[0])

static int spec_allows(appstore_reason reason, appstore_status status);

/* Fixture data. */
static unsigned char *root_der;
static size_t root_len;
static char *tx_jws, *notif_jws;
static size_t tx_len, notif_len;
static const char *bundle_id;
static int64_t app_apple_id;

/* Checks a failed call: exact status, an error object with that status, the exact reason and a message. Frees
 * the error and sets *errp to NULL. */
/* errp is read here, after the call that filled it (a plain `err` argument would be read unsequenced). */
static void expect_error(const char *what, appstore_status st, appstore_error **errp, appstore_status want_status,
                         const char *want_reason) {
    appstore_error *err = *errp;
    *errp = NULL;
    const char *reason = appstore_reason_name(appstore_error_reason(err));
    capi_check(&T, st == want_status, what, "status %s, expected %s (%s: %s)", appstore_status_name(st),
               appstore_status_name(want_status), reason, appstore_error_message(err));
    if (capi_check(&T, err != NULL && err != ERR_SENTINEL, what, "no appstore_error for a failure")) {
        capi_check(&T, appstore_error_status(err) == st, what, "error status %s differs from the returned %s",
                   appstore_status_name(appstore_error_status(err)), appstore_status_name(st));
        capi_check(&T, strcmp(reason, want_reason) == 0, what, "reason %s, expected %s (%s)", reason, want_reason,
                   appstore_error_message(err));
        capi_check(&T, spec_allows(appstore_error_reason(err), st), what,
                   "spec/errors.json does not list status %s for reason %s", appstore_status_name(st), reason);
        const char *msg = appstore_error_message(err);
        capi_check(&T, msg != NULL && msg[0] != 0, what, "empty error message");
        appstore_error_free(err);
    }
}

static appstore_verifier_options *options_sandbox(void) {
    appstore_verifier_options *o = NULL;
    if (appstore_verifier_options_new(&o, NULL) != APPSTORE_OK || !o ||
        appstore_verifier_options_add_root(o, root_der, root_len, NULL) != APPSTORE_OK ||
        appstore_verifier_options_set_bundle_id(o, bundle_id, NULL) != APPSTORE_OK) {
        printf("FATAL cannot build options\n");
        exit(1);
    }
    return o;
}

static appstore_verifier *verifier_from(const appstore_verifier_options *o) {
    appstore_verifier *v = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_new(o, &v, &err);
    if (st != APPSTORE_OK) {
        printf("FATAL cannot build a verifier: %s\n", appstore_error_message(err));
        exit(1);
    }
    return v;
}

/* tx-valid verifies on v (the options that built it were left intact). */
static void expect_tx_valid(const char *what, const appstore_verifier *v) {
    appstore_error *err = NULL;
    char *json = NULL;
    appstore_status st = appstore_verifier_verify_transaction(v, tx_jws, tx_len, &json, &err);
    capi_check(&T, st == APPSTORE_OK && json != NULL, what, "tx-valid gives %s/%s: %s", appstore_status_name(st),
               appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
    appstore_string_free(json);
    appstore_error_free(err);
}

/* ---- base64 --------------------------------------------------------------------------------------------- */

static char *b64(const unsigned char *in, size_t n, int url) {
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char urlsafe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *a = url ? urlsafe : std;
    char *out = malloc(4 * (n / 3 + 1) + 1), *o = out;
    if (!out) exit(2);
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        *o++ = a[v >> 18];
        *o++ = a[(v >> 12) & 63];
        *o++ = a[(v >> 6) & 63];
        *o++ = a[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
        *o++ = a[v >> 18];
        *o++ = a[(v >> 12) & 63];
        if (i + 1 < n) *o++ = a[(v >> 6) & 63];
        else if (!url) *o++ = '=';
        if (!url) *o++ = '=';
    }
    *o = 0;
    return out;
}

/* header.payload.signature from JSON texts; the signature is 64 zero bytes (never valid). */
static char *make_jws(const char *header_json, const char *payload_json) {
    unsigned char sig[64] = {0};
    char *h = b64((const unsigned char *)header_json, strlen(header_json), 1);
    char *p = b64((const unsigned char *)payload_json, strlen(payload_json), 1);
    char *s = b64(sig, sizeof sig, 1);
    size_t n = strlen(h) + strlen(p) + strlen(s) + 3;
    char *out = malloc(n);
    if (!out) exit(2);
    snprintf(out, n, "%s.%s.%s", h, p, s);
    free(h);
    free(p);
    free(s);
    return out;
}

static char *repeat(char ch, size_t n) {
    char *s = malloc(n + 1);
    if (!s) exit(2);
    memset(s, ch, n);
    s[n] = 0;
    return s;
}

/* ---- isolated garbage runs ---------------------------------------------------------------------------------- */

typedef struct {
    const char *label;
    const char *jws;
    size_t len;
    appstore_status want_status;
    const char *want_reason;
} garbage;

/* One garbage input through one verify function (run in a child process by run_isolated). */
typedef struct {
    const char *what;
    capi_verify_fn fn;
    const appstore_verifier *v;
    const garbage *g;
} isolated_call;

static void isolated_body(void *ctx) {
    const isolated_call *c = ctx;
    char *json = JSON_SENTINEL;
    appstore_error *err = NULL;
    appstore_status st = c->fn(c->v, c->g->jws, c->g->len, &json, &err);
    capi_check(&T, json == JSON_SENTINEL, c->what, "json_out written on failure");
    expect_error(c->what, st, &err, c->g->want_status, c->g->want_reason);
    /* Once more without err_out: same status, no crash. */
    st = c->fn(c->v, c->g->jws, c->g->len, NULL, NULL);
    capi_check(&T, st == c->g->want_status, c->what, "without err_out: status %s", appstore_status_name(st));
}

/* Runs fn(v, g) in a child process; one check per input and function. */
static void run_isolated(const char *fn_name, capi_verify_fn fn, const appstore_verifier *v, const garbage *g) {
    char what[256];
    snprintf(what, sizeof what, "%s(%s)", fn_name, g->label);
    isolated_call c = {what, fn, v, g};
    capi_run_forked(&T, what, isolated_body, &c);
}

/* ---- sections ----------------------------------------------------------------------------------------------- */

/* spec/errors.json: the names and values the library must report, and the statuses each reason may come with. */
static json_t *errors_spec;

static json_t *spec_reason(appstore_reason value) {
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(errors_spec, "reasons"), i, r) {
        if (json_integer_value(json_object_get(r, "value")) == value) return r;
    }
    return NULL;
}

/* Whether the spec lists `status` among the statuses `reason` comes with. */
static int spec_allows(appstore_reason reason, appstore_status status) {
    json_t *r = spec_reason(reason);
    size_t i;
    json_t *name;
    json_array_foreach(json_object_get(r, "statuses"), i, name) {
        if (strcmp(json_string_value(name), appstore_status_name(status)) == 0) return 1;
    }
    return 0;
}

/* Every status and reason of the spec has its name; every other value in a wide range is "UNKNOWN" / "unknown". */
static void names_of(const char *key, const char *(*name_of)(int32_t), const char *unknown) {
    json_t *list = json_object_get(errors_spec, key);
    capi_check(&T, json_array_size(list) > 10, key, "spec/errors.json lists %zu", json_array_size(list));
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        int32_t v = (int32_t)json_integer_value(json_object_get(e, "value"));
        const char *want = json_string_value(json_object_get(e, "name"));
        const char *got = name_of(v);
        capi_check(&T, got && want && strcmp(got, want) == 0, key, "%d -> %s, expected %s", v, got ? got : "(NULL)",
                   want ? want : "(none)");
        capi_check(&T, name_of(v) == got, key, "name of %d is static", v);
    }
    static const int32_t far[] = {1000, 12345, INT32_MIN, INT32_MAX};
    for (int32_t k = -1; k < 300 + (int32_t)(sizeof far / sizeof far[0]); k++) {
        int32_t value = k < 300 ? k : far[k - 300];
        int known = 0;
        json_array_foreach(list, i, e) known |= json_integer_value(json_object_get(e, "value")) == value;
        if (known) continue;
        const char *got = name_of(value);
        capi_check(&T, got && strcmp(got, unknown) == 0, key, "unknown %d -> %s", value, got ? got : "(NULL)");
    }
}

static void names(void) {
    names_of("statuses", appstore_status_name, "UNKNOWN");
    names_of("reasons", appstore_reason_name, "unknown");
}

static void null_handles(void) {
    /* Accessors on NULL: 0 / "". */
    capi_check(&T, appstore_error_status(NULL) == 0, "appstore_error_status(NULL) == 0", "%d", appstore_error_status(NULL));
    capi_check(&T, appstore_error_reason(NULL) == 0, "appstore_error_reason(NULL) == 0", "%d", appstore_error_reason(NULL));
    const char *m = appstore_error_message(NULL);
    capi_check(&T, m != NULL && m[0] == 0, "appstore_error_message(NULL) == \"\"", "%s", m ? m : "(NULL)");
    /* _free(NULL) does nothing (reaching the next line is the check). */
    appstore_error_free(NULL);
    appstore_string_free(NULL);
    appstore_verifier_options_free(NULL);
    appstore_verifier_free(NULL);
    capi_check(&T, 1, "free(NULL) for every free function", NULL);

    appstore_error *err = NULL;
    expect_error("options_new(NULL)", appstore_verifier_options_new(NULL, &err), &err, APPSTORE_INVALID_ARGUMENT,
                 "invalid_argument");
    capi_check(&T, appstore_verifier_options_new(NULL, NULL) == APPSTORE_INVALID_ARGUMENT,
               "options_new(NULL, NULL) without err_out", NULL);

    /* Every setter on a NULL options handle. */
    err = NULL;
    expect_error("add_root(NULL options)", appstore_verifier_options_add_root(NULL, root_der, root_len, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("set_bundle_id(NULL options)", appstore_verifier_options_set_bundle_id(NULL, "x", &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("set_app_apple_id(NULL options)", appstore_verifier_options_set_app_apple_id(NULL, 1, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("set_environment(NULL options)", appstore_verifier_options_set_environment(NULL, 1, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("set_online_checks(NULL options)", appstore_verifier_options_set_online_checks(NULL, 0, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("set_chain_cache(NULL options)", appstore_verifier_options_set_chain_cache(NULL, 1, 1, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("set_transport(NULL options)", appstore_verifier_options_set_transport(NULL, NULL, 0, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    capi_check(&T, appstore_verifier_options_set_bundle_id(NULL, NULL, NULL) == APPSTORE_INVALID_ARGUMENT,
               "set_bundle_id(NULL, NULL, NULL)", NULL);

    /* verifier_new. */
    appstore_verifier *v = VERIFIER_SENTINEL;
    err = NULL;
    expect_error("verifier_new(NULL options)", appstore_verifier_new(NULL, &v, &err), &err, APPSTORE_INVALID_ARGUMENT,
                 "invalid_argument");
    capi_check(&T, v == VERIFIER_SENTINEL, "verifier_new(NULL options) leaves *verifier_out untouched", NULL);
    appstore_verifier_options *o = options_sandbox();
    err = NULL;
    expect_error("verifier_new(NULL verifier_out)", appstore_verifier_new(o, NULL, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    capi_check(&T, appstore_verifier_new(NULL, NULL, NULL) == APPSTORE_INVALID_ARGUMENT, "verifier_new(NULL, NULL, NULL)",
               NULL);
    appstore_verifier_options_free(o);

    /* Every verify function on a NULL verifier: INVALID_ARGUMENT, outputs untouched. */
    for (size_t i = 0; i < NVERIFY; i++) {
        char what[128];
        snprintf(what, sizeof what, "%s(NULL verifier)", VERIFY[i].name);
        char *json = JSON_SENTINEL;
        err = NULL;
        appstore_status st = VERIFY[i].fn(NULL, tx_jws, tx_len, &json, &err);
        capi_check(&T, json == JSON_SENTINEL, what, "json_out written on failure");
        expect_error(what, st, &err, APPSTORE_INVALID_ARGUMENT, "invalid_argument");
        capi_check(&T, VERIFY[i].fn(NULL, NULL, 0, NULL, NULL) == APPSTORE_INVALID_ARGUMENT, what,
                   "all-NULL call without err_out");
    }

    /* cache_stats. */
    uint64_t h = 777, mi = 778, e = 779;
    err = NULL;
    expect_error("cache_stats(NULL verifier)", appstore_verifier_cache_stats(NULL, &h, &mi, &e, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    capi_check(&T, h == 777 && mi == 778 && e == 779, "cache_stats(NULL verifier) leaves outputs untouched", NULL);
    capi_check(&T, appstore_verifier_cache_stats(NULL, NULL, NULL, NULL, NULL) == APPSTORE_INVALID_ARGUMENT,
               "cache_stats(NULL...) without err_out", NULL);
}

static void options_errors(void) {
    appstore_verifier_options *o = options_sandbox();
    appstore_error *err = NULL;

    /* Roots: NULL with a length, NULL/empty. */
    expect_error("add_root(NULL der, 10)", appstore_verifier_options_add_root(o, NULL, 10, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("add_root(NULL der, 0)", appstore_verifier_options_add_root(o, NULL, 0, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    err = NULL;
    expect_error("add_root(der, 0)", appstore_verifier_options_add_root(o, root_der, 0, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");

    /* Bundle id: NULL and invalid UTF-8 (the earlier value stays). */
    err = NULL;
    expect_error("set_bundle_id(NULL)", appstore_verifier_options_set_bundle_id(o, NULL, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    static const char *const bad_utf8[] = {
        "\xff",               /* never valid */
        "com.example.\xc3\x28", /* bad continuation */
        "\xc0\xaf",           /* overlong '/' */
        "\xed\xa0\x80",       /* UTF-16 surrogate */
        "com.\xe2\x82",       /* truncated sequence */
        "\xf4\x90\x80\x80",   /* above U+10FFFF */
    };
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof bad_utf8[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "set_bundle_id(invalid UTF-8 #%zu)", i);
        err = NULL;
        expect_error(what, appstore_verifier_options_set_bundle_id(o, bad_utf8[i], &err), &err, APPSTORE_INVALID_ARGUMENT,
                     "invalid_argument");
        capi_check(&T, appstore_verifier_options_set_bundle_id(o, bad_utf8[i], NULL) == APPSTORE_INVALID_ARGUMENT, what,
                   "without err_out");
    }

    /* Environment: 0, 99, -1, 5. */
    static const appstore_environment bad_env[] = {0, 99, -1, 5, INT32_MIN};
    for (size_t i = 0; i < sizeof bad_env / sizeof bad_env[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "set_environment(%d)", bad_env[i]);
        err = NULL;
        expect_error(what, appstore_verifier_options_set_environment(o, bad_env[i], &err), &err, APPSTORE_INVALID_ARGUMENT,
                     "invalid_argument");
    }
    /* Online checks: only 0 and 1. */
    static const int32_t bad_online[] = {2, -1, 100};
    for (size_t i = 0; i < sizeof bad_online / sizeof bad_online[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "set_online_checks(%d)", bad_online[i]);
        err = NULL;
        expect_error(what, appstore_verifier_options_set_online_checks(o, bad_online[i], &err), &err,
                     APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    }
    /* Chain cache: negative TTL. */
    static const int64_t bad_ttl[] = {-1, INT64_MIN};
    for (size_t i = 0; i < sizeof bad_ttl / sizeof bad_ttl[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "set_chain_cache(ttl %lld)", (long long)bad_ttl[i]);
        err = NULL;
        expect_error(what, appstore_verifier_options_set_chain_cache(o, 32, bad_ttl[i], &err), &err,
                     APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    }

    /* None of the failed calls changed the options: still root.der, the bundle id, Sandbox, online checks off. */
    appstore_verifier *v = verifier_from(o);
    expect_tx_valid("options unchanged by failed setters", v);
    appstore_verifier_free(v);

    /* A successful call leaves *err_out untouched. */
    err = ERR_SENTINEL;
    capi_check(&T, appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_SANDBOX, &err) == APPSTORE_OK &&
                       err == ERR_SENTINEL,
               "successful setter leaves *err_out untouched", NULL);

    /* Cache disabled (0 entries): nothing is cached, nothing is hit. */
    capi_check(&T, appstore_verifier_options_set_chain_cache(o, 0, 0, NULL) == APPSTORE_OK, "set_chain_cache(0, 0)", NULL);
    v = verifier_from(o);
    expect_tx_valid("cache disabled, first", v);
    expect_tx_valid("cache disabled, second", v);
    uint64_t h = 1, mi = 1, e = 1;
    capi_check(&T, appstore_verifier_cache_stats(v, &h, &mi, &e, NULL) == APPSTORE_OK && h == 0 && e == 0,
               "max_entries 0 disables the cache", "hits %llu misses %llu entries %llu", (unsigned long long)h,
               (unsigned long long)mi, (unsigned long long)e);
    capi_check(&T, appstore_verifier_cache_stats(v, NULL, NULL, NULL, NULL) == APPSTORE_OK,
               "cache_stats with all out-pointers NULL", NULL);
    appstore_verifier_free(v);
    appstore_verifier_options_free(o);
}

static void config_errors(void) {
    struct {
        const char *what;
        appstore_verifier_options *o;
        const char *reason;
    } cases[4];
    appstore_verifier_options *o;

    appstore_verifier_options_new(&o, NULL); /* no roots */
    appstore_verifier_options_set_bundle_id(o, bundle_id, NULL);
    cases[0].what = "config: no roots";
    cases[0].o = o;
    cases[0].reason = "no_trust_anchor";

    o = options_sandbox(); /* Production without an app Apple ID */
    appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_PRODUCTION, NULL);
    cases[1].what = "config: Production without app Apple ID";
    cases[1].o = o;
    cases[1].reason = "invalid_argument";

    o = options_sandbox(); /* online checks on */
    appstore_verifier_options_set_online_checks(o, 1, NULL);
    cases[2].what = "config: online checks on";
    cases[2].o = o;
    cases[2].reason = "online_checks_unavailable";

    appstore_verifier_options_new(&o, NULL); /* a root that is not DER (copied without parsing; new rejects it) */
    static const unsigned char not_der[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    capi_check(&T, appstore_verifier_options_add_root(o, not_der, sizeof not_der - 1, NULL) == APPSTORE_OK,
               "add_root accepts bytes (validated by verifier_new)", NULL);
    appstore_verifier_options_set_bundle_id(o, bundle_id, NULL);
    cases[3].what = "config: root is not DER";
    cases[3].o = o;
    cases[3].reason = "bad_certificate";

    for (size_t i = 0; i < 4; i++) {
        appstore_verifier *v = VERIFIER_SENTINEL;
        appstore_error *err = NULL;
        expect_error(cases[i].what, appstore_verifier_new(cases[i].o, &v, &err), &err, APPSTORE_CONFIGURATION_ERROR,
                     cases[i].reason);
        capi_check(&T, v == VERIFIER_SENTINEL, cases[i].what, "*verifier_out written on failure");
        v = VERIFIER_SENTINEL;
        capi_check(&T, appstore_verifier_new(cases[i].o, &v, NULL) == APPSTORE_CONFIGURATION_ERROR &&
                           v == VERIFIER_SENTINEL,
                   cases[i].what, "without err_out");
        appstore_verifier_options_free(cases[i].o);
    }

    /* The same Production options become usable once the app Apple ID is set. */
    o = options_sandbox();
    appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_PRODUCTION, NULL);
    appstore_verifier_options_set_app_apple_id(o, app_apple_id, NULL);
    appstore_verifier *v = NULL;
    capi_check(&T, appstore_verifier_new(o, &v, NULL) == APPSTORE_OK && v, "Production with app Apple ID builds", NULL);
    appstore_verifier_free(v);
    /* Online checks switched on then off again: usable. */
    appstore_verifier_options_set_online_checks(o, 1, NULL);
    appstore_verifier_options_set_online_checks(o, 0, NULL);
    v = NULL;
    capi_check(&T, appstore_verifier_new(o, &v, NULL) == APPSTORE_OK && v, "online checks on then off builds", NULL);
    appstore_verifier_free(v);
    appstore_verifier_options_free(o);
    /* Xcode and LocalTesting do not check signatures: no roots needed (a Sandbox one without roots fails above). */
    const appstore_environment unsigned_envs[] = {APPSTORE_ENVIRONMENT_XCODE, APPSTORE_ENVIRONMENT_LOCAL_TESTING};
    for (size_t i = 0; i < 2; i++) {
        appstore_verifier_options_new(&o, NULL);
        appstore_verifier_options_set_bundle_id(o, bundle_id, NULL);
        appstore_verifier_options_set_environment(o, unsigned_envs[i], NULL);
        v = NULL;
        appstore_status st = appstore_verifier_new(o, &v, NULL);
        capi_check(&T, st == APPSTORE_OK && v, "Xcode / LocalTesting without roots builds", "%s",
                   appstore_status_name(st));
        appstore_verifier_free(v);
        appstore_verifier_options_free(o);
    }
}

static void verify_conventions(const appstore_verifier *v) {
    /* json_out NULL: verify only. */
    capi_check(&T, appstore_verifier_verify_transaction(v, tx_jws, tx_len, NULL, NULL) == APPSTORE_OK,
               "verify with json_out NULL", NULL);
    /* Success leaves *err_out untouched and sets *json_out. */
    appstore_error *err = ERR_SENTINEL;
    char *json = JSON_SENTINEL;
    appstore_status st = appstore_verifier_verify_transaction(v, tx_jws, tx_len, &json, &err);
    capi_check(&T, st == APPSTORE_OK && err == ERR_SENTINEL && json != JSON_SENTINEL && json != NULL,
               "success: *json_out set, *err_out untouched", "status %s", appstore_status_name(st));
    if (st == APPSTORE_OK && json != JSON_SENTINEL) appstore_string_free(json);

    /* The JWS need not be NUL-terminated: an exact-size heap copy. */
    char *exact = malloc(tx_len);
    memcpy(exact, tx_jws, tx_len);
    capi_check(&T, appstore_verifier_verify_transaction(v, exact, tx_len, NULL, NULL) == APPSTORE_OK,
               "JWS without a terminating NUL", NULL);
    free(exact);
    /* A length that includes the NUL makes the signature segment invalid. */
    err = NULL;
    expect_error("JWS length including the NUL", appstore_verifier_verify_transaction(v, tx_jws, tx_len + 1, NULL, &err),
                 &err, APPSTORE_INVALID_JWT_FORMAT, "malformed");
    /* A transaction given to the deep notification call. */
    err = NULL;
    json = JSON_SENTINEL;
    expect_error("deep notification given a transaction",
                 appstore_verifier_verify_notification_deep(v, tx_jws, tx_len, &json, &err), &err,
                 APPSTORE_INVALID_APP_IDENTIFIER, "wrong_kind");
    capi_check(&T, json == JSON_SENTINEL, "deep notification given a transaction", "json_out written on failure");
    /* The deep call on a valid notification: notification + nested transaction and renewal info. */
    json = NULL;
    st = appstore_verifier_verify_notification_deep(v, notif_jws, notif_len, &json, NULL);
    json_error_t jerr;
    json_t *doc = st == APPSTORE_OK ? json_loads(json, 0, &jerr) : NULL;
    capi_check(&T, json_is_object(json_object_get(doc, "notification")) &&
                       json_is_object(json_object_get(doc, "transaction")) &&
                       json_is_object(json_object_get(doc, "renewalInfo")) && !json_object_get(doc, "appTransaction"),
               "deep notification output shape", "status %s, %.200s", appstore_status_name(st), json ? json : "");
    json_decref(doc);
    appstore_string_free(json);
}

/* Apple's verifyNotification extension point: a notification verified but for its app, the app it names handed out,
 * and the app check on its own. */
static void notification_hook(const appstore_verifier *v) {
    char *json = NULL, *identity = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_notification_leaving_identity(v, notif_jws, notif_len, &json, &identity, &err);
    json_t *id = st == APPSTORE_OK ? json_loads(identity, 0, NULL) : NULL;
    capi_check(&T, st == APPSTORE_OK && json != NULL && json_is_object(id), "leaving identity: a valid notification",
               "status %s: %s", appstore_status_name(st), appstore_error_message(err));
    const char *b = json_string_value(json_object_get(id, "bundleId"));
    const char *e = json_string_value(json_object_get(id, "environment"));
    const char *src = json_string_value(json_object_get(id, "source"));
    capi_check(&T, b && strcmp(b, bundle_id) == 0 && e && strcmp(e, "Sandbox") == 0 && src && strcmp(src, "data") == 0,
               "leaving identity: the app the notification names", "%s", identity ? identity : "(none)");
    /* The default check on what it named passes; on another bundle, environment or a bad id it fails. */
    capi_check(&T, appstore_verifier_check_notification_identity(v, b, 0, e, NULL) == APPSTORE_OK,
               "check identity: the notification's own app", NULL);
    expect_error("check identity: another bundle",
                 appstore_verifier_check_notification_identity(v, "com.other", 0, e, &err), &err,
                 APPSTORE_INVALID_APP_IDENTIFIER, "wrong_bundle");
    expect_error("check identity: another environment",
                 appstore_verifier_check_notification_identity(v, b, 0, "Production", &err), &err,
                 APPSTORE_INVALID_ENVIRONMENT, "wrong_environment");
    expect_error("check identity: no bundle", appstore_verifier_check_notification_identity(v, NULL, 0, NULL, &err),
                 &err, APPSTORE_INVALID_APP_IDENTIFIER, "wrong_bundle");
    expect_error("check identity: a negative app Apple ID",
                 appstore_verifier_check_notification_identity(v, b, -1, e, &err), &err, APPSTORE_INVALID_ARGUMENT,
                 "invalid_argument");
    json_decref(id);
    appstore_string_free(json);
    appstore_string_free(identity);
    /* identity_json_out is required; a transaction is not a notification (the kind is checked, as the app is not). */
    json = JSON_SENTINEL;
    expect_error("leaving identity: identity_json_out NULL",
                 appstore_verifier_notification_leaving_identity(v, notif_jws, notif_len, &json, NULL, &err), &err,
                 APPSTORE_INVALID_ARGUMENT, "invalid_argument");
    identity = JSON_SENTINEL;
    expect_error("leaving identity: a transaction",
                 appstore_verifier_notification_leaving_identity(v, tx_jws, tx_len, &json, &identity, &err), &err,
                 APPSTORE_INVALID_APP_IDENTIFIER, "wrong_kind");
    capi_check(&T, json == JSON_SENTINEL && identity == JSON_SENTINEL, "leaving identity: nothing written on failure", NULL);
}

/* Xcode mode checks no signatures, so nested JWS can be built here without a key: a nested failure must fail the
 * deep call with a message that starts with the field name. */
static void deep_nested_failures(void) {
    appstore_verifier_options *o = options_sandbox();
    appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_XCODE, NULL);
    appstore_verifier *v = verifier_from(o);
    appstore_verifier_options_free(o);
    const char *hdr = "{\"alg\":\"ES256\",\"typ\":\"JWT\"}";
    char tx_ok[1024], tx_other[1024], notif[4096];
    const char *tx_fmt = "{\"transactionId\":\"2000000912345678\",\"originalTransactionId\":\"2000000900000001\","
                         "\"bundleId\":\"%s\",\"productId\":\"com.example.p\",\"purchaseDate\":1748735940000,"
                         "\"quantity\":1,\"type\":\"Auto-Renewable Subscription\",\"inAppOwnershipType\":\"PURCHASED\","
                         "\"signedDate\":1748735990000,\"environment\":\"Xcode\"}";
    snprintf(tx_ok, sizeof tx_ok, tx_fmt, bundle_id);
    snprintf(tx_other, sizeof tx_other, tx_fmt, "com.example.other");
    char *nested_ok = make_jws(hdr, tx_ok), *nested_other = make_jws(hdr, tx_other);
    const struct {
        const char *label;
        const char *nested;
        appstore_status want;
        const char *reason;
    } cases[] = {
        {"nested transaction valid", nested_ok, APPSTORE_OK, "none"},
        {"nested transaction malformed", "not-a-jws", APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"nested transaction wrong bundle", nested_other, APPSTORE_INVALID_APP_IDENTIFIER, "wrong_bundle"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(notif, sizeof notif,
                 "{\"notificationType\":\"DID_RENEW\",\"notificationUUID\":\"0f4a7c52-5f3c-4e4b-9c1a-2b3d4e5f6a7b\","
                 "\"data\":{\"appAppleId\":%lld,\"bundleId\":\"%s\",\"environment\":\"Xcode\","
                 "\"signedTransactionInfo\":\"%s\",\"status\":1},\"version\":\"2.0\",\"signedDate\":1748736000000}",
                 (long long)app_apple_id, bundle_id, cases[i].nested);
        char *jws = make_jws(hdr, notif);
        char what[128];
        snprintf(what, sizeof what, "deep (Xcode): %s", cases[i].label);
        char *json = JSON_SENTINEL;
        appstore_error *err = NULL;
        /* The plain call does not look inside: it succeeds in every case. */
        capi_check(&T, appstore_verifier_verify_notification(v, jws, strlen(jws), NULL, NULL) == APPSTORE_OK, what,
                   "plain (not deep) verify_notification failed");
        appstore_status st = appstore_verifier_verify_notification_deep(v, jws, strlen(jws), &json, &err);
        if (cases[i].want == APPSTORE_OK) {
            json_error_t jerr;
            json_t *doc = st == APPSTORE_OK ? json_loads(json, 0, &jerr) : NULL;
            capi_check(&T,
                       json_is_string(json_object_get(json_object_get(doc, "transaction"), "transactionId")) &&
                           json_object_get(doc, "renewalInfo") == NULL,
                       what, "status %s (%s), output %.200s", appstore_status_name(st), appstore_error_message(err),
                       st == APPSTORE_OK ? json : "");
            json_decref(doc);
            if (st == APPSTORE_OK) appstore_string_free(json);
            appstore_error_free(err);
        } else {
            capi_check(&T, json == JSON_SENTINEL, what, "json_out written on failure");
            const char *msg = appstore_error_message(err);
            capi_check(&T, strncmp(msg, "data.signedTransactionInfo", 26) == 0, what,
                       "message does not start with the field name: \"%s\"", msg);
            expect_error(what, st, &err, cases[i].want, cases[i].reason);
        }
        free(jws);
    }
    free(nested_ok);
    free(nested_other);
    appstore_verifier_free(v);
}

static void garbage_inputs(const appstore_verifier *v) {
    /* Deterministic pseudo-random bytes (xorshift). */
    uint64_t seed = 0x9e3779b97f4a7c15ull;
#define NEXT() (seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17, seed)
    enum { NRANDOM = 24 };
    char *random_plain[NRANDOM], *random_dots[NRANDOM];
    size_t random_len[NRANDOM];
    for (int i = 0; i < NRANDOM; i++) {
        size_t n = 1 + (size_t)(NEXT() % 3000);
        random_len[i] = n;
        random_plain[i] = malloc(n);
        random_dots[i] = malloc(n + 2);
        for (size_t k = 0; k < n; k++) {
            unsigned char b = (unsigned char)NEXT();
            random_plain[i][k] = (char)(b == '.' ? '/' : b); /* no dot: never three segments */
        }
        size_t a = NEXT() % (n + 1), b = NEXT() % (n + 1);
        if (a > b) {
            size_t t = a;
            a = b;
            b = t;
        }
        /* exactly two dots inserted: three segments of random bytes */
        memcpy(random_dots[i], random_plain[i], a);
        random_dots[i][a] = '.';
        memcpy(random_dots[i] + a + 1, random_plain[i] + a, b - a);
        random_dots[i][b + 1] = '.';
        memcpy(random_dots[i] + b + 2, random_plain[i] + b, n - b);
    }
#undef NEXT
    const size_t big = 100 * 1024;
    char *a100k = repeat('A', big);
    char *three_big = malloc(3 * big + 3);
    snprintf(three_big, 3 * big + 3, "%s.%s.%s", a100k, a100k, a100k);

    /* x5c entries whose DER length fields claim enormous sizes. */
    static const unsigned char huge4[] = {0x30, 0x84, 0x7f, 0xff, 0xff, 0xff, 0x30, 0x00};
    static const unsigned char huge8[] = {0x30, 0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x01, 0x00};
    static const unsigned char indefinite[] = {0x30, 0x80, 0x30, 0x80, 0x00, 0x00};
    char *h4 = b64(huge4, sizeof huge4, 0), *h8 = b64(huge8, sizeof huge8, 0), *hi = b64(indefinite, sizeof indefinite, 0);
    const char *payload_seg = strchr(tx_jws, '.') + 1; /* the genuine signed payload segment + signature */
    size_t hdr_cap = 2 * big + 512;
    char *hdr = malloc(hdr_cap);
    char *jws_huge_len, *jws_huge_len8, *jws_indef, *jws_huge_cert, *jws_huge_alg, *jws_deep_header, *jws_deep_payload;
    char *jws_x5c_empty, *jws_x5c_one, *jws_x5c_null;
#define WITH_HEADER(out, ...)                                                            \
    do {                                                                                 \
        snprintf(hdr, hdr_cap, __VA_ARGS__);                                             \
        char *hs = b64((const unsigned char *)hdr, strlen(hdr), 1);                      \
        size_t n = strlen(hs) + strlen(payload_seg) + 2;                                 \
        out = malloc(n);                                                                 \
        snprintf(out, n, "%s.%s", hs, payload_seg);                                      \
        free(hs);                                                                        \
    } while (0)
    WITH_HEADER(jws_huge_len, "{\"alg\":\"ES256\",\"x5c\":[\"%s\",\"%s\",\"%s\"]}", h4, h4, h4);
    WITH_HEADER(jws_huge_len8, "{\"alg\":\"ES256\",\"x5c\":[\"%s\",\"%s\",\"%s\"]}", h8, h8, h8);
    WITH_HEADER(jws_indef, "{\"alg\":\"ES256\",\"x5c\":[\"%s\",\"%s\",\"%s\"]}", hi, hi, hi);
    WITH_HEADER(jws_huge_cert, "{\"alg\":\"ES256\",\"x5c\":[\"%s\",\"%s\",\"%s\"]}", a100k, h4, h4);
    char *e100k = repeat('E', big);
    WITH_HEADER(jws_huge_alg, "{\"alg\":\"%s\",\"x5c\":[]}", e100k);
    char *brackets = repeat('[', big);
    WITH_HEADER(jws_deep_header, "{\"alg\":\"ES256\",\"x5c\":%s", brackets);
    /* The x5c header's shape: empty (its own reason: Apple's Python reports it unlike a short chain), one entry, null. */
    WITH_HEADER(jws_x5c_empty, "{\"alg\":\"ES256\",\"x5c\":[]}");
    WITH_HEADER(jws_x5c_one, "{\"alg\":\"ES256\",\"x5c\":[\"%s\"]}", h4);
    WITH_HEADER(jws_x5c_null, "{\"alg\":\"ES256\",\"x5c\":null}");
#undef WITH_HEADER
    /* Unbalanced nesting 100k deep in the payload (header fine). */
    char *deep_payload = repeat('[', big);
    jws_deep_payload = make_jws("{\"alg\":\"ES256\",\"typ\":\"JWT\"}", deep_payload);

    const garbage list[] = {
        {"empty", "", 0, APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"NULL, 0", NULL, 0, APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"NULL, 5", NULL, 5, APPSTORE_INVALID_ARGUMENT, "invalid_argument"},
        {"NULL, SIZE_MAX", NULL, SIZE_MAX, APPSTORE_INVALID_ARGUMENT, "invalid_argument"},
        {"len SIZE_MAX", tx_jws, SIZE_MAX, APPSTORE_INVALID_ARGUMENT, "invalid_argument"},
        {"len PTRDIFF_MAX+1", tx_jws, (size_t)PTRDIFF_MAX + 1, APPSTORE_INVALID_ARGUMENT, "invalid_argument"},
        {"100 KB of 'A'", a100k, big, APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"3 x 100 KB of 'A'", three_big, strlen(three_big), APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"3 segments of garbage", "!!!.@@@.###", 11, APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"two dots", "..", 2, APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"invalid UTF-8 segments", "\xff\xfe.\xc0\xaf.\xed\xa0\x80", 9, APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"x5c DER length 0x7fffffff", jws_huge_len, strlen(jws_huge_len), APPSTORE_INVALID_CERTIFICATE,
         "bad_certificate"},
        {"x5c DER 8-byte length", jws_huge_len8, strlen(jws_huge_len8), APPSTORE_INVALID_CERTIFICATE, "bad_certificate"},
        {"x5c DER indefinite length", jws_indef, strlen(jws_indef), APPSTORE_INVALID_CERTIFICATE, "bad_certificate"},
        {"x5c leaf 100 KB of 'A'", jws_huge_cert, strlen(jws_huge_cert), APPSTORE_INVALID_CERTIFICATE,
         "bad_certificate"},
        {"alg 100 KB long", jws_huge_alg, strlen(jws_huge_alg), APPSTORE_VERIFICATION_FAILURE, "unsupported_alg"},
        {"header nested 100k deep", jws_deep_header, strlen(jws_deep_header), APPSTORE_INVALID_JWT_FORMAT, "malformed"},
        {"x5c empty list", jws_x5c_empty, strlen(jws_x5c_empty), APPSTORE_INVALID_CHAIN_LENGTH, "empty_x5c"},
        {"x5c of one entry", jws_x5c_one, strlen(jws_x5c_one), APPSTORE_INVALID_CHAIN_LENGTH, "chain_length"},
        {"x5c null", jws_x5c_null, strlen(jws_x5c_null), APPSTORE_INVALID_CHAIN_LENGTH, "missing_x5c"},
    };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        for (size_t f = 0; f < NVERIFY; f++) run_isolated(VERIFY[f].name, VERIFY[f].fn, v, &list[i]);

    for (int i = 0; i < NRANDOM; i++) {
        char l1[64], l2[64];
        snprintf(l1, sizeof l1, "random bytes #%d (%zu)", i, random_len[i]);
        snprintf(l2, sizeof l2, "random bytes with 2 dots #%d", i);
        garbage g1 = {l1, random_plain[i], random_len[i], APPSTORE_INVALID_JWT_FORMAT, "malformed"};
        garbage g2 = {l2, random_dots[i], random_len[i] + 2, APPSTORE_INVALID_JWT_FORMAT, "malformed"};
        run_isolated(VERIFY[i % NVERIFY].name, VERIFY[i % NVERIFY].fn, v, &g1);
        run_isolated(VERIFY[(i + 1) % NVERIFY].name, VERIFY[(i + 1) % NVERIFY].fn, v, &g2);
        free(random_plain[i]);
        free(random_dots[i]);
    }

    /* Payload nested 100k deep, reached without a signature check (Xcode verifier). */
    appstore_verifier_options *o = options_sandbox();
    appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_XCODE, NULL);
    appstore_verifier *xv = verifier_from(o);
    appstore_verifier_options_free(o);
    garbage deep = {"Xcode: payload nested 100k deep", jws_deep_payload, strlen(jws_deep_payload),
                    APPSTORE_INVALID_JWT_FORMAT, "malformed"};
    for (size_t f = 0; f < NVERIFY; f++) run_isolated(VERIFY[f].name, VERIFY[f].fn, xv, &deep);
    appstore_verifier_free(xv);

    free(a100k);
    free(three_big);
    free(h4);
    free(h8);
    free(hi);
    free(hdr);
    free(jws_huge_len);
    free(jws_huge_len8);
    free(jws_indef);
    free(jws_huge_cert);
    free(e100k);
    free(jws_huge_alg);
    free(brackets);
    free(jws_deep_header);
    free(jws_x5c_empty);
    free(jws_x5c_one);
    free(jws_x5c_null);
    free(deep_payload);
    free(jws_deep_payload);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s TESTPKI_DIR spec/errors.json\n", argv[0]);
        return 2;
    }
    json_error_t serr;
    errors_spec = json_load_file(argv[2], 0, &serr);
    if (!json_is_array(json_object_get(errors_spec, "reasons"))) {
        printf("FAIL cannot read %s: %s\n", argv[2], serr.text);
        printf("errors: 0 passed, 1 failed\n");
        return 1;
    }
    const char *dir = argv[1];
    char *p = capi_join(dir, "root.der");
    root_der = capi_read_file(p, &root_len);
    free(p);
    p = capi_join(dir, "jws/tx-valid.jws");
    tx_jws = capi_read_trimmed(p, &tx_len);
    free(p);
    p = capi_join(dir, "jws/notif-valid-did-renew.jws");
    notif_jws = capi_read_trimmed(p, &notif_len);
    free(p);
    p = capi_join(dir, "manifest.json");
    json_error_t jerr;
    json_t *manifest = json_load_file(p, 0, &jerr);
    free(p);
    if (!root_der || !tx_jws || !notif_jws || !json_is_string(json_object_get(manifest, "bundleId"))) {
        printf("FAIL cannot read the testpki fixtures in %s\n", dir);
        printf("errors: 0 passed, 1 failed\n");
        return 1;
    }
    bundle_id = strdup(json_string_value(json_object_get(manifest, "bundleId")));
    app_apple_id = (int64_t)json_integer_value(json_object_get(manifest, "appAppleId"));
    json_decref(manifest);
    printf("libappstoreserver %s\n", appstore_version());

    names();
    null_handles();
    options_errors();
    config_errors();
    appstore_verifier_options *o = options_sandbox();
    appstore_verifier *v = verifier_from(o);
    appstore_verifier_options_free(o);
    verify_conventions(v);
    notification_hook(v);
    deep_nested_failures();
    garbage_inputs(v);
    /* After all that, the verifier still works. */
    expect_tx_valid("verifier intact after the garbage", v);
    appstore_verifier_free(v);

    free(root_der);
    free(tx_jws);
    free(notif_jws);
    free((char *)bundle_id);
    return capi_finish(&T);
}
