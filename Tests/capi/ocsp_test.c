/*
 * ocsp_test [--quick]   (run by Tests/support/ocsp_harness.py run DIR -- ocsp_test, which sets APPSTORE_OCSP_SETUP)
 *
 * Online checks (OCSP) through the C ABI, against the harness's real `openssl ocsp` responders, with the test socket
 * transport (http_transport.c) behind appstore_transport:
 *   - every case of setup.json: status, reason, message details, and the number of OCSP requests the first call makes,
 *     counted at the transport and at the responders (the harness's relays count what they receive: GET /counts);
 *   - every case offline: the outcome at the payload's signedDate, the transport never used;
 *   - the effective date: online checks validate at the current time (a leaf expired now fails online, passes
 *     offline; a leaf not yet valid at signedDate passes online, fails offline);
 *   - the cache: many verifications of one chain cost one exchange per certificate (at the transport and at the
 *     responders); an entry ends at the answers' nextUpdate; failures are not cached; with the cache disabled every
 *     call asks;
 *   - the transport contract: POST, content type, the timeout (0 = 30000), reference counting of the transport handle,
 *     a transport removed again (configuration error);
 *   - answers a wrapper callback spoils (HTTP 503, garbage, callback TIMEOUT / UNREACHABLE codes);
 *   - the OCSP exchange's body limit (APPSTORE_LIMIT_OCSP_RESPONSE_BYTES, told by appstore_http_response_body_limit)
 *     enforced by appstore_http_response_append_body;
 *   - a leader whose callback ignores its timeout holds a follower of the same chain no longer than the bound;
 *   - 4 threads sharing one online verifier: one exchange per certificate in all.
 * --quick skips the slow-responder case, the nextUpdate wait, the stuck leader and the threads (for the valgrind
 * run).
 * Closing line: "ocsp: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "capi_util.h"
#include "http_transport.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static capi_tally T = {"ocsp", 0, 0};
static json_t *setup;
static unsigned char *root_der;
static size_t root_len;
static const char *bundle_id;

/* A case's JWS (index i), read from disk; caller frees. */
static char *case_jws(const char *name, size_t i, size_t *len) {
    json_t *paths = json_object_get(json_object_get(json_object_get(setup, "cases"), name), "jws");
    const char *path = json_string_value(json_array_get(paths, i));
    return path ? capi_read_trimmed(path, len) : NULL;
}

static size_t case_jws_count(const char *name) {
    return json_array_size(json_object_get(json_object_get(json_object_get(setup, "cases"), name), "jws"));
}

static const char *url_of(const char *responder) {
    return json_string_value(json_object_get(json_object_get(setup, "urls"), responder));
}

/* Options for an online verifier with the given transport, timeout and cache (max_entries < 0: default). */
static appstore_verifier *online_verifier(const appstore_transport *t, uint32_t timeout_ms, int max_entries,
                                          int64_t ttl) {
    appstore_verifier_options *o = NULL;
    appstore_verifier *v = NULL;
    appstore_error *err = NULL;
    appstore_verifier_options_new(&o, NULL);
    appstore_verifier_options_add_root(o, root_der, root_len, NULL);
    appstore_verifier_options_set_bundle_id(o, bundle_id, NULL);
    appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_SANDBOX, NULL);
    appstore_verifier_options_set_online_checks(o, 1, NULL);
    if (max_entries >= 0) appstore_verifier_options_set_chain_cache(o, (uint32_t)max_entries, ttl, NULL);
    capi_check(&T, appstore_verifier_options_set_transport(o, t, timeout_ms, &err) == APPSTORE_OK, "set_transport",
               "%s", appstore_error_message(err));
    appstore_error_free(err);
    err = NULL;
    appstore_status st = appstore_verifier_new(o, &v, &err);
    capi_check(&T, st == APPSTORE_OK && v, "online verifier_new", "%s", appstore_error_message(err));
    appstore_error_free(err);
    appstore_verifier_options_free(o);
    return v;
}

/* Verifies case `name` JWS i as a transaction; returns the status, fills reason and message (static buffer). */
static char last_message[2048];
static appstore_status verify(const appstore_verifier *v, const char *name, size_t i, appstore_reason *reason) {
    size_t len = 0;
    char *jws = case_jws(name, i, &len);
    if (!jws) {
        capi_check(&T, 0, "case JWS", "%s[%zu] missing", name, i);
        return -1;
    }
    appstore_error *err = NULL;
    char *json = NULL;
    appstore_status st = appstore_verifier_verify_transaction(v, jws, len, &json, &err);
    if (reason) *reason = appstore_error_reason(err);
    snprintf(last_message, sizeof last_message, "%s", appstore_error_message(err));
    appstore_error_free(err);
    appstore_string_free(json);
    free(jws);
    return st;
}

