/*
 * App Store Server API through the C ABI, end to end against the mock App Store server
 * (Tests/support/mock_app_store.py, started and stopped here), for every endpoint of Tests/support/api_cases.json:
 *   1. sans-I/O: appstore_api_client_build_request -> the test's own HTTP (http_fetch) -> _decode_response;
 *      the built request is checked field by field (method, URL path + query pairs, headers, JSON body / PNG bytes);
 *   2. appstore_api_client_call through an appstore_transport (the socket transport, appstore_test_http);
 *   3. pagination (call_all_pages), every error shape, retries, timeouts, argument errors, threads.
 * The mock checks the bearer token with Python joserfc and the exact request of each endpoint.
 *
 * usage: capi_api_test SIGNING_KEYS_DIR API_CASES_JSON MOCK_SERVER_PY SPEC_ENDPOINTS_JSON
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capi_util.h"
#include "http_transport.h"

static const char *KEY_ID = "ABC123DEFG";
static const char *ISSUER = "57246542-96fe-1a63-e053-0824d011072a";
static const char *BUNDLE = "com.example.app";

static capi_tally T = {"c_api", 0, 0};
static char base_url[64];
static pid_t mock_pid = -1;
static int mock_stdin = -1;

#define CHECK(ok, what, ...) capi_check(&T, (ok), (what), __VA_ARGS__)

/* Starts the mock server (with --not-found-lookups SPEC when not_found_spec is given): its base URL into url_out. */
static int start_mock_at(const char *script, const char *cases, const char *public_key, const char *not_found_spec,
                         char *url_out, size_t url_size, pid_t *pid_out, int *stdin_out) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return 0;
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        if (not_found_spec)
            execlp("python3", "python3", script, "--cases", cases, "--public-key", public_key, "--key-id", KEY_ID,
                   "--issuer-id", ISSUER, "--bundle-id", BUNDLE, "--not-found-lookups", not_found_spec, (char *)NULL);
        else
            execlp("python3", "python3", script, "--cases", cases, "--public-key", public_key, "--key-id", KEY_ID,
                   "--issuer-id", ISSUER, "--bundle-id", BUNDLE, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    *pid_out = pid;
    *stdin_out = in[1];
    char line[64] = {0};
    size_t n = 0;
    while (n + 1 < sizeof line) {
        ssize_t r = read(out[0], line + n, 1);
        if (r <= 0 || line[n] == '\n') break;
        n++;
    }
    line[n] = 0;
    close(out[0]);
    int port = 0;
    if (sscanf(line, "PORT %d", &port) != 1) return 0;
    snprintf(url_out, url_size, "http://127.0.0.1:%d", port);
    return 1;
}

static int start_mock(const char *script, const char *cases, const char *public_key) {
    return start_mock_at(script, cases, public_key, NULL, base_url, sizeof base_url, &mock_pid, &mock_stdin);
}

static void stop_mock(void) {
    if (mock_stdin >= 0) close(mock_stdin);
    if (mock_pid > 0) waitpid(mock_pid, NULL, 0);
}

/* A Production client of `base` with the options the fallback and rate-limit tests need. */
static appstore_api_client *production_client(appstore_signing_key *key, appstore_transport *transport, const char *base,
                                              const char *sandbox_base, int rate_limit, uint32_t max_wait_ms,
                                              uint32_t share_percent) {
    appstore_api_client_options *o = NULL;
    appstore_api_client *c = NULL;
    appstore_error *err = NULL;
    if (appstore_api_client_options_new(&o, NULL) != APPSTORE_OK) return NULL;
    appstore_api_client_options_set_transport(o, transport, NULL);
    appstore_api_client_options_set_timeout_ms(o, 10000, NULL);
    appstore_api_client_options_set_base_url(o, base, NULL);
    if (sandbox_base) appstore_api_client_options_set_sandbox_fallback(o, 1, sandbox_base, NULL);
    if (rate_limit) appstore_api_client_options_set_rate_limit(o, 1, max_wait_ms, share_percent, NULL);
    if (appstore_api_client_new(key, APPSTORE_ENVIRONMENT_PRODUCTION, o, &c, &err) != APPSTORE_OK) {
        fprintf(stderr, "production client: %s\n", appstore_error_message(err));
        appstore_error_free(err);
    }
    appstore_api_client_options_free(o);
    return c;
}

static appstore_api_client *make_client(appstore_signing_key *key, appstore_transport *transport, uint32_t timeout_ms,
                                        uint32_t retries, const char *base) {
    appstore_api_client_options *o = NULL;
    appstore_api_client *c = NULL;
    appstore_error *err = NULL;
    if (appstore_api_client_options_new(&o, NULL) != APPSTORE_OK) return NULL;
    if (transport) appstore_api_client_options_set_transport(o, transport, NULL);
    appstore_api_client_options_set_timeout_ms(o, timeout_ms, NULL);
    if (retries) appstore_api_client_options_set_retry(o, retries, 10, 1000, NULL);
    appstore_api_client_options_set_base_url(o, base ? base : base_url, NULL);
    if (appstore_api_client_new(key, APPSTORE_ENVIRONMENT_LOCAL_TESTING, o, &c, &err) != APPSTORE_OK) {
        fprintf(stderr, "client: %s\n", appstore_error_message(err));
        appstore_error_free(err);
    }
    appstore_api_client_options_free(o);
    return c;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static char *percent_decode(const char *s, size_t len) {
    char *out = malloc(len + 1), *o = out;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && i + 2 < len && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            *o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = 0;
    return out;
}

/* The URL's query as a JSON array of [key, value] pairs (decoded). */
static json_t *query_pairs(const char *query) {
    json_t *pairs = json_array();
    if (!query || !*query) return pairs;
    const char *p = query;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len;
        char *k = percent_decode(p, klen);
        char *v = eq ? percent_decode(eq + 1, len - klen - 1) : strdup("");
        json_array_append_new(pairs, json_pack("[ss]", k, v));
        free(k);
        free(v);
        p += len + (amp ? 1 : 0);
    }
    return pairs;
}

static const char *header_value(const appstore_api_request *r, const char *name) {
    for (size_t i = 0; i < appstore_api_request_header_count(r); i++)
        if (strcmp(appstore_api_request_header_name(r, i), name) == 0) return appstore_api_request_header_value(r, i);
    return NULL;
}

static json_t *expected_answer(json_t *c) {
    json_t *pages = json_object_get(c, "pages");
    if (json_is_array(pages)) return json_array_get(pages, 0);
    return json_object_get(c, "response");
}

