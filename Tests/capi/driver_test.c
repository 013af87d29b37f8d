/*
 * driver_test: the call driver's shared scenarios (Tests/driver/scenarios.json) through the C ABI
 * (appstore_api_call_*), plus what only C can get wrong: NULLs, a request asked for at the wrong time, a receive with
 * nothing sent, a bad transport result, and several threads hammering one call handle.
 * Usage: driver_test KEYS_DIR SCENARIOS_JSON
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_util.h"

static capi_tally T = {"c driver", 0, 0};
static appstore_signing_key *KEY;

static appstore_environment env_code(const char *name) {
    if (strcmp(name, "PRODUCTION") == 0) return APPSTORE_ENVIRONMENT_PRODUCTION;
    if (strcmp(name, "SANDBOX") == 0) return APPSTORE_ENVIRONMENT_SANDBOX;
    if (strcmp(name, "LOCAL_TESTING") == 0) return APPSTORE_ENVIRONMENT_LOCAL_TESTING;
    return 0;
}

static const char *env_name(appstore_environment e) {
    return e == APPSTORE_ENVIRONMENT_PRODUCTION ? "PRODUCTION" : e == APPSTORE_ENVIRONMENT_SANDBOX ? "SANDBOX" : "OTHER";
}

static int32_t transport_result(const char *name) {
    if (strcmp(name, "TIMEOUT") == 0) return APPSTORE_TRANSPORT_RESULT_TIMEOUT;
    if (strcmp(name, "UNREACHABLE") == 0) return APPSTORE_TRANSPORT_RESULT_UNREACHABLE;
    return APPSTORE_TRANSPORT_RESULT_FAILED;
}

static int64_t integer(json_t *o, const char *key, int64_t fallback) {
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : fallback;
}

static appstore_api_client *make_client(json_t *c) {
    appstore_api_client_options *o = NULL;
    appstore_api_client *client = NULL;
    if (appstore_api_client_options_new(&o, NULL) != APPSTORE_OK) return NULL;
    int ok = 1;
    if (json_object_get(c, "timeoutMs"))
        ok &= appstore_api_client_options_set_timeout_ms(o, (uint32_t)integer(c, "timeoutMs", 30000), NULL) == APPSTORE_OK;
    if (json_object_get(c, "maxRetries"))
        ok &= appstore_api_client_options_set_retry(o, (uint32_t)integer(c, "maxRetries", 0), (uint32_t)integer(c, "initialBackoffMs", 500),
                                                    (uint32_t)integer(c, "maxBackoffMs", 30000), NULL) == APPSTORE_OK;
    if (json_is_true(json_object_get(c, "sandboxFallback")))
        ok &= appstore_api_client_options_set_sandbox_fallback(o, 1, NULL, NULL) == APPSTORE_OK;
    json_t *rl = json_object_get(c, "rateLimit");
    if (rl)
        ok &= appstore_api_client_options_set_rate_limit(o, 1, (uint32_t)integer(rl, "maxWaitMs", 0),
                                                         (uint32_t)integer(rl, "sharePercent", 100), NULL) == APPSTORE_OK;
    const char *env = json_string_value(json_object_get(c, "environment"));
    if (ok) appstore_api_client_new(KEY, env_code(env ? env : ""), o, &client, NULL);
    appstore_api_client_options_free(o);
    return client;
}

/* Compares a JSON text with the expected value. */
static int json_equal_text(const char *text, json_t *want) {
    json_t *got = json_loads(text, JSON_DECODE_ANY, NULL);
    int same = got && json_equal(got, want);
    json_decref(got);
    return same;
}