/* A case's string field (serial, intermediateSerial, ...). */
static const char *case_string(const char *name, const char *key) {
    return json_string_value(json_object_get(json_object_get(json_object_get(setup, "cases"), name), key));
}

/* What the harness's responders received so far ({"total", "byResponder", "bySerial"}); caller decrefs. */
static json_t *responder_counts(void) {
    const char *url = json_string_value(json_object_get(setup, "controlUrl"));
    http_result r;
    json_t *j = NULL;
    if (url && http_fetch("GET", url, "", 0, NULL, 0, 10000, &r) == APPSTORE_TRANSPORT_RESULT_OK) {
        if (r.status == 200) j = json_loadb((const char *)r.body, r.body_len, 0, NULL);
        http_result_free(&r);
    }
    capi_check(&T, j != NULL, "GET /counts from the harness", "%s", url ? url : "no controlUrl in setup.json");
    return j ? j : json_object();
}

/* Requests received between two snapshots: about the certificate with this serial, or in all (serial NULL). */
static long long received(json_t *before, json_t *after, const char *serial) {
    if (!serial)
        return json_integer_value(json_object_get(after, "total")) -
               json_integer_value(json_object_get(before, "total"));
    return json_integer_value(json_object_get(json_object_get(after, "bySerial"), serial)) -
           json_integer_value(json_object_get(json_object_get(before, "bySerial"), serial));
}

static appstore_transport *socket_transport(http_transport_stats *stats) {
    appstore_transport *t = NULL;
    capi_check(&T, appstore_transport_new(http_transport_send, stats, &t, NULL) == APPSTORE_OK && t, "transport_new",
               NULL);
    return t;
}

/* ---- 1. every case -------------------------------------------------------------------------------------------- */

