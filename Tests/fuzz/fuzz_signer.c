/* libFuzzer: keys held outside the process (appstore_signing_key_new_with_signer). The first byte chooses:
 *   even: the rest is what the signer answers (any length up to the buffer's capacity, as r||s, DER or garbage),
 *         checked and verified against the signer's real public key before use, for a bearer token and a v1 offer;
 *   odd:  the rest is the signer's public key (PEM or DER SPKI parsing), then one token through a signer that signs
 *         correctly with the test key (it must be refused unless the fuzzed key is the test key's). */
#include "fuzz_common.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

static unsigned char *public_pem;
static size_t public_len;
static EVP_PKEY *test_key;

typedef struct {
    const uint8_t *answer;
    size_t len;
} canned;

static int32_t answer_cb(void *user_data, const uint8_t *message, size_t message_len, const uint8_t *digest,
                         uint8_t *signature, size_t cap, size_t *signature_len, uint32_t timeout_ms) {
    (void)message, (void)message_len, (void)digest, (void)timeout_ms;
    const canned *c = user_data;
    size_t n = c->len < cap ? c->len : cap;
    memcpy(signature, c->answer, n);
    *signature_len = c->len; /* may exceed cap: the library must refuse it, never read past the buffer */
    return 0;
}

static int32_t real_cb(void *user_data, const uint8_t *message, size_t message_len, const uint8_t *digest,
                       uint8_t *signature, size_t cap, size_t *signature_len, uint32_t timeout_ms) {
    (void)user_data, (void)digest, (void)timeout_ms;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t len = cap;
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, test_key) == 1 &&
             EVP_DigestSign(ctx, signature, &len, message, message_len) == 1;
    EVP_MD_CTX_free(ctx);
    *signature_len = len;
    return ok ? 0 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!public_pem) {
        public_pem = fuzz_read("keys/p256_public.pem", &public_len);
        size_t len = 0;
        unsigned char *pem = fuzz_read("keys/p256.p8", &len);
        BIO *bio = BIO_new_mem_buf(pem, (int)len);
        test_key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
        BIO_free(bio);
        free(pem);
        if (!test_key) abort();
    }
    if (size == 0) return 0;
    appstore_signing_key *key = NULL;
    appstore_error *err = NULL;
    appstore_status st;
    canned c = {data + 1, size - 1};
    if (data[0] % 2 == 0) {
        st = appstore_signing_key_new_with_signer(answer_cb, &c, public_pem, public_len, 0, "KEYID12345", "issuer",
                                                  "com.example.fuzz", &key, &err);
    } else {
        st = appstore_signing_key_new_with_signer(real_cb, NULL, data + 1, size - 1, 0, "KEYID12345", "issuer",
                                                  "com.example.fuzz", &key, &err);
    }
    fuzz_check(st, err, "signing_key_new_with_signer");
    if (st != APPSTORE_OK) return 0;
    char *token = NULL;
    err = NULL;
    st = appstore_signing_key_create_api_token(key, 1750000000, 0, &token, &err);
    fuzz_check(st, err, "create_api_token");
    appstore_string_free(token);
    char *sig = NULL;
    err = NULL;
    st = appstore_signing_key_create_promotional_offer_v1(key, "p", "o", NULL, "6f1f3a2e-8a4e-4f65-9d43-1f6d2b6f6f6f",
                                                          1, &sig, NULL, NULL, &err);
    fuzz_check(st, err, "create_promotional_offer_v1");
    appstore_string_free(sig);
    appstore_signing_key_free(key);
    return 0;
}
