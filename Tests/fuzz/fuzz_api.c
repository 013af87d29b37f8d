/* libFuzzer: the App Store Server API sans-I/O path. The input is (1) params_json for every endpoint
 * (appstore_api_client_build_request: the strict parameter and body decoders, path and query building) and (2) an
 * answer body, with a status taken from its first byte and a Retry-After header from its first line, for every
 * endpoint (appstore_api_client_decode_response: every response model, Apple's error payload, Retry-After). */
#include "fuzz_common.h"

static appstore_api_client *client;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!client) {
        size_t len = 0;
        unsigned char *pem = fuzz_read("keys/p256.p8", &len);
        appstore_signing_key *key = NULL;
        if (appstore_signing_key_new((const char *)pem, len, "KEYID12345", "issuer", "com.example.fuzz", &key, NULL) !=
                APPSTORE_OK ||
            appstore_api_client_new(key, APPSTORE_ENVIRONMENT_SANDBOX, NULL, &client, NULL) != APPSTORE_OK)
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
        if (st != APPSTORE_OK && err) {
            int64_t delay = 0;
            appstore_api_client_retry_delay_ms(client, err, 1, &delay, NULL);
        }
        fuzz_check(st, err, endpoint);
        if (st == APPSTORE_OK) fuzz_check_utf8(json, endpoint), appstore_string_free(json);
    }
    free(params);
    return 0;
}
