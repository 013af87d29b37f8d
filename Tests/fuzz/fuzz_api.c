/* libFuzzer: the App Store Server API sans-I/O path. The input is (1) params_json for every endpoint
 * (appstore_api_client_build_request: the strict parameter and body decoders, path and query building) and (2) an
 * answer body, with a status taken from its first byte and a Retry-After header from its first line, for every
 * endpoint (appstore_api_client_decode_response: every response model, Apple's error payload, Retry-After), and the
 * same answer fed to a call driver (appstore_api_call_*: the retry decision, the Sandbox fallback, the next page). */
#include "fuzz_common.h"

static appstore_api_client *client;

/* A Production client with retries and the Sandbox fallback, so the driver's every branch is reachable. */
static int fuzz_client(appstore_signing_key *key, appstore_api_client **out) {
    appstore_api_client_options *o = NULL;
    int ok = appstore_api_client_options_new(&o, NULL) == APPSTORE_OK &&
             appstore_api_client_options_set_retry(o, 2, 100, 1000, NULL) == APPSTORE_OK &&
             appstore_api_client_options_set_sandbox_fallback(o, 1, NULL, NULL) == APPSTORE_OK &&
             appstore_api_client_new(key, APPSTORE_ENVIRONMENT_PRODUCTION, o, out, NULL) == APPSTORE_OK;
    appstore_api_client_options_free(o);
    return ok;
}

/* One call of `endpoint` driven with the fuzzed answer for every attempt, at a fixed clock, until it ends. */
static void drive(const char *endpoint, const char *params, int status, const char *headers, const uint8_t *body,
                  size_t size) {
    appstore_api_call *call = NULL;
    if (appstore_api_call_new(client, endpoint, params, &call, NULL) != APPSTORE_OK) return;
    for (int step = 0; step < 16; step++) {
        appstore_api_action action = 0;
        appstore_error *err = NULL;
        appstore_status st = appstore_api_call_next(call, 1800000000000LL + step, &action, NULL, &err);
        fuzz_check(st, err, endpoint);
        if (st != APPSTORE_OK) break;
        if (action == APPSTORE_API_ACTION_SEND) {
            if (appstore_api_call_receive(call, status, headers, strlen(headers), body, size, 1800000000000LL + step, NULL) !=
                APPSTORE_OK)
                abort();
        } else if (action == APPSTORE_API_ACTION_DONE) {
            char *json = NULL;
            if (appstore_api_call_answer(call, &json, NULL, NULL, NULL) != APPSTORE_OK) abort();
            fuzz_check_utf8(json, endpoint);
            appstore_string_free(json);
            if (!appstore_api_call_has_next_page(call)) break;
        }
    }
    appstore_api_call_free(call);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!client) {
        size_t len = 0;
        unsigned char *pem = fuzz_read("keys/p256.p8", &len);
        appstore_signing_key *key = NULL;
        if (appstore_signing_key_new((const char *)pem, len, "KEYID12345", "issuer", "com.example.fuzz", &key, NULL) !=
                APPSTORE_OK ||
            !fuzz_client(key, &client))
            abort();
        appstore_signing_key_free(key);
        free(pem);
    }
    char *params = malloc(size + 1);
    memcpy(params, data, size);
    params[size] = 0;
    static const int statuses[] = {200, 200, 200, 400, 401, 404, 429, 500};
    int status = size ? statuses[data[0] % 8] : 200;
    const char *nl = size ? memchr(data, '\n', size < 200 ? size : 200) : NULL;
    char headers[256] = "";
    if (nl) snprintf(headers, sizeof headers, "Retry-After: %.*s\r\n", (int)((const uint8_t *)nl - data), (const char *)data);
    for (size_t i = 0; i < appstore_api_endpoint_count(); i++) {
        const char *endpoint = appstore_api_endpoint_name(i);
        appstore_api_request *req = NULL;
        appstore_error *err = NULL;
        appstore_status st = appstore_api_client_build_request(client, endpoint, params, &req, &err);
        fuzz_check(st, err, endpoint);
        if (st == APPSTORE_OK) {
            size_t body_len = 0;
            appstore_api_request_body(req, &body_len);
            if (!appstore_api_request_url(req)[0] || !appstore_api_request_method(req)[0]) abort();
            appstore_api_request_free(req);
        }
        char *json = NULL;
        err = NULL;
        st = appstore_api_client_decode_response(client, endpoint, status, headers, strlen(headers), data, size, &json, &err);
        fuzz_check(st, err, endpoint);
        if (st == APPSTORE_OK) fuzz_check_utf8(json, endpoint), appstore_string_free(json);
        drive(endpoint, params, status, headers, data, size);
    }
    free(params);
    return 0;
}