static int check_error(const char *where, appstore_status st, appstore_error *err, json_t *want) {
    int ok = 1;
    const char *status = json_string_value(json_object_get(want, "status"));
    const char *reason = json_string_value(json_object_get(want, "reason"));
    const char *message = appstore_error_message(err);
    ok &= capi_check(&T, status && strcmp(appstore_status_name(st), status) == 0, where, "status %s, want %s (%s)",
                     appstore_status_name(st), status, message);
    if (reason)
        ok &= capi_check(&T, strcmp(appstore_reason_name(appstore_error_reason(err)), reason) == 0, where, "reason %s, want %s",
                         appstore_reason_name(appstore_error_reason(err)), reason);
    if (json_object_get(want, "httpStatus"))
        ok &= capi_check(&T, appstore_error_http_status(err) == integer(want, "httpStatus", 0), where, "http status %d",
                         appstore_error_http_status(err));
    if (json_object_get(want, "apiErrorCode"))
        ok &= capi_check(&T, appstore_error_api_error_code(err) == integer(want, "apiErrorCode", 0), where, "api error %lld",
                         (long long)appstore_error_api_error_code(err));
    if (json_object_get(want, "retryAfterMs"))
        ok &= capi_check(&T, appstore_error_retry_at_ms(err) == integer(want, "retryAfterMs", 0), where, "retry at %lld",
                         (long long)appstore_error_retry_at_ms(err));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(want, "messageContains"), i, s)
        ok &= capi_check(&T, strstr(message, json_string_value(s)) != NULL, where, "message \"%s\" lacks \"%s\"", message,
                         json_string_value(s));
    json_array_foreach(json_object_get(want, "messageLacks"), i, s)
        ok &= capi_check(&T, strstr(message, json_string_value(s)) == NULL, where, "message \"%s\" has \"%s\"", message,
                         json_string_value(s));
    return ok;
}

static void receive(appstore_api_call *call, json_t *r, int64_t now, const char *where) {
    char headers[2048] = "";
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(r, "headers"), name, v) {
        size_t n = strlen(headers);
        snprintf(headers + n, sizeof headers - n, "%s: %s\r\n", name, json_string_value(v));
    }
    char *body = NULL;
    json_t *b = json_object_get(r, "body");
    if (b) body = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    else body = strdup(json_string_value(json_object_get(r, "bodyText")) ? json_string_value(json_object_get(r, "bodyText")) : "");
    appstore_error *err = NULL;
    appstore_status st = appstore_api_call_receive(call, (int32_t)integer(r, "status", 0), headers, strlen(headers),
                                                   (const uint8_t *)body, strlen(body), now, &err);
    capi_check(&T, st == APPSTORE_OK, where, "receive: %s", appstore_error_message(err));
    appstore_error_free(err);
    free(body);
}