static void check_json_output(const char *what, const char *json_text, json_t *expected) {
    json_error_t jerr;
    json_t *got = json_loads(json_text, JSON_DECODE_ANY, &jerr);
    if (json_is_null(expected) || !expected) {
        CHECK(got && json_is_object(got) && json_object_size(got) == 0, what, "expected {}, got %s", json_text);
    } else {
        CHECK(got && json_equal(got, expected), what, "answer differs: %.300s", json_text);
    }
    json_decref(got);
}

/* 1 + 2: one endpoint, sans-I/O and through the transport. */
static void run_case(appstore_api_client *client, json_t *c) {
    const char *endpoint = json_string_value(json_object_get(c, "endpoint"));
    char what[160];
    char *params = json_dumps(json_object_get(c, "params"), JSON_COMPACT);
    appstore_api_request *req = NULL;
    appstore_error *err = NULL;
    snprintf(what, sizeof what, "%s build_request", endpoint);
    appstore_status st = appstore_api_client_build_request(client, endpoint, params, &req, &err);
    if (!CHECK(st == APPSTORE_OK, what, "%s: %s", appstore_status_name(st), appstore_error_message(err))) {
        appstore_error_free(err);
        free(params);
        return;
    }
    /* method, URL, query */
    snprintf(what, sizeof what, "%s method", endpoint);
    CHECK(strcmp(appstore_api_request_method(req), json_string_value(json_object_get(c, "method"))) == 0, what, "%s",
          appstore_api_request_method(req));
    const char *url = appstore_api_request_url(req);
    const char *path = json_string_value(json_object_get(c, "path"));
    size_t blen = strlen(base_url), plen = strlen(path);
    snprintf(what, sizeof what, "%s url path", endpoint);
    int path_ok = strncmp(url, base_url, blen) == 0 && strncmp(url + blen, path, plen) == 0 &&
                  (url[blen + plen] == 0 || url[blen + plen] == '?');
    CHECK(path_ok, what, "%s (expected path %s)", url, path);
    if (path_ok) {
        json_t *q = query_pairs(url[blen + plen] == '?' ? url + blen + plen + 1 : NULL);
        snprintf(what, sizeof what, "%s query", endpoint);
        char *qs = json_dumps(q, JSON_COMPACT);
        CHECK(json_equal(q, json_object_get(c, "query")), what, "%s", qs);
        free(qs);
        json_decref(q);
    }
    /* headers */
    const char *auth = header_value(req, "Authorization");
    const char *ctype = header_value(req, "Content-Type");
    const char *want_ctype = json_string_value(json_object_get(c, "contentType"));
    snprintf(what, sizeof what, "%s headers", endpoint);
    CHECK(auth && strncmp(auth, "Bearer ey", 9) == 0 && header_value(req, "Accept") &&
              strcmp(header_value(req, "Accept"), "application/json") == 0 && header_value(req, "User-Agent") &&
              strcmp(header_value(req, "User-Agent"), "appstoreserver/" APPSTORE_VERSION_STRING) == 0 &&
              ((want_ctype == NULL && ctype == NULL) || (want_ctype && ctype && strcmp(want_ctype, ctype) == 0)),
          what, "%s", appstore_api_request_headers(req));
    CHECK(appstore_api_request_timeout_ms(req) == 10000, what, "timeout %u", appstore_api_request_timeout_ms(req));
    /* body: every key, exact values */
    size_t body_len = 0;
    const uint8_t *body = appstore_api_request_body(req, &body_len);
    json_t *want_body = json_object_get(c, "body");
    snprintf(what, sizeof what, "%s body", endpoint);
    if (json_is_null(want_body)) {
        CHECK(body != NULL && body_len == 0, what, "unexpected body of %zu bytes", body_len);
    } else if (json_object_get(want_body, "base64") && json_object_size(want_body) == 1) {
        CHECK(body_len == 70 && memcmp(body, "\x89PNG", 4) == 0, what, "PNG body of %zu bytes", body_len); /* bytes checked by the mock */
    } else {
        json_error_t jerr;
        json_t *got = json_loadb((const char *)body, body_len, 0, &jerr);
        CHECK(got && json_equal(got, want_body), what, "%.*s", (int)body_len, (const char *)body);
        json_t *required = json_object_get(c, "requiredBodyKeys");
        size_t i;
        json_t *k;
        json_array_foreach(required, i, k) {
            const char *key = json_string_value(k);
            if (strpbrk(key, ".[")) continue;
            char w[200];
            snprintf(w, sizeof w, "%s body required key %s", endpoint, key);
            CHECK(got && json_object_get(got, key) != NULL, w, "missing");
        }
        json_decref(got);
    }
    /* sans-I/O: the test does the HTTP, the library decodes */
    http_result res;
    int32_t tr = http_fetch(appstore_api_request_method(req), url, appstore_api_request_headers(req),
                            strlen(appstore_api_request_headers(req)), body, body_len, 10000, &res);
    snprintf(what, sizeof what, "%s sans-I/O exchange", endpoint);
    if (CHECK(tr == APPSTORE_TRANSPORT_RESULT_OK, what, "transport %d", tr)) {
        char *json = NULL;
        st = appstore_api_client_decode_response(client, endpoint, res.status, res.headers, res.headers_len, res.body,
                                                 res.body_len, &json, &err);
        snprintf(what, sizeof what, "%s decode_response", endpoint);
        if (CHECK(st == APPSTORE_OK, what, "%s: %s", appstore_status_name(st), appstore_error_message(err)))
            check_json_output(what, json, expected_answer(c));
        appstore_string_free(json);
        appstore_error_free(err);
        err = NULL;
        http_result_free(&res);
    }
    appstore_api_request_free(req);
    /* through the transport */
    char *json = NULL;
    st = appstore_api_client_call(client, endpoint, params, &json, &err);
    snprintf(what, sizeof what, "%s call", endpoint);
    if (CHECK(st == APPSTORE_OK, what, "%s: %s", appstore_status_name(st), appstore_error_message(err)))
        check_json_output(what, json, expected_answer(c));
    appstore_string_free(json);
    appstore_error_free(err);
    free(params);
}

typedef struct {
    appstore_status status;
    appstore_reason reason;
    int32_t http;
    int64_t code;
    char name[64];
    char api_message[128];
    int64_t retry_after;
    char message[512];
    char *json;
} outcome;