static void every_case(int quick) {
    json_t *cases = json_object_get(setup, "cases");
    const char *name;
    json_t *c;
    int seen = 0;
    json_object_foreach(cases, name, c) {
        if (quick && strcmp(name, "responder_slow") == 0) continue;
        seen++;
        json_t *e = json_object_get(c, "expect");
        const char *want_status = json_string_value(json_object_get(e, "status"));
        const char *want_reason = json_string_value(json_object_get(e, "reason"));
        int want_requests = (int)json_integer_value(json_object_get(e, "requests"));
        http_transport_stats stats = {0};
        appstore_transport *t = socket_transport(&stats);
        int slow = strcmp(name, "responder_slow") == 0;
        appstore_verifier *v = online_verifier(t, slow ? 2500 : 10000, -1, 0);
        appstore_transport_free(t); /* the verifier keeps its own reference */
        json_t *before = responder_counts();
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        appstore_reason reason = 0;
        appstore_status st = verify(v, name, 0, &reason);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double elapsed = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
        char what[160];
        snprintf(what, sizeof what, "case %s", name);
        capi_check(&T, strcmp(appstore_status_name(st), want_status) == 0, what, "status %s, expected %s (%s: %s)",
                   appstore_status_name(st), want_status, appstore_reason_name(reason), last_message);
        if (want_reason)
            capi_check(&T, strcmp(appstore_reason_name(reason), want_reason) == 0, what, "reason %s, expected %s: %s",
                       appstore_reason_name(reason), want_reason, last_message);
        json_t *piece;
        size_t i;
        json_array_foreach(json_object_get(e, "messageContains"), i, piece) {
            capi_check(&T, strstr(last_message, json_string_value(piece)) != NULL, what, "message lacks \"%s\": %s",
                       json_string_value(piece), last_message);
        }
        capi_check(&T, stats.requests == want_requests, what, "%d OCSP requests, expected %d", stats.requests,
                   want_requests);
        /* The same at the responders: the intermediate's serial first, then the leaf's. */
        json_t *after = responder_counts();
        long long want_at_responders = json_integer_value(json_object_get(e, "responderRequests"));
        capi_check(&T, received(before, after, NULL) == want_at_responders, what,
                   "the responders got %lld requests, expected %lld", received(before, after, NULL),
                   want_at_responders);
        if (want_requests >= 1)
            capi_check(&T, received(before, after, case_string(name, "intermediateSerial")) == 1, what,
                       "the intermediate was asked about %lld times at the root's responder",
                       received(before, after, case_string(name, "intermediateSerial")));
        if (want_at_responders == 2)
            capi_check(&T, received(before, after, case_string(name, "serial")) == 1, what,
                       "the leaf was asked about %lld times at its responder",
                       received(before, after, case_string(name, "serial")));
        json_decref(before);
        json_decref(after);
        /* The reason (ocsp_timeout, above) shows the deadline fired; the bound is 12x the 2.5 s timeout (>= 4x the
         * slowest loaded run) and far below the relay's 600 s wait. */
        if (slow) capi_check(&T, elapsed < 30, what, "took %.1f s with a 2.5 s timeout (the relay waits 600 s)", elapsed);
        appstore_verifier_free(v);
    }
    static const char *required[] = {
        "good", "leaf_revoked", "leaf_unknown", "responder_down", "wrong_responder", "foreign_responder",
        "responder_without_eku", "stale_response", "future_response", "short_lived_answer", "no_ocsp_url",
        "intermediate_revoked", "leaf_expired_now", "leaf_not_valid_at_signed_date", "aia_http_after_ldap",
        "aia_no_http", "no_nonce", "no_next_update", "no_next_update_edge", "no_next_update_old",
        "next_update_30s_ago", "next_update_90s_ago", "responder_slow",
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        capi_check(&T, json_object_get(cases, required[i]) != NULL, "case in setup.json", "%s missing", required[i]);
    capi_check(&T, seen >= (quick ? 22 : 23), "cases in setup.json", "%d", seen);
}

/* Every case with online checks off: the outcome at the payload's signedDate; the transport is never called. */
static appstore_verifier *offline_verifier(const appstore_transport *t) {
    appstore_verifier_options *o = NULL;
    appstore_verifier *v = NULL;
    appstore_verifier_options_new(&o, NULL);
    appstore_verifier_options_add_root(o, root_der, root_len, NULL);
    appstore_verifier_options_set_bundle_id(o, bundle_id, NULL);
    appstore_verifier_options_set_environment(o, APPSTORE_ENVIRONMENT_SANDBOX, NULL);
    appstore_verifier_options_set_transport(o, t, 0, NULL);
    capi_check(&T, appstore_verifier_new(o, &v, NULL) == APPSTORE_OK && v, "offline verifier_new", NULL);
    appstore_verifier_options_free(o);
    return v;
}

static void offline_cases(void) {
    http_transport_stats stats = {0};
    appstore_transport *t = socket_transport(&stats);
    appstore_verifier *v = offline_verifier(t);
    json_t *before = responder_counts();
    const char *name;
    json_t *c;
    json_object_foreach(json_object_get(setup, "cases"), name, c) {
        json_t *off = json_object_get(json_object_get(c, "expect"), "offline");
        const char *want_status = json_string_value(json_object_get(off, "status"));
        const char *want_reason = json_string_value(json_object_get(off, "reason"));
        appstore_reason reason = 0;
        appstore_status st = verify(v, name, 0, &reason);
        char what[160];
        snprintf(what, sizeof what, "offline case %s", name);
        capi_check(&T, want_status && strcmp(appstore_status_name(st), want_status) == 0 &&
                           (!want_reason || strcmp(appstore_reason_name(reason), want_reason) == 0),
                   what, "%s %s, expected %s %s: %s", appstore_status_name(st), appstore_reason_name(reason),
                   want_status ? want_status : "?", want_reason ? want_reason : "", last_message);
    }
    json_t *after = responder_counts();
    capi_check(&T, stats.requests == 0 && received(before, after, NULL) == 0, "offline: no OCSP request",
               "%d at the transport, %lld at the responders", stats.requests, received(before, after, NULL));
    json_decref(before);
    json_decref(after);
    appstore_verifier_free(v);
    appstore_transport_free(t);
}

/* Online checks validate the chain at the current time, offline verifiers at the payload's signedDate. */
static void effective_date(void) {
    http_transport_stats stats = {0};
    appstore_transport *t = socket_transport(&stats);
    appstore_verifier *online = online_verifier(t, 10000, -1, 0);
    appstore_verifier *offline = offline_verifier(t);
    json_t *before = responder_counts();
    appstore_reason reason = 0;

    /* Valid at signedDate (10 days ago), expired now. */
    appstore_status st = verify(online, "leaf_expired_now", 0, &reason);
    capi_check(&T, st == APPSTORE_VERIFICATION_FAILURE && reason == APPSTORE_REASON_EXPIRED &&
                       strstr(last_message, "leaf") && stats.requests == 0,
               "online: leaf expired now fails as expired (before any OCSP request)", "%s %s, %d requests: %s",
               appstore_status_name(st), appstore_reason_name(reason), stats.requests, last_message);
    st = verify(offline, "leaf_expired_now", 0, &reason);
    capi_check(&T, st == APPSTORE_OK, "offline: leaf expired now is valid at signedDate", "%s: %s",
               appstore_status_name(st), last_message);

    /* Not yet valid at signedDate, valid now (and good at the responder). */
    st = verify(online, "leaf_not_valid_at_signed_date", 0, &reason);
    capi_check(&T, st == APPSTORE_OK && stats.requests == 2, "online: leaf valid now passes with good OCSP answers",
               "%s, %d requests: %s", appstore_status_name(st), stats.requests, last_message);
    st = verify(offline, "leaf_not_valid_at_signed_date", 0, &reason);
    capi_check(&T, st == APPSTORE_VERIFICATION_FAILURE && reason == APPSTORE_REASON_EXPIRED &&
                       strstr(last_message, "leaf") && stats.requests == 2,
               "offline: leaf not yet valid at signedDate fails as expired", "%s %s, %d requests: %s",
               appstore_status_name(st), appstore_reason_name(reason), stats.requests, last_message);

    json_t *after = responder_counts();
    capi_check(&T, received(before, after, NULL) == 2 &&
                       received(before, after, case_string("leaf_not_valid_at_signed_date", "serial")) == 1,
               "effective date: the responders were asked about the valid-now chain only", "%lld requests",
               received(before, after, NULL));
    json_decref(before);
    json_decref(after);
    appstore_verifier_free(online);
    appstore_verifier_free(offline);
    appstore_transport_free(t);
}

/* ---- 2. the cache ----------------------------------------------------------------------------------------------- */

static void cache(int quick) {
    http_transport_stats stats = {0};
    appstore_transport *t = socket_transport(&stats);
    appstore_verifier *v = online_verifier(t, 10000, -1, 0);
    size_t n = case_jws_count("good");
    int ok = 0;
    json_t *before = responder_counts();
    for (int round = 0; round < 5; round++)
        for (size_t i = 0; i < n; i++) ok += verify(v, "good", i, NULL) == APPSTORE_OK;
    json_t *after = responder_counts();
    capi_check(&T, ok == (int)(5 * n), "burst of good payloads verifies", "%d of %zu", ok, 5 * n);
    capi_check(&T, stats.requests == 2, "burst costs one OCSP exchange per certificate", "%d requests",
               stats.requests);
    capi_check(&T, received(before, after, NULL) == 2 &&
                       received(before, after, case_string("good", "intermediateSerial")) == 1 &&
                       received(before, after, case_string("good", "serial")) == 1,
               "burst: the responders got one request per certificate", "%lld in all, %lld intermediate, %lld leaf",
               received(before, after, NULL), received(before, after, case_string("good", "intermediateSerial")),
               received(before, after, case_string("good", "serial")));
    json_decref(before);
    json_decref(after);
    uint64_t hits = 0, misses = 0, entries = 0;
    appstore_verifier_cache_stats(v, &hits, &misses, &entries, NULL);
    capi_check(&T, misses == 1 && hits == 5 * n - 1 && entries == 1, "cache stats after the burst",
               "hits %llu misses %llu entries %llu", (unsigned long long)hits, (unsigned long long)misses,
               (unsigned long long)entries);

    /* Failures are never cached: each call asks again (intermediate good, then the leaf's responder is down). */
    stats.requests = 0;
    before = responder_counts();
    for (int call = 1; call <= 3; call++) {
        appstore_reason reason = 0;
        appstore_status st = verify(v, "responder_down", 0, &reason);
        capi_check(&T, st == APPSTORE_RETRYABLE_VERIFICATION_FAILURE && reason == APPSTORE_REASON_OCSP_UNREACHABLE,
                   "responder down is retryable", "%s %s", appstore_status_name(st), appstore_reason_name(reason));
        capi_check(&T, stats.requests == 2 * call, "a failure is not cached", "call %d: %d requests", call,
                   stats.requests);
        after = responder_counts();
        capi_check(&T, received(before, after, case_string("responder_down", "intermediateSerial")) == call,
                   "a failure is not cached (the root's responder asked each time)", "call %d: %lld", call,
                   received(before, after, case_string("responder_down", "intermediateSerial")));
        json_decref(after);
    }
    json_decref(before);
    stats.requests = 0;
    before = responder_counts();
    for (int call = 1; call <= 2; call++) {
        appstore_reason reason = 0;
        verify(v, "leaf_revoked", 0, &reason);
        after = responder_counts();
        capi_check(&T, reason == APPSTORE_REASON_REVOKED && stats.requests == 2 * call &&
                           received(before, after, case_string("leaf_revoked", "serial")) == call,
                   "revoked is not cached", "call %d: %s, %d requests, %lld at the leaf's responder", call,
                   appstore_reason_name(reason), stats.requests,
                   received(before, after, case_string("leaf_revoked", "serial")));
        json_decref(after);
    }
    json_decref(before);
    appstore_verifier_free(v);
    v = online_verifier(t, 10000, -1, 0);

    /* The entry ends at the answers' nextUpdate (a few seconds for the `short` responder), not at the TTL. */
    if (!quick) {
        stats.requests = 0;
        int good = verify(v, "short_lived_answer", 0, NULL) == APPSTORE_OK;
        good += verify(v, "short_lived_answer", 1, NULL) == APPSTORE_OK;
        capi_check(&T, good == 2 && stats.requests == 2, "short-lived answers cached until nextUpdate",
                   "%d verified, %d requests", good, stats.requests);
        struct timespec pause = {json_integer_value(json_object_get(setup, "shortAnswerSeconds")) + 1, 500000000};
        nanosleep(&pause, NULL);
        good = verify(v, "short_lived_answer", 0, NULL) == APPSTORE_OK;
        capi_check(&T, good && stats.requests == 4, "after nextUpdate the responders are asked again",
                   "%d verified, %d requests", good, stats.requests);
    }
    appstore_verifier_free(v);

    /* Cache disabled: every call asks. */
    stats.requests = 0;
    v = online_verifier(t, 10000, 0, 0);
    for (size_t i = 0; i < 3; i++) verify(v, "good", i, NULL);
    capi_check(&T, stats.requests == 6, "cache disabled: two exchanges per call", "%d requests", stats.requests);
    appstore_verifier_free(v);
    appstore_transport_free(t);
}

/* ---- 3. transport contract and spoiled answers ------------------------------------------------------------------ */

typedef struct {
    int mode; /* 0 pass through, 1 HTTP 503, 2 garbage body, 3 TIMEOUT code, 4 UNREACHABLE code */
    int requests;
    uint32_t last_timeout;
    int bad_shape; /* requests that were not POST + application/ocsp-request */
    char leaf_url[512];
} spoiler;

static int32_t spoiling_send(void *user_data, const char *method, const char *url, const char *headers,
                             size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                             appstore_http_response *response) {
    spoiler *s = user_data;
    __atomic_fetch_add(&s->requests, 1, __ATOMIC_SEQ_CST);
    s->last_timeout = timeout_ms;
    if (strcmp(method, "POST") != 0 || !strstr(headers, "Content-Type: application/ocsp-request\r\n") || body_len == 0)
        s->bad_shape++;
    if (s->mode == 0 || strcmp(url, s->leaf_url) != 0)
        return http_transport_send(NULL, method, url, headers, headers_len, body, body_len, timeout_ms, response);
    switch (s->mode) {
    case 1:
        appstore_http_response_set_status(response, 503, NULL);
        appstore_http_response_append_body(response, (const uint8_t *)"busy", 4, NULL);
        return APPSTORE_TRANSPORT_RESULT_OK;
    case 2:
        appstore_http_response_set_status(response, 200, NULL);
        appstore_http_response_add_header(response, "Content-Type", "application/ocsp-response", NULL);
        appstore_http_response_append_body(response, (const uint8_t *)"\x30\x03\x02\x01", 4, NULL);
        return APPSTORE_TRANSPORT_RESULT_OK;
    case 3: return APPSTORE_TRANSPORT_RESULT_TIMEOUT;
    default: return APPSTORE_TRANSPORT_RESULT_UNREACHABLE;
    }
}

static void transport_contract(void) {
    spoiler s = {0};
    snprintf(s.leaf_url, sizeof s.leaf_url, "%s", url_of("inter"));
    appstore_transport *t = NULL;
    appstore_transport_new(spoiling_send, &s, &t, NULL);

    /* timeout_ms 0 = 30000; the request shape. */
    appstore_verifier *v = online_verifier(t, 0, -1, 0);
    capi_check(&T, verify(v, "good", 0, NULL) == APPSTORE_OK, "good through a wrapping callback", "%s", last_message);
    capi_check(&T, s.requests == 2 && s.last_timeout == 30000 && s.bad_shape == 0, "timeout 0 = 30000, POST + type",
               "requests %d timeout %u bad %d", s.requests, s.last_timeout, s.bad_shape);
    appstore_verifier_free(v);
    v = online_verifier(t, 4321, -1, 0);
    verify(v, "good", 0, NULL);
    capi_check(&T, s.last_timeout == 4321, "timeout passed to the callback", "%u", s.last_timeout);
    appstore_verifier_free(v);

    static const struct {
        int mode;
        appstore_status status;
        appstore_reason reason;
        const char *what;
    } spoiled[] = {
        {1, APPSTORE_RETRYABLE_VERIFICATION_FAILURE, APPSTORE_REASON_OCSP_HTTP_ERROR, "HTTP 503"},
        {2, APPSTORE_VERIFICATION_FAILURE, APPSTORE_REASON_OCSP_MALFORMED, "garbage body"},
        {3, APPSTORE_RETRYABLE_VERIFICATION_FAILURE, APPSTORE_REASON_OCSP_TIMEOUT, "callback TIMEOUT"},
        {4, APPSTORE_RETRYABLE_VERIFICATION_FAILURE, APPSTORE_REASON_OCSP_UNREACHABLE, "callback UNREACHABLE"},
    };
    for (size_t i = 0; i < sizeof spoiled / sizeof spoiled[0]; i++) {
        s.mode = spoiled[i].mode;
        v = online_verifier(t, 10000, -1, 0);
        appstore_reason reason = 0;
        appstore_status st = verify(v, "good", 0, &reason);
        capi_check(&T, st == spoiled[i].status && reason == spoiled[i].reason, spoiled[i].what, "%s %s: %s",
                   appstore_status_name(st), appstore_reason_name(reason), last_message);
        appstore_verifier_free(v);
    }
    appstore_transport_free(t);

    /* A transport set and removed again: online checks are a configuration error again. */
    appstore_verifier_options *o = NULL;
    appstore_verifier *none = NULL;
    appstore_error *err = NULL;
    http_transport_stats stats = {0};
    t = socket_transport(&stats);
    appstore_verifier_options_new(&o, NULL);
    appstore_verifier_options_add_root(o, root_der, root_len, NULL);
    appstore_verifier_options_set_online_checks(o, 1, NULL);
    appstore_verifier_options_set_transport(o, t, 1000, NULL);
    appstore_verifier_options_set_transport(o, NULL, 0, NULL);
    appstore_status st = appstore_verifier_new(o, &none, &err);
    capi_check(&T, st == APPSTORE_CONFIGURATION_ERROR && !none &&
                       appstore_error_reason(err) == APPSTORE_REASON_ONLINE_CHECKS_UNAVAILABLE &&
                       strstr(appstore_error_message(err), "transport"),
               "online checks without a transport", "%s %s: %s", appstore_status_name(st),
               appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
    appstore_error_free(err);
    err = NULL;
    st = appstore_verifier_options_set_transport(NULL, t, 0, &err);
    capi_check(&T, st == APPSTORE_INVALID_ARGUMENT && appstore_error_reason(err) == APPSTORE_REASON_INVALID_ARGUMENT,
               "set_transport(NULL options)", "%s", appstore_status_name(st));
    appstore_error_free(err);
    /* Transport freed before the options: the options still hold it, the verifier built later works. */
    appstore_verifier_options_set_transport(o, t, 0, NULL);
    appstore_transport_free(t);
    appstore_verifier_options_set_bundle_id(o, bundle_id, NULL);
    capi_check(&T, appstore_verifier_new(o, &none, NULL) == APPSTORE_OK && none, "verifier after transport_free", NULL);
    appstore_verifier_options_free(o);
    capi_check(&T, verify(none, "good", 0, NULL) == APPSTORE_OK && stats.requests == 2,
               "options and transport freed, verifier still asks", "%d requests: %s", stats.requests, last_message);
    appstore_verifier_free(none);

    /* Offline with a transport: never called. */
    stats.requests = 0;
    t = socket_transport(&stats);
    appstore_verifier_options_new(&o, NULL);
    appstore_verifier_options_add_root(o, root_der, root_len, NULL);
    appstore_verifier_options_set_bundle_id(o, bundle_id, NULL);
    appstore_verifier_options_set_transport(o, t, 0, NULL);
    appstore_verifier_new(o, &none, NULL);
    capi_check(&T, verify(none, "leaf_revoked", 0, NULL) == APPSTORE_OK && stats.requests == 0,
               "online checks off: transport unused", "%d requests", stats.requests);
    appstore_verifier_free(none);
    appstore_verifier_options_free(o);
    appstore_transport_free(t);
}

/* ---- 4. the OCSP exchange's body limit in appstore_http_response_append_body ------------------------------------ */

#define BODY_CAP ((size_t)APPSTORE_LIMIT_OCSP_RESPONSE_BYTES)

typedef struct {
    int mode; /* 1: the limit in one append, then 1 byte more; 2: the limit + 1 in one append; 3: exactly the limit */
    size_t told; /* what appstore_http_response_body_limit said */
    const uint8_t *big; /* BODY_CAP + 1 readable bytes */
    appstore_status first, second;
    appstore_reason second_reason;
    char second_message[512];
    char leaf_url[512];
} capper;

static int32_t capping_send(void *user_data, const char *method, const char *url, const char *headers,
                            size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                            appstore_http_response *response) {
    capper *c = user_data;
    if (strcmp(url, c->leaf_url) != 0)
        return http_transport_send(NULL, method, url, headers, headers_len, body, body_len, timeout_ms, response);
    appstore_http_response_set_status(response, 200, NULL);
    c->told = appstore_http_response_body_limit(response);
    appstore_error *err = NULL;
    switch (c->mode) {
    case 1:
        c->first = appstore_http_response_append_body(response, c->big, BODY_CAP, NULL);
        c->second = appstore_http_response_append_body(response, c->big, 1, &err);
        break;
    case 2:
        c->first = APPSTORE_OK;
        c->second = appstore_http_response_append_body(response, c->big, BODY_CAP + 1, &err);
        break;
    default:
        c->first = appstore_http_response_append_body(response, c->big, BODY_CAP / 2, NULL);
        c->second = appstore_http_response_append_body(response, c->big, BODY_CAP / 2, &err);
        break;
    }
    c->second_reason = appstore_error_reason(err);
    snprintf(c->second_message, sizeof c->second_message, "%s", appstore_error_message(err));
    appstore_error_free(err);
    return APPSTORE_TRANSPORT_RESULT_OK; /* even after a refused append: the library must fail the exchange itself */
}

static void body_cap(void) {
    capper c = {0};
    snprintf(c.leaf_url, sizeof c.leaf_url, "%s", url_of("inter"));
    uint8_t *big = calloc(BODY_CAP + 1, 1);
    if (!capi_check(&T, big != NULL, "allocate the limit + 1", NULL)) return;
    c.big = big;
    appstore_transport *t = NULL;
    appstore_transport_new(capping_send, &c, &t, NULL);
    for (int mode = 1; mode <= 3; mode++) {
        c.mode = mode;
        c.first = c.second = -1;
        c.second_message[0] = 0;
        appstore_verifier *v = online_verifier(t, 10000, -1, 0);
        appstore_reason reason = 0;
        appstore_status st = verify(v, "good", 0, &reason);
        char what[96];
        capi_check(&T, c.told == BODY_CAP, "appstore_http_response_body_limit is OCSP's limit", "%zu", c.told);
        if (mode < 3) {
            snprintf(what, sizeof what, "append_body beyond the OCSP limit (%s)",
                     mode == 1 ? "the limit, then 1 byte" : "one call");
            capi_check(&T, c.first == APPSTORE_OK && c.second == APPSTORE_INVALID_ARGUMENT &&
                               c.second_reason == APPSTORE_REASON_INVALID_ARGUMENT &&
                               strstr(c.second_message, "1048576 bytes, this exchange's limit") != NULL,
                       what, "appends %s then %s (%s): %s", appstore_status_name(c.first),
                       appstore_status_name(c.second), appstore_reason_name(c.second_reason), c.second_message);
            snprintf(what, sizeof what, "a refused append fails the exchange (mode %d)", mode);
            capi_check(&T, st == APPSTORE_RETRYABLE_VERIFICATION_FAILURE &&
                               reason == APPSTORE_REASON_OCSP_UNREACHABLE &&
                               strstr(last_message, "larger than 1048576 bytes") != NULL,
                       what, "%s %s: %s", appstore_status_name(st), appstore_reason_name(reason), last_message);
        } else {
            /* Exactly at the limit: accepted by the transport; not an OCSP answer (zeros), refused as malformed. */
            capi_check(&T, c.first == APPSTORE_OK && c.second == APPSTORE_OK, "append_body up to the limit is accepted",
                       "%s then %s: %s", appstore_status_name(c.first), appstore_status_name(c.second),
                       c.second_message);
            capi_check(&T, st == APPSTORE_VERIFICATION_FAILURE && reason == APPSTORE_REASON_OCSP_MALFORMED,
                       "a 1 MiB OCSP answer of zeros is malformed", "%s %s: %s", appstore_status_name(st),
                       appstore_reason_name(reason), last_message);
        }
        appstore_verifier_free(v);
    }
    appstore_transport_free(t);
    free(big);
}

/* ---- 5. a stuck leader ------------------------------------------------------------------------------------------ */

/* The first call blocks until released (20 s at most), ignoring its timeout, then reports TIMEOUT; the others go to
 * the responders. */
typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    int calls, entered, released, leader_done;
    appstore_status leader_status;
    appstore_reason leader_reason;
    const appstore_verifier *v;
} gate;

static int32_t gated_send(void *user_data, const char *method, const char *url, const char *headers,
                          size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                          appstore_http_response *response) {
    gate *g = user_data;
    pthread_mutex_lock(&g->m);
    int first = ++g->calls == 1;
    if (first) {
        g->entered = 1;
        pthread_cond_broadcast(&g->c);
        struct timespec limit;
        clock_gettime(CLOCK_REALTIME, &limit);
        limit.tv_sec += 300; /* until the test releases it: far beyond the follower's bound */
        while (!g->released && pthread_cond_timedwait(&g->c, &g->m, &limit) == 0) {}
    }
    pthread_mutex_unlock(&g->m);
    if (first) return APPSTORE_TRANSPORT_RESULT_TIMEOUT;
    return http_transport_send(NULL, method, url, headers, headers_len, body, body_len, timeout_ms, response);
}

static void *leader(void *arg) {
    gate *g = arg;
    appstore_reason reason = 0;
    size_t len = 0;
    char *jws = case_jws("good", 0, &len);
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_verify_transaction(g->v, jws, len, NULL, &err);
    reason = appstore_error_reason(err);
    appstore_error_free(err);
    free(jws);
    pthread_mutex_lock(&g->m);
    g->leader_status = st;
    g->leader_reason = reason;
    g->leader_done = 1;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
    return NULL;
}

static double since(const struct timespec *a) {
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static void stuck_leader(void) {
    gate g = {.calls = 0};
    pthread_mutex_init(&g.m, NULL);
    pthread_cond_init(&g.c, NULL);
    appstore_transport *t = NULL;
    appstore_transport_new(gated_send, &g, &t, NULL);
    appstore_verifier *v = online_verifier(t, 500, -1, 0); /* bound: 2 x 500 ms + 1 s = 2 s */
    g.v = v;
    pthread_t tid;
    pthread_create(&tid, NULL, leader, &g);
    pthread_mutex_lock(&g.m);
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 120; /* a wait for an event, not a bound on the library: generous for a loaded machine */
    while (!g.entered && pthread_cond_timedwait(&g.c, &g.m, &limit) == 0) {}
    int entered = g.entered;
    pthread_mutex_unlock(&g.m);
    capi_check(&T, entered, "stuck leader: the leader reached its callback", NULL);

    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    appstore_status st = verify(v, "good", 1, NULL);
    double elapsed = since(&a);
    capi_check(&T, st == APPSTORE_OK, "stuck leader: the follower verifies by itself", "%s: %s",
               appstore_status_name(st), last_message);
    /* At least the bound (the code guarantees it); at most 30 s: >= 4x a loaded run (the bound, then the follower's
     * own two exchanges), and far below the 300 s the leader stays stuck, which a follower waiting for it would take. */
    capi_check(&T, elapsed >= 1.95 && elapsed < 30.0, "stuck leader: the follower waits the bound (2 s), no longer",
               "%.2f s", elapsed);

    pthread_mutex_lock(&g.m);
    int still_blocked = !g.leader_done;
    g.released = 1;
    pthread_cond_broadcast(&g.c);
    pthread_mutex_unlock(&g.m);
    pthread_join(tid, NULL);
    capi_check(&T, still_blocked, "stuck leader: still blocked when the follower returned", NULL);
    capi_check(&T, g.leader_status == APPSTORE_RETRYABLE_VERIFICATION_FAILURE &&
                       g.leader_reason == APPSTORE_REASON_OCSP_TIMEOUT,
               "stuck leader: the leader's own result", "%s %s", appstore_status_name(g.leader_status),
               appstore_reason_name(g.leader_reason));
    st = verify(v, "good", 2, NULL);
    capi_check(&T, st == APPSTORE_OK && g.calls == 3, "stuck leader: the follower's chain was cached",
               "%s, %d callback calls", appstore_status_name(st), g.calls);
    appstore_verifier_free(v);
    appstore_transport_free(t);
    pthread_cond_destroy(&g.c);
    pthread_mutex_destroy(&g.m);
}

/* ---- 6. threads ------------------------------------------------------------------------------------------------- */

typedef struct {
    const appstore_verifier *v;
    int id;
    int failures;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    size_t n = case_jws_count("good");
    for (int i = 0; i < 25; i++) {
        size_t len = 0;
        char *jws = case_jws("good", (size_t)(w->id + i) % n, &len);
        if (appstore_verifier_verify_transaction(w->v, jws, len, NULL, NULL) != APPSTORE_OK) w->failures++;
        free(jws);
    }
    return NULL;
}

static void threads(void) {
    http_transport_stats stats = {0};
    appstore_transport *t = socket_transport(&stats);
    appstore_verifier *v = online_verifier(t, 10000, -1, 0);
    json_t *before = responder_counts();
    pthread_t tid[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){v, i, 0};
        pthread_create(&tid[i], NULL, work, &w[i]);
    }
    int failures = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        failures += w[i].failures;
    }
    capi_check(&T, failures == 0, "4 threads share one online verifier", "%d failures", failures);
    capi_check(&T, stats.requests == 2, "threads: concurrent misses wait for one exchange per certificate",
               "%d requests", stats.requests);
    json_t *after = responder_counts();
    capi_check(&T, received(before, after, NULL) == 2, "threads: the responders got one request per certificate",
               "%lld", received(before, after, NULL));
    json_decref(before);
    json_decref(after);
    appstore_verifier_free(v);
    appstore_transport_free(t);
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const char *path = getenv("APPSTORE_OCSP_SETUP");
    if (!path) {
        fprintf(stderr, "ocsp_test: APPSTORE_OCSP_SETUP is not set (run through Tests/support/ocsp_harness.py run)\n");
        return 2;
    }
    json_error_t jerr;
    setup = json_load_file(path, 0, &jerr);
    if (!setup) {
        fprintf(stderr, "ocsp_test: %s: %s\n", path, jerr.text);
        return 2;
    }
    bundle_id = json_string_value(json_object_get(setup, "bundleId"));
    root_der = capi_read_file(json_string_value(json_object_get(setup, "root")), &root_len);
    if (!root_der || !bundle_id) {
        fprintf(stderr, "ocsp_test: setup.json lacks root / bundleId\n");
        return 2;
    }
    every_case(quick);
    offline_cases();
    effective_date();
    cache(quick);
    transport_contract();
    body_cap();
    if (!quick) stuck_leader();
    if (!quick) threads();
    free(root_der);
    json_decref(setup);
    return capi_finish(&T);
}