static void run_scenario(json_t *sc) {
    const char *name = json_string_value(json_object_get(sc, "name"));
    appstore_api_client *client = make_client(json_object_get(sc, "client"));
    if (!capi_check(&T, client != NULL, name, "%s", "client not created")) return;
    char *params = json_dumps(json_object_get(sc, "params"), JSON_COMPACT);
    appstore_api_call *call = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_api_call_new(client, json_string_value(json_object_get(sc, "endpoint")), params, &call, &err);
    free(params);
    /* The call holds its own reference to the client. */
    appstore_api_client_free(client);
    if (!capi_check(&T, st == APPSTORE_OK, name, "call_new: %s", appstore_error_message(err))) {
        appstore_error_free(err);
        return;
    }
    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(sc, "steps"), i, step) {
        char where[512];
        snprintf(where, sizeof where, "%s, step %zu", name, i + 1);
        int64_t now = integer(step, "now", 0);
        if (json_object_get(step, "receive")) {
            receive(call, json_object_get(step, "receive"), now, where);
            continue;
        }
        json_t *fail = json_object_get(step, "fail");
        if (fail) {
            st = appstore_api_call_receive_failure(call, transport_result(json_string_value(json_object_get(fail, "result"))),
                                                   json_string_value(json_object_get(fail, "message")), &err);
            capi_check(&T, st == APPSTORE_OK, where, "receive_failure: %s", appstore_error_message(err));
            appstore_error_free(err);
            err = NULL;
            continue;
        }
        appstore_api_action action = 0;
        int64_t wait = -1;
        err = NULL;
        st = appstore_api_call_next(call, now, &action, &wait, &err);
        json_t *want;
        if ((want = json_object_get(step, "error"))) {
            check_error(where, st, err, want);
        } else if (!capi_check(&T, st == APPSTORE_OK, where, "next failed: %s %s", appstore_status_name(st),
                               appstore_error_message(err))) {
        } else if ((want = json_object_get(step, "send"))) {
            appstore_api_request *r = NULL;
            capi_check(&T, action == APPSTORE_API_ACTION_SEND && wait == 0, where, "action %d, want SEND", action);
            if (appstore_api_call_request(call, &r, NULL) == APPSTORE_OK) {
                const char *m = json_string_value(json_object_get(want, "method"));
                const char *u = json_string_value(json_object_get(want, "url"));
                capi_check(&T, strcmp(appstore_api_request_method(r), m) == 0 && strcmp(appstore_api_request_url(r), u) == 0,
                           where, "sent %s %s, want %s %s", appstore_api_request_method(r), appstore_api_request_url(r), m, u);
                capi_check(&T, strncmp(appstore_api_request_headers(r), "Authorization: Bearer ey", 24) == 0, where,
                           "headers %s", appstore_api_request_headers(r));
                if (json_object_get(want, "timeoutMs"))
                    capi_check(&T, appstore_api_request_timeout_ms(r) == (uint32_t)json_integer_value(json_object_get(want, "timeoutMs")),
                               where, "transport timeout %u ms, want %lld", appstore_api_request_timeout_ms(r),
                               (long long)json_integer_value(json_object_get(want, "timeoutMs")));
                appstore_api_request_free(r);
            } else {
                capi_check(&T, 0, where, "%s", "no request after SEND");
            }
        } else if ((want = json_object_get(step, "wait"))) {
            capi_check(&T, action == APPSTORE_API_ACTION_WAIT && wait == json_integer_value(want), where,
                       "action %d wait %lld, want WAIT %lld", action, (long long)wait, (long long)json_integer_value(want));
        } else if ((want = json_object_get(step, "done"))) {
            char *json = NULL, *headers = NULL;
            appstore_environment env = 0;
            capi_check(&T, action == APPSTORE_API_ACTION_DONE, where, "action %d, want DONE", action);
            if (appstore_api_call_answer(call, &json, &env, &headers, NULL) == APPSTORE_OK) {
                capi_check(&T, json_equal_text(json, json_object_get(want, "json")), where, "json %s", json);
                capi_check(&T, strcmp(env_name(env), json_string_value(json_object_get(want, "environment"))) == 0, where,
                           "environment %s", env_name(env));
                capi_check(&T, headers != NULL, where, "%s", "no headers");
                capi_check(&T, appstore_api_call_has_next_page(call) == json_is_true(json_object_get(want, "hasNextPage")),
                           where, "has_next_page %d", appstore_api_call_has_next_page(call));
            } else {
                capi_check(&T, 0, where, "%s", "no answer after DONE");
            }
            appstore_string_free(json);
            appstore_string_free(headers);
        }
        appstore_error_free(err);
        err = NULL;
    }
    appstore_api_call_free(call);
}

/* ---- what only C can get wrong ---- */

static appstore_api_call *new_call(appstore_api_client *client) {
    appstore_api_call *call = NULL;
    appstore_api_call_new(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO, "{\"transactionId\":\"1\"}", &call, NULL);
    return call;
}