static outcome call(appstore_api_client *client, const char *endpoint, const char *params) {
    outcome o;
    memset(&o, 0, sizeof o);
    appstore_error *err = NULL;
    o.status = appstore_api_client_call(client, endpoint, params, &o.json, &err);
    o.reason = appstore_error_reason(err);
    o.http = appstore_error_http_status(err);
    o.code = appstore_error_api_error_code(err);
    snprintf(o.name, sizeof o.name, "%s", appstore_error_api_error_name(err));
    snprintf(o.api_message, sizeof o.api_message, "%s", appstore_error_api_error_message(err));
    o.retry_after = appstore_error_retry_after(err);
    snprintf(o.message, sizeof o.message, "%s", appstore_error_message(err));
    appstore_error_free(err);
    return o;
}

static outcome info(appstore_api_client *client, const char *transaction_id) {
    char params[200];
    snprintf(params, sizeof params, "{\"transactionId\":\"%s\"}", transaction_id);
    return call(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, params);
}

/* The driver's decision after one attempt answered (status, header lines, body): the WAIT before the retry, or -1 when
 * the call fails instead. */
static int64_t driver_wait(appstore_api_client *client, int32_t status, const char *headers, const char *body) {
    appstore_api_call *call = NULL;
    appstore_api_action action = 0;
    int64_t wait = -1;
    if (appstore_api_call_new(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{\"transactionId\":\"1\"}", &call, NULL) != APPSTORE_OK)
        return -2;
    appstore_api_call_next(call, 0, &action, NULL, NULL);
    appstore_api_call_receive(call, status, headers, strlen(headers), (const uint8_t *)body, strlen(body), 0, NULL);
    if (appstore_api_call_next(call, 0, &action, &wait, NULL) != APPSTORE_OK || action != APPSTORE_API_ACTION_WAIT) wait = -1;
    appstore_api_call_free(call);
    return wait;
}

/* A C host's own call loop over the driver (http_fetch as its HTTP): the answer, the environment that gave it, and
 * the URLs it sent to (up to 4). */
typedef struct {
    appstore_status status;
    appstore_environment environment;
    int sends;
    char urls[4][256];
    appstore_error *err;
} driven;

static driven drive(appstore_api_client *client, const char *endpoint, const char *params) {
    driven d = {0};
    appstore_api_call *call = NULL;
    d.status = appstore_api_call_new(client, endpoint, params, &call, &d.err);
    while (d.status == APPSTORE_OK) {
        appstore_api_action action = 0;
        int64_t wait = 0;
        d.status = appstore_api_call_next(call, 0, &action, &wait, &d.err);
        if (d.status != APPSTORE_OK) break;
        if (action == APPSTORE_API_ACTION_DONE) {
            appstore_api_call_answer(call, NULL, &d.environment, NULL, NULL);
            break;
        }
        if (action == APPSTORE_API_ACTION_WAIT) {
            struct timespec ts = {(time_t)(wait / 1000), (long)(wait % 1000) * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        appstore_api_request *r = NULL;
        appstore_api_call_request(call, &r, NULL);
        if (d.sends < 4) snprintf(d.urls[d.sends], sizeof d.urls[0], "%s", appstore_api_request_url(r));
        d.sends++;
        http_result res = {0};
        size_t blen = 0;
        const uint8_t *b = appstore_api_request_body(r, &blen);
        if (http_fetch(appstore_api_request_method(r), appstore_api_request_url(r), appstore_api_request_headers(r),
                       strlen(appstore_api_request_headers(r)), b, blen, appstore_api_request_timeout_ms(r), &res) == 0 && res.status)
            appstore_api_call_receive(call, res.status, res.headers, res.headers_len, res.body, res.body_len, 0, NULL);
        else
            appstore_api_call_receive_failure(call, APPSTORE_TRANSPORT_RESULT_FAILED, "http_fetch failed", NULL);
        http_result_free(&res);
        appstore_api_request_free(r);
    }
    appstore_api_call_free(call);
    return d;
}

static void check_errors(appstore_api_client *client, appstore_api_client *retrying, appstore_api_client *fast,
                         http_transport_stats *stats) {
    outcome o = info(client, "error-404-4040010");
    CHECK(o.status == APPSTORE_API_ERROR && o.reason == APPSTORE_REASON_API_ERROR && o.http == 404 && o.code == 4040010 &&
              strcmp(o.name, "transactionIdNotFound") == 0 && strcmp(o.api_message, "mock error 4040010") == 0 &&
              o.retry_after == -1 && o.json == NULL,
          "api error 4040010", "%s %s http %d code %lld name %s: %s", appstore_status_name(o.status),
          appstore_reason_name(o.reason), o.http, (long long)o.code, o.name, o.message);
    o = info(client, "error-400-9990000");
    CHECK(o.status == APPSTORE_API_ERROR && o.code == 9990000 && o.name[0] == 0 && o.http == 400, "unknown error code kept",
          "code %lld name '%s'", (long long)o.code, o.name);
    o = info(client, "error-404-4040019");
    CHECK(strcmp(o.name, "appTransactionDoesNotExistError") == 0, "error 4040019 name", "%s", o.name);
    o = info(client, "error-500-5000000");
    CHECK(o.http == 500 && strcmp(o.name, "generalInternal") == 0, "error 5000000", "%d %s", o.http, o.name);
    o = info(client, "ratelimit");
    CHECK(o.status == APPSTORE_API_ERROR && o.reason == APPSTORE_REASON_RATE_LIMITED && o.http == 429 && o.code == 4290000 &&
              o.retry_after == 7,
          "429 with Retry-After", "%s http %d retry_after %lld", appstore_reason_name(o.reason), o.http, (long long)o.retry_after);
    o = info(client, "plain500");
    CHECK(o.status == APPSTORE_API_ERROR && o.reason == APPSTORE_REASON_HTTP_ERROR && o.http == 500 && o.code == 0,
          "HTTP error without payload", "%s %d", appstore_reason_name(o.reason), o.http);
    o = info(client, "malformed");
    CHECK(o.status == APPSTORE_INVALID_RESPONSE && o.reason == APPSTORE_REASON_UNDECODABLE_RESPONSE && o.http == 200,
          "malformed body", "%s %s %d", appstore_status_name(o.status), appstore_reason_name(o.reason), o.http);
    o = info(client, "badtype");
    CHECK(o.status == APPSTORE_INVALID_RESPONSE && strstr(o.message, "signedTransactionInfo") != NULL, "wrong type names the field",
          "%s", o.message);
    o = info(fast, "slow-3000");
    CHECK(o.status == APPSTORE_TRANSPORT_ERROR && o.reason == APPSTORE_REASON_TRANSPORT_TIMEOUT && o.http == 0, "timeout",
          "%s %s: %s", appstore_status_name(o.status), appstore_reason_name(o.reason), o.message);

    /* retries: two 429s (Retry-After 0) and two 5000001s, then success */
    char id[64];
    int before = stats->requests;
    snprintf(id, sizeof id, "flaky429-2-c%ld", (long)getpid());
    o = info(retrying, id);
    CHECK(o.status == APPSTORE_OK && o.json && strstr(o.json, "attempt-3") && stats->requests - before == 3, "retry 429",
          "%s %s, %d requests", appstore_status_name(o.status), o.json ? o.json : o.message, stats->requests - before);
    appstore_string_free(o.json);
    snprintf(id, sizeof id, "flaky5000001-2-c%ld", (long)getpid());
    o = info(retrying, id);
    CHECK(o.status == APPSTORE_OK && o.json && strstr(o.json, "attempt-3"), "retry 5000001", "%s", o.json ? o.json : o.message);
    appstore_string_free(o.json);
    snprintf(id, sizeof id, "flaky4040006-1-c%ld", (long)getpid());
    o = info(retrying, id);
    CHECK(o.status == APPSTORE_OK, "retry 4040006", "%s", o.message);
    appstore_string_free(o.json);
    snprintf(id, sizeof id, "flaky429-1-n%ld", (long)getpid());
    o = info(client, id);
    CHECK(o.status == APPSTORE_API_ERROR && o.http == 429, "no retry without a policy", "%s", appstore_status_name(o.status));
    time_t t0 = time(NULL);
    o = info(retrying, "ratelimit-long");
    CHECK(o.status == APPSTORE_API_ERROR && o.retry_after == 3600 && time(NULL) - t0 < 5, "long Retry-After not waited for",
          "retry_after %lld", (long long)o.retry_after);

    /* decode_response on its own: a 429 with Retry-After, headers given by the host */
    appstore_error *err = NULL;
    char *json = (char *)"untouched";
    const char *hdrs = "Content-Type: application/json\r\nretry-after: 5\r\n";
    const char *payload = "{\"errorCode\":4290000,\"errorMessage\":\"Rate limit exceeded.\"}";
    appstore_status st = appstore_api_client_decode_response(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, 429, hdrs, strlen(hdrs),
                                                             (const uint8_t *)payload, strlen(payload), &json, &err);
    CHECK(st == APPSTORE_API_ERROR && appstore_error_retry_after(err) == 5 && appstore_error_http_status(err) == 429 &&
              strcmp(json, "untouched") == 0,
          "decode_response 429", "%s retry_after %lld", appstore_status_name(st), (long long)appstore_error_retry_after(err));
    appstore_error_free(err);
    err = NULL;

    /* Retry-After in Apple's form (a UNIX time in ms), as delta-seconds and as an HTTP-date; the absolute time, and
     * the client's retry decision for a host that does its own HTTP (sans-I/O retry loop). */
    struct timespec now_ts;
    clock_gettime(CLOCK_REALTIME, &now_ts);
    int64_t now_ms = (int64_t)now_ts.tv_sec * 1000 + now_ts.tv_nsec / 1000000;
    char hdr[160];
    snprintf(hdr, sizeof hdr, "Retry-After: %lld\r\n", (long long)(now_ms + 800));
    st = appstore_api_client_decode_response(retrying, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, 429, hdr, strlen(hdr),
                                             (const uint8_t *)payload, strlen(payload), &json, &err);
    int64_t at = appstore_error_retry_at_ms(err), after = appstore_error_retry_after(err), delay;
    CHECK(st == APPSTORE_API_ERROR && at == now_ms + 800 && after == 1, "Retry-After in UNIX milliseconds",
          "retry_at_ms %lld (wanted %lld), retry_after %lld", (long long)at, (long long)(now_ms + 800), (long long)after);
    appstore_error_free(err);
    err = NULL;
    delay = driver_wait(retrying, 429, hdr, payload);
    CHECK(delay > 500 && delay <= 800, "the driver waits until Retry-After", "delay %lld", (long long)delay);
    delay = driver_wait(client, 429, hdr, payload);
    CHECK(delay == -1, "no retry without a policy", "delay %lld", (long long)delay);
    snprintf(hdr, sizeof hdr, "Retry-After: %lld\r\n", (long long)(now_ms + 5000));
    delay = driver_wait(retrying, 429, hdr, payload);
    CHECK(delay == -1, "a Retry-After beyond the longest wait is not waited for", "delay %lld", (long long)delay);
    st = appstore_api_client_decode_response(retrying, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, 429,
                                             "Retry-After: Sun, 06 Nov 1994 08:49:37 GMT", 42, (const uint8_t *)payload,
                                             strlen(payload), &json, &err);
    CHECK(st == APPSTORE_API_ERROR && appstore_error_retry_at_ms(err) == 784111777000LL && appstore_error_retry_after(err) == 0,
          "Retry-After as an HTTP-date", "retry_at_ms %lld", (long long)appstore_error_retry_at_ms(err));
    delay = driver_wait(retrying, 429, "Retry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\n", payload);
    CHECK(delay >= 0 && delay < 1000, "a past Retry-After: plain backoff", "delay %lld", (long long)delay);
    appstore_error_free(err);
    err = NULL;
    delay = driver_wait(retrying, 404, "", "{\"errorCode\":4040010}");
    CHECK(delay == -1, "not retryable: no retry", "delay %lld", (long long)delay);
    st = appstore_api_client_decode_response(client, APPSTORE_ENDPOINT_FINISH_TRANSACTION, 200, NULL, 0, NULL, 0, &json, &err);
    CHECK(st == APPSTORE_OK && strcmp(json, "{}") == 0, "decode_response void endpoint", "%s", appstore_status_name(st));
    if (st == APPSTORE_OK) appstore_string_free(json);
    const char *ac = "{\"errorCode\":4030021,\"errorMessage\":\"The transaction was already refunded.\"}";
    st = appstore_api_client_decode_response(client, APPSTORE_ENDPOINT_REQUEST_TRANSACTION_REFUND, 403, NULL, 0, (const uint8_t *)ac,
                                             strlen(ac), &json, &err);
    CHECK(st == APPSTORE_API_ERROR && strcmp(appstore_error_api_error_name(err), "alreadyRefunded") == 0,
          "Advanced Commerce error name", "%s", appstore_error_api_error_name(err));
    appstore_error_free(err);
}

static void check_pagination(appstore_api_client *client, json_t *cases) {
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        json_t *pages = json_object_get(c, "pages");
        if (!json_is_array(pages)) continue;
        const char *endpoint = json_string_value(json_object_get(c, "endpoint"));
        char *params = json_dumps(json_object_get(c, "params"), JSON_COMPACT);
        char *json = NULL;
        appstore_error *err = NULL;
        appstore_status st = appstore_api_client_call_all_pages(client, endpoint, params, &json, &err);
        char what[120];
        snprintf(what, sizeof what, "%s all pages", endpoint);
        json_error_t jerr;
        json_t *got = st == APPSTORE_OK ? json_loads(json, 0, &jerr) : NULL;
        CHECK(st == APPSTORE_OK && got && json_equal(got, pages), what, "%s: %.200s", appstore_status_name(st),
              st == APPSTORE_OK ? json : appstore_error_message(err));
        json_decref(got);
        appstore_string_free(json);
        appstore_error_free(err);
        free(params);
    }
    appstore_error *err = NULL;
    char *json = NULL;
    appstore_status st = appstore_api_client_call_all_pages(client, APPSTORE_ENDPOINT_GET_IMAGE_LIST, NULL, &json, &err);
    CHECK(st == APPSTORE_INVALID_ARGUMENT && json == NULL, "all pages of a non-paginated endpoint", "%s", appstore_status_name(st));
    appstore_error_free(err);
}

static void expect_failure(const char *what, appstore_status st, appstore_error *err, appstore_status want_status,
                           appstore_reason want_reason, const char *want_text) {
    CHECK(st == want_status && appstore_error_reason(err) == want_reason &&
              (!want_text || strstr(appstore_error_message(err), want_text)),
          what, "%s / %s: %s", appstore_status_name(st), appstore_reason_name(appstore_error_reason(err)),
          appstore_error_message(err));
    appstore_error_free(err);
}

static void check_arguments(appstore_signing_key *key, appstore_signing_key *key_without_issuer, appstore_api_client *client,
                            appstore_api_client *no_transport) {
    appstore_api_request *req = (appstore_api_request *)0x1;
    appstore_error *err = NULL;
    appstore_status st = appstore_api_client_build_request(client, "getTransactionInfos", "{}", &req, &err);
    expect_failure("unknown endpoint", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_UNKNOWN_ENDPOINT, "getTransactionInfos");
    CHECK(req == (appstore_api_request *)0x1, "outputs untouched on failure", "%p", (void *)req);
    err = NULL;
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{}", &req, &err);
    expect_failure("missing parameter", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_PARAMETERS,
                   "missing required parameter \"transactionId\"");
    err = NULL;
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{\"transactionID\":\"1\"}", &req, &err);
    expect_failure("unknown parameter", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_PARAMETERS, "transactionID");
    err = NULL;
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "not json", &req, &err);
    expect_failure("params not JSON", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_PARAMETERS, "JSON");
    err = NULL;
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_SEND_CONSUMPTION_INFORMATION,
                                           "{\"transactionId\":\"1\",\"body\":{\"customerConsented\":true,\"sampleContentProvided\":true}}",
                                           &req, &err);
    expect_failure("missing required body key", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_PARAMETERS,
                   "deliveryStatus");
    err = NULL;
    char params[1200];
    int n = snprintf(params, sizeof params, "{\"messageIdentifier\":\"b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e\",\"body\":{\"header\":\"h\","
                                            "\"body\":\"b\",\"bulletPoints\":[");
    for (int i = 0; i < 6; i++)
        n += snprintf(params + n, sizeof params - (size_t)n, "%s{\"text\":\"t\",\"imageIdentifier\":\"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d\",\"altText\":\"a\"}",
                      i ? "," : "");
    snprintf(params + n, sizeof params - (size_t)n, "]}}");
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_UPLOAD_MESSAGE, params, &req, &err);
    expect_failure("too many bullet points", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_REQUEST,
                   "bulletPoints must have at most 5 elements");
    err = NULL;
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_EXTEND_SUBSCRIPTION_RENEWAL_DATE,
                                           "{\"originalTransactionId\":\"1\",\"body\":{\"extendByDays\":91,\"extendReasonCode\":0,\"requestIdentifier\":\"r\"}}",
                                           &req, &err);
    expect_failure("extendByDays limit", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_REQUEST,
                   "extendByDays must be between 1 and 90");
    err = NULL;
    st = appstore_api_client_build_request(NULL, APPSTORE_ENDPOINT_GET_IMAGE_LIST, NULL, &req, &err);
    expect_failure("NULL client", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "client");
    err = NULL;
    st = appstore_api_client_build_request(client, NULL, NULL, &req, &err);
    expect_failure("NULL endpoint", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "endpoint");
    err = NULL;
    st = appstore_api_client_build_request(client, APPSTORE_ENDPOINT_GET_IMAGE_LIST, "\xff\xfe", &req, &err);
    expect_failure("params not UTF-8", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "UTF-8");
    err = NULL;
    char *json = NULL;
    st = appstore_api_client_call(no_transport, APPSTORE_ENDPOINT_GET_IMAGE_LIST, NULL, &json, &err);
    expect_failure("call without transport", st, err, APPSTORE_CONFIGURATION_ERROR, APPSTORE_REASON_NO_TRANSPORT, "transport");
    err = NULL;
    st = appstore_api_client_decode_response(client, APPSTORE_ENDPOINT_GET_IMAGE_LIST, 99, NULL, 0, NULL, 0, &json, &err);
    expect_failure("bad HTTP status", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "99");
    err = NULL;
    st = appstore_api_client_decode_response(client, APPSTORE_ENDPOINT_GET_IMAGE_LIST, 200, NULL, 5, NULL, 0, &json, &err);
    expect_failure("NULL headers with a length", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "headers");

    appstore_api_client *c = NULL;
    err = NULL;
    st = appstore_api_client_new(key, APPSTORE_ENVIRONMENT_XCODE, NULL, &c, &err);
    expect_failure("Xcode environment refused", st, err, APPSTORE_CONFIGURATION_ERROR, APPSTORE_REASON_UNSUPPORTED_ENVIRONMENT,
                   "Xcode");
    err = NULL;
    st = appstore_api_client_new(key, 7, NULL, &c, &err);
    expect_failure("bad environment", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "environment");
    err = NULL;
    st = appstore_api_client_new(key_without_issuer, APPSTORE_ENVIRONMENT_SANDBOX, NULL, &c, &err);
    expect_failure("key without issuer", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "issuer");
    appstore_api_client_options *o = NULL;
    appstore_api_client_options_new(&o, NULL);
    err = NULL;
    st = appstore_api_client_options_set_base_url(o, "ftp://example.com", &err);
    CHECK(st == APPSTORE_OK, "base URL stored", "%s", appstore_status_name(st));
    err = NULL;
    st = appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, o, &c, &err);
    expect_failure("bad base URL", st, err, APPSTORE_CONFIGURATION_ERROR, APPSTORE_REASON_INVALID_ARGUMENT, "base URL");
    err = NULL;
    st = appstore_api_client_options_set_timeout_ms(o, 0, &err);
    expect_failure("zero timeout", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "timeout");
    err = NULL;
    st = appstore_api_client_options_set_retry(o, 3, 1000, 10, &err);
    expect_failure("backoff order", st, err, APPSTORE_INVALID_ARGUMENT, APPSTORE_REASON_INVALID_ARGUMENT, "max_backoff_ms");
    appstore_api_client_options_set_base_url(o, NULL, NULL);
    st = appstore_api_client_new(key, APPSTORE_ENVIRONMENT_PRODUCTION, o, &c, NULL);
    if (CHECK(st == APPSTORE_OK, "production client", "%s", appstore_status_name(st))) {
        st = appstore_api_client_build_request(c, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{\"transactionId\":\"1\"}", &req, NULL);
        CHECK(st == APPSTORE_OK && strcmp(appstore_api_request_url(req), "https://api.storekit.apple.com/inApps/v1/transactions/1") == 0 &&
                  appstore_api_request_timeout_ms(req) == 30000,
              "production URL and default timeout", "%s", st == APPSTORE_OK ? appstore_api_request_url(req) : "-");
        if (st == APPSTORE_OK) appstore_api_request_free(req);
        appstore_api_client_free(c);
    }
    appstore_api_client_options_free(o);
    /* NULL-safe getters and frees */
    size_t len = 99;
    CHECK(appstore_api_request_url(NULL)[0] == 0 && appstore_api_request_header_count(NULL) == 0 &&
              appstore_api_request_body(NULL, &len) != NULL && len == 0 && appstore_error_retry_after(NULL) == -1 &&
              appstore_error_http_status(NULL) == 0 && appstore_error_api_error_name(NULL)[0] == 0,
          "NULL getters", "%s", "");
    appstore_api_request_free(NULL);
    appstore_api_client_free(NULL);
    appstore_api_client_options_free(NULL);
    CHECK(strcmp(appstore_status_name(APPSTORE_API_ERROR), "API_ERROR") == 0 &&
              strcmp(appstore_status_name(APPSTORE_TRANSPORT_ERROR), "TRANSPORT_ERROR") == 0 &&
              strcmp(appstore_reason_name(APPSTORE_REASON_RATE_LIMITED), "rate_limited") == 0 &&
              strcmp(appstore_reason_name(APPSTORE_REASON_NO_TRANSPORT), "no_transport") == 0,
          "names of the new statuses and reasons", "%s", "");
}

