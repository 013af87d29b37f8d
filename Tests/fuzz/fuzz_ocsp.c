/* libFuzzer: OCSP answers. A verifier with online checks (cache off) and a transport that answers every OCSP request
 * with HTTP 200 and the input as the body; the JWS is a genuine one of the OCSP test PKI, so each input reaches the
 * OCSP response parser and checks (DER, basic response, signature, cert id, nonce, times, status). */
#include "fuzz_common.h"

static appstore_verifier *verifier;
static char *jws;
static size_t jws_len;
static const uint8_t *answer;
static size_t answer_len;

static int32_t transport(void *user_data, const char *method, const char *url, const char *headers, size_t headers_len,
                         const uint8_t *body, size_t body_len, uint32_t timeout_ms, appstore_http_response *response) {
    (void)user_data, (void)method, (void)url, (void)headers, (void)headers_len, (void)body, (void)body_len, (void)timeout_ms;
    appstore_http_response_set_status(response, 200, NULL);
    appstore_http_response_add_header(response, "Content-Type", "application/ocsp-response", NULL);
    if (answer_len) appstore_http_response_append_body(response, answer, answer_len, NULL);
    return APPSTORE_TRANSPORT_RESULT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!verifier) {
        size_t len = 0;
        unsigned char *root = fuzz_read("ocsp/root.der", &len);
        jws = (char *)fuzz_read("ocsp/good.jws", &jws_len);
        while (jws_len && (jws[jws_len - 1] == '\n' || jws[jws_len - 1] == ' ')) jws_len--;
        appstore_verifier_options *o = NULL;
        appstore_transport *t = NULL;
        appstore_verifier_options_new(&o, NULL);
        appstore_verifier_options_add_root(o, root, len, NULL);
        appstore_verifier_options_set_bundle_id(o, "com.example.ocsp", NULL);
        appstore_verifier_options_set_online_checks(o, 1, NULL);
        appstore_verifier_options_set_chain_cache(o, 0, 0, NULL);
        appstore_transport_new(transport, NULL, &t, NULL);
        appstore_verifier_options_set_transport(o, t, 1000, NULL);
        if (appstore_verifier_new(o, &verifier, NULL) != APPSTORE_OK) abort();
        appstore_transport_free(t);
        appstore_verifier_options_free(o);
        free(root);
    }
    answer = data;
    answer_len = size;
    appstore_error *err = NULL;
    appstore_status st = appstore_verifier_verify_transaction(verifier, jws, jws_len, NULL, &err);
    fuzz_check(st, err, "online verify");
    return 0;
}