static void misuse(appstore_api_client *client) {
    appstore_error *err = NULL;
    appstore_api_call *call = NULL;
    appstore_api_action action = 0;
    appstore_api_request *r = NULL;
    char *json = NULL;
    capi_check(&T, appstore_api_call_new(NULL, "getTransactionInfo", NULL, &call, NULL) == APPSTORE_INVALID_ARGUMENT && !call,
               "call_new with a NULL client", "%s", "");
    capi_check(&T, appstore_api_call_new(client, "noSuchEndpoint", NULL, &call, &err) == APPSTORE_INVALID_ARGUMENT &&
                   appstore_error_reason(err) == APPSTORE_REASON_UNKNOWN_ENDPOINT && !call,
               "call_new with an unknown endpoint", "%s", appstore_error_message(err));
    appstore_error_free(err);
    err = NULL;
    capi_check(&T, appstore_api_call_new(client, "getTransactionInfo", "{\"nope\":1}", &call, &err) == APPSTORE_INVALID_ARGUMENT &&
                   strstr(appstore_error_message(err), "nope") && !call,
               "call_new with an unknown key", "%s", appstore_error_message(err));
    appstore_error_free(err);
    err = NULL;
    capi_check(&T, appstore_api_call_new(client, "getTransactionInfo", "{}", NULL, NULL) == APPSTORE_INVALID_ARGUMENT,
               "call_new with NULL call_out", "%s", "");
    capi_check(&T, appstore_api_call_next(NULL, 0, &action, NULL, NULL) == APPSTORE_INVALID_ARGUMENT, "next(NULL)", "%s", "");
    capi_check(&T, appstore_api_call_request(NULL, &r, NULL) == APPSTORE_INVALID_ARGUMENT && !r, "request(NULL)", "%s", "");
    capi_check(&T, appstore_api_call_receive(NULL, 200, NULL, 0, NULL, 0, 0, NULL) == APPSTORE_INVALID_ARGUMENT,
               "receive(NULL)", "%s", "");
    capi_check(&T, appstore_api_call_receive_failure(NULL, 1, NULL, NULL) == APPSTORE_INVALID_ARGUMENT, "receive_failure(NULL)",
               "%s", "");
    capi_check(&T, appstore_api_call_answer(NULL, &json, NULL, NULL, NULL) == APPSTORE_INVALID_ARGUMENT && !json,
               "answer(NULL)", "%s", "");
    capi_check(&T, appstore_api_call_has_next_page(NULL) == 0, "has_next_page(NULL)", "%s", "");
    appstore_api_call_free(NULL);

    call = new_call(client);
    capi_check(&T, appstore_api_call_request(call, &r, NULL) == APPSTORE_INVALID_ARGUMENT && !r, "request before SEND", "%s", "");
    capi_check(&T, appstore_api_call_receive(call, 200, NULL, 0, NULL, 0, 0, NULL) == APPSTORE_INVALID_ARGUMENT,
               "receive before SEND", "%s", "");
    capi_check(&T, appstore_api_call_answer(call, &json, NULL, NULL, NULL) == APPSTORE_INVALID_ARGUMENT && !json,
               "answer before DONE", "%s", "");
    capi_check(&T, appstore_api_call_next(call, 0, NULL, NULL, NULL) == APPSTORE_INVALID_ARGUMENT, "next with NULL action_out",
               "%s", "");
    capi_check(&T, appstore_api_call_next(call, 0, &action, NULL, NULL) == APPSTORE_OK && action == APPSTORE_API_ACTION_SEND,
               "next after misuse still sends", "%d", action);
    capi_check(&T, appstore_api_call_receive(call, 700, NULL, 0, NULL, 0, 0, NULL) == APPSTORE_INVALID_ARGUMENT,
               "receive with status 700", "%s", "");
    capi_check(&T, appstore_api_call_receive(call, 200, NULL, 5, NULL, 0, 0, NULL) == APPSTORE_INVALID_ARGUMENT,
               "receive with NULL headers of length 5", "%s", "");
    capi_check(&T, appstore_api_call_receive(call, 200, NULL, 0, NULL, (size_t)APPSTORE_LIMIT_API_RESPONSE_BYTES + 1, 0, NULL) ==
                   APPSTORE_INVALID_ARGUMENT,
               "receive with a body over the limit", "%s", "");
    capi_check(&T, appstore_api_call_receive_failure(call, 0, NULL, NULL) == APPSTORE_INVALID_ARGUMENT,
               "receive_failure with result OK", "%s", "");
    capi_check(&T, appstore_api_call_receive_failure(call, 9, NULL, NULL) == APPSTORE_INVALID_ARGUMENT,
               "receive_failure with result 9", "%s", "");
    /* The request outlives the call: it is the caller's own reference. */
    capi_check(&T, appstore_api_call_request(call, &r, NULL) == APPSTORE_OK && r, "request after SEND", "%s", "");
    capi_check(&T, appstore_api_call_receive_failure(call, APPSTORE_TRANSPORT_RESULT_UNREACHABLE, "\x1b[31mred\nline", NULL) ==
                   APPSTORE_OK,
               "receive_failure", "%s", "");
    capi_check(&T, appstore_api_call_receive_failure(call, APPSTORE_TRANSPORT_RESULT_FAILED, NULL, NULL) == APPSTORE_INVALID_ARGUMENT,
               "a second outcome is refused", "%s", "");
    appstore_status st = appstore_api_call_next(call, 0, &action, NULL, &err);
    capi_check(&T, st == APPSTORE_TRANSPORT_ERROR && appstore_error_reason(err) == APPSTORE_REASON_TRANSPORT_UNREACHABLE &&
                   !strchr(appstore_error_message(err), '\x1b') && !strchr(appstore_error_message(err), '\n'),
               "the host's message is cleaned of control characters", "%s", appstore_error_message(err));
    appstore_error_free(err);
    err = NULL;
    st = appstore_api_call_next(call, 0, &action, NULL, &err);
    capi_check(&T, st == APPSTORE_INVALID_ARGUMENT && strstr(appstore_error_message(err), "failed"), "next after the failure",
               "%s", appstore_error_message(err));
    appstore_error_free(err);
    appstore_api_call_free(call);
    capi_check(&T, strcmp(appstore_api_request_method(r), "GET") == 0, "the request lives on after the call is freed", "%s",
               appstore_api_request_method(r));
    appstore_api_request_free(r);
}