typedef struct {
    appstore_api_client *client;
    int ok;
} thread_arg;

static void *thread_main(void *p) {
    thread_arg *a = p;
    for (int i = 0; i < 10; i++) {
        char *json = NULL;
        appstore_api_request *req = NULL;
        if (appstore_api_client_call(a->client, APPSTORE_ENDPOINT_GET_REALTIME_URL, NULL, &json, NULL) == APPSTORE_OK &&
            strstr(json, "example.com") && appstore_api_client_build_request(a->client, APPSTORE_ENDPOINT_GET_IMAGE_LIST, NULL, &req, NULL) == APPSTORE_OK)
            a->ok++;
        appstore_string_free(json);
        appstore_api_request_free(req);
    }
    return NULL;
}

static json_t *case_of(json_t *cases, const char *endpoint) {
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) if (strcmp(json_string_value(json_object_get(c, "endpoint")), endpoint) == 0) return c;
    return NULL;
}

/* The Sandbox fallback: a Production mock that knows no id, the normal mock as Sandbox. Every lookup the spec marks
 * sandboxFallback is answered by Sandbox (call_ext says so), through appstore_api_client_call_ext and by hand
 * (a host loop over appstore_api_call_*); without the fallback the 4040010 is final; later pages stay in Sandbox. */
