/* libFuzzer: what a transport hands back (a hostile server, or a buggy host transport). The input is one answer:
 * byte 0-1 the status (0: the callback sets none; else 100-599, 3xx redirects included), then header lines up to an
 * empty line ("Name: value\n"), then the body, appended in pieces; the transport's return code from byte 2. It
 * answers every request of a Production client with retries (1 ms backoff) and the Sandbox fallback on, through
 * appstore_api_client_call_ext for a lookup and appstore_api_client_call_all_pages for a paged endpoint (the same
 * answer every time: paging must stop on a repeated token). Every outcome must be a consistent status. */
#include "fuzz_common.h"

typedef struct {
    const uint8_t *data;
    size_t size;
} input;

static int32_t answer(void *user_data, const char *method, const char *url, const char *headers, size_t headers_len,
                      const uint8_t *body, size_t body_len, uint32_t timeout_ms, appstore_http_response *response) {
    (void)method, (void)url, (void)headers, (void)headers_len, (void)body, (void)body_len, (void)timeout_ms;
    const input *in = user_data;
    if (in->size < 3) return APPSTORE_TRANSPORT_RESULT_FAILED;
    int status = (in->data[0] << 8 | in->data[1]) % 501;
    if (status) appstore_http_response_set_status(response, 99 + status, NULL);
    const uint8_t *p = in->data + 3, *end = in->data + in->size;
    while (p < end && *p != '\n') { /* header lines until an empty one */
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *line_end = nl ? nl : end;
        const uint8_t *colon = memchr(p, ':', (size_t)(line_end - p));
        if (colon) {
            char name[128], value[512];
            snprintf(name, sizeof name, "%.*s", (int)(colon - p), (const char *)p);
            snprintf(value, sizeof value, "%.*s", (int)(line_end - colon - 1), (const char *)colon + 1);
            appstore_http_response_add_header(response, name, value, NULL);
        }
        p = nl ? nl + 1 : end;
    }
    if (p < end) p++;
    size_t half = (size_t)(end - p) / 2;
    appstore_http_response_append_body(response, p, half, NULL);
    appstore_http_response_append_body(response, p + half, (size_t)(end - p) - half, NULL);
    return in->data[2] % 8 == 0 ? (int32_t)(in->data[2] >> 3) % 5 : APPSTORE_TRANSPORT_RESULT_OK;
}

static appstore_signing_key *key;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!key) {
        size_t len = 0;
        unsigned char *pem = fuzz_read("keys/p256.p8", &len);
        if (appstore_signing_key_new((const char *)pem, len, "KEYID12345", "issuer", "com.example.fuzz", &key, NULL) != APPSTORE_OK)
            abort();
        free(pem);
    }
    input in = {data, size};
    appstore_transport *tr = NULL;
    appstore_api_client_options *o = NULL;
    appstore_api_client *client = NULL;
    if (appstore_transport_new(answer, &in, &tr, NULL) != APPSTORE_OK || appstore_api_client_options_new(&o, NULL) != APPSTORE_OK)
        abort();
    appstore_api_client_options_set_transport(o, tr, NULL);
    appstore_api_client_options_set_retry(o, 2, 1, 2, NULL);
    appstore_api_client_options_set_base_url(o, "http://127.0.0.1:9/fuzz", NULL);
    appstore_api_client_options_set_sandbox_fallback(o, 1, "http://127.0.0.1:9/sandbox", NULL);
    if (appstore_api_client_new(key, APPSTORE_ENVIRONMENT_PRODUCTION, o, &client, NULL) != APPSTORE_OK) abort();
    char *json = NULL;
    appstore_environment env = 0;
    appstore_error *err = NULL;
    appstore_status st = appstore_api_client_call_ext(client, APPSTORE_ENDPOINT_GET_TRANSACTION_INFO,
                                                      "{\"transactionId\":\"1\"}", &json, &env, &err);
    if (st == APPSTORE_OK) fuzz_check_utf8(json, "call_ext");
    fuzz_check(st, err, "call_ext");
    appstore_string_free(json);
    json = NULL;
    err = NULL;
    st = appstore_api_client_call_all_pages(client, APPSTORE_ENDPOINT_GET_TRANSACTION_HISTORY, "{\"anyTransactionId\":\"1\"}",
                                            &json, &err);
    if (st == APPSTORE_OK) fuzz_check_utf8(json, "call_all_pages");
    fuzz_check(st, err, "call_all_pages");
    appstore_string_free(json);
    appstore_api_client_free(client);
    appstore_api_client_options_free(o);
    appstore_transport_free(tr);
    return 0;
}