/* Several threads drive one handle at once (a misuse the lock must survive without corruption). */
static void *hammer(void *arg) {
    appstore_api_call *call = arg;
    for (int i = 0; i < 2000; i++) {
        appstore_api_action action = 0;
        appstore_api_request *r = NULL;
        char *json = NULL;
        appstore_api_call_next(call, 0, &action, NULL, NULL);
        appstore_api_call_request(call, &r, NULL);
        appstore_api_request_free(r);
        appstore_api_call_receive(call, 200, NULL, 0, (const uint8_t *)"{\"signedTransactionInfo\":\"a\"}", 29, 0, NULL);
        appstore_api_call_answer(call, &json, NULL, NULL, NULL);
        appstore_string_free(json);
        appstore_api_call_has_next_page(call);
    }
    return NULL;
}

static void threads(appstore_api_client *client) {
    appstore_api_call *call = new_call(client);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, hammer, call);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    appstore_api_call_free(call);
    capi_check(&T, 1, "four threads on one call handle", "%s", "");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s KEYS_DIR SCENARIOS_JSON\n", argv[0]);
        return 2;
    }
    char *key_path = capi_join(argv[1], "p256.p8");
    size_t pem_len = 0;
    unsigned char *pem = capi_read_file(key_path, &pem_len);
    json_error_t jerr;
    json_t *doc = json_load_file(argv[2], 0, &jerr);
    if (!pem || !doc ||
        appstore_signing_key_new((const char *)pem, pem_len, "KEYID12345", "5c0a7a1e-0000-4000-8000-000000000001",
                                 "com.example.app", &KEY, NULL) != APPSTORE_OK) {
        fprintf(stderr, "driver_test: cannot load %s or %s: %s\n", key_path, argv[2], jerr.text);
        return 2;
    }
    size_t i;
    json_t *sc;
    json_array_foreach(json_object_get(doc, "scenarios"), i, sc) run_scenario(sc);
    printf("%zu scenarios\n", json_array_size(json_object_get(doc, "scenarios")));
    appstore_api_client *client = make_client(json_pack("{s:s}", "environment", "PRODUCTION"));
    misuse(client);
    threads(client);
    appstore_api_client_free(client);
    appstore_signing_key_free(KEY);
    json_decref(doc);
    free(pem);
    free(key_path);
    return capi_finish(&T);
}