static void check_fallback(appstore_signing_key *key, appstore_transport *transport, json_t *cases, json_t *spec_endpoints,
                           const char *not_found_base) {
    appstore_api_client *fb = production_client(key, transport, not_found_base, base_url, 0, 0, 0);
    appstore_api_client *plain = production_client(key, transport, not_found_base, NULL, 0, 0, 0);
    if (!CHECK(fb && plain, "fallback clients", "%s", "not created")) return;
    int lookups = 0;
    size_t i;
    json_t *ep;
    json_array_foreach(spec_endpoints, i, ep) {
        const char *name = json_string_value(json_object_get(ep, "name"));
        json_t *c = case_of(cases, name);
        char *params = json_dumps(json_object_get(c, "params"), JSON_COMPACT);
        appstore_error *err = NULL;
        int is_lookup = json_is_true(json_object_get(ep, "sandboxFallback"));
        if (!is_lookup || !params) {
            free(params);
            continue;
        }
        lookups++;
        char *json = NULL;
        appstore_environment env = 0;
        appstore_status st = appstore_api_client_call_ext(fb, name, params, &json, &env, &err);
        CHECK(st == APPSTORE_OK && env == APPSTORE_ENVIRONMENT_SANDBOX, "fallback: Sandbox answers", "%s: %s env %d %s",
              name, appstore_status_name(st), (int)env, appstore_error_message(err));
        appstore_string_free(json);
        appstore_error_free(err);
        err = NULL;
        st = appstore_api_client_call(plain, name, params, NULL, &err);
        CHECK(st == APPSTORE_API_ERROR && appstore_error_api_error_code(err) == 4040010, "no fallback: 4040010 is final",
              "%s: %s %lld", name, appstore_status_name(st), (long long)appstore_error_api_error_code(err));
        appstore_error_free(err);
        err = NULL;
        /* A host's own loop over the driver: Production first, then Sandbox. */
        driven d = drive(fb, name, params);
        CHECK(d.status == APPSTORE_OK && d.environment == APPSTORE_ENVIRONMENT_SANDBOX && d.sends == 2 &&
                  strncmp(d.urls[0], not_found_base, strlen(not_found_base)) == 0 &&
                  strncmp(d.urls[1], base_url, strlen(base_url)) == 0,
              "driver: Production, then the Sandbox fallback", "%s: %s, %d sends (%s, %s) %s", name, appstore_status_name(d.status),
              d.sends, d.urls[0], d.urls[1], appstore_error_message(d.err));
        appstore_error_free(d.err);
        d = drive(plain, name, params);
        CHECK(d.status == APPSTORE_API_ERROR && d.sends == 1, "driver without the fallback: one send", "%s: %s, %d sends", name,
              appstore_status_name(d.status), d.sends);
        appstore_error_free(d.err);
        free(params);
    }
    CHECK(lookups == 6, "six lookups fall back", "%d", lookups);

    char *params = NULL;
    appstore_error *err = NULL;
    appstore_status st;
    /* Pages: only the first asks Production. */
    json_t *hist = case_of(cases, APPSTORE_ENDPOINT_GET_TRANSACTION_HISTORY);
    params = json_dumps(json_object_get(hist, "params"), JSON_COMPACT);
    char *json = NULL;
    err = NULL;
    st = appstore_api_client_call_all_pages(fb, APPSTORE_ENDPOINT_GET_TRANSACTION_HISTORY, params, &json, &err);
    json_t *pages = json ? json_loads(json, 0, NULL) : NULL;
    CHECK(st == APPSTORE_OK && json_array_size(pages) == json_array_size(json_object_get(hist, "pages")) &&
              json_array_size(pages) > 1,
          "all pages from Sandbox", "%s %s", appstore_status_name(st), appstore_error_message(err));
    json_decref(pages);
    appstore_string_free(json);
    appstore_error_free(err);
    free(params);

    /* Only Production clients fall back. */
    appstore_api_client_options *o = NULL;
    appstore_api_client_options_new(&o, NULL);
    appstore_api_client_options_set_sandbox_fallback(o, 1, NULL, NULL);
    appstore_api_client *c = (appstore_api_client *)0x1;
    err = NULL;
    st = appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, o, &c, &err);
    CHECK(st == APPSTORE_CONFIGURATION_ERROR && c == (appstore_api_client *)0x1, "fallback on a Sandbox client refused",
          "%s", appstore_status_name(st));
    appstore_error_free(err);
    CHECK(appstore_api_client_options_set_sandbox_fallback(o, 2, NULL, NULL) == APPSTORE_INVALID_ARGUMENT &&
              appstore_api_client_options_set_sandbox_fallback(o, 0, "http://x", NULL) == APPSTORE_INVALID_ARGUMENT,
          "fallback option arguments", "%s", "");
    appstore_api_client_options_free(o);
    appstore_api_client_free(fb);
    appstore_api_client_free(plain);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The client-side rate limit: fail fast (nothing sent, the slot's time given), sans-I/O reservations, arguments. */
static void check_rate_limit(appstore_signing_key *key, appstore_transport *transport, http_transport_stats *stats) {
    /* requestTestNotification (1/s) at 1 %: one request per 100 s, so the second call falls in the first one's slot
     * however slow a loaded machine (or a sanitizer build) makes the first exchange. */
    appstore_api_client *c = production_client(key, transport, base_url, NULL, 1, 0, 1);
    if (!CHECK(c != NULL, "rate-limited client", "%s", "not created")) return;
    int before = stats->requests;
    outcome first = call(c, APPSTORE_ENDPOINT_REQUEST_TEST_NOTIFICATION, "{}");
    outcome second = call(c, APPSTORE_ENDPOINT_REQUEST_TEST_NOTIFICATION, "{}");
    CHECK(first.status == APPSTORE_OK, "first request sent", "%s: %s", appstore_status_name(first.status), first.message);
    CHECK(second.status == APPSTORE_RATE_LIMITED && second.reason == APPSTORE_REASON_LOCAL_RATE_LIMIT,
          "second request refused", "%s / %s: %s", appstore_status_name(second.status), appstore_reason_name(second.reason),
          second.message);
    CHECK(stats->requests - before == 1, "nothing sent when refused", "%d requests", stats->requests - before);
    appstore_string_free(first.json);
    appstore_string_free(second.json);
    appstore_api_client_free(c);

    /* Retry time of the refusal, and reservations for hosts with their own HTTP (waiting up to 5 s). */
    c = production_client(key, transport, base_url, NULL, 1, 0, 1);
    appstore_error *err = NULL;
    appstore_api_client_call(c, APPSTORE_ENDPOINT_REQUEST_TEST_NOTIFICATION, "{}", NULL, NULL);
    int64_t t0 = now_ms();
    appstore_status st = appstore_api_client_call(c, APPSTORE_ENDPOINT_REQUEST_TEST_NOTIFICATION, "{}", NULL, &err);
    int64_t at = appstore_error_retry_at_ms(err);
    /* The first call's slot began before t0: the next one is at most 100 s after t0. */
    CHECK(st == APPSTORE_RATE_LIMITED && at > t0 && at <= t0 + 100000, "refusal names the next slot", "%s at %lld (now %lld)",
          appstore_status_name(st), (long long)at, (long long)t0);
    appstore_error_free(err);
    appstore_api_client_free(c);
    c = production_client(key, transport, base_url, NULL, 1, 5000, 1);
    int64_t w[3] = {-1, -1, -1};
    appstore_api_action act[3] = {0, 0, 0};
    appstore_api_call *calls[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        appstore_api_call_new(c, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{\"transactionId\":\"1\"}", &calls[k], NULL);
        appstore_api_call_next(calls[k], 0, &act[k], &w[k], NULL);
    }
    CHECK(act[0] == APPSTORE_API_ACTION_SEND && w[0] == 0 && act[1] == APPSTORE_API_ACTION_WAIT && w[1] > 1500 && w[1] <= 2000 &&
              act[2] == APPSTORE_API_ACTION_WAIT && w[2] > 3500 && w[2] <= 4000,
          "three calls' slots two seconds apart", "%d:%lld %d:%lld %d:%lld", act[0], (long long)w[0], act[1], (long long)w[1],
          act[2], (long long)w[2]);
    for (int k = 0; k < 3; k++) appstore_api_call_free(calls[k]);
    appstore_api_client *unlimited = production_client(key, transport, base_url, NULL, 0, 0, 0);
    appstore_api_call *u = NULL;
    appstore_api_action ua = 0;
    int64_t uw = -1;
    appstore_api_call_new(unlimited, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{\"transactionId\":\"1\"}", &u, NULL);
    CHECK(appstore_api_call_next(u, 0, &ua, &uw, NULL) == APPSTORE_OK && ua == APPSTORE_API_ACTION_SEND && uw == 0,
          "no rate limit: no wait", "%d %lld", ua, (long long)uw);
    appstore_api_call_free(u);
    appstore_api_client_free(unlimited);
    appstore_api_client_free(c);

    appstore_api_client_options *o = NULL;
    appstore_api_client_options_new(&o, NULL);
    CHECK(appstore_api_client_options_set_rate_limit(o, 1, 0, 0, NULL) == APPSTORE_INVALID_ARGUMENT &&
              appstore_api_client_options_set_rate_limit(o, 1, 0, 101, NULL) == APPSTORE_INVALID_ARGUMENT &&
              appstore_api_client_options_set_rate_limit(o, 2, 0, 100, NULL) == APPSTORE_INVALID_ARGUMENT &&
              appstore_api_client_options_set_rate_limit(o, 1, 0, 100, NULL) == APPSTORE_OK,
          "rate limit option arguments", "%s", "");
    appstore_api_client_options_free(o);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s SIGNING_KEYS_DIR API_CASES_JSON MOCK_SERVER_PY SPEC_ENDPOINTS_JSON\n", argv[0]);
        return 2;
    }
    json_error_t serr;
    json_t *spec = json_load_file(argv[4], 0, &serr);
    json_t *spec_endpoints = json_object_get(spec, "endpoints");
    signal(SIGPIPE, SIG_IGN);
    char *public_key = capi_join(argv[1], "p256_public.pem"), *key_path = capi_join(argv[1], "p256.p8");
    json_error_t jerr;
    json_t *doc = json_load_file(argv[2], 0, &jerr);
    json_t *cases = json_object_get(doc, "cases");
    size_t pem_len = 0;
    unsigned char *pem = capi_read_file(key_path, &pem_len);
    if (!doc || !pem || !start_mock(argv[3], argv[2], public_key)) {
        fprintf(stderr, "setup failed (cases, key or mock server)\n");
        return 2;
    }
    appstore_signing_key *key = NULL, *key_without_issuer = NULL;
    appstore_signing_key_new((const char *)pem, pem_len, KEY_ID, ISSUER, BUNDLE, &key, NULL);
    appstore_signing_key_new((const char *)pem, pem_len, KEY_ID, NULL, BUNDLE, &key_without_issuer, NULL);
    http_transport_stats stats = {0};
    appstore_transport *transport = NULL;
    appstore_transport_new(http_transport_send, &stats, &transport, NULL);
    appstore_api_client *client = make_client(key, transport, 10000, 0, NULL);
    appstore_api_client *retrying = make_client(key, transport, 10000, 3, NULL);
    appstore_api_client *fast = make_client(key, transport, 400, 0, NULL);
    appstore_api_client *no_transport = make_client(key, NULL, 10000, 0, NULL);
    if (!key || !client || !retrying || !fast || !no_transport) {
        fprintf(stderr, "setup failed (key or clients)\n");
        stop_mock();
        return 2;
    }

    /* The endpoints are those of spec/endpoints.json, in its order, each with one canonical case. */
    CHECK(json_array_size(spec_endpoints) > 30 && appstore_api_endpoint_count() == json_array_size(spec_endpoints) &&
              json_array_size(cases) == json_array_size(spec_endpoints),
          "one endpoint and one case per spec endpoint", "%zu endpoints, %zu cases, %zu in the spec",
          appstore_api_endpoint_count(), json_array_size(cases), json_array_size(spec_endpoints));
    for (size_t i = 0; i < appstore_api_endpoint_count() && i < json_array_size(spec_endpoints); i++) {
        const char *want = json_string_value(json_object_get(json_array_get(spec_endpoints, i), "name"));
        CHECK(want && strcmp(appstore_api_endpoint_name(i), want) == 0, "endpoint names in spec order", "%zu: %s, spec %s",
              i, appstore_api_endpoint_name(i), want ? want : "(none)");
    }
    for (size_t i = 0; i < appstore_api_endpoint_count(); i++) {
        const char *name = appstore_api_endpoint_name(i);
        int found = 0;
        size_t j;
        json_t *c;
        json_array_foreach(cases, j, c) found |= strcmp(json_string_value(json_object_get(c, "endpoint")), name) == 0;
        CHECK(found, "endpoint has a case", "%s", name);
    }
    CHECK(appstore_api_endpoint_name(999)[0] == 0, "endpoint name out of range", "%s", "");

    /* Apple's base URLs (Apple's libraries and the API's and Advanced Commerce's documentation pages). */
    static const struct { appstore_environment env; int32_t ac; const char *want; } urls[] = {
        {APPSTORE_ENVIRONMENT_PRODUCTION, 0, "https://api.storekit.apple.com"},
        {APPSTORE_ENVIRONMENT_SANDBOX, 0, "https://api.storekit-sandbox.apple.com"},
        {APPSTORE_ENVIRONMENT_LOCAL_TESTING, 0, "https://local-testing-base-url"},
        {APPSTORE_ENVIRONMENT_PRODUCTION, 1, "https://api.storekit.itunes.apple.com"},
        {APPSTORE_ENVIRONMENT_SANDBOX, 1, "https://api.storekit-sandbox.itunes.apple.com"},
        {APPSTORE_ENVIRONMENT_XCODE, 0, ""},
        {0, 0, ""},
        {5, 0, ""},
        {APPSTORE_ENVIRONMENT_PRODUCTION, 2, ""},
        {APPSTORE_ENVIRONMENT_PRODUCTION, -1, ""},
    };
    for (size_t u = 0; u < sizeof urls / sizeof urls[0]; u++)
        CHECK(strcmp(appstore_api_base_url(urls[u].env, urls[u].ac), urls[u].want) == 0, "appstore_api_base_url",
              "(%d, %d): \"%s\", want \"%s\"", (int)urls[u].env, (int)urls[u].ac,
              appstore_api_base_url(urls[u].env, urls[u].ac), urls[u].want);

    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) run_case(client, c);
    check_pagination(client, cases);
    check_errors(client, retrying, fast, &stats);
    check_arguments(key, key_without_issuer, client, no_transport);
    char not_found_base[64];
    pid_t not_found_pid = -1;
    int not_found_stdin = -1;
    if (CHECK(start_mock_at(argv[3], argv[2], public_key, argv[4], not_found_base, sizeof not_found_base, &not_found_pid,
                            &not_found_stdin),
              "second mock server (Production without the ids)", "%s", "did not start")) {
        check_fallback(key, transport, cases, spec_endpoints, not_found_base);
        close(not_found_stdin);
        waitpid(not_found_pid, NULL, 0);
    }
    check_rate_limit(key, transport, &stats);

    pthread_t threads[4];
    thread_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t] = (thread_arg){client, 0};
        pthread_create(&threads[t], NULL, thread_main, &args[t]);
    }
    int total = 0;
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        total += args[t].ok;
    }
    CHECK(total == 40, "4 threads x 10 calls on one client", "%d of 40 succeeded", total);

    appstore_api_client_free(client);
    appstore_api_client_free(retrying);
    appstore_api_client_free(fast);
    appstore_api_client_free(no_transport);
    appstore_transport_free(transport);
    appstore_signing_key_free(key);
    appstore_signing_key_free(key_without_issuer);
    stop_mock();
    json_decref(doc);
    json_decref(spec);
    free(pem);
    free(public_key);
    free(key_path);
    return capi_finish(&T);
}
