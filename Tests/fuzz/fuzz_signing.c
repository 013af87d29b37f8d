/* libFuzzer: signing key parsing (PEM text), then, when a key parses, Advanced Commerce in-app signing with the
 * input as request JSON (the strict decoder over every request model). */
#include "fuzz_common.h"

static appstore_signing_key *key;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!key) {
        size_t len = 0;
        unsigned char *pem = fuzz_read("keys/p256.p8", &len);
        if (appstore_signing_key_new((const char *)pem, len, "KEYID12345", "issuer", "com.example.fuzz", &key, NULL) !=
            APPSTORE_OK)
            abort();
        free(pem);
    }
    appstore_signing_key *k = NULL;
    appstore_error *err = NULL;
    appstore_status st = appstore_signing_key_new((const char *)data, size, "KEYID12345", "issuer", "com.example.fuzz", &k, &err);
    fuzz_check(st, err, "signing_key_new");
    appstore_signing_key_free(k);
    char *jws = NULL;
    err = NULL;
    st = appstore_signing_key_create_advanced_commerce_in_app(key, (const char *)data, size, NULL, &jws, &err);
    fuzz_check(st, err, "create_advanced_commerce_in_app");
    if (st == APPSTORE_OK) appstore_string_free(jws);
    return 0;
}
